package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/paywatch/paywatch/cmd/paywatch/internal/devtemporal"
	"github.com/paywatch/paywatch/workflows"
)

// Issue 42, item 1: paywatch connects to Temporal as Temporal's own tools
// do (go.temporal.io/sdk/contrib/envconfig): a profile of the Temporal
// CLI's temporal.toml, with TEMPORAL_* over it, so an operator's CLI setup
// works unchanged, on Temporal Cloud with an API key or mTLS.

// serveEnv is what serve needs besides Temporal.
func serveEnv(more map[string]string) func(string) string {
	env := map[string]string{"DATABASE_URL": "postgres://db/paywatch", "PAYWATCH_MASTER_KEY": "mk_0123456789abcdefghijklmnop"}
	for k, v := range more {
		env[k] = v
	}
	return envOf(env)
}

// writeFile writes a test file and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

const testProfiles = `
[profile.default]
address = "localhost:7233"

[profile.prod]
address = "shop.a1b2c.tmprl.cloud:7233"
namespace = "shop.a1b2c"
api_key = "profile-key-c4f1"
`

// loadOptions loads mode's configuration, validates it and returns the
// client options for its Temporal address.
func loadOptions(t *testing.T, mode Mode, getenv func(string) string) (Config, client.Options) {
	t.Helper()
	cfg, err := LoadConfig(mode, getenv)
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	opts, err := temporalClientOptions(cfg, cfg.TemporalAddress, nil, nil)
	require.NoError(t, err)
	return cfg, opts
}

