package webhooks_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/webhooks"
	"github.com/paywatch/paywatch/webhooks/webhookstest"
)

// Only an attempt that went to the network is Sent (and counted in the
// metrics): a missing secret, a scheme or an address not allowed make no
// request.
func TestSendReportsWhetherTheAttemptWasSent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	ctx := context.Background()
	open := &webhooks.Sender{Client: webhooks.NewClient(time.Second, true), AllowPrivate: true}
	guarded := &webhooks.Sender{Client: webhooks.NewClient(time.Second, false), RequireHTTPS: true}

	for _, tc := range []struct {
		name    string
		sender  *webhooks.Sender
		url     string
		secret  string
		outcome webhooks.Outcome
		sent    bool
	}{
		{"no secret", open, srv.URL, "", webhooks.Failed, false},
		{"scheme not allowed", guarded, srv.URL, "s", webhooks.Failed, false},
		{"private address", guarded, "https://127.0.0.1:1/hook", "s", webhooks.Failed, false},
		{"answered 400", open, srv.URL, "s", webhooks.Failed, true},
		{"connection refused", open, closedURL, "s", webhooks.Retry, true},
	} {
		res := tc.sender.Send(ctx, tc.url, tc.secret, []byte(`{}`))
		assert.Equal(t, tc.outcome, res.Outcome, tc.name)
		assert.Equal(t, tc.sent, res.Sent, tc.name)
	}
}

// Only a 4xx answer, or a URL that itself names a private address, fails
// for good. A 3xx answer (redirects are not followed) and a host name
// whose DNS answer is a private address, before the request or at dial
// time, are retried: the receiver may answer differently next time, and a
// DNS answer can change back. The answers come from scripted DNS servers
// on loopback; the guard refuses the private ones before any connection,
// so nothing is sent to them.
func TestSendRetriesWhatMayChange(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		code, _ := strconv.Atoi(r.URL.Query().Get("answer"))
		w.Header().Set("Location", "https://elsewhere.example.com/")
		w.WriteHeader(code)
	}))
	defer srv.Close()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	private := webhookstest.NewDNS(t, func(int) []netip.Addr { return []netip.Addr{netip.MustParseAddr("10.0.0.7")} })
	public := webhookstest.NewDNS(t, func(int) []netip.Addr { return []netip.Addr{netip.MustParseAddr("93.184.215.14")} })
	loopback := webhookstest.NewDNS(t, func(int) []netip.Addr { return []netip.Addr{netip.MustParseAddr("127.0.0.1")} })
	ctx := context.Background()
	open := &webhooks.Sender{Client: webhooks.NewClient(time.Second, true), AllowPrivate: true}
	// The check before the request sees a private answer.
	privateFirst := &webhooks.Sender{Client: webhooks.NewClient(time.Second, false), Resolver: private.Resolver()}
	// The check sees a public answer, the dialer then a loopback one
	// (DNS rebinding): the dial-time guard refuses it.
	rebound := &webhooks.Sender{Client: webhooks.NewClientWithResolver(time.Second, false, loopback.Resolver()), Resolver: public.Resolver()}
	named := "http://hooks.example.com:" + port + "/hook"

	for _, tc := range []struct {
		name    string
		sender  *webhooks.Sender
		url     string
		outcome webhooks.Outcome
		sent    bool
	}{
		{"answered 302", open, srv.URL + "/hook?answer=302", webhooks.Retry, true},
		{"answered 301", open, srv.URL + "/hook?answer=301", webhooks.Retry, true},
		{"answered 404", open, srv.URL + "/hook?answer=404", webhooks.Failed, true},
		{"answered 503", open, srv.URL + "/hook?answer=503", webhooks.Retry, true},
		{"private DNS answer before the request", privateFirst, named, webhooks.Retry, false},
		{"private DNS answer at dial time", rebound, named, webhooks.Retry, false},
		{"URL naming a private address", privateFirst, "http://10.0.0.7/hook", webhooks.Failed, false},
		{"URL naming localhost", privateFirst, "http://localhost:" + port + "/hook", webhooks.Failed, false},
	} {
		before := hits.Load()
		res := tc.sender.Send(ctx, tc.url, "s", []byte(`{}`))
		assert.Equal(t, tc.outcome, res.Outcome, tc.name)
		assert.Equal(t, tc.sent, res.Sent, tc.name)
		if !tc.sent {
			assert.Equal(t, before, hits.Load(), "%s: nothing reached the receiver", tc.name)
			assert.Equal(t, webhooks.ErrPrivateAddress.Error(), res.Answer, "%s: the log names no address", tc.name)
		}
	}
	assert.Positive(t, loopback.Questions(), "the dialer asked its resolver")
}
