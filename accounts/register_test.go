package accounts_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// A registration e-mails a confirmation link; the account exists, plan
// free and active, once the link is opened, and signs in with the password
// typed at registration.
func TestRegisterConfirmSignIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.NoError(t, e.svc.Register(e.ctx, "  Ann@Example.com ", password, testIP))

	_, err := e.store.AccountByEmail(e.ctx, "ann@example.com")
	requireCode(t, err, paywatch.ENOTFOUND, paywatch.MsgAccountNotFound)
	_, err = e.svc.SignIn(e.ctx, "ann@example.com", password, testIP, testUA)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgInvalidCredentials)

	m := e.lastMail("ann@example.com")
	assert.Equal(t, "Confirm your paywatch account", m.Subject)
	assert.NotContains(t, m.Text, password)
	// The link alone does not confirm: whoever registered someone else's
	// address would get the account when its owner clicked. A wrong
	// password leaves the link working.
	_, err = e.svc.Confirm(e.ctx, e.token(m, "/confirm"), "the intruder's guess")
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgConfirmPassword)
	email, err := e.svc.Confirm(e.ctx, e.token(m, "/confirm"), password)
	require.NoError(t, err)
	assert.Equal(t, "ann@example.com", email)

	a, err := e.store.AccountByEmail(e.ctx, email)
	require.NoError(t, err)
	assert.Equal(t, paywatch.PlanFree, a.Plan)
	assert.Equal(t, store.AccountActive, a.Status)

	sess := e.signIn("ANN@example.com")
	assert.Equal(t, a.ID, sess.Account.ID)
	got, err := e.svc.Authenticate(e.ctx, sess.Token)
	require.NoError(t, err)
	assert.Equal(t, "ann@example.com", got.Account.Email)
	assert.Equal(t, sess.CSRF, got.CSRF)
}

// Registering an address that has an account answers the same, e-mails
// the address a notice without a link, and changes nothing.
func TestRegisterTakenAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.signUp("bob@example.com")

	require.NoError(t, e.svc.Register(e.ctx, "bob@example.com", "another password", testIP))
	m := e.lastMail("bob@example.com")
	assert.Equal(t, "Someone tried to register with your paywatch address", m.Subject)
	assert.Contains(t, m.Text, baseURL+"/dashboard")
	assert.NotContains(t, m.Text, "token=")

	e.signIn("bob@example.com")
	_, err := e.svc.SignIn(e.ctx, "bob@example.com", "another password", testIP, testUA)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgInvalidCredentials)
}

func TestRegisterValidates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for name, tc := range map[string]struct {
		email, password, msg string
	}{
		"bad address":       {"not-an-address", password, "email must be a valid e-mail address"},
		"short password":    {"c@example.com", "123456789", paywatch.MsgPasswordLength},
		"long password":     {"c@example.com", strings.Repeat("x", 201), paywatch.MsgPasswordLength},
		"short in runes":    {"c@example.com", "ééééééééé", paywatch.MsgPasswordLength},
		"longest password":  {"d@example.com", strings.Repeat("x", 200), ""},
		"shortest password": {"e@example.com", "0123456789", ""},
	} {
		t.Run(name, func(t *testing.T) {
			err := e.svc.Register(e.ctx, tc.email, tc.password, testIP)
			if tc.msg == "" {
				require.NoError(t, err)
				return
			}
			requireCode(t, err, paywatch.EINVALID, tc.msg)
		})
	}
	assert.Empty(t, e.mails("c@example.com"))
}

// A resent confirmation carries a new link that keeps the registration's
// password; the earlier link stops working. Addresses without an open
// registration get the same answer and no e-mail.
func TestResendConfirmation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.NoError(t, e.svc.Register(e.ctx, "cid@example.com", password, testIP))
	first := e.token(e.lastMail("cid@example.com"), "/confirm")

	require.NoError(t, e.svc.ResendConfirmation(e.ctx, "cid@example.com", testIP))
	require.Len(t, e.mails("cid@example.com"), 2)
	second := e.token(e.lastMail("cid@example.com"), "/confirm")
	assert.NotEqual(t, first, second)

	_, err := e.svc.Confirm(e.ctx, first, password)
	requireCode(t, err, paywatch.EGONE, paywatch.MsgLinkGone)
	_, err = e.svc.Confirm(e.ctx, second, password)
	require.NoError(t, err)
	e.signIn("cid@example.com")

	require.NoError(t, e.svc.ResendConfirmation(e.ctx, "cid@example.com", testIP))
	require.NoError(t, e.svc.ResendConfirmation(e.ctx, "nobody@example.com", testIP))
	assert.Len(t, e.mails("cid@example.com"), 2, "the account exists: nothing to resend")
	assert.Empty(t, e.mails("nobody@example.com"))
}

