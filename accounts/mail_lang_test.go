package accounts_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/locale"
)

// E-mails speak their reader's language (issue 29). A registration's
// confirmation speaks the registering browser's (the request's), and its
// link works. Mail to an existing account speaks the account's own
// language, recorded at its latest sign-in, whoever asks for it: someone
// requesting a reset in Arabic does not make the owner's mail Arabic.
// Before any sign-in, English.
func TestMailsSpeakTheReadersLanguage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	de, ar := locale.Lang("de"), locale.Lang("ar")
	require.NoError(t, e.svc.Register(locale.WithLang(e.ctx, de), "greta@example.com", password, testIP))
	m := e.lastMail("greta@example.com")
	assert.Equal(t, de.T("mail.confirm.subject"), m.Subject)
	assert.NotEqual(t, locale.English.T("mail.confirm.subject"), m.Subject, "German is not English")
	first, _, _ := strings.Cut(de.T("mail.confirm.text", "Link", "LINK"), "\n")
	assert.True(t, strings.HasPrefix(m.Text, first), m.Text)
	_, err := e.svc.Confirm(e.ctx, e.token(m, "/confirm"), password)
	require.NoError(t, err, "the link in the German e-mail works")

	require.NoError(t, e.svc.RequestPasswordReset(locale.WithLang(e.ctx, ar), "greta@example.com", testIP))
	assert.Equal(t, "Reset your paywatch password", e.lastMail("greta@example.com").Subject, "never signed in: English")

	res, err := e.svc.SignIn(locale.WithLang(e.ctx, de), "greta@example.com", password, testIP, testUA)
	require.NoError(t, err)
	require.NotNil(t, res.Session)
	require.NoError(t, e.svc.RequestPasswordReset(locale.WithLang(e.ctx, ar), "greta@example.com", testIP))
	assert.Equal(t, de.T("mail.reset.subject"), e.lastMail("greta@example.com").Subject, "the account's language, not the asker's")
	require.NoError(t, e.svc.Register(locale.WithLang(e.ctx, ar), "greta@example.com", password, testIP))
	assert.Equal(t, de.T("mail.registered_again.subject"), e.lastMail("greta@example.com").Subject)
}
