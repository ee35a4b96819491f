package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/locale"
)

// langOf is the language a page says it is in.
func langOf(t *testing.T, r response) string {
	t.Helper()
	_, rest, ok := strings.Cut(r.Raw, `<html lang="`)
	require.True(t, ok, r.Raw)
	lang, _, _ := strings.Cut(rest, `"`)
	return lang
}

// The page's language (issue 29): ?lang=, then the buyer's cookie, then
// the merchant's `locale` of the payment or link, then Accept-Language,
// then English; `locale` is validated on creation; the JSON API's
// messages stay English while the pages translate the ones a buyer meets.
func TestHostedPageLanguage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.merchant("lang", "pro", nil, hdWallet())
	create := func(body map[string]any) string {
		t.Helper()
		r := e.call(key, "POST", "/v1/payments", body)
		require.Equal(t, http.StatusCreated, r.Code, r.Raw)
		return r.str("payment.id")
	}
	plain := create(map[string]any{"amount": json.Number("1234.5"), "external_ref": "a", "network": "TRC20"})
	spanish := create(map[string]any{"amount": json.Number("5"), "external_ref": "b", "network": "TRC20", "locale": "ES"})

	get := func(path string, header map[string]string) response {
		t.Helper()
		r := e.payCall(request{method: "GET", path: path, header: header})
		requireHTML(t, r, http.StatusOK)
		return r
	}
	german := map[string]string{"Accept-Language": "de-DE,de;q=0.9,en;q=0.5"}
	assert.Equal(t, "en", langOf(t, get("/"+plain, nil)))
	de := get("/"+plain, german)
	assert.Equal(t, "de", langOf(t, de))
	assert.Contains(t, de.Raw, ">1234,50</span>", "amounts in the language's decimal separator, thousands never grouped")
	assert.Contains(t, de.Raw, locale.Lang("de").T("pay.pending.title"))
	assert.Equal(t, "es", langOf(t, get("/"+spanish, german)), "the merchant's locale before the browser's")
	fr := get("/"+spanish+"?lang=fr", german)
	assert.Equal(t, "fr", langOf(t, fr), "the buyer's choice first")
	var kept string
	for _, c := range fr.Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, "paywatch_lang=fr;") {
			kept = c
		}
	}
	require.NotEmpty(t, kept, "the choice is kept")
	assert.Contains(t, kept, "HttpOnly")
	assert.Equal(t, "uk", langOf(t, get("/"+spanish, map[string]string{"Cookie": "paywatch_lang=uk"})))
	assert.Equal(t, "en", langOf(t, get("/"+plain+"?lang=xx", nil)), "a language not spoken changes nothing")
	ar := get("/"+plain+"?lang=ar", nil)
	assert.Contains(t, ar.Raw, `<html lang="ar" dir="rtl">`)

	// `locale` is validated as the contract validates every field: a
	// language spoken (or a close variant), else 400 Invalid request body.
	for _, bad := range []any{"xx", "zh-TW", "klingon", 7, true} {
		requireError(t, e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "c", "locale": bad}), http.StatusBadRequest, paywatch.MsgInvalidRequestBody)
	}
	for in, want := range map[string]string{"en-US": "en", "pt": "pt-BR", "zh-CN": "zh-Hans", "": "en"} {
		r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "v" + in, "network": "TRC20", "locale": in})
		require.Equal(t, http.StatusCreated, r.Code, r.Raw)
		assert.Equal(t, want, langOf(t, get("/"+r.str("payment.id"), nil)), "locale %q", in)
	}
	// A link's locale is its pages' and its payments'.
	r := e.createLink("lang", map[string]any{"slug": "cafe", "title": "Café", "amount": 3, "token": "USDT", "locale": "pt-br"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	requireError(t, e.createLink("lang", map[string]any{"slug": "cafe2", "title": "Café", "locale": "klingon"}), http.StatusBadRequest, paywatch.MsgInvalidRequestBody)
	page := get("/l/cafe", german)
	assert.Equal(t, "pt-BR", langOf(t, page))
	id := paymentIDOf(t, e.submitLink("cafe", url.Values{}))
	assert.Equal(t, "pt-BR", langOf(t, get("/"+id, german)))

	// A buyer on a decimal-comma language types 2,50; its errors are in
	// the language; the JSON API's stay English.
	r = e.createLink("lang", map[string]any{"slug": "tip", "title": "Tip", "token": "USDT"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	form := e.payCall(request{method: "POST", path: "/l/tip", header: german, body: url.Values{"amount": {"abc"}}})
	assert.Equal(t, http.StatusBadRequest, form.Code)
	assert.Contains(t, form.Raw, locale.Lang("de").T("msg.buyer_amount"))
	assert.NotEqual(t, paywatch.MsgBuyerAmount, locale.Lang("de").T("msg.buyer_amount"))
	// "1.000" is a thousand to a German reader: refused, not taken as one.
	amb := e.payCall(request{method: "POST", path: "/l/tip", header: german, body: url.Values{"amount": {"1.000"}}})
	assert.Equal(t, http.StatusBadRequest, amb.Code)
	assert.Contains(t, amb.Raw, locale.Lang("de").T("msg.buyer_amount"))
	ok := e.payCall(request{method: "POST", path: "/l/tip", header: german, body: url.Values{"amount": {"2,50"}}})
	require.Equal(t, http.StatusSeeOther, ok.Code, ok.Raw)
	tip := strings.TrimPrefix(ok.Header.Get("Location"), "/")
	assert.Contains(t, get("/"+tip, german).Raw, ">2,50</span>")
	api := e.payCall(request{method: "GET", path: "/api/pay/00000000-0000-4000-8000-000000000000", header: german})
	requireError(t, api, http.StatusNotFound, paywatch.MsgPaymentNotFound)
}

// Every way of asking for Traditional Chinese (zh-TW) is answered alike:
// it is not spoken and not guessed as Simplified Chinese, so ?lang=, the
// cookie and the browser's Accept-Language fall through to the next
// choice, and a merchant's locale of zh-TW is refused (issue 38, item 4).
func TestTraditionalChineseIsTreatedAlikeEverywhere(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	key := e.merchant("hant", "pro", nil, hdWallet())
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "a", "network": "TRC20"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	id := r.str("payment.id")
	page := func(path string, header map[string]string) response {
		t.Helper()
		r := e.payCall(request{method: "GET", path: path, header: header})
		requireHTML(t, r, http.StatusOK)
		return r
	}

	taiwan := map[string]string{"Accept-Language": "zh-TW"}
	for name, got := range map[string]response{
		"Accept-Language": page("/"+id, taiwan),
		"?lang=":          page("/"+id+"?lang=zh-TW", nil),
		"cookie":          page("/"+id, map[string]string{"Cookie": "paywatch_lang=zh-TW"}),
	} {
		assert.Equal(t, "en", langOf(t, got), "%s zh-TW is not read as Simplified Chinese", name)
		for _, c := range got.Header.Values("Set-Cookie") {
			assert.False(t, strings.HasPrefix(c, "paywatch_lang="), "%s: nothing is kept: %s", name, c)
		}
	}
	assert.Equal(t, "zh-Hans", langOf(t, page("/"+id, map[string]string{"Accept-Language": "zh-TW,zh;q=0.9,en;q=0.8"})),
		"a browser that also takes plain Chinese gets Simplified Chinese")
	assert.Equal(t, "fr", langOf(t, page("/"+id+"?lang=zh-TW", map[string]string{"Accept-Language": "zh-TW,fr;q=0.5"})))

	requireError(t, e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "b", "locale": "zh-TW"}),
		http.StatusBadRequest, paywatch.MsgInvalidRequestBody)
	requireError(t, e.createLink("hant", map[string]any{"slug": "tw", "title": "Tea", "locale": "zh-Hant"}),
		http.StatusBadRequest, paywatch.MsgInvalidRequestBody)
	r = e.call(key, "POST", "/v1/payments", map[string]any{"amount": 5, "external_ref": "c", "network": "TRC20", "locale": "zh-Hans"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	assert.Equal(t, "zh-Hans", langOf(t, page("/"+r.str("payment.id"), taiwan)), "a merchant may choose Simplified Chinese for its buyers")
}

// Mail to an account speaks the account's language, not the requester's:
// keys regenerated by someone reading German alert an owner whose
// language is French in French (the alert may be about a thief); an owner
// with no language yet gets English. A new account's first e-mail speaks
// the request's language: the operator creating it with Accept-Language
// Spanish (issue 29).
func TestMailFollowsTheReadersLanguage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	e.merchant("mailfr", "pro", nil, nil)
	german := map[string]string{"Accept-Language": "de-DE,de;q=0.9"}
	regen := func() {
		t.Helper()
		r := e.do(request{method: "POST", path: "/v1/projects/mailfr/regenerate-keys", masterKey: testMasterKey, header: german})
		require.Equal(t, http.StatusOK, r.Code, r.Raw)
	}
	regen()
	e.mailTo(t, "mailfr@example.com", "Security alert: the keys of Shop mailfr were regenerated")
	p, err := e.store.ProjectBySlug(t.Context(), "mailfr")
	require.NoError(t, err)
	require.NoError(t, e.store.SetAccountLocale(t.Context(), p.Owner.ID, "fr")) // as a French sign-in records it
	regen()
	subject := locale.Lang("fr").T("mail.keys.subject", "Project", "Shop mailfr")
	assert.NotEqual(t, "Security alert: the keys of Shop mailfr were regenerated", subject)
	assert.Contains(t, e.mailTo(t, "mailfr@example.com", subject).Text, "mailfr")

	r := e.do(request{method: "POST", path: "/v1/accounts", masterKey: testMasterKey,
		header: map[string]string{"Accept-Language": "es"}, body: map[string]any{"email": "nuevo@example.com", "plan": "free"}})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	e.mailTo(t, "nuevo@example.com", locale.Lang("es").T("mail.set_password.subject"))
}
