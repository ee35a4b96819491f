package accounts_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/locale"
)

// An e-mail speaks the language of the person whose request sends it
// (issue 29): the confirmation of a registration made in German is German,
// and still carries a link that works; without a language, English.
func TestMailsSpeakTheRequestsLanguage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	de := locale.Lang("de")
	ctx := locale.WithLang(e.ctx, de)
	require.NoError(t, e.svc.Register(ctx, "greta@example.com", password, testIP))
	m := e.lastMail("greta@example.com")
	assert.Equal(t, de.T("mail.confirm.subject"), m.Subject)
	assert.NotEqual(t, locale.English.T("mail.confirm.subject"), m.Subject, "German is not English")
	first, _, _ := strings.Cut(de.T("mail.confirm.text", "Link", "LINK"), "\n")
	assert.True(t, strings.HasPrefix(m.Text, first), m.Text)
	_, err := e.svc.Confirm(e.ctx, e.token(m, "/confirm"), password)
	require.NoError(t, err, "the link in the German e-mail works")

	require.NoError(t, e.svc.RequestPasswordReset(locale.WithLang(e.ctx, "ar"), "greta@example.com", testIP))
	assert.Equal(t, locale.Lang("ar").T("mail.reset.subject"), e.lastMail("greta@example.com").Subject)

	require.NoError(t, e.svc.RequestPasswordReset(e.ctx, "greta@example.com", testIP))
	assert.Equal(t, "Reset your paywatch password", e.lastMail("greta@example.com").Subject, "no language: English")
}
