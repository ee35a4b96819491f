package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// AuthenticateCall counts what the three separate calls it replaces
// counted: the key's window for a project that may call, and the owner's
// day only for calls within the burst.
func TestAuthenticateCallCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	email := "shop@example.com"
	_, err := s.CreateAccount(ctx, email, paywatch.PlanPro)
	require.NoError(t, err)
	p, creds, err := s.CreateProject(ctx, store.NewProject{Slug: "shop", Settings: store.ProjectSettings{OwnerEmail: &email}})
	require.NoError(t, err)
	call := func(countDaily bool) store.APICall {
		return store.APICall{Key: creds.APIKey, RateKey: "test:shop", Window: time.Minute, Burst: 2, CountDaily: countDaily}
	}
	usage := func() int64 {
		u, err := s.Usage(ctx, p.Owner.ID)
		require.NoError(t, err)
		return u.APICallsToday
	}

	c, err := s.AuthenticateCall(ctx, call(true))
	require.NoError(t, err)
	assert.Equal(t, p.ID, c.Project.ID)
	assert.Equal(t, int64(1), c.Burst.Count)
	require.NotNil(t, c.Daily)
	assert.Equal(t, int64(1), c.Daily.Count)

	c, err = s.AuthenticateCall(ctx, call(false))
	require.NoError(t, err)
	assert.Equal(t, int64(2), c.Burst.Count)
	assert.Nil(t, c.Daily, "exempt from the daily count")
	assert.Equal(t, int64(1), usage())

	c, err = s.AuthenticateCall(ctx, call(true))
	require.NoError(t, err)
	assert.Equal(t, int64(3), c.Burst.Count, "over the burst")
	assert.Nil(t, c.Daily, "a call over the burst is not a daily call")
	assert.Equal(t, int64(1), usage())

	// A key that may not call counts nothing.
	_, err = s.AuthenticateCall(ctx, store.APICall{Key: "pk_live_nope", RateKey: "test:nope", Window: time.Minute, Burst: 2, CountDaily: true})
	requireCode(t, err, paywatch.EUNAUTHORIZED, "Invalid API key")
	w, err := s.HitRate(ctx, "test:nope", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(1), w.Count, "an unknown key's window was never counted (this is its first hit)")
	_, err = s.UpdateProject(ctx, "shop", store.ProjectSettings{Active: ptr(false)})
	require.NoError(t, err)
	_, err = s.AuthenticateCall(ctx, call(true))
	requireCode(t, err, paywatch.EFORBIDDEN, "Project is deactivated")
	_, err = s.UpdateProject(ctx, "shop", store.ProjectSettings{Active: ptr(true)})
	require.NoError(t, err)
	_, err = s.UpdateAccount(ctx, email, store.AccountUpdate{Status: ptr(store.AccountSuspended)})
	require.NoError(t, err)
	_, err = s.AuthenticateCall(ctx, call(true))
	requireCode(t, err, paywatch.EFORBIDDEN, "Account suspended. Contact support.")
	w, err = s.HitRate(ctx, "test:shop", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(4), w.Count, "refused calls left the window as it was")
	assert.Equal(t, int64(1), usage())
}
