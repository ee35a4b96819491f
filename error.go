package paywatch

import (
	"errors"
	"fmt"
)

// Application error codes. They are transport-neutral: the HTTP layer maps
// them to status codes in one place, and activities map them to Temporal
// error types, so no caller needs to match on message text.
const (
	ECONFLICT     = "conflict"     // ECONFLICT is a state conflict: HTTP 409.
	EFORBIDDEN    = "forbidden"    // EFORBIDDEN is a refused, authenticated caller: HTTP 403.
	EGONE         = "gone"         // EGONE is an expired resource, such as a payment page: HTTP 410.
	EINTERNAL     = "internal"     // EINTERNAL is anything unexpected: HTTP 500, message hidden.
	EINVALID      = "invalid"      // EINVALID is bad input: HTTP 400.
	ENOTFOUND     = "not_found"    // ENOTFOUND is a missing or foreign resource: HTTP 404.
	ERATELIMIT    = "rate_limit"   // ERATELIMIT is a rate or capacity limit: HTTP 429.
	EUNAUTHORIZED = "unauthorized" // EUNAUTHORIZED is a missing or wrong credential: HTTP 401.
)

// Error is an application error whose Message is safe to show to an API
// client verbatim, unlike the text of arbitrary internal errors.
//
// Every parse and validation error returned by this package is an *Error with
// Code EINVALID, so the API can answer 400 with the exact message (for
// example "USDC is not supported on TRC20") without string matching. The
// webhook verification errors are *Error values with Code EUNAUTHORIZED.
type Error struct {
	// Code is one of the E* constants and selects the HTTP status.
	Code string
	// Message is the human-readable text returned to the client.
	Message string
	// Fields holds extra response fields, such as existing_payment_id on a
	// 409; nil when there are none.
	Fields map[string]any
}

// Error returns the message alone, so that err.Error() of a validation error
// is exactly the text the specification prescribes.
func (e *Error) Error() string {
	return e.Message
}

// Errorf returns an *Error with the given code and a formatted message; it is
// the one way to build application errors so the code is never forgotten.
func Errorf(code string, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, "" for a nil
// error and EINTERNAL for any other error, so unknown failures are never
// mistaken for client mistakes.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the message of the first *Error in err's chain, "" for
// a nil error and "Internal error" otherwise, so internal details never leak
// to API clients.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error"
}

// invalidf returns an EINVALID *Error; parse and validation failures of this
// package all go through it.
func invalidf(format string, args ...any) *Error {
	return Errorf(EINVALID, format, args...)
}

// quoteInput quotes user input for an error message, cut to a sane length so
// a huge or binary value cannot bloat logs and responses.
func quoteInput(s string) string {
	const max = 64
	if len(s) > max {
		s = s[:max] + "..."
	}
	return fmt.Sprintf("%q", s)
}
