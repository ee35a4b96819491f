package activities_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/webhooks"
)

// countingMetrics records what the activities count.
type countingMetrics struct {
	mu       sync.Mutex
	attempts []webhooks.Outcome
	entered  []paywatch.Status
}

func (m *countingMetrics) WebhookAttempt(o webhooks.Outcome) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.attempts = append(m.attempts, o)
}

func (m *countingMetrics) PaymentEntered(s paywatch.Status) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entered = append(m.entered, s)
}

// Each delivery attempt made is counted by its outcome, and each change of
// status once, however often its save is retried.
func TestMetricsCountAttemptsAndStatusChanges(t *testing.T) {
	r := newReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	f := newFixture(t, r.srv.URL+"/hooks", `{}`)
	m := &countingMetrics{}
	acts := activities.New(activities.Deps{
		Store: f.store, HTTPClient: webhooks.NewClient(time.Second, true), AllowPrivate: true, Metrics: m,
	})
	_, run := queueAndDeliver(t, f, acts, paywatch.EventOverpaid, 1)
	require.NoError(t, run.err)
	assert.Equal(t, []webhooks.Outcome{webhooks.Retry, webhooks.Delivered}, m.attempts)

	ctx := context.Background()
	st := f.state()
	st.Version = 1
	require.NoError(t, acts.SavePaymentState(ctx, st))
	require.NoError(t, acts.SavePaymentState(ctx, st)) // the same save, retried
	st.Version = 2                                     // a newer save, same status
	require.NoError(t, acts.SavePaymentState(ctx, st))
	assert.Equal(t, []paywatch.Status{paywatch.StatusPaid}, m.entered)
}
