package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
)

func TestTemporalServeConfig(t *testing.T) {
	cfg, err := loadTemporalServeConfig(envOf(map[string]string{
		"PAYWATCH_TEMPORAL_DATABASE_URL": "postgres://u:secret@db.internal/temporal?sslmode=require",
	}))
	require.NoError(t, err)
	assert.Equal(t, "postgres://u:secret@db.internal/temporal_visibility?sslmode=require", cfg.VisibilityURL)
	assert.Equal(t, "127.0.0.1:7233", cfg.ListenAddr)
	assert.Equal(t, "127.0.0.1:8233", cfg.UIAddr)
	assert.Equal(t, "default", cfg.Namespace)
	assert.Empty(t, cfg.MetricsAddr, "off unless set, as outside dev")
	assert.Equal(t, DefaultTemporalHistoryCacheSize, cfg.HistoryCacheSize)

	cfg, err = loadTemporalServeConfig(envOf(map[string]string{
		"PAYWATCH_TEMPORAL_DATABASE_URL": "postgres://u@db/t", "PAYWATCH_TEMPORAL_UI_ADDR": "off",
		"PAYWATCH_TEMPORAL_LISTEN_ADDR": "0.0.0.0:7233", "TEMPORAL_NAMESPACE": "shop", "PAYWATCH_METRICS_ADDR": "0.0.0.0:8000",
	}))
	require.NoError(t, err)
	assert.Empty(t, cfg.UIAddr)
	assert.Equal(t, "0.0.0.0:7233", cfg.ListenAddr)
	assert.Equal(t, "shop", cfg.Namespace)
	assert.Equal(t, "0.0.0.0:8000", cfg.MetricsAddr)

	// Every problem is named at once.
	_, err = loadTemporalServeConfig(envOf(map[string]string{"PAYWATCH_TEMPORAL_LISTEN_ADDR": "7233", "PAYWATCH_LOG_LEVEL": "loud"}))
	require.Error(t, err)
	for _, want := range []string{"PAYWATCH_TEMPORAL_DATABASE_URL is required", "PAYWATCH_TEMPORAL_LISTEN_ADDR", "PAYWATCH_LOG_LEVEL"} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = loadTemporalServeConfig(envOf(map[string]string{"PAYWATCH_TEMPORAL_DATABASE_URL": "postgres://u@db/"}))
	assert.ErrorContains(t, err, "names no database")

	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"temporal"}, envOf(nil), &out, &errOut))
	assert.Contains(t, errOut.String(), "Usage: paywatch temporal serve")
	errOut.Reset()
	assert.Equal(t, 2, run(context.Background(), []string{"temporal", "serve"}, envOf(nil), &out, &errOut))
	assert.Contains(t, errOut.String(), "PAYWATCH_TEMPORAL_DATABASE_URL is required")
}

