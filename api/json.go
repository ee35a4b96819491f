package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// decodeBody reads a JSON object into dst (whose fields are usually
// json.RawMessage, checked by the field readers below). Numbers are kept
// as json.Number, never float64. Bad JSON, a non-object, trailing data or a
// wrong field type all give "Invalid request body"; an oversized body gives
// 413.
func decodeBody(c echo.Context, dst any) error {
	dec := json.NewDecoder(c.Request().Body)
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
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
	if _, err := dec.Token(); err != io.EOF {
		return errInvalidBody
	}
	return nil
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
