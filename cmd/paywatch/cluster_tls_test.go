package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/paywatch/paywatch/workflows"
)

// clusterTLS is how TestCluster's processes reach Temporal (issue 42):
// `paywatch temporal serve` with a server certificate, mutual TLS against
// a client CA, and an API key; the api and worker replicas with the
// server's CA, a client certificate and the key, as TEMPORAL_* variables.
type clusterTLS struct {
	serverCert, serverKey string
	clientCert, clientKey string
	apiKey                string
	// payloadKey is PAYWATCH_PAYLOAD_KEY, and the previous one, which
	// sealed nothing here but stays readable, PAYWATCH_PAYLOAD_OLD_KEYS.
	payloadKey, oldPayloadKey []byte
}

func newClusterTLS(t *testing.T) clusterTLS {
	dir := t.TempDir()
	c := clusterTLS{
		serverCert: filepath.Join(dir, "temporal.pem"), serverKey: filepath.Join(dir, "temporal-key.pem"),
		clientCert: filepath.Join(dir, "client.pem"), clientKey: filepath.Join(dir, "client-key.pem"),
		apiKey:     "pwk_cluster_" + strings.ToLower(rand.Text()),
		payloadKey: make([]byte, workflows.PayloadKeySize), oldPayloadKey: make([]byte, workflows.PayloadKeySize),
	}
	_, _ = rand.Read(c.payloadKey)
	_, _ = rand.Read(c.oldPayloadKey)
	writeSelfSigned(t, c.serverCert, c.serverKey)
	// The client certificate is its own CA: the server's client CA bundle.
	writeSelfSigned(t, c.clientCert, c.clientKey)
	return c
}

// serverEnv is the temporal role's TLS and key variables.
func (c clusterTLS) serverEnv() map[string]string {
	return map[string]string{
		"PAYWATCH_TEMPORAL_TLS_CERT_PATH": c.serverCert, "PAYWATCH_TEMPORAL_TLS_KEY_PATH": c.serverKey,
		"PAYWATCH_TEMPORAL_TLS_CLIENT_CA_PATH": c.clientCert, "PAYWATCH_TEMPORAL_API_KEY": c.apiKey,
	}
}

// clientEnv is the api and worker roles' TEMPORAL_* variables.
func (c clusterTLS) clientEnv() map[string]string {
	return map[string]string{
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH": c.serverCert,
		"TEMPORAL_TLS_CLIENT_CERT_PATH":    c.clientCert, "TEMPORAL_TLS_CLIENT_KEY_PATH": c.clientKey,
		"TEMPORAL_API_KEY": c.apiKey, "TEMPORAL_TLS": "true",
		"PAYWATCH_PAYLOAD_KEY":         base64.StdEncoding.EncodeToString(c.payloadKey),
		"PAYWATCH_PAYLOAD_OLD_KEYS":    hex.EncodeToString(c.oldPayloadKey),
		"PAYWATCH_TEMPORAL_UI_ORIGINS": "https://cloud.temporal.io",
	}
}

func (c clusterTLS) tlsConfig(t testing.TB) *tls.Config {
	t.Helper()
	pemBytes, err := os.ReadFile(c.serverCert)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(pemBytes))
	cert, err := tls.LoadX509KeyPair(c.clientCert, c.clientKey)
	require.NoError(t, err)
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// clientOptions are the test's own client's: the replicas' TLS and key,
// and their payload key, so it reads what the workers sealed.
func (c clusterTLS) clientOptions(t testing.TB, addr string) client.Options {
	codec, err := workflows.NewPayloadCodec(c.payloadKey)
	require.NoError(t, err)
	dc := workflows.NewDataConverter(codec)
	return client.Options{
		HostPort: addr, ConnectionOptions: client.ConnectionOptions{TLS: c.tlsConfig(t)},
		Credentials:   client.NewAPIKeyStaticCredentials(c.apiKey),
		DataConverter: dc, FailureConverter: workflows.NewFailureConverter(dc),
	}
}

// httpClient reaches the Web UI, which serves HTTPS and asks for a client
// certificate too.
func (c clusterTLS) httpClient(t testing.TB) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: c.tlsConfig(t)}}
}

// assertRefusedWithout starts a worker configured as the others but for
// what drop removes, and asserts it never gets to run: Temporal refuses
// it before it polls anything, and it says so (want).
func (c clusterTLS) assertRefusedWithout(ctx context.Context, t *testing.T, bin string, env map[string]string, want string, drop ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "worker")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
	for k, v := range env {
		skip := false
		for _, d := range drop {
			skip = skip || k == d
		}
		if !skip {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "a worker without %v ran:\n%s", drop, out)
	assert.NotEqual(t, context.DeadlineExceeded, ctx.Err(), "the worker without %v hung instead of stopping:\n%s", drop, out)
	assert.Contains(t, string(out), want, "%v", drop)
	assert.NotContains(t, string(out), "paywatch started", "%v", drop)
	assert.NotContains(t, string(out), c.apiKey, "the key never reaches a log")
}
