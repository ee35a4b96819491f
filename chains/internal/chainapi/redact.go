package chainapi

import (
	"encoding/base64"
	"net"
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
	// Every configured header value is a secret, however short.
	addAlways := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			r.secrets = append(r.secrets, s)
		}
	}
	// urlSecrets adds what of u can hold a key: its user info, its path
	// segments (raw and decoded) and the whole path, its query and values.
	urlSecrets := func(u *url.URL) {
		if u.User != nil {
			user := u.User.Username()
			pass, ok := u.User.Password()
			add(user)
			if ok {
				add(pass)
			}
			// What the user info is sent as: an Authorization header of
			// Basic base64(user:pass), which a provider may echo.
			basic := user + ":" + pass
			add(basic)
			add(base64.StdEncoding.EncodeToString([]byte(basic)))
		}
		for _, path := range []string{u.Path, u.EscapedPath()} {
			for _, seg := range strings.Split(path, "/") {
				add(seg)
				if un, err := url.PathUnescape(seg); err == nil {
					add(un)
				}
			}
			if p := strings.Trim(path, "/"); strings.Contains(p, "/") {
				add(p)
			}
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
			}
		}
		add(u.RawQuery)
	}
	hidden := func(u *url.URL) bool {
		return strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil
	}
	u, err := url.Parse(raw)
	switch {
	case err == nil && u.Scheme != "" && u.Host != "":
		r.name = u.Scheme + "://" + u.Host
		if strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
			r.name += "/…"
		}
		if hidden(u) {
			add(raw)
		}
		urlSecrets(u)
	case bareHostPort(raw): // host:port, a gRPC address, parses as scheme "host"
		r.name = raw
	default:
		// No scheme: whatever follows host:port could be a key.
		if v, err := url.Parse("//" + raw); err == nil && v.Host != "" && hidden(v) {
			r.name = v.Host + "/…"
			add(raw)
			urlSecrets(v)
		} else if strings.ContainsAny(raw, "/?@#") || err != nil {
			r.name = "<endpoint>"
			add(raw)
		} else {
			r.name = raw
		}
	}
	for _, vs := range headers {
		for _, v := range vs {
			addAlways(v)
			if _, tok, ok := strings.Cut(v, " "); ok { // "Bearer TOKEN", "Basic ..."
				addAlways(tok)
			}
		}
	}
	// Every form a secret may be sent or echoed in: percent-encoded (a
	// provider that echoes the URL it was asked), and base64 (a header
	// echoed in a proxy's error, say).
	for _, sec := range slices.Clone(r.secrets) {
		for _, v := range encodings(sec) {
			if v != sec {
				r.secrets = append(r.secrets, v)
			}
		}
	}
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	r.secrets = slices.Compact(r.secrets)
	return r
}

// encodings returns the forms of a secret other than itself that a
// request or an echo of it may carry: percent-encoded as a query value and
// as a path segment, and base64 in the standard and URL alphabets, padded
// and not.
func encodings(sec string) []string {
	b := []byte(sec)
	return []string{
		url.QueryEscape(sec), url.PathEscape(sec),
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
	}
}

// bareHostPort reports whether raw is host:port and nothing else: no
// path, query or user info that could hold a key.
func bareHostPort(raw string) bool {
	host, port, err := net.SplitHostPort(raw)
	if err != nil || host == "" || strings.ContainsAny(raw, "/?@#") {
		return false
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return false
		}
	}
	return port != ""
}

// Name is the endpoint's name for logs, errors, /health and metrics.
func (r Redactor) Name() string { return r.name }

// String returns s with every secret of the endpoint replaced by "…", in
// every form it is sent in (encodings), and any piece of one that starts
// with its first minSecret characters: an answer a provider cut short, or
// that a client cut, may end inside a key.
func (r Redactor) String(s string) string {
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, "…")
		}
	}
	for _, sec := range r.secrets {
		if len(sec) >= minSecret {
			s = scrubPieces(s, sec)
		}
	}
	return s
}

// scrubPieces replaces each run of s that starts with sec's first
// minSecret characters and goes on as sec does with "…".
func scrubPieces(s, sec string) string {
	head := sec[:minSecret]
	var out strings.Builder
	for {
		i := strings.Index(s, head)
		if i < 0 {
			if out.Len() == 0 {
				return s
			}
			out.WriteString(s)
			return out.String()
		}
		n := minSecret
		for n < len(sec) && i+n < len(s) && s[i+n] == sec[n] {
			n++
		}
		out.WriteString(s[:i])
		out.WriteString("…")
		s = s[i+n:]
	}
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
