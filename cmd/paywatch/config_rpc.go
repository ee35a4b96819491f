package main

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// rpcQuorum reads PAYWATCH_<NETWORK>_QUORUM: a whole number from 1 to the
// network's number of distinct RPC URLs; 0 when it is not set. The same URL
// twice would make a quorum of one node agreeing with itself.
func rpcQuorum(network string, list []string, getenv func(string) string) (int, error) {
	urls := len(slices.Compact(slices.Sorted(slices.Values(list))))
	key := "PAYWATCH_" + network + "_QUORUM"
	v := strings.TrimSpace(getenv(key))
	if v == "" {
		return 0, nil
	}
	q, err := strconv.Atoi(v)
	switch {
	case err != nil || q < 1:
		return 0, fmt.Errorf("%s: %q is not a whole number of at least 1", key, v)
	case q > 1 && q > urls:
		return 0, fmt.Errorf("%s is %d, but PAYWATCH_%s_RPC_URL has %d distinct endpoints: a quorum needs at least as many", key, q, network, urls)
	}
	return q, nil
}

// rpcHeaders reads PAYWATCH_<NETWORK>_RPC_HEADERS and its per-endpoint
// PAYWATCH_<NETWORK>_RPC_HEADERS_<N> (N from 1 to urls) into one header
// set per endpoint, or nil when none is set. The format is
// OTEL_EXPORTER_OTLP_HEADERS's: Name=value pairs separated by commas, each
// value percent-decoded. Errors name the variable and never echo a value:
// the values are credentials.
func rpcHeaders(network string, urls int, getenv func(string) string) ([]http.Header, error) {
	base := "PAYWATCH_" + network + "_RPC_HEADERS"
	common, err := parseHeaders(base, getenv(base))
	if err != nil {
		return nil, err
	}
	out := make([]http.Header, urls)
	set := len(common) > 0
	for i := range out {
		h := common.Clone()
		key := fmt.Sprintf("%s_%d", base, i+1)
		own, err := parseHeaders(key, getenv(key))
		if err != nil {
			return nil, err
		}
		for k, vs := range own {
			if h == nil {
				h = http.Header{}
			}
			h[k] = vs
			set = true
		}
		out[i] = h
	}
	for n := urls + 1; n <= urls+16; n++ {
		if v := getenv(fmt.Sprintf("%s_%d", base, n)); strings.TrimSpace(v) != "" {
			return nil, fmt.Errorf("%s_%d is set, but PAYWATCH_%s_RPC_URL has %d endpoints", base, n, network, urls)
		}
	}
	if !set {
		return nil, nil
	}
	return out, nil
}

// parseHeaders reads one Name=value,Name=value list.
func parseHeaders(key, v string) (http.Header, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	h := http.Header{}
	for i, pair := range strings.Split(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" || !validHeaderName(name) {
			return nil, fmt.Errorf("%s: entry %d is not Name=value (a header name, then =, then its value)", key, i+1)
		}
		dec, err := url.PathUnescape(strings.TrimSpace(value))
		if err != nil || !validHeaderValue(dec) {
			return nil, fmt.Errorf("%s: the value of %s is not valid (percent-encode commas and special characters)", key, name)
		}
		h.Add(name, dec)
	}
	return h, nil
}

// validHeaderName reports whether s is a header name that both HTTP and
// gRPC metadata take: letters, digits, '-', '_' and '.'.
func validHeaderName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return s != ""
}

// validHeaderValue reports whether s is a non-empty header value of
// printable ASCII, as gRPC metadata requires.
func validHeaderValue(s string) bool {
	for _, r := range s {
		if r < 0x20 || r > 0x7e {
			return false
		}
	}
	return s != ""
}