func TestTemporalClientProfileFromFile(t *testing.T) {
	file := writeFile(t, t.TempDir(), "temporal.toml", testProfiles)
	cfg, opts := loadOptions(t, ModeServe, serveEnv(map[string]string{"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "prod"}))
	assert.Equal(t, "shop.a1b2c.tmprl.cloud:7233", cfg.TemporalAddress)
	assert.Equal(t, "shop.a1b2c", cfg.TemporalNamespace)
	assert.Equal(t, "shop.a1b2c.tmprl.cloud:7233", opts.HostPort)
	assert.Equal(t, "shop.a1b2c", opts.Namespace)
	assert.NotNil(t, opts.Credentials, "the profile's API key is sent")
	assert.NotNil(t, opts.ConnectionOptions.TLS, "an API key turns TLS on")
	assert.Equal(t, `TLS, API key, profile "prod" of `+file, cfg.Temporal.String())

	// Without TEMPORAL_PROFILE, the default profile.
	cfg, opts = loadOptions(t, ModeWorker, serveEnv(map[string]string{"TEMPORAL_CONFIG_FILE": file}))
	assert.Equal(t, "localhost:7233", cfg.TemporalAddress)
	assert.Equal(t, "default", cfg.TemporalNamespace)
	assert.Nil(t, opts.Credentials)
	assert.Nil(t, opts.ConnectionOptions.TLS)
}

func TestTemporalClientEnvOverridesProfile(t *testing.T) {
	file := writeFile(t, t.TempDir(), "temporal.toml", testProfiles)
	cfg, opts := loadOptions(t, ModeServe, serveEnv(map[string]string{
		"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "prod",
		"TEMPORAL_ADDRESS": "temporal.internal:7233", "TEMPORAL_NAMESPACE": "shop", "TEMPORAL_TLS": "false",
	}))
	assert.Equal(t, "temporal.internal:7233", cfg.TemporalAddress)
	assert.Equal(t, "shop", cfg.TemporalNamespace)
	assert.NotNil(t, opts.Credentials, "the profile's key is kept")
	assert.True(t, opts.ConnectionOptions.TLSDisabled, "TEMPORAL_TLS=false wins over the key's TLS")
	assert.False(t, cfg.Temporal.TLS())
}

// The Temporal CLI's default file is read outside dev. paywatch dev reads
// a file only when TEMPORAL_PROFILE or TEMPORAL_CONFIG_FILE says so: a
// developer's profile must not replace dev's embedded server.
func TestTemporalClientDefaultFile(t *testing.T) {
	home := t.TempDir()
	writeFile(t, home, ".config/temporalio/temporal.toml", testProfiles)
	env := map[string]string{"HOME": home}
	if defaultTemporalConfigFile(envOf(env)) != filepath.Join(home, ".config/temporalio/temporal.toml") {
		t.Skip("the user config dir is not under $HOME/.config here")
	}
	cfg, _ := loadOptions(t, ModeServe, serveEnv(env))
	assert.Equal(t, "localhost:7233", cfg.TemporalAddress)

	dev, err := LoadConfig(ModeDev, envOf(env))
	require.NoError(t, err)
	require.NoError(t, dev.Validate())
	assert.True(t, dev.EmbeddedTemporal())

	env["TEMPORAL_PROFILE"] = "prod"
	dev, err = LoadConfig(ModeDev, envOf(env))
	require.NoError(t, err)
	assert.False(t, dev.EmbeddedTemporal(), "a named profile points dev at that server")
	assert.Equal(t, "shop.a1b2c.tmprl.cloud:7233", dev.TemporalAddress)
}

func TestTemporalClientAPIKey(t *testing.T) {
	cfg, opts := loadOptions(t, ModeWorker, serveEnv(map[string]string{
		"TEMPORAL_ADDRESS": "shop.a1b2c.tmprl.cloud:7233", "TEMPORAL_API_KEY": "env-key-9d2e",
	}))
	assert.NotNil(t, opts.Credentials)
	require.NotNil(t, opts.ConnectionOptions.TLS)
	assert.Equal(t, "shop.a1b2c.tmprl.cloud:7233, namespace default, TLS, API key", temporalWhere(cfg, opts.HostPort))

	// dev without an address starts its own server and connects plainly,
	// whatever key is set.
	dev, err := LoadConfig(ModeDev, envOf(map[string]string{"TEMPORAL_API_KEY": "env-key-9d2e"}))
	require.NoError(t, err)
	require.True(t, dev.EmbeddedTemporal())
	opts, err = temporalClientOptions(dev, "127.0.0.1:7233", nil, nil)
	require.NoError(t, err)
	assert.Nil(t, opts.Credentials)
	assert.Nil(t, opts.ConnectionOptions.TLS)
	assert.Equal(t, "127.0.0.1:7233", opts.HostPort)
}

func TestTemporalClientTLSFiles(t *testing.T) {
	pki := newTestPKI(t)
	cfg, opts := loadOptions(t, ModeServe, serveEnv(map[string]string{
		"TEMPORAL_ADDRESS":                 "temporal.internal:7233",
		"TEMPORAL_TLS_CLIENT_CERT_PATH":    pki.clientCert,
		"TEMPORAL_TLS_CLIENT_KEY_PATH":     pki.clientKey,
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH": pki.ca,
		"TEMPORAL_TLS_SERVER_NAME":         "temporal.test",
	}))
	require.NotNil(t, opts.ConnectionOptions.TLS)
	assert.Len(t, opts.ConnectionOptions.TLS.Certificates, 1)
	assert.NotNil(t, opts.ConnectionOptions.TLS.RootCAs)
	assert.Equal(t, "temporal.test", opts.ConnectionOptions.TLS.ServerName)
	assert.Nil(t, opts.Credentials)
	assert.Equal(t, "TLS, no API key", cfg.Temporal.String())
}

func TestTemporalClientConfigErrors(t *testing.T) {
	dir := t.TempDir()
	pki := newTestPKI(t)
	profiles := writeFile(t, dir, "temporal.toml", testProfiles)
	broken := writeFile(t, dir, "broken.toml", "[profile.default]\naddress = \"t:7233\"\napi_key = sekrit-b7e1\n")
	badProfileCert := writeFile(t, dir, "badcert.toml", "[profile.prod]\naddress = \"t:7233\"\n[profile.prod.tls]\nclient_cert_path = \""+filepath.Join(dir, "gone.pem")+"\"\nclient_key_path = \""+pki.clientKey+"\"\n")
	missing := filepath.Join(dir, "missing.pem")
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no address", nil, "TEMPORAL_ADDRESS is required for paywatch serve (or an address in a Temporal CLI profile: TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE; none read)"},
		{"profile without address", map[string]string{"TEMPORAL_CONFIG_FILE": writeFile(t, dir, "noaddr.toml", "[profile.default]\nnamespace = \"x\"\n")},
			`TEMPORAL_ADDRESS is required for paywatch serve (or an address in a Temporal CLI profile: TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE; profile "default" of ` + filepath.Join(dir, "noaddr.toml") + " has none)"},
		{"missing cert", map[string]string{"TEMPORAL_ADDRESS": "t:7233", "TEMPORAL_TLS_CLIENT_CERT_PATH": missing, "TEMPORAL_TLS_CLIENT_KEY_PATH": pki.clientKey},
			"TEMPORAL_TLS_CLIENT_CERT_PATH: cannot read " + missing + ": no such file or directory"},
		{"missing CA", map[string]string{"TEMPORAL_ADDRESS": "t:7233", "TEMPORAL_TLS_SERVER_CA_CERT_PATH": missing},
			"TEMPORAL_TLS_SERVER_CA_CERT_PATH: cannot read " + missing + ": no such file or directory"},
		{"key without cert", map[string]string{"TEMPORAL_ADDRESS": "t:7233", "TEMPORAL_TLS_CLIENT_KEY_PATH": pki.clientKey},
			"Temporal TLS (TEMPORAL_TLS_CLIENT_KEY_PATH): invalid TLS config: if either client cert or key path is present, other must be present too"},
		{"key is no key", map[string]string{"TEMPORAL_ADDRESS": "t:7233", "TEMPORAL_TLS_CLIENT_CERT_PATH": pki.clientCert, "TEMPORAL_TLS_CLIENT_KEY_PATH": pki.ca},
			"Temporal TLS (TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH): invalid TLS config: failed loading client cert/key path: tls: found a certificate rather than a key"},
		{"profile's cert", map[string]string{"TEMPORAL_CONFIG_FILE": badProfileCert, "TEMPORAL_PROFILE": "prod"},
			`tls.client_cert_path of profile "prod" in ` + badProfileCert + ": cannot read " + filepath.Join(dir, "gone.pem") + ": no such file or directory"},
		{"unknown profile", map[string]string{"TEMPORAL_CONFIG_FILE": profiles, "TEMPORAL_PROFILE": "staging"},
			`TEMPORAL_PROFILE: no profile "staging" in ` + profiles + " (it has: default, prod)"},
		{"no config file", map[string]string{"TEMPORAL_CONFIG_FILE": missing},
			"TEMPORAL_CONFIG_FILE: cannot read " + missing + ": no such file or directory"},
		{"bad TOML", map[string]string{"TEMPORAL_CONFIG_FILE": broken},
			"TEMPORAL_CONFIG_FILE " + broken + ": not valid TOML at line 3, column 11 (after key profile.default.api_key)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := LoadConfig(ModeServe, serveEnv(c.env))
			require.NoError(t, err, "the commands that do not connect to Temporal still run")
			err = cfg.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "sekrit", "the parser's message quotes the text it stumbled on")
			// And paywatch serve stops with it, exit 2.
			var out strings.Builder
			assert.Equal(t, 2, run(context.Background(), []string{"serve"}, serveEnv(c.env), &out, &out))
			assert.Contains(t, out.String(), c.want)
		})
	}
	// dev too, when a profile it was told to read is not there.
	dev, err := LoadConfig(ModeDev, envOf(map[string]string{"TEMPORAL_CONFIG_FILE": profiles, "TEMPORAL_PROFILE": "staging"}))
	require.NoError(t, err)
	assert.ErrorContains(t, dev.Validate(), `TEMPORAL_PROFILE: no profile "staging"`)
}

