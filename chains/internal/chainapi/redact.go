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
	// pieces are the credentials themselves (not the URL or header value
	// that holds them), in every form: a run of text that starts with one's
	// first minSecret characters and goes on as it does is a cut piece of
	// it (String).
	pieces []string
}

// minSecret is the shortest path segment or query value taken for a secret:
// shorter ones ("v2", "rpc") are route names, and replacing them everywhere
// would garble messages without hiding anything. It is also how many first
// characters of a credential make a piece of it.
const minSecret = 6

// maxRedacted is the most of a text String reads: a provider's answer may
// be megabytes long, and what is cut off is no longer in the text. A
// credential across the cut goes as a piece of it.
const maxRedacted = 16 << 10

// NewRedactor returns the Redactor of the endpoint at raw with headers.
// Its name is the scheme, host and port, with "/…" where a path or query
// was left out: https://mainnet.infura.io/… for
// https://mainnet.infura.io/v3/KEY. A bare host:port (a gRPC address)
// names itself.
func NewRedactor(raw string, headers http.Header) Redactor {
	r := Redactor{}
	// container adds what holds credentials (the whole URL, path or query,
	// a header's whole value): replaced whole, never taken apart.
	container := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			r.secrets = append(r.secrets, s)
		}
	}
	// credential adds a credential in every form it may travel in; a
	// path segment or query value shorter than minSecret is none (unless
	// always, as for a password or a header's token).
	credential := func(s string, always bool) {
		s = strings.TrimSpace(s)
		if s == "" || !always && len(s) < minSecret && len(s) != len(raw) {
			return
		}
		for _, v := range append([]string{s}, encodings(s)...) {
			r.secrets = append(r.secrets, v)
			if len(v) >= minSecret {
				r.pieces = append(r.pieces, v)
			}
		}
	}
	// urlSecrets adds what of u can hold a key: its user info (and the
	// Basic header Go sends for it), its path segments (raw and decoded)
	// and the whole path, its query and values.
	urlSecrets := func(u *url.URL) {
		if u.User != nil {
			user := u.User.Username()
			pass, ok := u.User.Password()
			credential(user, false)
			if ok {
				credential(pass, true)
			}
			basic := user + ":" + pass
			credential(basic, true)
			credential(base64.StdEncoding.EncodeToString([]byte(basic)), true)
		}
		for _, path := range []string{u.Path, u.EscapedPath()} {
			for _, seg := range strings.Split(path, "/") {
				credential(seg, false)
				if un, err := url.PathUnescape(seg); err == nil {
					credential(un, false)
				}
			}
			if p := strings.Trim(path, "/"); strings.Contains(p, "/") {
				container(p)
			}
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				credential(v, false)
			}
		}
		container(u.RawQuery)
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
			container(raw)
		}
		urlSecrets(u)
	case bareHostPort(raw): // host:port, a gRPC address, parses as scheme "host"
		r.name = raw
	default:
		// No scheme: whatever follows host:port could be a key.
		if v, err := url.Parse("//" + raw); err == nil && v.Host != "" && hidden(v) {
			r.name = v.Host + "/…"
			container(raw)
			urlSecrets(v)
		} else if strings.ContainsAny(raw, "/?@#") || err != nil {
			r.name = "<endpoint>"
			credential(raw, true)
		} else {
			r.name = raw
		}
	}
	// Every configured header value is a secret, however short; its token
	// after a scheme ("Bearer TOKEN") is the credential, and a Basic one's
	// user name and password too.
	for _, vs := range headers {
		for _, v := range vs {
			scheme, tok, ok := strings.Cut(strings.TrimSpace(v), " ")
			if !ok {
				credential(v, true)
				continue
			}
			container(v)
			credential(tok, true)
			if strings.EqualFold(scheme, "Basic") {
				if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(tok)); err == nil {
					user, pass, _ := strings.Cut(string(dec), ":")
					credential(string(dec), true)
					credential(user, false)
					credential(pass, true)
				}
			}
		}
	}
	byLength := func(a, b string) int { return len(b) - len(a) }
	slices.SortFunc(r.secrets, byLength)
	r.secrets = slices.Compact(r.secrets)
	slices.SortFunc(r.pieces, byLength)
	r.pieces = slices.Compact(r.pieces)
	return r
}

// encodings returns the forms of a credential other than itself that a
// request or an echo of it may carry: percent-encoded as a query value and
// as a path segment (upper- and lower-case hex), JSON-escaped, and base64
// in the standard and URL alphabets, padded and not.
func encodings(sec string) []string {
	b := []byte(sec)
	var out []string
	for _, v := range []string{
		url.QueryEscape(sec), url.PathEscape(sec), strings.ReplaceAll(sec, "/", `\/`),
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
	} {
		out = append(out, v, lowerEscapes(v))
	}
	return slices.DeleteFunc(out, func(v string) bool { return v == sec })
}

// lowerEscapes returns s with its %XX escapes in lower-case hex.
func lowerEscapes(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerHex(b[i+1]), lowerHex(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + ('a' - 'A')
	}
	return c
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
// every form it is sent in (encodings), and any piece of a credential
// that starts with its first minSecret characters: an answer a provider
// cut short, or that a client cut, may end inside a key. Only the first
// maxRedacted bytes of s are kept.
func (r Redactor) String(s string) string {
	if len(s) > maxRedacted {
		s = strings.ToValidUTF8(s[:maxRedacted], "") + "…"
	}
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, "…")
		}
	}
	for _, p := range r.pieces {
		s = scrubPieces(s, p)
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
