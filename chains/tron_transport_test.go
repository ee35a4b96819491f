package chains_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/chains/devnet"
)

// The TRC20 client speaks to a node over gRPC or the FullNode HTTP API,
// each in plaintext or over TLS, as the endpoint's URL says. The devnet's
// Tron node serves both wire formats; TLS is a terminator in front of it,
// as hosted providers put one in front of java-tron.

// tronTransports are the URL forms of a TRC20 endpoint.
var tronTransports = []string{"grpc", "grpcs", "http", "https"}

// testCert returns a self-signed certificate for 127.0.0.1 and a pool that
// trusts it.
func testCert(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "paywatch test node"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// tlsTerminator accepts TLS (ALPN h2, as gRPC requires) on a loopback port
// and pipes the plaintext to backend (host:port). It returns its address.
func tlsTerminator(t testing.TB, backend string, cert tls.Certificate) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, err := net.Dial("tcp", backend)
				if err != nil {
					return
				}
				defer b.Close()
				go func() { _, _ = io.Copy(b, c); b.Close() }()
				_, _ = io.Copy(c, b)
			}()
		}
	}()
	return ln.Addr().String()
}

// tronEndpoint returns the URL of d's TRC20 node over transport, and the
// TLS configuration that trusts it.
func tronEndpoint(t testing.TB, d *devnet.Devnet, transport string) (string, *tls.Config) {
	t.Helper()
	st, ok := d.Network(paywatch.TRC20)
	require.True(t, ok)
	switch transport {
	case "grpc":
		return "grpc://" + st.RPCURL, nil
	case "http":
		return st.HTTPURL, nil
	case "grpcs":
		cert, pool := testCert(t)
		return "grpcs://" + tlsTerminator(t, st.RPCURL, cert), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	case "https":
		cert, pool := testCert(t)
		up, err := url.Parse(st.HTTPURL)
		require.NoError(t, err)
		srv := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(up))
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv.URL, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	t.Fatalf("unknown transport %q", transport)
	return "", nil
}

// dialTron returns a TRC20 client of urls.
func dialTron(t testing.TB, d *devnet.Devnet, tlsCfg *tls.Config, headers []http.Header, urls ...string) chains.Client {
	t.Helper()
	st, _ := d.Network(paywatch.TRC20)
	c, err := chains.Dial(context.Background(), chains.Config{
		Network: paywatch.TRC20, URLs: urls, Headers: headers, Contracts: st.Tokens, TLS: tlsCfg,
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// Every read of the client gives the same answers over each transport.
func TestTronTransports(t *testing.T) {
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{paywatch.TRC20}})
	n := paywatch.TRC20
	st, _ := d.Network(n)
	for _, transport := range tronTransports {
		t.Run(transport, func(t *testing.T) {
			ctx := ctxT(t)
			u, tlsCfg := tronEndpoint(t, d, transport)
			c := dialTron(t, d, tlsCfg, nil, u)
			to := newAddress(t, n)
			res, err := d.Transfer(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: to, Amount: "12.345678"})
			require.NoError(t, err)
			failed, err := d.TransferFailed(ctx, devnet.TransferRequest{Network: n, Token: anyToken(n), To: to, Amount: "1"})
			require.NoError(t, err)

			head, err := c.Head(ctx)
			require.NoError(t, err)
			assert.Equal(t, failed.BlockNumber, head)
			hash, err := c.BlockHash(ctx, res.BlockNumber)
			require.NoError(t, err)
			want := chains.Transfer{
				Network: n, Token: anyToken(n), Contract: st.Tokens[paywatch.USDT],
				TxHash: res.TxHash, BlockNumber: res.BlockNumber, BlockHash: hash,
				From: faucet(n), To: to, Amount: units(t, n, anyToken(n), "12.345678"),
			}
			ts, err := c.Transfers(ctx, res.BlockNumber, head)
			require.NoError(t, err)
			assert.Equal(t, []chains.Transfer{want}, ts, "the failed transfer does not count")
			byTx, found, err := c.TransactionTransfers(ctx, res.TxHash)
			require.NoError(t, err)
			assert.True(t, found)
			assert.Equal(t, []chains.Transfer{want}, byTx)
			_, found, err = c.TransactionTransfers(ctx, failed.TxHash)
			require.NoError(t, err)
			assert.False(t, found, "a failed transaction pays nothing")
			_, found, err = c.TransactionTransfers(ctx, missingHash(n))
			require.NoError(t, err)
			assert.False(t, found)
			byAddr, err := c.AddressTransfers(ctx, to, 0)
			require.NoError(t, err)
			assert.Equal(t, []chains.Transfer{want}, byAddr)
			genesis, err := c.BlockHash(ctx, 0)
			require.NoError(t, err)
			assert.Equal(t, chains.TronDevnetGenesisID, genesis, "block 0, whose number the HTTP API leaves out")
			_, err = c.BlockHash(ctx, head+1000)
			assert.ErrorIs(t, err, chains.ErrBlockNotFound)

			// A reorg shows through every transport alike.
			_, dropped, err := d.Reorg(ctx, n, int(head-res.BlockNumber)+1)
			require.NoError(t, err)
			assert.Contains(t, dropped, res.TxHash)
			_, found, err = c.TransactionTransfers(ctx, res.TxHash)
			require.NoError(t, err)
			assert.False(t, found)
			after, err := c.BlockHash(ctx, res.BlockNumber)
			require.NoError(t, err)
			assert.NotEqual(t, hash, after)
		})
	}
}