// The TLS variables and the API key: a certificate needs its key, a client
// CA needs both, every file must be readable, and every problem is named
// at once.
func TestTemporalServeTLSConfig(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeSelfSigned(t, cert, key)
	otherCert := writeSelfSigned(t, filepath.Join(dir, "other.pem"), filepath.Join(dir, "other-key.pem"))
	env := func(kv ...string) func(string) string {
		m := map[string]string{"PAYWATCH_TEMPORAL_DATABASE_URL": "postgres://u@db/temporal"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return envOf(m)
	}
	const apiKey = "pwk_0123456789abcdef"
	cfg, err := loadTemporalServeConfig(env("PAYWATCH_TEMPORAL_TLS_CERT_PATH", cert, "PAYWATCH_TEMPORAL_TLS_KEY_PATH", key,
		"PAYWATCH_TEMPORAL_TLS_CLIENT_CA_PATH", otherCert, "PAYWATCH_TEMPORAL_API_KEY", apiKey))
	require.NoError(t, err)
	assert.Equal(t, temporalServeConfig{TLSCertPath: cert, TLSKeyPath: key, TLSClientCAPath: otherCert, APIKey: apiKey},
		temporalServeConfig{TLSCertPath: cfg.TLSCertPath, TLSKeyPath: cfg.TLSKeyPath, TLSClientCAPath: cfg.TLSClientCAPath, APIKey: cfg.APIKey})
	assert.Equal(t, "mutual TLS (client certificates from "+otherCert+"), API key required", cfg.security())
	assert.NotContains(t, cfg.security(), apiKey)
	cfg, err = loadTemporalServeConfig(env())
	require.NoError(t, err)
	assert.Equal(t, "no TLS, no API key", cfg.security(), "off unless set")

	for name, c := range map[string]struct {
		env  []string
		want []string
	}{
		"certificate without key": {[]string{"PAYWATCH_TEMPORAL_TLS_CERT_PATH", cert}, []string{"set both or neither"}},
		"key without certificate": {[]string{"PAYWATCH_TEMPORAL_TLS_KEY_PATH", key}, []string{"set both or neither"}},
		"client CA without them": {[]string{"PAYWATCH_TEMPORAL_TLS_CLIENT_CA_PATH", cert},
			[]string{"PAYWATCH_TEMPORAL_TLS_CLIENT_CA_PATH needs PAYWATCH_TEMPORAL_TLS_CERT_PATH and PAYWATCH_TEMPORAL_TLS_KEY_PATH"}},
		"key of another certificate": {[]string{"PAYWATCH_TEMPORAL_TLS_CERT_PATH", otherCert, "PAYWATCH_TEMPORAL_TLS_KEY_PATH", key},
			[]string{"are not a PEM certificate and its key"}},
		"every problem at once": {[]string{"PAYWATCH_TEMPORAL_TLS_CERT_PATH", filepath.Join(dir, "gone.pem"), "PAYWATCH_TEMPORAL_TLS_KEY_PATH", key,
			"PAYWATCH_TEMPORAL_TLS_CLIENT_CA_PATH", key, "PAYWATCH_TEMPORAL_API_KEY", "short"}, []string{
			"PAYWATCH_TEMPORAL_TLS_CERT_PATH: open " + filepath.Join(dir, "gone.pem") + ": no such file or directory",
			"PAYWATCH_TEMPORAL_TLS_CLIENT_CA_PATH: " + key + " holds no PEM certificate",
			"PAYWATCH_TEMPORAL_API_KEY must be 16 or more printable ASCII characters without spaces"}},
		"a key with a space": {[]string{"PAYWATCH_TEMPORAL_API_KEY", "pwk_0123456789 abcdef"}, []string{"PAYWATCH_TEMPORAL_API_KEY must be"}},
	} {
		_, err := loadTemporalServeConfig(env(c.env...))
		require.Error(t, err, name)
		for _, want := range c.want {
			assert.Contains(t, err.Error(), want, name)
		}
	}
}

// `paywatch temporal serve` with mutual TLS and an API key from its
// variables: a client with the server's CA, a client certificate and the
// key works; the same client without the key is refused.
func TestTemporalServeMutualTLSAndAPIKey(t *testing.T) {
	dir := t.TempDir()
	serverCert, serverKey := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	clientCert, clientKey := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	writeSelfSigned(t, serverCert, serverKey)
	writeSelfSigned(t, clientCert, clientKey) // its own CA: the client CA bundle
	url := storetest.NewDatabaseURL(t)
	visibility, err := visibilityURL(url)
	require.NoError(t, err)
	t.Cleanup(func() { dropDatabase(t, visibility) })
	const apiKey = "pwk_0123456789abcdef"
	addr := freeAddr(t)
	env := envOf(map[string]string{
		"PAYWATCH_TEMPORAL_DATABASE_URL": url, "PAYWATCH_TEMPORAL_LISTEN_ADDR": addr, "PAYWATCH_TEMPORAL_UI_ADDR": "off",
		"PAYWATCH_TEMPORAL_TLS_CERT_PATH": serverCert, "PAYWATCH_TEMPORAL_TLS_KEY_PATH": serverKey,
		"PAYWATCH_TEMPORAL_TLS_CLIENT_CA_PATH": clientCert, "PAYWATCH_TEMPORAL_API_KEY": apiKey,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	go func() { code <- run(ctx, []string{"temporal", "serve"}, env, io.Discard, io.Discard) }()

	pemBytes, err := os.ReadFile(serverCert)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(pemBytes))
	cert, err := tls.LoadX509KeyPair(clientCert, clientKey)
	require.NoError(t, err)
	conn := client.ConnectionOptions{TLS: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	var c client.Client
	require.Eventually(t, func() bool {
		c, err = client.Dial(client.Options{HostPort: addr, ConnectionOptions: conn, Credentials: client.NewAPIKeyStaticCredentials(apiKey)})
		return err == nil
	}, 2*time.Minute, 250*time.Millisecond, "the server comes up over mutual TLS")
	defer c.Close()
	_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	require.NoError(t, err)

	keyless, err := client.Dial(client.Options{HostPort: addr, ConnectionOptions: conn})
	require.NoError(t, err)
	defer keyless.Close()
	_, err = keyless.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	var denied *serviceerror.PermissionDenied
	assert.ErrorAs(t, err, &denied)

	cancel()
	select {
	case got := <-code:
		assert.Zero(t, got)
	case <-time.After(time.Minute):
		t.Fatal("paywatch temporal serve did not stop")
	}
}

// dropDatabase drops the database of raw, which a test's server created.
func dropDatabase(t *testing.T, raw string) {
	u, err := neturl.Parse(raw)
	require.NoError(t, err)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, storetest.ServerURL())
	if err != nil {
		t.Logf("drop %s: %v", store.Redact(raw), err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Logf("drop %s: %v", store.Redact(raw), err)
	}
}

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and its
// key as PEM.
func writeSelfSigned(t *testing.T, certPath, keyPath string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "temporal"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	return certPath
}

// One `paywatch temporal serve` per database: a second waits for the lock,
// then gives up; the lock goes with the first one's connection.
func TestTemporalServeLock(t *testing.T) {
	url := storetest.NewDatabase(t)
	ctx := context.Background()
	first, err := lockTemporalDatabase(ctx, url)
	require.NoError(t, err)
	defer func(d time.Duration) { temporalLockWait = d }(temporalLockWait)
	temporalLockWait = time.Second
	_, err = lockTemporalDatabase(ctx, url)
	assert.ErrorContains(t, err, "another paywatch temporal serve is running on "+store.Redact(url))
	require.NoError(t, first.Close(ctx))
	second, err := lockTemporalDatabase(ctx, url)
	require.NoError(t, err)
	defer second.Close(ctx)

	// A server whose lock connection is gone stops (and its restart waits
	// for the lock again).
	defer func(d time.Duration) { temporalLockCheck = d }(temporalLockCheck)
	temporalLockCheck = 50 * time.Millisecond
	pid := second.PgConn().PID()
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid)
	require.NoError(t, err)
	assert.Error(t, holdLock(ctx, second))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	assert.NoError(t, holdLock(cctx, admin), "a server that stops gives the lock back quietly")
}

func TestDevnetServeOutput(t *testing.T) {
	out := devnetEnv([]devnet.NetworkStatus{
		{Network: "TRC20", RPCURL: "127.0.0.1:5000", Tokens: map[paywatch.Token]string{"USDT": devnet.TronUSDTContract}},
		{Network: "ERC20", RPCURL: "http://127.0.0.1:5001", Tokens: map[paywatch.Token]string{"USDT": "0xT", "USDC": "0xC"}},
	}, "a block every 1s", "127.0.0.1:8090")
	assert.Equal(t, map[string]string{
		"PAYWATCH_TRC20_RPC_URL":       "127.0.0.1:5000",
		"PAYWATCH_TRC20_USDT_CONTRACT": devnet.TronUSDTContract,
		"PAYWATCH_ERC20_RPC_URL":       "http://127.0.0.1:5001",
		"PAYWATCH_ERC20_USDT_CONTRACT": "0xT",
		"PAYWATCH_ERC20_USDC_CONTRACT": "0xC",
	}, parseEnvLines(out), "an env file for paywatch serve, api and worker")
	assert.Contains(t, out, "# paywatch devnet serve: devnet chains (a block every 1s); devnet endpoints at http://127.0.0.1:8090/devnet")

	// The devnet endpoints answer loopback hosts only (no DNS rebinding).
	h := loopbackOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for host, want := range map[string]int{
		"127.0.0.1:8090": http.StatusTeapot, "localhost:8090": http.StatusTeapot, "[::1]:8090": http.StatusTeapot,
		"evil.example:8090": http.StatusNotFound, "10.0.0.1:8090": http.StatusNotFound,
	} {
		req := httptest.NewRequest("GET", "/devnet", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, want, rec.Code, host)
	}
}
