package accounts_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/accounts"
	"github.com/paywatch/paywatch/store"
)

// Every sign-in makes a new session; signing out ends one, signing out
// everywhere ends them all.
func TestSignInRotatesSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.signUp("fay@example.com")
	one, two := e.signIn("fay@example.com"), e.signIn("fay@example.com")
	assert.NotEqual(t, one.Token, two.Token)
	assert.NotEqual(t, one.CSRF, two.CSRF)
	assert.Equal(t, e.clk.Now().Add(12*time.Hour), one.ExpiresAt)
	for _, s := range []*accounts.Session{one, two} {
		got, err := e.svc.Authenticate(e.ctx, s.Token)
		require.NoError(t, err)
		assert.Equal(t, a.ID, got.Account.ID)
		assert.Empty(t, got.Token, "the cookie value is only given at sign-in")
		assert.True(t, got.CheckCSRF(s.CSRF))
		assert.False(t, got.CheckCSRF(""))
		assert.False(t, got.CheckCSRF(s.Token))
	}

	require.NoError(t, e.svc.SignOut(e.ctx, one.Token))
	_, err := e.svc.Authenticate(e.ctx, one.Token)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgSessionEnded)
	_, err = e.svc.Authenticate(e.ctx, two.Token)
	require.NoError(t, err)

	three := e.signIn("fay@example.com")
	require.NoError(t, e.svc.SignOutEverywhere(e.ctx, a.ID))
	for _, s := range []*accounts.Session{two, three} {
		_, err := e.svc.Authenticate(e.ctx, s.Token)
		requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgSessionEnded)
	}
	_, err = e.svc.Authenticate(e.ctx, "")
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgSessionEnded)
}

// A session ends after 2 idle hours, and after 12 hours however busy.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.signUp("gus@example.com")
	idle, busy := e.signIn("gus@example.com"), e.signIn("gus@example.com")
	for range 6 {
		e.clk.Add(time.Hour + 50*time.Minute)
		_, err := e.svc.Authenticate(e.ctx, busy.Token)
		require.NoError(t, err, "at %s", e.clk.Now())
	}
	_, err := e.svc.Authenticate(e.ctx, idle.Token)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgSessionEnded)

	e.clk.Add(time.Hour + time.Second) // past 12 hours, 1 hour after the last use
	_, err = e.svc.Authenticate(e.ctx, busy.Token)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgSessionEnded)
}

// A page's poll (AuthenticatePoll) finds the session but is not its use:
// a session only polled ends after 2 hours, as an idle one does.
func TestSessionPollIsNotUse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.signUp("ivy@example.com")
	polled := e.signIn("ivy@example.com")
	for range 11 {
		e.clk.Add(10 * time.Minute)
		got, err := e.svc.AuthenticatePoll(e.ctx, polled.Token)
		require.NoError(t, err, "at %s", e.clk.Now())
		assert.True(t, got.CheckCSRF(polled.CSRF))
	}
	e.clk.Add(10 * time.Minute) // 2 hours after sign-in, polled all along
	_, err := e.svc.AuthenticatePoll(e.ctx, polled.Token)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgSessionEnded)
	_, err = e.svc.Authenticate(e.ctx, polled.Token)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgSessionEnded)
}

// Wrong addresses and passwords get one answer; suspended and closed
// accounts get interface.md's texts at sign-in and on their open
// sessions. Failures are logged with address and IP, never the password.
func TestSignInRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.signUp("hal@example.com")
	for name, tc := range map[string]struct{ email, password string }{
		"unknown address": {"nobody@example.com", password},
		"wrong password":  {"hal@example.com", "wrong password!"},
		"no password":     {"hal@example.com", ""},
		"bad address":     {"not an address", password},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := e.svc.SignIn(e.ctx, tc.email, tc.password, "198.51.100.9", testUA)
			requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgInvalidCredentials)
		})
	}
	logs := e.logs.String()
	assert.Contains(t, logs, "email=hal@example.com")
	assert.Contains(t, logs, "ip=198.51.100.9")
	assert.NotContains(t, logs, "wrong password!")
	assert.NotContains(t, logs, password)

	sess := e.signIn("hal@example.com")
	for st, msg := range map[store.AccountStatus]string{store.AccountSuspended: msgSuspended, store.AccountClosed: msgClosed} {
		_, err := e.store.UpdateAccount(e.ctx, "hal@example.com", store.AccountUpdate{Status: &st})
		require.NoError(t, err)
		_, err = e.svc.SignIn(e.ctx, "hal@example.com", password, testIP, testUA)
		requireCode(t, err, paywatch.EFORBIDDEN, msg)
		_, err = e.svc.Authenticate(e.ctx, sess.Token)
		requireCode(t, err, paywatch.EFORBIDDEN, msg)
		_, err = e.svc.SignIn(e.ctx, "hal@example.com", "wrong password!", testIP, testUA)
		requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgInvalidCredentials)
	}
	active := store.AccountActive
	_, err := e.store.UpdateAccount(e.ctx, "hal@example.com", store.AccountUpdate{Status: &active})
	require.NoError(t, err)
	_, err = e.svc.Authenticate(e.ctx, sess.Token)
	require.NoError(t, err)
}

// With RequireTwoFactor, an owner without TOTP is held to the set-up;
// viewers and accounts without projects are not.
func TestTwoFactorRequired(t *testing.T) {
	t.Parallel()
	for _, required := range []bool{false, true} {
		e := newEnv(t, func(d *accounts.Deps) { d.RequireTwoFactor = required })
		e.signUp("ivy@example.com")
		sess := e.signIn("ivy@example.com")
		token := sess.Token
		assert.False(t, e.svc.TwoFactorRequired(sess), "no project")

		e.project("ivy@example.com", "ivy", "Ivy's")
		sess, err := e.svc.Authenticate(e.ctx, token)
		require.NoError(t, err)
		assert.True(t, sess.OwnsProjects)
		assert.Equal(t, required, e.svc.TwoFactorRequired(sess))

		enableTOTP(e, sess.Account.ID)
		sess, err = e.svc.Authenticate(e.ctx, token)
		require.NoError(t, err)
		assert.True(t, sess.TwoFactorEnabled)
		assert.False(t, e.svc.TwoFactorRequired(sess))
	}
}