// One list of endpoints may mix transports; a dead one of either kind
// fails over to the other.
func TestTronFailoverAcrossTransports(t *testing.T) {
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{paywatch.TRC20}})
	ctx := ctxT(t)
	res, err := d.Transfer(ctx, devnet.TransferRequest{Network: paywatch.TRC20, Token: paywatch.USDT, To: newAddress(t, paywatch.TRC20), Amount: "1"})
	require.NoError(t, err)
	st, _ := d.Network(paywatch.TRC20)
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<html>502 Bad Gateway</html>", http.StatusBadGateway)
	}))
	defer broken.Close()
	https, tlsCfg := tronEndpoint(t, d, "https")
	for name, urls := range map[string][]string{
		"dead gRPC, then HTTP":   {"grpc://" + deadAddr(t), st.HTTPURL},
		"dead HTTP, then gRPC":   {"http://" + deadAddr(t), st.RPCURL},
		"HTTP 502, then gRPC":    {broken.URL, st.RPCURL},
		"dead grpcs, then https": {"grpcs://" + deadAddr(t), https},
	} {
		t.Run(name, func(t *testing.T) {
			c := dialTron(t, d, tlsCfg, nil, urls...)
			ts, err := c.Transfers(ctx, res.BlockNumber, res.BlockNumber)
			require.NoError(t, err)
			require.Len(t, ts, 1)
			assert.Equal(t, res.TxHash, ts[0].TxHash)
		})
	}
}

