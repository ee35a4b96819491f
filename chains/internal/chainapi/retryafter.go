package chainapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter caps how long a provider's Retry-After rests an endpoint:
// a provider asking for an hour must not silence it for an hour.
const MaxRetryAfter = 10 * time.Minute

// RetryAfterError is an endpoint's refusal that says how long to wait
// (HTTP Retry-After on a 429 or 503). The endpoint list rests the endpoint
// that long, calling the others meanwhile, and the scanner waits at least
// that long when every endpoint rests.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", e.Err, e.After)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfterOf returns the wait an error asks for, if any.
func RetryAfterOf(err error) (time.Duration, bool) {
	var ra *RetryAfterError
	if errors.As(err, &ra) && ra.After > 0 {
		return ra.After, true
	}
	return 0, false
}

// ParseRetryAfter reads a Retry-After header: delay-seconds or an
// HTTP-date, capped at MaxRetryAfter; 0 when absent or unreadable.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.Atoi(v); err == nil {
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}