// The API key and the key file never reach a log line, an error or a
// printed Config or client.Options: paywatch dev against an external
// server, with a distinctive key and debug logs, then the errors of a
// failed connection and of a bad key file.
func TestTemporalAPIKeyNeverLogged(t *testing.T) {
	const key = "tk-3f9a1c-NEVER-PRINT"
	// The server refuses every call without the key: paywatch sends it.
	srv := startTestTemporal(t, devtemporal.Options{APIKey: key, SearchAttributes: workflows.SearchAttributes})
	cfg := devConfig(t, t.TempDir())
	env := map[string]string{"TEMPORAL_ADDRESS": srv.FrontendAddr(), "TEMPORAL_API_KEY": key, "TEMPORAL_TLS": "false"}
	cfg.Temporal = loadTemporalConnection(ModeDev, envOf(env))
	cfg.TemporalAddress, cfg.LogLevel = srv.FrontendAddr(), "debug"
	m, out := startMain(t, cfg, nil)
	require.NoError(t, m.Close())
	logs := out.String()
	assert.Contains(t, logs, "connecting to Temporal")
	assert.Contains(t, logs, "tls=false apiKey=true")
	assert.Contains(t, logs, "  Temporal     "+srv.FrontendAddr()+", namespace default, plaintext, API key\n", "the banner")

	pki := newTestPKI(t)
	opts, err := temporalClientOptions(cfg, cfg.TemporalAddress, nil, nil)
	require.NoError(t, err)
	var jsonLog strings.Builder
	slog.New(slog.NewJSONHandler(&jsonLog, nil)).Info("config", "config", cfg)
	printed := []string{logs, jsonLog.String(), fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg.Temporal), fmt.Sprintf("%v %+v %#v", opts, opts, opts)}

	// A connection that fails: paywatch dev against a port nobody serves.
	env["TEMPORAL_ADDRESS"] = freeAddr(t)
	for k, v := range map[string]string{"DATABASE_URL": cfg.DatabaseURL, "PAYWATCH_DATA_DIR": t.TempDir(), "PAYWATCH_API_ADDR": "127.0.0.1:0",
		"PAYWATCH_PAY_ADDR": "127.0.0.1:0", "PAYWATCH_METRICS_ADDR": "off", "PAYWATCH_LOG_LEVEL": "debug"} {
		env[k] = v
	}
	var errOut strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	assert.Equal(t, 1, run(ctx, []string{"dev"}, envOf(env), &errOut, &errOut))
	assert.Contains(t, errOut.String(), "connect to Temporal at "+env["TEMPORAL_ADDRESS"]+", namespace default, plaintext, API key: ")
	// A key file that is no key: its contents are not shown.
	env["TEMPORAL_TLS_CLIENT_CERT_PATH"], env["TEMPORAL_TLS_CLIENT_KEY_PATH"] = pki.ca, pki.clientKey
	delete(env, "TEMPORAL_TLS")
	keyPEM, err := os.ReadFile(pki.clientKey)
	require.NoError(t, err)
	assert.Equal(t, 2, run(ctx, []string{"worker"}, serveEnv(env), &errOut, &errOut))
	assert.Contains(t, errOut.String(), "tls: private key does not match public key")
	printed = append(printed, errOut.String())

	for _, s := range printed {
		assert.NotContains(t, s, key)
		assert.NotContains(t, s, strings.Split(string(keyPEM), "\n")[1])
	}
}