// TronGrid refuses a key over its rate with HTTP 403 (503 with a key) and
// {"Error": "The key exceeds the frequency limit(15), ..."}; the client
// takes either for a rate limit, fails over, and reports ErrRateLimited
// when every endpoint says so.
func TestTronHTTPRateLimit(t *testing.T) {
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{paywatch.TRC20}})
	ctx := ctxT(t)
	st, _ := d.Network(paywatch.TRC20)
	for _, status := range []int{http.StatusForbidden, http.StatusServiceUnavailable, http.StatusTooManyRequests} {
		limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"Error":"The key exceeds the frequency limit(15), and the query server is suspended for 30s"}`)
		}))
		defer limited.Close()
		only := dialTron(t, d, nil, nil, limited.URL)
		_, err := only.Head(ctx)
		assert.ErrorIs(t, err, chains.ErrRateLimited, "HTTP %d", status)
		both := dialTron(t, d, nil, nil, limited.URL, st.HTTPURL)
		_, err = both.Head(ctx)
		assert.NoError(t, err, "HTTP %d fails over", status)
	}
}

// Credentials: a node that wants a header gets it from the endpoint's
// configured headers (gRPC metadata or an HTTP header), and no key, from a
// header or from the URL, shows in an error or an endpoint's name.
func TestTronCredentialsReachTheNode(t *testing.T) {
	const key = "5e3c0ff1-7a2b-4c1d-9e8f-a0b1c2d3e4f5"
	d := startDevnet(t, devnet.Config{
		Networks:       []paywatch.Network{paywatch.TRC20},
		RequireHeaders: http.Header{"Tron-Pro-Api-Key": {key}},
	})
	ctx := ctxT(t)
	withKey := []http.Header{{"TRON-PRO-API-KEY": {key}}}
	wrongKey := []http.Header{{"TRON-PRO-API-KEY": {"wrong-" + key}}}
	for _, transport := range tronTransports {
		t.Run(transport, func(t *testing.T) {
			u, tlsCfg := tronEndpoint(t, d, transport)
			_, err := dialTron(t, d, tlsCfg, nil, u).Head(ctx)
			require.Error(t, err, "the node refuses a call without the key")
			_, err = dialTron(t, d, tlsCfg, wrongKey, u).Head(ctx)
			require.Error(t, err, "and one with a wrong key")
			_, err = dialTron(t, d, tlsCfg, withKey, u).Head(ctx)
			require.NoError(t, err, "the configured header reaches the node")
		})
	}
	// A refused call's error names the endpoint but not the key, whether
	// the key is in a header or in the URL's path (as QuickNode's is).
	st, _ := d.Network(paywatch.TRC20)
	var seen atomic.Value
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.URL.Path)
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"Error":"invalid key `+strings.TrimPrefix(r.URL.Path, "/")+`"}`)
	}))
	defer proxy.Close()
	c := dialTron(t, d, nil, append(wrongKey, wrongKey[0]), proxy.URL+"/"+key+"/", st.HTTPURL+"/no-such-base-"+key)
	_, err := c.Head(ctx)
	require.Error(t, err)
	assert.Equal(t, "/"+key+"/wallet/getnowblock", seen.Load(), "a base path stays in front of /wallet/")
	assert.NotContains(t, err.Error(), key)
	assert.NotContains(t, err.Error(), "wrong-")
	assert.Contains(t, err.Error(), strings.TrimPrefix(proxy.URL, "http://"), "the endpoint is named")
}

