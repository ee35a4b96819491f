package chains_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
)

// The credentials of the echo test: in the URL's user info, path and
// query, and in headers (issue 38).
const (
	leakUser   = "alice-userinfo"
	leakPass   = "pw-s3cret-7f3a9c"
	leakPath   = "pathkey-0a1b2c3d4e5f"
	leakQuery  = "qkey+9z8y/7x6w=5v"
	leakHeader = "hdrkey-5566778899"
	leakBearer = "bearer-tok-1122334455"
)

// leakForms lists every form of every credential that must show nowhere:
// the value, percent-encoded, base64 (as a Basic header sends user:pass),
// and its first six characters.
func leakForms() []string {
	var out []string
	for _, s := range []string{leakUser, leakPass, leakPath, leakQuery, leakHeader, leakBearer, leakUser + ":" + leakPass} {
		b := []byte(s)
		out = append(out, s, url.QueryEscape(s), url.PathEscape(s),
			base64.StdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b), s[:6])
	}
	return out
}

// echoLengths are the padding before an echo: errors of several lengths,
// so that a cut at any point (the TRC20 HTTP client keeps 200 bytes)
// falls inside a credential for some of them.
var echoLengths = []int{0, 17, 150, 170, 185, 190, 195, 199, 240, 4000}

// echoOf writes what a careless provider puts in its errors: every header,
// the path, the query and the user info of the request it was sent, after
// pad bytes of filler.
func echoOf(r *http.Request, pad int) string {
	var b strings.Builder
	b.WriteString(strings.Repeat("x", pad))
	fmt.Fprintf(&b, " path=%s rawpath=%s query=%s uri=%s", r.URL.Path, r.URL.EscapedPath(), r.URL.RawQuery, r.RequestURI)
	if u, p, ok := r.BasicAuth(); ok {
		fmt.Fprintf(&b, " user=%s pass=%s", u, p)
	}
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s: %s", k, strings.Join(r.Header[k], ","))
	}
	return b.String()
}

// echoServer answers every request with status and an echo padded by the
// next of echoLengths.
func echoServer(t *testing.T, status int, jsonRPC bool) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echo := echoOf(r, echoLengths[int(n.Add(1)-1)%len(echoLengths)])
		if jsonRPC && status == http.StatusOK {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":%q}}`, echo)
			return
		}
		w.WriteHeader(status)
		_, _ = fmt.Fprint(w, echo)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// withSecrets is the URL of srv with every credential of the test in it.
func withSecrets(base string) string {
	u, _ := url.Parse(base)
	u.User = url.UserPassword(leakUser, leakPass)
	u.Path = "/" + leakPath + "/"
	u.RawQuery = url.Values{"apikey": {leakQuery}}.Encode()
	return u.String()
}

var leakHeaders = []http.Header{{"Tron-Pro-Api-Key": {leakHeader}, "Authorization": {"Bearer " + leakBearer}}}

// assertNoLeak fails if text holds any form of any credential.
func assertNoLeak(t *testing.T, what, text string) {
	t.Helper()
	for _, f := range leakForms() {
		if strings.Contains(text, f) {
			t.Errorf("%s shows %q: %s", what, f, text)
		}
	}
}

// Issue 38: a provider that echoes every header, the path, the query and
// the user info of each request in its errors, at several lengths, never
// gets any of those credentials into an error, in any encoding, nor their
// first six characters, on any client: EVM JSON-RPC (HTTP errors and
// JSON-RPC errors), TRC20 over the FullNode HTTP API and over gRPC; nor
// into what `paywatch check` reports.
func TestProviderEchoLeaksNoCredential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type target struct {
		name    string
		net     paywatch.Network
		url     string
		headers []http.Header
	}
	// Without an Authorization header of its own, a request carries the
	// user info as Basic base64(user:pass).
	keyOnly := []http.Header{{"Tron-Pro-Api-Key": {leakHeader}}}
	var targets []target
	for _, st := range []int{http.StatusUnauthorized, http.StatusInternalServerError, http.StatusTooManyRequests} {
		for _, h := range [][]http.Header{leakHeaders, keyOnly} {
			targets = append(targets,
				target{fmt.Sprintf("evm-http-%d-%d", st, len(h[0])), paywatch.ERC20, withSecrets(echoServer(t, st, true).URL), h},
				target{fmt.Sprintf("tron-http-%d-%d", st, len(h[0])), paywatch.TRC20, withSecrets(echoServer(t, st, false).URL), h})
		}
	}
	targets = append(targets, target{"evm-jsonrpc-error", paywatch.ERC20, withSecrets(echoServer(t, http.StatusOK, true).URL), keyOnly})
	targets = append(targets, target{"tron-grpc", paywatch.TRC20, "grpc://" + echoGRPC(t), leakHeaders})
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			cfg := chains.Config{Network: tg.net, URLs: []string{tg.url}, Headers: tg.headers}
			c, err := chains.Dial(ctx, cfg)
			require.NoError(t, err)
			defer c.Close()
			for range echoLengths {
				_, err := c.Head(ctx)
				require.Error(t, err)
				assertNoLeak(t, "Head", err.Error())
				_, err = c.BlockHash(ctx, 7)
				require.Error(t, err)
				assertNoLeak(t, "BlockHash", err.Error())
				_, err = c.Transfers(ctx, 1, 2)
				require.Error(t, err)
				assertNoLeak(t, "Transfers", err.Error())
			}
			for _, ec := range chains.Check(ctx, cfg) {
				assertNoLeak(t, "check", fmt.Sprintf("%+v", ec))
			}
		})
	}
}

// echoGRPC starts a gRPC server that answers every method of every
// service with an error echoing the call's metadata, at several lengths,
// and returns its address.
func echoGRPC(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var n atomic.Int64
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(stream.Context())
		keys := make([]string, 0, len(md))
		for k := range md {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString(strings.Repeat("x", echoLengths[int(n.Add(1)-1)%len(echoLengths)]))
		for _, k := range keys {
			fmt.Fprintf(&b, " %s: %s", k, strings.Join(md[k], ","))
		}
		method, _ := grpc.MethodFromServerStream(stream)
		fmt.Fprintf(&b, " method=%s", method)
		return status.Error(codes.Unauthenticated, b.String())
	}))
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}
