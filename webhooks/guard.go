package webhooks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/idna"
)

// ErrPrivateAddress means a webhook URL names or resolves to a private or
// reserved address. The API refuses such URLs when they are saved, and
// delivery refuses them again before every attempt and at dial time.
var ErrPrivateAddress = errors.New("webhook URL points to a private or reserved address")

// ErrBadURL means a webhook URL is not an absolute http(s) URL whose
// host is a host name or an IP address (see Host) and whose port, if
// given, is 1-65535.
var ErrBadURL = errors.New("webhook URL must be an absolute http or https URL")

// reservedPrefixes are the special-purpose ranges (IANA IPv4 and IPv6
// special-purpose registries) a webhook must never reach, beyond what
// netip's predicates already cover.
var reservedPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		// IPv4
		"0.0.0.0/8",       // "this network"
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // carrier-grade NAT
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local (cloud metadata)
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // TEST-NET-1
		"192.31.196.0/24", // AS112
		"192.52.193.0/24", // AMT
		"192.88.99.0/24",  // 6to4 relay anycast
		"192.168.0.0/16",  // private
		"192.175.48.0/24", // AS112
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // TEST-NET-2
		"203.0.113.0/24",  // TEST-NET-3
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, incl. broadcast
		// IPv6
		"::/128",         // unspecified
		"::1/128",        // loopback
		"::/96",          // IPv4-compatible (deprecated)
		"64:ff9b:1::/48", // local-use IPv4/IPv6 translation
		"100::/64",       // discard-only
		"2001::/23",      // IETF protocol assignments (Teredo, ORCHID, ...)
		"2001:db8::/32",  // documentation
		"2002::/16",      // 6to4: embeds an arbitrary IPv4 address
		"3fff::/20",      // documentation
		"5f00::/16",      // segment routing SIDs
		"fc00::/7",       // unique local
		"fe80::/10",      // link-local
		"fec0::/10",      // site-local (deprecated)
		"ff00::/8",       // multicast
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// nat64Prefix is the well-known NAT64 prefix; the IPv4 address in its low
// 32 bits is checked like any other.
var nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")

