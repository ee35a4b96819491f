package devtemporal

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// testPKI is a CA with a server certificate for 127.0.0.1 (serverAuth and
// clientAuth) and a client certificate, plus a client certificate from a
// CA the server does not know.
type testPKI struct {
	CA                        *x509.CertPool
	CAFile, CertFile, KeyFile string
	Client, Stranger          tls.Certificate
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	ca, caKey := issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "paywatch test CA"}, IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}, nil, nil)
	server, serverKey := issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "temporal"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}, ca, caKey)
	p := &testPKI{CA: x509.NewCertPool(), CAFile: filepath.Join(dir, "ca.pem"),
		CertFile: filepath.Join(dir, "server.pem"), KeyFile: filepath.Join(dir, "server-key.pem")}
	p.CA.AddCert(ca)
	writePEM(t, p.CAFile, "CERTIFICATE", ca.Raw)
	writePEM(t, p.CertFile, "CERTIFICATE", server.Raw)
	der, err := x509.MarshalPKCS8PrivateKey(serverKey)
	require.NoError(t, err)
	writePEM(t, p.KeyFile, "PRIVATE KEY", der)

	clientCert := func(parent *x509.Certificate, parentKey *ecdsa.PrivateKey) tls.Certificate {
		c, key := issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "paywatch worker"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, parent, parentKey)
		return tls.Certificate{Certificate: [][]byte{c.Raw}, PrivateKey: key, Leaf: c}
	}
	p.Client = clientCert(ca, caKey)
	stranger, strangerKey := issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "another CA"}, IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}, nil, nil)
	p.Stranger = clientCert(stranger, strangerKey)
	return p
}

// issue signs template with parent's key, or self-signs it without a parent.
func issue(t *testing.T, template, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	require.NoError(t, err)
	template.SerialNumber = serial
	template.NotBefore = time.Now().Add(-time.Hour)
	template.NotAfter = time.Now().Add(time.Hour)
	if parent == nil {
		parent, parentKey = template, key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, &key.PublicKey, parentKey)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert, key
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
}

// startTestServer starts a server on SQLite on free loopback ports, with
// its Web UI, and stops it when the test ends.
func startTestServer(t *testing.T, opts Options) *Server {
	t.Helper()
	ports, err := freePorts("127.0.0.1", 2)
	require.NoError(t, err)
	opts.DataDir = t.TempDir()
	opts.FrontendAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	opts.UIAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	s, err := Start(opts)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Stop()) })
	return s
}

// dial connects a client to s with conn's TLS and credentials.
func dial(s *Server, conn client.ConnectionOptions, creds client.Credentials) (client.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn.GetSystemInfoTimeout = 3 * time.Second
	return client.DialContext(ctx, client.Options{HostPort: s.FrontendAddr(), Namespace: "default",
		ConnectionOptions: conn, Credentials: creds})
}

// greet is the workflow the tests run end to end.
func greet(_ workflow.Context, name string) (string, error) { return "hello " + name, nil }

// runGreet runs greet on a worker of c and returns its result.
func runGreet(t *testing.T, c client.Client, id string) string {
	t.Helper()
	w := worker.New(c, "devtemporal-test", worker.Options{})
	w.RegisterWorkflowWithOptions(greet, workflow.RegisterOptions{Name: "greet"})
	require.NoError(t, w.Start())
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "devtemporal-test"}, "greet", id)
	require.NoError(t, err)
	var out string
	require.NoError(t, run.Get(ctx, &out))
	return out
}

// getJSON GETs url with hc and decodes a 200 answer into v.
func getJSON(hc *http.Client, url string, v any) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &httpStatusError{resp.StatusCode}
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

type httpStatusError struct{ code int }

func (e *httpStatusError) Error() string { return http.StatusText(e.code) }

func httpsClient(roots *x509.CertPool, certs ...tls.Certificate) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs, MinVersion: tls.VersionTLS12}}}
}

// settings is the part of the Web UI's /api/v1/settings the tests read.
type settings struct {
	DefaultNamespace string
	Codec            struct {
		Endpoint           string
		IncludeCredentials bool
	}
}

