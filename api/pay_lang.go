package api

import (
	"html/template"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/locale"
)

// The hosted pages speak the buyer's language (package locale): an
// explicit ?lang= (the switcher's links, or the merchant's own link), then
// the choice kept in the langCookie, then the merchant's default for the
// payment or link (`locale` on creation, merchantLang), then the browser's
// Accept-Language, then English. A ?lang= that the pages speak is kept in the cookie for
// the next pages (the form posts, the payment after a link).
const (
	langCookie  = "paywatch_lang"
	contextLang = "paywatch.lang"
)

// buyerChoice is the language the buyer chose, if any: an explicit ?lang=
// the pages speak, else the one the cookie keeps.
func buyerChoice(c echo.Context) (asked locale.Lang, kept string) {
	if ck, err := c.Cookie(langCookie); err == nil {
		kept = ck.Value
	}
	asked, _ = locale.ParseTag(c.QueryParam("lang"))
	return asked, kept
}

// merchantLang makes the merchant's default language (a payment's or a
// link's locale) the page's, unless the buyer chose one (?lang= or the
// cookie). Call it before the page is rendered.
func merchantLang(c echo.Context, merchant string) {
	asked, kept := buyerChoice(c)
	if _, ok := locale.Parse(kept); ok || asked != "" {
		return
	}
	if l, ok := locale.Parse(merchant); ok {
		c.Set(contextLang, l)
	}
}

// pageLang chooses the page's language and keeps an explicit choice in the
// cookie.
func pageLang(c echo.Context) locale.Lang {
	if l, ok := c.Get(contextLang).(locale.Lang); ok {
		return l
	}
	asked, kept := buyerChoice(c)
	l := locale.Choose(c.Request().Header.Get("Accept-Language"), string(asked), kept)
	if asked != "" && string(asked) != kept {
		c.SetCookie(&http.Cookie{
			Name: langCookie, Value: string(asked), Path: "/", MaxAge: int(365 * 24 * time.Hour / time.Second),
			HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.Scheme() == "https",
		})
	}
	c.Set(contextLang, l)
	return l
}

// buyerMessages are the contract's messages a buyer can meet on the pages,
// by their catalogue ids. The JSON API keeps them in English, word for
// word; the pages say them in the buyer's language.
var buyerMessages = map[string]string{
	paywatch.MsgTooManyRequests:      "msg.too_many",
	paywatch.MsgNotPending:           "msg.not_pending",
	paywatch.MsgNetworkTokenRequired: "msg.network_token_required",
	paywatch.MsgNotAccepting:         "pay.not_accepting",
	paywatch.MsgBuyerAmount:          "msg.buyer_amount",
	paywatch.MsgBuyerAmountZero:      "msg.buyer_amount_zero",
	paywatch.MsgBuyerEmail:           "msg.buyer_email",
	paywatch.MsgBuyerName:            "msg.buyer_name",
	paywatch.MsgBuyerNote:            "msg.buyer_note",
}

// buyerMessage is a contract message in l; one without a translation
// stays as the API says it.
func buyerMessage(l locale.Lang, english string) string {
	if id, ok := buyerMessages[english]; ok {
		return l.T(id)
	}
	return english
}

// langOption is one language of the page's switcher.
type langOption struct {
	Lang    locale.Lang
	Name    string
	Current bool
}

// pageFuncs are the page templates' functions in language l.
func pageFuncs(l locale.Lang) template.FuncMap {
	return template.FuncMap{
		// t is a message; th one with markup fields (f); n one with
		// plural forms.
		"t":  l.T,
		"th": l.HTML,
		"n":  l.N,
		// f is a field the page's script keeps up to date.
		"f": func(name string, v any) template.HTML {
			return template.HTML(`<span data-f="` + template.HTMLEscapeString(name) + `">` + template.HTMLEscaper(v) + `</span>`) //nolint:gosec // both escaped
		},
		// amt writes an amount in the language's conventions.
		"amt":     l.Amount,
		"strong":  func(h template.HTML) template.HTML { return "<strong>" + h + "</strong>" },
		"msg":     func(english string) string { return buyerMessage(l, english) },
		"decimal": l.Decimal,
		// when is a time the page's script writes in the buyer's time
		// zone and language; text is the server's (UTC) form.
		"when": func(iso, text string) template.HTML {
			return template.HTML(`<time datetime="` + template.HTMLEscapeString(iso) + `">` + template.HTMLEscapeString(text) + `</time>`) //nolint:gosec // both escaped
		},
		"lang": func() locale.Lang { return l },
		"dir":  l.Dir,
		"langs": func() []langOption {
			var out []langOption
			for _, o := range locale.Languages() {
				out = append(out, langOption{Lang: o, Name: o.Name(), Current: o == l})
			}
			return out
		},
	}
}
