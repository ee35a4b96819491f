package webhooks_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/paywatch/paywatch/webhooks"
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
