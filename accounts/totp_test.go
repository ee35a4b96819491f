package accounts_test

import (
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// code is the TOTP code of secret at offset from the test clock's now.
func code(e *env, secret string, offset time.Duration) string {
	e.t.Helper()
	c, err := totp.GenerateCode(secret, e.clk.Now().Add(offset))
	require.NoError(e.t, err)
	return c
}

// wrong returns a six-digit code other than c.
func wrong(c string) string {
	last := (c[5]-'0'+1)%10 + '0'
	return c[:5] + string(rune(last))
}

// enableTOTP turns two factors on and returns the secret and the recovery
// codes.
func enableTOTP(e *env, accountID int64) (string, []string) {
	e.t.Helper()
	secret, _, err := e.svc.BeginTOTP(e.ctx, accountID)
	require.NoError(e.t, err)
	codes, err := e.svc.EnableTOTP(e.ctx, accountID, code(e, secret, 0), testIP)
	require.NoError(e.t, err)
	return secret, codes
}

// pending signs in with the password of an account with two factors on.
func pending(e *env, email string) string {
	e.t.Helper()
	res, err := e.svc.SignIn(e.ctx, email, password, testIP, testUA)
	require.NoError(e.t, err)
	require.Nil(e.t, res.Session)
	require.NotEmpty(e.t, res.Pending)
	return res.Pending
}

var recoveryPattern = regexp.MustCompile(`^[a-hjkmnp-z2-9]{4}-[a-hjkmnp-z2-9]{4}-[a-hjkmnp-z2-9]{4}$`)

// Two factors: the set-up shows an RFC 6238 secret for paywatch and the
// address, and gives ten recovery codes once a code matches. Sign-in then
// takes a second step, where a code works once (its 30-second step is
// recorded) and a recovery code works once.
func TestTOTPSignIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.signUp("jo@example.com")

	secret, url, err := e.svc.BeginTOTP(e.ctx, a.ID)
	require.NoError(t, err)
	key, err := otp.NewKeyFromURL(url)
	require.NoError(t, err)
	assert.Equal(t, "paywatch", key.Issuer())
	assert.Equal(t, "jo@example.com", key.AccountName())
	assert.Equal(t, secret, key.Secret())
	assert.Equal(t, uint64(30), key.Period())
	assert.Equal(t, otp.DigitsSix, key.Digits())
	assert.Equal(t, otp.AlgorithmSHA1, key.Algorithm())

	first := code(e, secret, 0)
	_, err = e.svc.EnableTOTP(e.ctx, a.ID, wrong(first), testIP)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgInvalidCode)
	codes, err := e.svc.EnableTOTP(e.ctx, a.ID, first, testIP)
	require.NoError(t, err)
	require.Len(t, codes, 10)
	seen := map[string]bool{}
	for _, c := range codes {
		assert.Regexp(t, recoveryPattern, c)
		seen[c] = true
	}
	assert.Len(t, seen, 10)
	_, err = e.svc.EnableTOTP(e.ctx, a.ID, first, testIP)
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgTwoFactorOn)
	_, _, err = e.svc.BeginTOTP(e.ctx, a.ID)
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgTwoFactorOn)

	p := pending(e, "jo@example.com")
	_, err = e.svc.Authenticate(e.ctx, p)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgSessionEnded)
	_, err = e.svc.SecondFactor(e.ctx, p, first, testIP, testUA)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgInvalidCode)

	e.clk.Add(30 * time.Second)
	next := code(e, secret, 0)
	sess, err := e.svc.SecondFactor(e.ctx, p, next, testIP, testUA)
	require.NoError(t, err, "a wrong code leaves the pending sign-in open")
	got, err := e.svc.Authenticate(e.ctx, sess.Token)
	require.NoError(t, err)
	assert.True(t, got.TwoFactorEnabled)
	_, err = e.svc.SecondFactor(e.ctx, p, code(e, secret, 30*time.Second), testIP, testUA)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgSessionEnded)

	p = pending(e, "jo@example.com")
	_, err = e.svc.SecondFactor(e.ctx, p, next, testIP, testUA)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgInvalidCode)
	typed := " " + strings.ToUpper(strings.ReplaceAll(codes[0], "-", " ")) + " "
	_, err = e.svc.SecondFactor(e.ctx, p, typed, testIP, testUA)
	require.NoError(t, err)
	p = pending(e, "jo@example.com")
	_, err = e.svc.SecondFactor(e.ctx, p, codes[0], testIP, testUA)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgInvalidCode)

	// One step of clock drift is accepted.
	e.clk.Add(90 * time.Second)
	_, err = e.svc.SecondFactor(e.ctx, p, code(e, secret, -30*time.Second), testIP, testUA)
	require.NoError(t, err)

	// A pending sign-in lasts five minutes.
	p = pending(e, "jo@example.com")
	e.clk.Add(5*time.Minute + time.Second)
	_, err = e.svc.SecondFactor(e.ctx, p, code(e, secret, 0), testIP, testUA)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgSessionEnded)

	assert.NotContains(t, e.logs.String(), secret)
	assert.NotContains(t, e.logs.String(), codes[0])
}

// Two factors go off with a code or a recovery code, and sign-in is one
// step again.
func TestDisableTOTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.signUp("kim@example.com")
	secret, codes := enableTOTP(e, a.ID)

	requireCode(t, e.svc.DisableTOTP(e.ctx, a.ID, wrong(code(e, secret, 0)), testIP),
		paywatch.EUNAUTHORIZED, paywatch.MsgInvalidCode)
	requireCode(t, e.svc.DisableTOTP(e.ctx, a.ID, code(e, secret, 0), testIP),
		paywatch.EUNAUTHORIZED, paywatch.MsgInvalidCode) // the step enabling used
	require.NoError(t, e.svc.DisableTOTP(e.ctx, a.ID, codes[3], testIP))
	sess := e.signIn("kim@example.com")
	assert.False(t, sess.TwoFactorEnabled)

	e.clk.Add(time.Minute)
	secret, _ = enableTOTP(e, a.ID)
	e.clk.Add(30 * time.Second)
	require.NoError(t, e.svc.DisableTOTP(e.ctx, a.ID, code(e, secret, 0), testIP))
	e.signIn("kim@example.com")
}

// A recovery code used by two sign-ins at once opens exactly one session.
func TestRecoveryCodeUsedTwiceAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.signUp("lea@example.com")
	_, codes := enableTOTP(e, a.ID)
	const n = 4
	pendings := make([]string, n)
	for i := range pendings {
		pendings[i] = pending(e, "lea@example.com")
	}
	var ok, refused atomic.Int32
	parallel(n, func(i int) {
		_, err := e.svc.SecondFactor(e.ctx, pendings[i], codes[5], testIP, testUA)
		switch {
		case err == nil:
			ok.Add(1)
		case paywatch.ErrorMessage(err) == paywatch.MsgInvalidCode:
			refused.Add(1)
		default:
			t.Errorf("unexpected error: %v", err)
		}
	})
	assert.Equal(t, int32(1), ok.Load())
	assert.Equal(t, int32(n-1), refused.Load())
}
