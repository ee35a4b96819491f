package api

import (
	"html/template"
	"time"
)

// Every instant the dashboard shows is written by when, one way: a
// <time> whose datetime is the exact UTC instant (RFC 3339), whose title
// repeats it for people ("2026-11-27 14:52:03 UTC", shown on hover), and
// whose text is "27 Nov 2026, 14:52 UTC". dash.js rewrites the text into
// the viewer's time zone ("27 Nov 2026, 23:52" in Tokyo) and leaves the
// title as it is; without the script the UTC text stands.
const (
	whenText  = "2 Jan 2006, 15:04 UTC"
	whenTitle = "2006-01-02 15:04:05 UTC"
)

// when renders an instant for a dashboard template. It takes a time.Time,
// a *time.Time, or the RFC 3339 text of the API's views (string or
// *string); nil, zero and empty render nothing.
func when(v any) template.HTML {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x == nil {
			return ""
		}
		t = *x
	case string:
		return whenString(x)
	case *string:
		if x == nil {
			return ""
		}
		return whenString(*x)
	default:
		return ""
	}
	if t.IsZero() {
		return ""
	}
	t = t.UTC()
	// The three formats print digits, month names, spaces and punctuation
	// only: nothing to escape.
	return template.HTML(`<time datetime="` + t.Format(time.RFC3339) + `" title="` + t.Format(whenTitle) + `">` +
		t.Format(whenText) + `</time>`)
}

// whenString renders the RFC 3339 text of an instant; text that is not one
// is shown as it is, escaped.
func whenString(s string) template.HTML {
	if s == "" {
		return ""
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return template.HTML(template.HTMLEscapeString(s))
	}
	return when(t)
}
