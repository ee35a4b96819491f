package activities

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrPrivateAddress means a webhook URL names or resolves to a private or
// reserved address. The API refuses such URLs when they are saved, and
// delivery refuses them again before every attempt and at dial time.
var ErrPrivateAddress = errors.New("webhook URL points to a private or reserved address")

// ErrBadWebhookURL means a webhook URL is not an absolute http(s) URL.
var ErrBadWebhookURL = errors.New("webhook URL must be an absolute http or https URL")

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

// PublicIP reports whether ip is a globally routable unicast address a
// webhook may be sent to: not private, loopback, link-local, CGNAT, unique
// local, multicast, unspecified, documentation or otherwise reserved, in
// IPv4 or IPv6, including IPv4-mapped and NAT64 forms of such addresses.
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

// CheckWebhookURL checks a webhook URL as the service does when a project
// saves it and before every delivery: an absolute http or https URL whose
// host is, or resolves only to, public addresses (see PublicIP). "localhost"
// and names under ".localhost" are refused without a lookup. With
// allowPrivate (PAYWATCH_WEBHOOK_ALLOW_PRIVATE) only the URL's form is
// checked. Errors wrap ErrBadWebhookURL or ErrPrivateAddress; a failed DNS
// lookup is returned as is.
func CheckWebhookURL(ctx context.Context, rawURL string, allowPrivate bool) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return ErrBadWebhookURL
	}
	if allowPrivate {
		return nil
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return fmt.Errorf("%w: %s", ErrPrivateAddress, host)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !PublicIP(ip) {
			return fmt.Errorf("%w: %s", ErrPrivateAddress, ip)
		}
		return nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("resolve webhook host %s: %w", host, err)
	}
	for _, ip := range ips {
		if !PublicIP(ip) {
			return fmt.Errorf("%w: %s resolves to %s", ErrPrivateAddress, host, ip)
		}
	}
	return nil
}

// guardControl is a net.Dialer Control function that refuses to connect to
// a non-public address. It runs on the address actually dialled, after DNS
// resolution, so a name that resolved to a public address during the check
// and to a private one now (DNS rebinding) is still refused.
func guardControl(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrPrivateAddress, address)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !PublicIP(ip) {
		return fmt.Errorf("%w: %s", ErrPrivateAddress, host)
	}
	return nil
}

// NewWebhookClient returns the HTTP client webhooks are sent with: timeout
// per request, no proxy, no redirects (a redirect is the receiver's answer,
// not a new destination), and unless allowPrivate, a dialer that refuses
// private and reserved addresses at connect time.
func NewWebhookClient(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: timeout}
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