// globalUnicast6 is IPv6's global unicast block: every other IPv6 address
// (the rest of ::/8, IPv4-translated ::ffff:0:0:0/96, and every block IANA
// has not allocated) is refused, whatever it embeds.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// PublicIP reports whether ip is a globally routable unicast address a
// webhook may be sent to: not private, loopback, link-local, CGNAT, unique
// local, multicast, unspecified, documentation or otherwise reserved, in
// IPv4 or IPv6, including IPv4-mapped and NAT64 forms of such addresses.
// An IPv6 address must be global unicast (2000::/3), apart from the
// IPv4-mapped and well-known NAT64 forms of a public IPv4 address.
func PublicIP(ip netip.Addr) bool {
	if !ip.IsValid() {
		return false
	}
	ip = ip.WithZone("")
	if ip.Is4In6() {
		ip = ip.Unmap()
	}
	if ip.Is6() && nat64Prefix.Contains(ip) {
		b := ip.As16()
		return PublicIP(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	}
	if ip.Is6() && !globalUnicast6.Contains(ip) {
		return false
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified() || ip.IsMulticast() ||
		ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range reservedPrefixes {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// CheckURL checks a webhook URL as the service does when a project
// saves it and before every delivery: an absolute http or https URL whose
// host is a valid host name or IP address (read as Host reads it), with
// no user info and no port outside 1-65535, that is, or resolves only to,
// public addresses (see PublicIP).
// "localhost" and names under ".localhost" are refused without a lookup.
// With allowPrivate (PAYWATCH_WEBHOOK_ALLOW_PRIVATE) only the URL's form is
// checked. Errors wrap ErrBadURL or ErrPrivateAddress; a failed DNS
// lookup is returned as is.
func CheckURL(ctx context.Context, rawURL string, allowPrivate bool) error {
	return checkURL(ctx, nil, rawURL, allowPrivate)
}

// checkURL is CheckURL with the resolver that looks up the host (nil means
// net.DefaultResolver). A host name that resolves to a private or reserved
// address is refused with a privateAnswer: the answer, unlike the URL, may
// change.
func checkURL(ctx context.Context, resolver *net.Resolver, rawURL string, allowPrivate bool) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || !validPort(u.Port()) {
		return ErrBadURL
	}
	host, ip, err := Host(u.Hostname())
	if err != nil {
		return err
	}
	if allowPrivate {
		return nil
	}
	if ip.IsValid() {
		if !PublicIP(ip) {
			return fmt.Errorf("%w: %s", ErrPrivateAddress, ip)
		}
		return nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return fmt.Errorf("%w: %s", ErrPrivateAddress, host)
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	ips, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("resolve webhook host %s: %w", host, err)
	}
	for _, ip := range ips {
		if !PublicIP(ip) {
			return privateAnswer{detail: host + " resolves to " + ip.String()}
		}
	}
	return nil
}

// validPort reports whether port, as url.URL.Port gives it (digits, or
// "" for the scheme's default), is one a connection can be made to:
// 1-65535. url.Parse takes any run of digits, so without this a URL such
// as https://shop.example:99999/ would be saved and then fail every
// delivery.
func validPort(port string) bool {
	if port == "" {
		return true
	}
	n, err := strconv.ParseUint(port, 10, 16)
	return err == nil && n != 0
}

// privateAnswer is an ErrPrivateAddress that came from a DNS answer, looked
// up before an attempt or at dial time, rather than from the URL itself (an
// IP literal or localhost). A delivery retries it like a 5xx: the answer
// may be a transient one (a resolver's mistake, a failover, a record being
// changed) and may point back at a public address by the next attempt,
// where a URL that names a private address never will.
type privateAnswer struct{ detail string }

func (e privateAnswer) Error() string { return ErrPrivateAddress.Error() + ": " + e.detail }

func (e privateAnswer) Unwrap() error { return ErrPrivateAddress }

// fromDNSAnswer reports whether err is a refusal of a DNS answer.
func fromDNSAnswer(err error) bool {
	var pa privateAnswer
	return errors.As(err, &pa)
}

// hostProfile is the host mapping of the WHATWG URL standard ("domain to
// ASCII": UTS #46 non-transitional processing, without the STD3 rules),
// which browsers apply before anything else: it folds case, full-width and
// other compatibility forms (①②⑦ is 127, 。 is a dot) and checks
// internationalised labels.
var hostProfile = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.Transitional(false),
	idna.CheckHyphens(false), idna.StrictDomainName(false))

// Host reads the host of a URL (as url.URL.Hostname gives it) the way
// a browser's URL parser does, and so the way an inet_aton resolver reads
// numbers: after the UTS #46 mapping (hostProfile), a host whose last label
// is a number is an IPv4 address in any of the notations inet_aton takes
// (2130706433, 0x7f000001, 0177.0.0.1, 127.1, 127.000.000.001), and an IPv6
// literal is an address too; ip is then set. Any other host must be a valid
// host name (labels of letters, digits, hyphens and underscores, neither
// starting nor ending with a hyphen); name is its lower-case ASCII form,
// without a trailing dot. A host that is neither gives ErrBadURL.
func Host(host string) (name string, ip netip.Addr, err error) {
	if strings.Contains(host, ":") {
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return "", netip.Addr{}, ErrBadURL
		}
		return "", ip, nil
	}
	ascii, err := hostProfile.ToASCII(host)
	if err != nil {
		return "", netip.Addr{}, ErrBadURL
	}
	ascii = strings.ToLower(ascii)
	if endsInNumber(ascii) {
		ip, ok := parseIPv4(ascii)
		if !ok {
			return "", netip.Addr{}, ErrBadURL
		}
		return "", ip, nil
	}
	name = strings.TrimSuffix(ascii, ".")
	if !validHostName(name) {
		return "", netip.Addr{}, ErrBadURL
	}
	return name, netip.Addr{}, nil
}

// endsInNumber is the WHATWG URL standard's "ends in a number" check: the
// last label (a trailing dot aside) is decimal digits or 0x and hex digits,
// so the host can only be an IPv4 address.
func endsInNumber(host string) bool {
	labels := strings.Split(host, ".")
	if len(labels) > 1 && labels[len(labels)-1] == "" {
		labels = labels[:len(labels)-1]
	}
	last := labels[len(labels)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, ok := ipv4Number(last) // here: 0x and hex digits
	return ok
}

// parseIPv4 is the WHATWG URL standard's IPv4 parser, which is inet_aton's:
// one to four dot-separated numbers, each decimal, octal (leading 0) or hex
// (0x); all but the last are one byte each, and the last fills the
// remaining bytes.
func parseIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		n, ok := ipv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if n > 255 {
				return netip.Addr{}, false
			}
			v |= n << (8 * (3 - i))
			continue
		}
		if n >= 1<<(8*(5-len(parts))) {
			return netip.Addr{}, false
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// ipv4Number reads one number of an IPv4 address: 0x or 0X and hex digits
// (possibly none), a leading 0 and octal digits, or decimal digits.
func ipv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, s = 16, s[2:]
	case len(s) >= 2 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if s == "" {
		return 0, true
	}
	if s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, base, 64)
	if errors.Is(err, strconv.ErrRange) {
		return math.MaxUint64, true // a number, too large for any part
	}
	if err != nil {
		return 0, false
	}
	return n, true
}

