package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch/locale"
)

// decodeBody reads a JSON object into dst (whose fields are usually
// json.RawMessage, checked by the field readers below). Numbers are kept
// as json.Number, never float64. Bad JSON, a non-object, trailing data, a
// wrong field type, or text or a number PostgreSQL cannot store (see
// storableJSON) all give "Invalid request body"; an oversized body gives
// 413.
func decodeBody(c echo.Context, dst any) error {
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return echo.ErrStatusRequestEntityTooLarge
		}
		return errInvalidBody
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		return errInvalidBody
	}
	if _, err := dec.Token(); err != io.EOF {
		return errInvalidBody
	}
	if !storableJSON(raw) || !uniqueKeys(raw) {
		return errInvalidBody
	}
	return nil
}

// foldKey folds a key as encoding/json matches it to a struct field.
func foldKey(k string) string {
	return strings.Map(func(r rune) rune { return unicode.ToUpper(unicode.ToLower(r)) }, k)
}

// uniqueKeys reports whether no object of a valid JSON text, at any depth
// (metadata included), names a key twice. Go's decoder keeps a duplicate
// key's last value, so {"status":"paid","status":"cancelled"} would read
// as a cancellation; another reader may keep the first. Refusing them
// leaves no doubt about what a request says.
func uniqueKeys(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		keys   map[string]bool
		object bool
		key    bool // the next string token is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
		top := len(stack) - 1
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				if top >= 0 && stack[top].object {
					stack[top].key = true // the object is a value; a key follows it
				}
				stack = append(stack, frame{keys: map[string]bool{}, object: true, key: true})
			case '[':
				if top >= 0 && stack[top].object {
					stack[top].key = true
				}
				stack = append(stack, frame{})
			default:
				stack = stack[:top]
			}
			continue
		}
		if top < 0 || !stack[top].object {
			continue
		}
		if stack[top].key {
			k, _ := tok.(string)
			if top == 0 {
				// The request structs take their fields without regard to
				// case (and ſ for s, the Kelvin sign for k), as Go's decoder
				// matches them: {"status":…,"STATUS":…} is a duplicate too.
				k = foldKey(k)
			}
			if stack[top].keys[k] {
				return false
			}
			stack[top].keys[k] = true
			stack[top].key = false
			continue
		}
		stack[top].key = true // a scalar value; a key follows it
	}
}

// storableJSON reports whether every string and number of a syntactically
// valid JSON text, keys included, can be stored in PostgreSQL: the text is
// UTF-8, no string holds NUL (\u0000) or half of a surrogate pair, which
// neither text nor jsonb columns accept, and every number is in range
// (saneNumber). Checking the whole body here covers every field at once,
// metadata kept verbatim included; Go's decoder would silently turn
// invalid UTF-8 and lone surrogates into U+FFFD in the fields it decodes,
// and keep them in the ones it does not.
func storableJSON(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	inString := false
	for i := 0; i < len(raw); i++ {
		switch b := raw[i]; {
		case !inString && (b == '-' || b >= '0' && b <= '9'):
			end := i + 1
			for end < len(raw) && strings.IndexByte("0123456789+-.eE", raw[end]) >= 0 {
				end++
			}
			if !saneNumber(raw[i:end]) {
				return false
			}
			i = end - 1
		case b == '"':
			inString = !inString
		case b == '\\' && inString:
			i++
			if raw[i] != 'u' {
				continue
			}
			r := hex4(raw[i+1 : i+5])
			i += 4
			switch {
			case r == 0 || utf16.IsSurrogate(r) && r >= 0xdc00:
				return false // NUL, or a low surrogate alone
			case utf16.IsSurrogate(r):
				// A high surrogate must be followed by a low one.
				if i+6 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
					return false
				}
				if lo := hex4(raw[i+3 : i+7]); lo < 0xdc00 || lo > 0xdfff {
					return false
				}
				i += 6
			}
		}
	}
	return true
}

// maxNumberDigits bounds JSON numbers in request bodies (saneNumber).
const maxNumberDigits = 1000

