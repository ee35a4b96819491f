package locale_test

import (
	"encoding/json"
	"html/template"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/locale"
)

// catalogue reads one language's file as its translators edit it.
func catalogue(t *testing.T, l locale.Lang) map[string]any {
	t.Helper()
	b, err := os.ReadFile("catalogue/active." + string(l) + ".json")
	require.NoError(t, err, "every language has its catalogue file")
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), "%s: not JSON", l)
	return m
}

// fields lists the {{.Field}} names of a message, sorted.
func fields(s string) []string {
	var out []string
	for _, part := range strings.Split(s, "{{.")[1:] {
		name, _, _ := strings.Cut(part, "}}")
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Every language has every message of English and no other, with the
// same fields (a translation that drops {{.Token}} would hide which token
// to send), plural messages with an "other" form, and nothing empty.
func TestCatalogues(t *testing.T) {
	en := catalogue(t, locale.English)
	require.NotEmpty(t, en)
	for _, l := range locale.Languages() {
		got := catalogue(t, l)
		for id, want := range en {
			tr, ok := got[id]
			if !assert.True(t, ok, "%s lacks %q", l, id) {
				continue
			}
			switch w := want.(type) {
			case string:
				s, ok := tr.(string)
				if assert.True(t, ok, "%s: %q is a plain message", l, id) {
					assert.NotEmpty(t, strings.TrimSpace(s), "%s: %q is empty", l, id)
					assert.Equal(t, fields(w), fields(s), "%s: %q has the fields of English", l, id)
				}
			case map[string]any:
				forms, ok := tr.(map[string]any)
				if assert.True(t, ok, "%s: %q has plural forms", l, id) {
					assert.Contains(t, forms, "other", "%s: %q", l, id)
					for form, s := range forms {
						s, _ := s.(string)
						assert.NotEmpty(t, s, "%s: %q %s", l, id, form)
						assert.Equal(t, fields(w["other"].(string)), fields(s), "%s: %q %s has the fields of English", l, id, form)
					}
				}
			}
		}
		for id := range got {
			assert.Contains(t, en, id, "%s has %q, which English does not", l, id)
		}
	}
}

// Messages in place, plural forms, the fallback, and the choice of a
// language from what the buyer and the merchant say.
func TestLanguages(t *testing.T) {
	assert.Equal(t, "Pay Shop", locale.English.T("link.pay_shop", "Shop", "Shop"))
	assert.Equal(t, "1 confirmation", locale.English.N("pay.confirmations", 1))
	assert.Equal(t, "15 confirmations", locale.English.N("pay.confirmations", 15))
	assert.Equal(t, "no.such.id", locale.English.T("no.such.id"))

	for _, tc := range []struct {
		accept     string
		candidates []string
		want       locale.Lang
	}{
		{"", nil, locale.English},
		{"de-DE,de;q=0.9,en;q=0.8", nil, "de"},
		{"pt-BR,pt;q=0.9", nil, "pt-BR"},
		{"pt-PT", nil, "pt-BR"},
		{"zh-CN,zh;q=0.9", nil, "zh-Hans"},
		{"ar-EG", nil, "ar"},
		{"ja-JP", nil, locale.English},
		{"garbage;;q=", nil, locale.English},
		{"de-DE", []string{"tr"}, "tr"},
		{"de-DE", []string{"xx", "FR"}, "fr"},
		{"de-DE", []string{"", "es"}, "es"},
	} {
		assert.Equal(t, tc.want, locale.Choose(tc.accept, tc.candidates...), "%q %v", tc.accept, tc.candidates)
	}
	_, ok := locale.Parse("en-US")
	assert.False(t, ok, "a merchant's locale names a language spoken exactly")
	l, ok := locale.Parse("PT-br")
	assert.True(t, ok)
	assert.Equal(t, locale.Lang("pt-BR"), l)
	assert.Equal(t, "rtl", locale.Lang("ar").Dir())
	assert.Equal(t, "ltr", locale.Lang("de").Dir())
}

// Traditional Chinese is not spoken, and no way of asking for it is read
// as Simplified Chinese: not ?lang=, the cookie or the merchant's locale
// (ParseTag), nor the browser's Accept-Language (Match). A browser that
// also lists plain zh, or zh-Hans, gets Simplified Chinese because it said
// so; otherwise its next language, or English (issue 38, item 4).
func TestTraditionalChineseIsNotGuessed(t *testing.T) {
	for _, tag := range []string{"zh-TW", "zh-HK", "zh-MO", "zh-Hant", "zh-Hant-TW", "ZH-tw"} {
		_, ok := locale.ParseTag(tag)
		assert.False(t, ok, "ParseTag(%q)", tag)
		assert.Equal(t, locale.Lang(""), locale.Match(tag), "Match(%q)", tag)
		assert.Equal(t, locale.English, locale.Choose(tag), "Accept-Language: %s", tag)
		assert.Equal(t, locale.English, locale.Choose("", tag), "?lang=%s", tag)
		assert.Equal(t, locale.Choose(tag), locale.Choose("", tag), "%s: the header and an explicit choice agree", tag)
	}
	for _, tc := range []struct {
		accept string
		want   locale.Lang
	}{
		{"zh-TW,zh;q=0.9,en-US;q=0.8,en;q=0.7", "zh-Hans"}, // Chrome's default for Traditional Chinese
		{"zh-TW,zh-Hans;q=0.5", "zh-Hans"},
		{"zh-TW,fr;q=0.5", "fr"},
		{"ja,zh-TW;q=0.8", locale.English},
		{"zh-Hans-TW", "zh-Hans"}, // Simplified script, as written in Taiwan
		{"zh-SG", "zh-Hans"},
	} {
		assert.Equal(t, tc.want, locale.Choose(tc.accept), "Accept-Language: %s", tc.accept)
	}
}

// Amounts keep every digit, in the language's decimal separator, never
// grouping thousands (a figure copied into a wallet must not read as
// another).
func TestAmounts(t *testing.T) {
	for _, tc := range []struct {
		lang     locale.Lang
		in, want string
	}{
		{"en", "1234567.123456789012345678", "1234567.123456789012345678"},
		{"de", "1234.50", "1234,50"},
		{"fr", "1234.50", "1234,50"},
		{"ru", "25.50", "25,50"},
		{"en", "100", "100"},
		{"zh-Hans", "999.99", "999.99"},
		{"es", "-1000.5", "-1000,5"},
	} {
		assert.Equal(t, tc.want, tc.lang.Amount(tc.in), "%s %s", tc.lang, tc.in)
	}
}

// Lang.HTML escapes the translation and every plain value, and puts in
// only the page's own markup, once: a value bringing the placeholder
// characters cannot splice markup in.
func TestHTMLFields(t *testing.T) {
	forged := "\ue0000\ue001<b>"
	got := string(locale.English.HTML("pay.partial.text",
		"Received", template.HTML(`<span data-f="paid_amount">1</span>`),
		"Missing", forged, "Token", "<i>USDT</i>"))
	assert.Contains(t, got, `<span data-f="paid_amount">1</span>`)
	assert.Contains(t, got, "&lt;b&gt;")
	assert.Contains(t, got, "&lt;i&gt;USDT&lt;/i&gt;")
	assert.Equal(t, 1, strings.Count(got, "<span"), got)
	assert.NotContains(t, got, "\ue000")
}

// Every message of the catalogue is used: its id appears, quoted, in the
// code or a template outside this package and outside tests. A message
// left behind by a change would otherwise go on being translated for
// nothing.
func TestCataloguesHaveNoUnusedMessages(t *testing.T) {
	var sources strings.Builder
	require.NoError(t, filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "locale" || d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || strings.HasSuffix(path, "_test.go") || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".html")) {
			return nil
		}
		b, err := os.ReadFile(path)
		sources.Write(b)
		return err
	}))
	code := sources.String()
	for id := range catalogue(t, locale.English) {
		assert.True(t, strings.Contains(code, `"`+id+`"`), "%q is in the catalogue and used nowhere", id)
	}
}