// validHostName reports whether name (lower-case ASCII, no trailing dot) is
// a host name: at most 253 characters in labels of 1-63 letters, digits,
// hyphens and underscores that neither start nor end with a hyphen.
func validHostName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// guardControl is a net.Dialer Control function that refuses to connect to
// a non-public address. It runs on the address actually dialled, after DNS
// resolution, so a name that resolved to a public address during the check
// and to a private one now (DNS rebinding) is still refused. Its refusals
// are privateAnswers: a URL that names a private address itself was
// refused by the check before the attempt, so what is refused here is what
// a DNS answer said at dial time.
func guardControl(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return privateAnswer{detail: address}
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !PublicIP(ip) {
		return privateAnswer{detail: host}
	}
	return nil
}

// NewClient returns the HTTP client webhooks are sent with: timeout
// per request, no proxy, no redirects (a redirect is the receiver's answer,
// not a new destination), and unless allowPrivate, a dialer that refuses
// private and reserved addresses at connect time.
func NewClient(timeout time.Duration, allowPrivate bool) *http.Client {
	return NewClientWithResolver(timeout, allowPrivate, nil)
}

// NewClientWithResolver is NewClient whose dialer looks host names up with
// resolver (nil means the system's), so that tests can script the answers
// the dial-time guard sees (webhookstest.DNS).
func NewClientWithResolver(timeout time.Duration, allowPrivate bool, resolver *net.Resolver) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, Resolver: resolver}
	if !allowPrivate {
		dialer.Control = guardControl
	}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Timeout:   timeout,
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// ErrInsecureURL means a plain http:// webhook URL where only https
// is allowed (outside paywatch dev, unless PAYWATCH_WEBHOOK_ALLOW_HTTP).
var ErrInsecureURL = errors.New("webhook URL must use https")

// CheckScheme refuses an http:// URL unless allowHTTP: webhooks
// carry payment data and a signature that anyone on the path could replay
// within its 5 minutes, so production sends them over TLS only.
func CheckScheme(rawURL string, allowHTTP bool) error {
	if allowHTTP {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return ErrBadURL
	}
	if !strings.EqualFold(u.Scheme, "https") {
		return ErrInsecureURL
	}
	return nil
}