// TLS on: a client that trusts the CA works, a plaintext one does not, and
// the Web UI answers HTTPS with the codec endpoint it was given and reaches
// the frontend.
func TestTLS(t *testing.T) {
	pki := newTestPKI(t)
	s := startTestServer(t, Options{TLS: &TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile},
		UICodecEndpoint: "https://codec.example/paywatch", UICodecIncludeCredentials: true})

	c, err := dial(s, client.ConnectionOptions{TLS: &tls.Config{RootCAs: pki.CA, MinVersion: tls.VersionTLS12}}, nil)
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
	require.NoError(t, err)
	_, err = c.WorkflowService().DescribeNamespace(ctx, describeDefault())
	require.NoError(t, err)

	_, err = dial(s, client.ConnectionOptions{}, nil)
	assert.Error(t, err, "a plaintext client is refused")
	_, err = dial(s, client.ConnectionOptions{TLS: &tls.Config{MinVersion: tls.VersionTLS12}}, nil)
	assert.Error(t, err, "a client that does not trust the CA refuses the server")

	hc := httpsClient(pki.CA)
	var got settings
	require.NoError(t, getJSON(hc, "https://"+s.UIAddr()+"/api/v1/settings", &got))
	assert.Equal(t, "https://codec.example/paywatch", got.Codec.Endpoint)
	assert.True(t, got.Codec.IncludeCredentials)
	var ns map[string]any
	require.NoError(t, getJSON(hc, "https://"+s.UIAddr()+"/api/v1/namespaces/default", &ns), "the UI reaches the frontend")
	assert.Contains(t, ns, "namespaceInfo")
	_, err = http.Get("https://" + s.UIAddr() + "/api/v1/settings")
	assert.Error(t, err, "the UI's certificate is the server's, which only the CA vouches for")
}

// Mutual TLS: a client without a certificate from the client CA is refused
// at the handshake, on the frontend and the Web UI alike; with one,
// workflows run, and so do the server's own system workers (a schedule's
// workflow is started by the scheduler that runs on them).
func TestMutualTLS(t *testing.T) {
	pki := newTestPKI(t)
	s := startTestServer(t, Options{TLS: &TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile, ClientCAFile: pki.CAFile}})
	conn := func(certs ...tls.Certificate) client.ConnectionOptions {
		return client.ConnectionOptions{TLS: &tls.Config{RootCAs: pki.CA, Certificates: certs, MinVersion: tls.VersionTLS12}}
	}
	// The handshake fails on the server's side, so what the client sees
	// varies: a TLS alert, or a broken pipe.
	_, err := dial(s, conn(), nil)
	assert.Error(t, err, "no client certificate")
	_, err = dial(s, conn(pki.Stranger), nil)
	assert.Error(t, err, "a certificate from another CA")

	c, err := dial(s, conn(pki.Client), nil)
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, "hello mtls", runGreet(t, c, "mtls"))

	// The scheduler is a system workflow on the worker service, which
	// reaches the frontend through the internal one.
	w := worker.New(c, "devtemporal-test", worker.Options{})
	w.RegisterWorkflowWithOptions(greet, workflow.RegisterOptions{Name: "greet"})
	require.NoError(t, w.Start())
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{ID: "every-hour",
		Spec:               client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: time.Hour}}},
		Action:             &client.ScheduleWorkflowAction{ID: "scheduled", Workflow: "greet", Args: []any{"schedule"}, TaskQueue: "devtemporal-test"},
		TriggerImmediately: true})
	require.NoError(t, err)
	var started *client.ScheduleWorkflowExecution
	require.Eventually(t, func() bool {
		d, err := h.Describe(ctx)
		if err != nil || len(d.Info.RecentActions) == 0 {
			return false
		}
		started = d.Info.RecentActions[0].StartWorkflowResult
		return started != nil
	}, 45*time.Second, 200*time.Millisecond, "the scheduler started the workflow")
	var out string
	require.NoError(t, c.GetWorkflow(ctx, started.WorkflowID, started.FirstExecutionRunID).Get(ctx, &out))
	assert.Equal(t, "hello schedule", out)

	var got settings
	assert.Error(t, getJSON(httpsClient(pki.CA), "https://"+s.UIAddr()+"/api/v1/settings", &got), "the UI asks for a client certificate too")
	hc := httpsClient(pki.CA, pki.Client)
	require.NoError(t, getJSON(hc, "https://"+s.UIAddr()+"/api/v1/settings", &got))
	assert.Equal(t, "default", got.DefaultNamespace)
	var ns map[string]any
	require.NoError(t, getJSON(hc, "https://"+s.UIAddr()+"/api/v1/namespaces/default", &ns), "the UI reaches the frontend")
}

// Bad TLS files are Start's error, before anything listens: the server
// itself would exit the process on them.
func TestStartChecksTLSFiles(t *testing.T) {
	pki := newTestPKI(t)
	other := newTestPKI(t)
	ports, err := freePorts("127.0.0.1", 1)
	require.NoError(t, err)
	opts := Options{DataDir: t.TempDir(), FrontendAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	for name, c := range map[string]struct {
		tls  TLSOptions
		want string
	}{
		"key of another certificate": {TLSOptions{CertFile: pki.CertFile, KeyFile: other.KeyFile}, "private key does not match"},
		"missing key file":           {TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile + ".missing"}, "no such file"},
		"client CA without PEM":      {TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile, ClientCAFile: pki.KeyFile}, "holds no PEM certificate"},
		"no key":                     {TLSOptions{CertFile: pki.CertFile}, "both a certificate and a key"},
	} {
		opts.TLS = &c.tls
		_, err := Start(opts)
		assert.ErrorContains(t, err, c.want, name)
	}
	_, err = os.Stat(filepath.Join(opts.DataDir, "temporal.db"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing created")
}