// saneNumber reports whether a JSON number (valid JSON syntax) is in the
// range a request may carry: at most maxNumberDigits digits before the
// exponent, and a magnitude from 10^-1000 to below 10^1001, that is, a
// decimal exponent of at most ±1000 once the number is written as d.ddd×10^e
// (a zero's exponent as written). PostgreSQL's numeric, which jsonb
// metadata is stored in, fails on 1e200000 or 1e-200000 and stores
// 1e131000 as 131,001 digits, printed back in full; no amount, limit or
// metadata value needs more than this range.
func saneNumber(num []byte) bool {
	mantissa, exp := num, []byte(nil)
	if i := bytes.IndexAny(num, "eE"); i >= 0 {
		mantissa, exp = num[:i], num[i+1:]
	}
	mantissa = bytes.TrimPrefix(mantissa, []byte("-"))
	intPart, frac, _ := bytes.Cut(mantissa, []byte("."))
	if len(intPart)+len(frac) > maxNumberDigits {
		return false
	}
	// The written exponent, capped well past the range so it cannot overflow.
	e := 0
	negative := len(exp) > 0 && exp[0] == '-'
	for _, c := range bytes.TrimLeft(exp, "+-") {
		if e = e*10 + int(c-'0'); e > 10*maxNumberDigits {
			return false
		}
	}
	if negative {
		e = -e
	}
	// Normalise: the first non-zero digit, at index k of the digits, is
	// the d of d.ddd×10^e.
	digits := string(intPart) + string(frac)
	if k := strings.IndexFunc(digits, func(r rune) bool { return r != '0' }); k >= 0 {
		e += len(intPart) - 1 - k
	}
	return e >= -maxNumberDigits && e <= maxNumberDigits
}

// hex4 reads the four hex digits of a \uXXXX escape of valid JSON.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// storableText reports whether s can be stored in, or compared with, a
// PostgreSQL text column: valid UTF-8 without NUL. Other control characters
// are each field's own business (paywatch.HasControlChars): a buyer's note may
// hold newlines.
func storableText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// absent reports whether a raw field was omitted or null.
func absent(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// optString reads an optional string field; nil when absent or null.
func optString(raw json.RawMessage) (*string, error) {
	if absent(raw) {
		return nil, nil
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return nil, errInvalidBody
	}
	return &s, nil
}

// optLocale reads the optional `locale` of a payment or payment link: a
// BCP 47 tag of a language the hosted pages speak, or a close variant of
// one ("en-US" is en), as the spoken language's tag; "" when absent, null
// or empty. Any other value is a schema failure: 400 "Invalid request
// body", as the contract says of every validation failure.
func optLocale(raw json.RawMessage) (string, error) {
	s, err := optString(raw)
	if err != nil || s == nil || *s == "" {
		return "", err
	}
	l, ok := locale.ParseTag(*s)
	if !ok {
		return "", errInvalidBody
	}
	return string(l), nil
}

// optNumber reads an optional JSON number field, as text; nil when absent
// or null.
func optNumber(raw json.RawMessage) (*json.Number, error) {
	if absent(raw) {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errInvalidBody
	}
	n, ok := v.(json.Number)
	if !ok {
		return nil, errInvalidBody
	}
	return &n, nil
}

// optInt reads an optional integer field.
func optInt(raw json.RawMessage) (*int, error) {
	n, err := optNumber(raw)
	if err != nil || n == nil {
		return nil, err
	}
	i, err := n.Int64()
	if err != nil || i < -1<<31 || i > 1<<31-1 {
		return nil, errInvalidBody
	}
	v := int(i)
	return &v, nil
}

// optBool reads an optional boolean field.
func optBool(raw json.RawMessage) (*bool, error) {
	if absent(raw) {
		return nil, nil
	}
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		return nil, errInvalidBody
	}
	return &b, nil
}

// optObject reads an optional JSON object field, compacted; nil when absent
// or null.
func optObject(raw json.RawMessage) (json.RawMessage, error) {
	if absent(raw) {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, errInvalidBody
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, errInvalidBody
	}
	return buf.Bytes(), nil
}

// timeFormat is how every timestamp is written: ISO 8601 in UTC with
// milliseconds, the form JavaScript's toISOString prints.
const timeFormat = "2006-01-02T15:04:05.000Z"

// ts formats a timestamp.
func ts(t time.Time) string { return t.UTC().Format(timeFormat) }

// optTS formats an optional timestamp; nil stays null.
func optTS(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := ts(*t)
	return &s
}

// parseTimestamp reads an ISO 8601 timestamp of a query filter: RFC 3339
// with any fraction, a date and time without zone (taken as UTC), or a
// date alone (midnight UTC).
func parseTimestamp(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}