// Every link works once, and not after its lifetime.
func TestLinksExpireAndWorkOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.project("owner@example.com", "shop", "Shop")
	issue := map[string]func(email string) (token string, open func(string) error){
		"confirmation": func(email string) (string, func(string) error) {
			require.NoError(t, e.svc.Register(e.ctx, email, password, testIP))
			return e.token(e.lastMail(email), "/confirm"), func(tok string) error {
				_, err := e.svc.Confirm(e.ctx, tok, password)
				return err
			}
		},
		"reset": func(email string) (string, func(string) error) {
			_, err := e.store.CreateAccount(e.ctx, email, paywatch.PlanFree)
			require.NoError(t, err)
			require.NoError(t, e.svc.RequestPasswordReset(e.ctx, email, testIP))
			return e.token(e.lastMail(email), "/password/reset"), func(tok string) error {
				return e.svc.SetPassword(e.ctx, tok, "a new password")
			}
		},
		"set password": func(email string) (string, func(string) error) {
			a, err := e.store.CreateAccount(e.ctx, email, paywatch.PlanFree)
			require.NoError(t, err)
			require.NoError(t, e.svc.AccountCreated(e.ctx, a))
			return e.token(e.lastMail(email), "/password/reset"), func(tok string) error {
				return e.svc.SetPassword(e.ctx, tok, "a new password")
			}
		},
		"invitation": func(email string) (string, func(string) error) {
			require.NoError(t, e.svc.Invite(e.ctx, p.ID, email))
			return e.token(e.lastMail(email), "/invite"), func(tok string) error {
				_, _, err := e.svc.AcceptInvite(e.ctx, tok, password, nil, "192.0.2.1", "test")
				return err
			}
		},
	}
	for name, tc := range map[string]struct {
		kind     string
		lifetime time.Duration
	}{
		"confirmation": {"confirmation", 24 * time.Hour},
		"reset":        {"reset", time.Hour},
		"set password": {"set password", 7 * 24 * time.Hour},
		"invitation":   {"invitation", 7 * 24 * time.Hour},
	} {
		t.Run(name, func(t *testing.T) {
			slug := strings.ReplaceAll(name, " ", "-")
			early, open := issue[tc.kind]("early-" + slug + "@example.com")
			late, _ := issue[tc.kind]("late-" + slug + "@example.com")
			e.clk.Add(tc.lifetime - time.Second)
			require.NoError(t, open(early))
			requireCode(t, open(early), paywatch.EGONE, paywatch.MsgLinkGone)
			e.clk.Add(2 * time.Second)
			requireCode(t, open(late), paywatch.EGONE, paywatch.MsgLinkGone)
			requireCode(t, open("no-such-token"), paywatch.EGONE, paywatch.MsgLinkGone)
			requireCode(t, open(""), paywatch.EGONE, paywatch.MsgLinkGone)
		})
	}
}

// A password reset ends every session, and only the newest reset link
// works.
func TestPasswordResetSignsOutEverywhere(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.signUp("dan@example.com")
	one, two := e.signIn("dan@example.com"), e.signIn("dan@example.com")

	require.NoError(t, e.svc.RequestPasswordReset(e.ctx, "dan@example.com", testIP))
	old := e.token(e.lastMail("dan@example.com"), "/password/reset")
	require.NoError(t, e.svc.RequestPasswordReset(e.ctx, "Dan@Example.com", testIP))
	m := e.lastMail("dan@example.com")
	assert.Equal(t, "Reset your paywatch password", m.Subject)
	tok := e.token(m, "/password/reset")
	requireCode(t, e.svc.SetPassword(e.ctx, old, "a new password"), paywatch.EGONE, paywatch.MsgLinkGone)

	requireCode(t, e.svc.SetPassword(e.ctx, tok, "short"), paywatch.EINVALID, paywatch.MsgPasswordLength)
	require.NoError(t, e.svc.SetPassword(e.ctx, tok, "a new password"), "a refused password leaves the link open")
	for _, s := range []string{one.Token, two.Token} {
		_, err := e.svc.Authenticate(e.ctx, s)
		requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgSessionEnded)
	}
	_, err := e.svc.SignIn(e.ctx, "dan@example.com", password, testIP, testUA)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgInvalidCredentials)
	_, err = e.svc.SignIn(e.ctx, "dan@example.com", "a new password", testIP, testUA)
	require.NoError(t, err)

	require.NoError(t, e.svc.RequestPasswordReset(e.ctx, "unknown@example.com", testIP))
	assert.Empty(t, e.mails("unknown@example.com"))
}

// An operator-created account cannot sign in until it opens the e-mailed
// link and sets a password.
func TestAccountCreatedSetsFirstPassword(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, err := e.store.CreateAccount(e.ctx, "eve@example.com", paywatch.PlanPro)
	require.NoError(t, err)
	_, err = e.svc.SignIn(e.ctx, "eve@example.com", "", testIP, testUA)
	requireCode(t, err, paywatch.EUNAUTHORIZED, paywatch.MsgInvalidCredentials)

	require.NoError(t, e.svc.AccountCreated(e.ctx, a))
	m := e.lastMail("eve@example.com")
	assert.Equal(t, "Set your paywatch password", m.Subject)
	require.NoError(t, e.svc.SetPassword(e.ctx, e.token(m, "/password/reset"), password))
	sess := e.signIn("eve@example.com")
	assert.Equal(t, paywatch.PlanPro, sess.Account.Plan)
}