// No message names a network or a token: they reach every language through
// {{.Token}} and {{.Network}} from the table (network.go), so a new network
// or token (BASE, DAI, PYUSD) needs no translation and cannot be left out
// of one.
func TestCataloguesNameNoNetworkOrToken(t *testing.T) {
	names := []string{"Tron", "Ethereum", "BSC", "Arbitrum", "Tether", "PayPal", "Dai"}
	for _, info := range paywatch.Networks() {
		names = append(names, string(info.Network), info.Name)
	}
	for _, p := range paywatch.Pairs() {
		names = append(names, string(p.Token), paywatch.TokenName(p.Token))
	}
	for _, n := range paywatch.PlannedNetworks {
		names = append(names, string(n))
	}
	for i, n := range names {
		names[i] = regexp.QuoteMeta(n)
	}
	named := regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)
	for _, l := range locale.Languages() {
		for id, msg := range catalogue(t, l) {
			texts := []any{msg}
			if forms, ok := msg.(map[string]any); ok {
				texts = texts[:0]
				for _, f := range forms {
					texts = append(texts, f)
				}
			}
			for _, s := range texts {
				s, _ := s.(string)
				assert.Empty(t, named.FindAllString(s, -1), "%s: %q names a network or token instead of taking it as a field", l, id)
			}
		}
	}
}
