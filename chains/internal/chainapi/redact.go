package chainapi

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Redactor names one configured endpoint without its credentials and
// scrubs them out of text. A provider's key can sit in the URL's path
// (Infura's /v3/KEY, Alchemy's /v2/KEY, QuickNode's /TOKEN/), its query,
// its user info or a header (TronGrid's TRON-PRO-API-KEY, a bearer token):
// none of them may reach a log line, an error, /health, a metric or
// `paywatch check`.
type Redactor struct {
	name    string
	secrets []string // longest first, so a secret inside another goes with it
}

// minSecret is the shortest path segment or query value taken for a secret:
// shorter ones ("v2", "rpc") are route names, and replacing them everywhere
// would garble messages without hiding anything.
const minSecret = 6

// NewRedactor returns the Redactor of the endpoint at raw with headers.
// Its name is the scheme, host and port, with "/…" where a path or query
// was left out: https://mainnet.infura.io/… for
// https://mainnet.infura.io/v3/KEY. A bare host:port (a gRPC address)
// names itself.
func NewRedactor(raw string, headers http.Header) Redactor {
	r := Redactor{}
	add := func(s string) {
		if s = strings.TrimSpace(s); len(s) >= minSecret || (s != "" && len(s) == len(raw)) {
			r.secrets = append(r.secrets, s)
		}
	}
	u, err := url.Parse(raw)
	switch {
	case err == nil && u.Scheme != "" && u.Host != "":
		r.name = u.Scheme + "://" + u.Host
		if strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
			r.name += "/…"
			add(raw)
		}
		if u.User != nil {
			add(u.User.Username())
			if p, ok := u.User.Password(); ok {
				add(p)
			}
			add(raw)
		}
		for _, seg := range strings.Split(u.Path, "/") {
			add(seg)
			if un, err := url.PathUnescape(seg); err == nil {
				add(un)
			}
		}
		if p := strings.Trim(u.Path, "/"); strings.Contains(p, "/") {
			add(p)
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
			}
		}
		add(u.RawQuery)
	case err == nil && u.Scheme != "" && u.Opaque != "": // host:port parses as scheme "host"
		r.name = raw
	default:
		if strings.ContainsAny(raw, "/?@") {
			r.name = "<endpoint>"
			add(raw)
		} else {
			r.name = raw
		}
	}
	for _, vs := range headers {
		for _, v := range vs {
			add(v)
			if _, tok, ok := strings.Cut(v, " "); ok { // "Bearer TOKEN", "Basic ..."
				add(tok)
			}
		}
	}
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	r.secrets = slices.Compact(r.secrets)
	return r
}

// Name is the endpoint's name for logs, errors, /health and metrics.
func (r Redactor) Name() string { return r.name }

// String returns s with every secret of the endpoint replaced by "…".
func (r Redactor) String(s string) string {
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, "…")
		}
	}
	return s
}

// Error returns err with the endpoint's secrets scrubbed from its text. The
// result unwraps to err, so errors.Is and errors.As see what they saw.
func (r Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := r.String(msg)
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

// redactedError is an error whose text was scrubbed of credentials.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
