package faultproxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path"
	"strings"
)

// isTron reports whether r is a call of java-tron's FullNode HTTP API
// (POST /wallet/<method>), which the proxy forwards to an upstream that
// is such an API (devnet.NetworkStatus.HTTPURL) rather than to JSON-RPC.
func isTron(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/wallet/") || strings.HasPrefix(r.URL.Path, "/walletsolidity/")
}

// serveTron forwards one FullNode HTTP API call and applies the Rewrite
// to its answer, with the method the path's last element and the request
// body the one param. Of the other faults, only RateLimitEvery (in serve)
// applies to it.
func (p *Proxy) serveTron(w http.ResponseWriter, r *http.Request, body []byte) {
	method := path.Base(r.URL.Path)
	p.mu.Lock()
	p.methods[method]++
	p.mu.Unlock()
	resp, err := p.hc.Post(strings.TrimSuffix(p.upstream, "/")+r.URL.Path, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if f := p.rewrite.Load(); f != nil && resp.StatusCode == http.StatusOK && json.Valid(out) {
		if b := (*f)(method, []json.RawMessage{body}, out); b != nil {
			p.mu.Lock()
			p.changed++
			p.mu.Unlock()
			out = b
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}
