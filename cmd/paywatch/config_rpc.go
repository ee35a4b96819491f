package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

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