// On a real server that requires a key, the key TEMPORAL_API_KEY names
// is accepted and another one refused.
func TestTemporalClientAPIKeyOnRealServer(t *testing.T) {
	srv := startTestTemporal(t, devtemporal.Options{APIKey: "real-key-07c3"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for key, ok := range map[string]bool{"real-key-07c3": true, "wrong-key": false} {
		_, opts := loadOptions(t, ModeWorker, serveEnv(map[string]string{
			"TEMPORAL_ADDRESS": srv.FrontendAddr(), "TEMPORAL_API_KEY": key, "TEMPORAL_TLS": "false",
		}))
		c, err := client.DialContext(ctx, opts)
		if err == nil {
			_, err = c.ListOpenWorkflow(ctx, &workflowservice.ListOpenWorkflowExecutionsRequest{Namespace: "default"})
			c.Close()
		}
		if ok {
			assert.NoError(t, err, key)
		} else {
			var denied *serviceerror.PermissionDenied
			assert.ErrorAs(t, err, &denied, key)
		}
	}
}

// The key goes to the server in the authorization header, over TLS with
// the client certificate, checked against the CA the variables name.
func TestTemporalClientSendsAPIKeyOverMutualTLS(t *testing.T) {
	pki := newTestPKI(t)
	seen := make(chan [2]string, 16)
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(pki.serverTLS)), grpc.UnaryInterceptor(
		func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			p, _ := peer.FromContext(ctx)
			state := p.AuthInfo.(credentials.TLSInfo).State
			select {
			case seen <- [2]string{strings.Join(md.Get("authorization"), ","), state.PeerCertificates[0].Subject.CommonName}:
			default:
			}
			return h(ctx, req)
		}))
	workflowservice.RegisterWorkflowServiceServer(s, fakeFrontend{})
	hs := health.NewServer()
	hs.SetServingStatus("temporal.api.workflowservice.v1.WorkflowService", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s, hs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)

	_, opts := loadOptions(t, ModeServe, serveEnv(map[string]string{
		"TEMPORAL_ADDRESS":                 ln.Addr().String(),
		"TEMPORAL_API_KEY":                 "wire-key-51b0",
		"TEMPORAL_TLS_CLIENT_CERT_PATH":    pki.clientCert,
		"TEMPORAL_TLS_CLIENT_KEY_PATH":     pki.clientKey,
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH": pki.ca,
		"TEMPORAL_TLS_SERVER_NAME":         "temporal.test",
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
	require.NoError(t, err)
	got := <-seen
	assert.Equal(t, "Bearer wire-key-51b0", got[0])
	assert.Equal(t, "paywatch-worker", got[1], "the client certificate")
}

// fakeFrontend answers the one call a client makes when it dials.
type fakeFrontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
}

func (fakeFrontend) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{}, nil
}

