// Package locale speaks the customer's language: the catalogues of the
// hosted pages (one go-i18n v2 JSON file per language, under catalogue/),
// the choice of a language from what the browser and the merchant say, and
// amounts written in the language's conventions without losing a digit.
//
// Adding a language is one catalogue file, active.<tag>.json, and one line
// in languages below.
package locale

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
	"sync"

	"github.com/nicksnyder/go-i18n/v2/i18n"
	"golang.org/x/text/language"
)

//go:embed catalogue/*.json
var catalogue embed.FS

// Lang is a language the pages speak, by its BCP 47 tag ("pt-BR").
type Lang string

// English is the fallback, and the language of every message's source.
const English Lang = "en"

// info is what the pages need of a language besides its messages.
type info struct {
	lang Lang
	// name is the language's own name, for the switcher.
	name string
	rtl  bool
	// decimal separates an amount's fraction. Thousands are never
	// grouped: "1.234" is a thousand and more in German and a little over
	// one in English, and an amount a buyer copies into a wallet must not
	// be read as another.
	decimal string
}

// languages are the languages spoken, in the switcher's order.
var languages = []info{
	{"en", "English", false, "."},
	{"es", "Español", false, ","},
	{"pt-BR", "Português (Brasil)", false, ","},
	{"ru", "Русский", false, ","},
	{"uk", "Українська", false, ","},
	{"tr", "Türkçe", false, ","},
	{"zh-Hans", "简体中文", false, "."},
	{"vi", "Tiếng Việt", false, ","},
	{"id", "Bahasa Indonesia", false, ","},
	{"fr", "Français", false, ","},
	{"de", "Deutsch", false, ","},
	{"ar", "العربية", true, "."},
}

var (
	loadOnce sync.Once
	bundle   *i18n.Bundle
	matcher  language.Matcher
	locals   map[Lang]*i18n.Localizer
	byLower  map[string]info
)

// load reads the catalogues once; a catalogue that does not parse is a
// build defect, which TestCatalogues catches.
func load() {
	loadOnce.Do(func() {
		bundle = i18n.NewBundle(language.English)
		bundle.RegisterUnmarshalFunc("json", json.Unmarshal)
		locals, byLower = map[Lang]*i18n.Localizer{}, map[string]info{}
		tags := make([]language.Tag, 0, len(languages))
		for _, l := range languages {
			if _, err := bundle.LoadMessageFileFS(catalogue, "catalogue/active."+string(l.lang)+".json"); err != nil {
				panic(fmt.Sprintf("locale: catalogue of %s: %v", l.lang, err))
			}
			locals[l.lang] = i18n.NewLocalizer(bundle, string(l.lang))
			byLower[strings.ToLower(string(l.lang))] = l
			tags = append(tags, language.MustParse(string(l.lang)))
		}
		matcher = language.NewMatcher(tags)
	})
}

// Languages lists the languages spoken, English first.
func Languages() []Lang {
	out := make([]Lang, len(languages))
	for i, l := range languages {
		out[i] = l.lang
	}
	return out
}

// Parse returns the language a tag names exactly (any case: "PT-br"), for
// a merchant's `locale` and the `lang` parameter; false for any other.
func Parse(s string) (Lang, bool) {
	load()
	l, ok := byLower[strings.ToLower(strings.TrimSpace(s))]
	return l.lang, ok
}

// closeEnough is the least confidence of the matcher at which a tag is
// taken as a language spoken, for ParseTag and Match alike, so that
// ?lang=, the cookie, a merchant's locale and Accept-Language never
// disagree about a tag. High takes regional variants ("pt-PT" for pt-BR,
// "de-CH" for de); Low, which golang.org/x/text calls "most likely not a
// match", is what it gives Traditional Chinese (zh-TW, zh-HK, zh-Hant)
// against zh-Hans, and is refused.
//
// Traditional Chinese is not guessed as Simplified Chinese on purpose:
// they are two written standards, and a reader of one reads the other
// with effort, on a page whose amounts and instructions must not be
// misread. The buyer's browser decides instead: one that also lists
// plain "zh" (as Chrome does for zh-TW) or zh-Hans gets Simplified
// Chinese, another its next language or English, and the switcher offers
// 简体中文 in one click. A merchant who judges Simplified Chinese right
// for its buyers says so with a locale of zh-Hans.
const closeEnough = language.High

