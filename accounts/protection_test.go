package accounts_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// The protection key guards key regeneration and wallet deletion: it must
// be set first, is replaced only with the current one, and only wrong keys
// count toward the limit.
func TestProtectionKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.signUp("max@example.com")

	requireCode(t, e.svc.CheckProtectionKey(e.ctx, a.ID, "anything"), paywatch.EFORBIDDEN, paywatch.MsgSetProtectionKey)
	requireCode(t, e.svc.SetProtectionKey(e.ctx, a.ID, "", "1234567"), paywatch.EINVALID, paywatch.MsgProtectionKeyLength)
	// The first key needs the account's password (tried on another
	// account, whose wrong attempts count apart).
	other := e.signUp("pat@example.com")
	requireCode(t, e.svc.SetProtectionKey(e.ctx, other.ID, "", "12345678"), paywatch.EFORBIDDEN, paywatch.MsgWrongPassword)
	requireCode(t, e.svc.SetProtectionKey(e.ctx, other.ID, "not the password", "12345678"), paywatch.EFORBIDDEN, paywatch.MsgWrongPassword)
	require.NoError(t, e.svc.SetProtectionKey(e.ctx, a.ID, password, "12345678"))
	sess, err := e.svc.Authenticate(e.ctx, e.signIn("max@example.com").Token)
	require.NoError(t, err)
	assert.True(t, sess.ProtectionKeySet)

	require.NoError(t, e.svc.CheckProtectionKey(e.ctx, a.ID, "12345678"))
	requireCode(t, e.svc.CheckProtectionKey(e.ctx, a.ID, "87654321"), paywatch.EFORBIDDEN, paywatch.MsgWrongProtectionKey)

	requireCode(t, e.svc.SetProtectionKey(e.ctx, a.ID, "", "a new key!"), paywatch.EFORBIDDEN, paywatch.MsgWrongProtectionKey)
	requireCode(t, e.svc.SetProtectionKey(e.ctx, a.ID, "wrong one", "a new key!"), paywatch.EFORBIDDEN, paywatch.MsgWrongProtectionKey)
	require.NoError(t, e.svc.SetProtectionKey(e.ctx, a.ID, "12345678", "a new key!"))
	requireCode(t, e.svc.CheckProtectionKey(e.ctx, a.ID, "12345678"), paywatch.EFORBIDDEN, paywatch.MsgWrongProtectionKey)

	// Four wrong attempts so far; right ones do not count.
	for range 8 {
		require.NoError(t, e.svc.CheckProtectionKey(e.ctx, a.ID, "a new key!"))
	}
	requireCode(t, e.svc.CheckProtectionKey(e.ctx, a.ID, "wrong"), paywatch.EFORBIDDEN, paywatch.MsgWrongProtectionKey)
	requireCode(t, e.svc.CheckProtectionKey(e.ctx, a.ID, "a new key!"), paywatch.ERATELIMIT, paywatch.MsgTooManyRequests)

	assert.NotContains(t, e.logs.String(), "87654321")
}

// The protection key must differ from the password, when it is first set
// and when it is replaced: it would otherwise fall with the password
// (issue 28, item 15). A refusal changes nothing.
func TestProtectionKeyDiffersFromThePassword(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.signUp("kim@example.com")
	requireCode(t, e.svc.SetProtectionKey(e.ctx, a.ID, password, password), paywatch.EINVALID, paywatch.MsgProtectionKeyIsPassword)
	requireCode(t, e.svc.CheckProtectionKey(e.ctx, a.ID, password), paywatch.EFORBIDDEN, paywatch.MsgSetProtectionKey)
	require.NoError(t, e.svc.SetProtectionKey(e.ctx, a.ID, password, "a key of its own"))
	requireCode(t, e.svc.SetProtectionKey(e.ctx, a.ID, "a key of its own", password), paywatch.EINVALID, paywatch.MsgProtectionKeyIsPassword)
	require.NoError(t, e.svc.CheckProtectionKey(e.ctx, a.ID, "a key of its own"), "the old key stands")
}

// A password reset to the protection key is refused too, and the link
// stays usable for another password (issue 28, item 15).
func TestPasswordResetDiffersFromTheProtectionKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.signUp("lee@example.com")
	require.NoError(t, e.svc.SetProtectionKey(e.ctx, a.ID, password, "a key of its own"))
	require.NoError(t, e.svc.RequestPasswordReset(e.ctx, "lee@example.com", testIP))
	tok := e.token(e.lastMail("lee@example.com"), "/password/reset")
	requireCode(t, e.svc.SetPassword(e.ctx, tok, "a key of its own"), paywatch.EINVALID, paywatch.MsgPasswordIsProtectionKey)
	require.NoError(t, e.svc.SetPassword(e.ctx, tok, "a brand new password"))
}
