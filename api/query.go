package api

import (
	"net/url"
	"strconv"
	"time"

	"github.com/paywatch/paywatch"
)

// The list endpoints' common query parameters: one parser each, so that
// GET /v1/payments, GET /v1/events and the operator's webhook-deliveries
// take the same values with the same messages.

// pageQuery parses limit (1 to maxListLimit, default defaultListLimit) and
// offset (0 or more, default 0); either one malformed is
// MsgInvalidLimit.
func pageQuery(q url.Values) (limit, offset int, err error) {
	limit = defaultListLimit
	if _, ok := q["limit"]; ok {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > maxListLimit {
			return 0, 0, paywatch.Errorf(paywatch.EINVALID, paywatch.MsgInvalidLimit)
		}
		limit = n
	}
	if _, ok := q["offset"]; ok {
		n, err := strconv.Atoi(q.Get("offset"))
		if err != nil || n < 0 {
			return 0, 0, paywatch.Errorf(paywatch.EINVALID, paywatch.MsgInvalidLimit)
		}
		offset = n
	}
	return limit, offset, nil
}

// timeQuery parses the time parameter name (parseTimestamp's formats); nil
// when it is absent, the EINVALID error msg when it is malformed.
func timeQuery(q url.Values, name, msg string) (*time.Time, error) {
	if _, ok := q[name]; !ok {
		return nil, nil
	}
	t, ok := parseTimestamp(q.Get(name))
	if !ok {
		return nil, &paywatch.Error{Code: paywatch.EINVALID, Message: msg}
	}
	return &t, nil
}

// pagination is a list answer's pagination object: the page asked for, the
// total the filter matches, and whether more follow the n items sent.
func pagination(limit, offset, n, total int) map[string]any {
	return map[string]any{"limit": limit, "offset": offset, "total": total, "has_more": offset+n < total}
}