// An EVM provider that wants a bearer token gets it from the endpoint's
// headers, and the token shows in no error.
func TestEVMCredentialsReachTheNode(t *testing.T) {
	const token = "f00dfeed-0123-4567-89ab-cdef01234567"
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{paywatch.ERC20}})
	ctx := ctxT(t)
	st, _ := d.Network(paywatch.ERC20)
	up, err := url.Parse(st.RPCURL)
	require.NoError(t, err)
	forward := httputil.NewSingleHostReverseProxy(up)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"token `+r.Header.Get("Authorization")+` is not valid"}`)
			return
		}
		r.URL.Path = up.Path
		forward.ServeHTTP(w, r)
	}))
	defer provider.Close()
	dialEVM := func(h http.Header) chains.Client {
		var headers []http.Header
		if h != nil {
			headers = []http.Header{h}
		}
		c, err := chains.Dial(ctx, chains.Config{Network: paywatch.ERC20, URLs: []string{provider.URL}, Headers: headers, Contracts: st.Tokens})
		require.NoError(t, err)
		t.Cleanup(c.Close)
		return c
	}
	_, err = dialEVM(nil).Head(ctx)
	require.Error(t, err, "the provider refuses a call without the token")
	_, err = dialEVM(http.Header{"Authorization": {"Bearer wrong-" + token}}).Head(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "401")
	assert.NotContains(t, err.Error(), token, "the provider echoed it; the error does not")
	head, err := dialEVM(http.Header{"Authorization": {"Bearer " + token}}).Head(ctx)
	require.NoError(t, err, "the configured header reaches the node")
	assert.Equal(t, st.Head, head)
}

// `paywatch check` tells a TRON node that keeps no transaction history (it
// answers a block's infos short) from one the scanner can use.
func TestCheckFindsATronNodeWithoutHistory(t *testing.T) {
	n := paywatch.TRC20
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{n}})
	ctx := ctxT(t)
	_, err := d.TransferBatch(ctx, []devnet.TransferRequest{
		{Network: n, Token: anyToken(n), To: newAddress(t, n), Amount: "1"},
		{Network: n, Token: anyToken(n), To: newAddress(t, n), Amount: "2"},
	})
	require.NoError(t, err)
	st, _ := d.Network(n)
	good := chains.Check(ctx, chains.Config{Network: n, URLs: []string{st.HTTPURL}, Contracts: st.Tokens})
	require.Len(t, good, 1)
	assert.Empty(t, good[0].Problems)
	assert.Equal(t, "the paywatch devnet", good[0].Identity.Name)
	require.Len(t, good[0].Features, 1)
	assert.True(t, good[0].Features[0].OK)
	assert.Contains(t, good[0].Features[0].Detail, "2 transactions")

	partial := startPartialTronNode(t, d, 1)
	bad := chains.Check(ctx, chains.Config{Network: n, URLs: []string{partial}, Contracts: st.Tokens})
	require.Len(t, bad, 1)
	require.Len(t, bad[0].Features, 1)
	assert.False(t, bad[0].Features[0].OK)
	assert.Contains(t, strings.Join(bad[0].Problems, "\n"), "fewer transaction infos than the block has transactions")
}

// A provider's Retry-After rests that endpoint: the others are called
// meanwhile, and with none left the client answers ErrRateLimited with the
// wait, without calling the resting one, until the wait is over.
func TestRetryAfterRestsTheEndpoint(t *testing.T) {
	d := startDevnet(t, devnet.Config{Networks: []paywatch.Network{paywatch.ERC20, paywatch.TRC20}})
	ctx := ctxT(t)
	for _, n := range []paywatch.Network{paywatch.ERC20, paywatch.TRC20} {
		t.Run(string(n), func(t *testing.T) {
			st, _ := d.Network(n)
			good := st.RPCURL
			if n == paywatch.TRC20 {
				good = st.HTTPURL
			}
			var hits atomic.Int64
			limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				w.Header().Set("Retry-After", "30")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = io.WriteString(w, `{"error":"too many requests"}`)
			}))
			defer limited.Close()
			dialN := func(urls ...string) chains.Client {
				c, err := chains.Dial(ctx, chains.Config{Network: n, URLs: urls, Contracts: st.Tokens})
				require.NoError(t, err)
				t.Cleanup(c.Close)
				return c
			}
			both := dialN(limited.URL, good)
			for range 3 {
				_, err := both.Head(ctx)
				require.NoError(t, err, "the other endpoint answers")
			}
			assert.Equal(t, int64(1), hits.Load(), "the resting endpoint was asked once, not on every call")

			hits.Store(0)
			only := dialN(limited.URL)
			_, err := only.Head(ctx)
			require.ErrorIs(t, err, chains.ErrRateLimited)
			_, err = only.Head(ctx)
			require.ErrorIs(t, err, chains.ErrRateLimited)
			wait, ok := chains.RetryAfterOf(err)
			require.True(t, ok, "the error carries the wait: %v", err)
			assert.InDelta(t, 30*time.Second, wait, float64(2*time.Second))
			assert.Equal(t, int64(1), hits.Load(), "nothing is sent before the wait is over")
		})
	}
}