// testPKI is a CA, the server certificate it signs for temporal.test, and
// a client certificate (CN paywatch-worker), as PEM files.
type testPKI struct {
	ca, clientCert, clientKey string
	serverTLS                 *tls.Config
}

var (
	testPKIOnce sync.Once
	testPKIDir  string
	testPKIConf *tls.Config
)

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	testPKIOnce.Do(func() {
		dir, err := os.MkdirTemp("", "paywatch-pki")
		if err != nil {
			panic(err)
		}
		testPKIDir = dir
		caKey, caCert, caDER := newCert(nil, nil, "paywatch test CA", true)
		writePEM := func(name, typ string, der []byte) string {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
				panic(err)
			}
			return path
		}
		writePEM("ca.pem", "CERTIFICATE", caDER)
		srvKey, _, srvDER := newCert(caCert, caKey, "temporal.test", false)
		cliKey, _, cliDER := newCert(caCert, caKey, "paywatch-worker", false)
		writePEM("client.pem", "CERTIFICATE", cliDER)
		cliKeyDER, _ := x509.MarshalECPrivateKey(cliKey)
		writePEM("client.key", "EC PRIVATE KEY", cliKeyDER)
		pool := x509.NewCertPool()
		pool.AddCert(caCert)
		testPKIConf = &tls.Config{
			Certificates: []tls.Certificate{{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}},
			ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: pool,
		}
	})
	return testPKI{ca: filepath.Join(testPKIDir, "ca.pem"), clientCert: filepath.Join(testPKIDir, "client.pem"),
		clientKey: filepath.Join(testPKIDir, "client.key"), serverTLS: testPKIConf}
}

// newCert makes a key and a certificate for name, signed by parent (self-
// signed when nil).
func newCert(parent *x509.Certificate, parentKey *ecdsa.PrivateKey, name string, ca bool) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: ca, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		panic(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return key, cert, der
}