// ParseTag returns the language a BCP 47 tag names: exactly (any case), or
// as a close variant ("en-US", "pt", "zh-CN", "de-AT"); false for a tag
// the pages do not speak (a far match such as "zh-TW" for Simplified
// Chinese is refused rather than guessed: see closeEnough).
func ParseTag(s string) (Lang, bool) {
	if l, ok := Parse(s); ok {
		return l, true
	}
	tag, err := language.Parse(strings.TrimSpace(s))
	if err != nil {
		return "", false
	}
	_, i, conf := matcher.Match(tag)
	if conf < closeEnough {
		return "", false
	}
	return languages[i].lang, true
}

// Match picks the language of an Accept-Language header: the best of the
// languages spoken, or "" when none is close enough (closeEnough: a
// header of only "zh-TW" is ""), and the caller falls back.
func Match(acceptLanguage string) Lang {
	load()
	tags, _, err := language.ParseAcceptLanguage(acceptLanguage)
	if err != nil || len(tags) == 0 {
		return ""
	}
	_, i, conf := matcher.Match(tags...)
	if conf < closeEnough {
		return ""
	}
	return languages[i].lang
}

// Choose is the page's language: the first of the candidates that is
// spoken (an explicit `lang`, the buyer's cookie, the merchant's locale),
// then the browser's Accept-Language, then English.
func Choose(acceptLanguage string, candidates ...string) Lang {
	for _, c := range candidates {
		if l, ok := ParseTag(c); ok {
			return l
		}
	}
	if l := Match(acceptLanguage); l != "" {
		return l
	}
	return English
}

func (l Lang) info() info {
	load()
	if i, ok := byLower[strings.ToLower(string(l))]; ok {
		return i
	}
	return languages[0]
}

// Name is the language's own name.
func (l Lang) Name() string { return l.info().name }

// Dir is the text direction of the language, for the html element.
func (l Lang) Dir() string {
	if l.info().rtl {
		return "rtl"
	}
	return "ltr"
}

// T is message id in the language, with data's values in place of its
// {{.Name}} fields (pairs of name and value); English where the language
// lacks it, and the id itself for an unknown id (TestCatalogues keeps both
// from happening).
func (l Lang) T(id string, data ...any) string {
	return l.localize(id, nil, data)
}

// N is T for a message with plural forms, chosen by count (also given to
// the message as {{.Count}}).
func (l Lang) N(id string, count int, data ...any) string {
	return l.localize(id, count, append([]any{"Count", count}, data...))
}

func (l Lang) localize(id string, count any, data []any) string {
	load()
	loc := locals[l.info().lang]
	fields := map[string]any{}
	for i := 0; i+1 < len(data); i += 2 {
		if k, ok := data[i].(string); ok {
			fields[k] = data[i+1]
		}
	}
	s, err := loc.Localize(&i18n.LocalizeConfig{MessageID: id, TemplateData: fields, PluralCount: count})
	if err != nil && s == "" {
		return id
	}
	return s
}

// HTML is T for a message some of whose fields are markup the page made
// (template.HTML, such as a live-updated <span>): the translation itself
// is escaped, and only those fields are put in as they are.
func (l Lang) HTML(id string, data ...any) template.HTML {
	var pairs []string
	plain := make([]any, len(data))
	copy(plain, data)
	for i := 1; i < len(plain); i += 2 {
		if h, ok := plain[i].(template.HTML); ok {
			mark := fmt.Sprintf("\ue000%d\ue001", len(pairs)/2)
			plain[i] = mark
			pairs = append(pairs, mark, string(h))
		} else {
			plain[i] = strings.NewReplacer("\ue000", "", "\ue001", "").Replace(fmt.Sprint(plain[i]))
		}
	}
	text := l.T(id, plain...)
	// One pass, so markup put in is never scanned again: no value or
	// translation can bring a mark of its own and splice markup.
	out := strings.NewReplacer(pairs...).Replace(template.HTMLEscapeString(text))
	return template.HTML(out) //nolint:gosec // escaped above, but for the page's own markup
}

// Decimal is the language's decimal separator, for a script that writes
// amounts as Amount does.
func (l Lang) Decimal() string { return l.info().decimal }

// Amount writes a decimal amount ("1234.50", as the API gives it) with the
// language's decimal separator ("1234,50" in German), digit for digit and
// without grouping thousands.
func (l Lang) Amount(amount string) string {
	return strings.Replace(amount, ".", l.info().decimal, 1)
}

// langKey is the context key of the language of the person acting.
type langKey struct{}

// WithLang is ctx carrying the language of the person whose request it
// serves, so that what the request sends (e-mails) speaks it.
func WithLang(ctx context.Context, l Lang) context.Context {
	return context.WithValue(ctx, langKey{}, l)
}

// FromContext is the language WithLang put in ctx; English without one.
func FromContext(ctx context.Context) Lang {
	if l, ok := ctx.Value(langKey{}).(Lang); ok {
		return l
	}
	return English
}
