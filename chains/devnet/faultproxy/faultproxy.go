// Package faultproxy puts a devnet EVM chain behind a misbehaving JSON-RPC
// "load balancer", for tests of what the chain clients and the scanner do
// when a provider's answers disagree with each other.
//
// The proxy forwards every JSON-RPC call (single or batched) to the real
// node, so eth_blockNumber and eth_getBlockByNumber come from the node, and
// then damages the answers it is told to:
//
//   - LogLag: the log index lags behind the head. eth_getLogs leaves out the
//     logs of the newest LogLag blocks (a range made only of such blocks
//     answers []), and eth_getLogs by blockHash (EIP-234) for one of them
//     fails with "unknown block", as a backend that has not seen the block
//     answers.
//   - SaturateBlooms: every block's logsBloom has all bits set, as on busy
//     chains whose blooms match everything, so every block without matching
//     logs is a bloom false positive.
//   - RefuseBatches: a JSON-RPC batch gets HTTP 400 with one error object,
//     as from providers that do not take batches.
//   - RefuseByHash: eth_getLogs by blockHash (EIP-234) gets "invalid
//     params", as from providers or old nodes without it.
//   - RateLimitEvery: every n-th HTTP request gets HTTP 429, as from a
//     provider's free tier under load.
//   - ChainID: eth_chainId answers this id, as a node of another chain
//     (or a misconfigured one) would.
//   - HeadAge: blocks' timestamps are moved that far into the past, as a
//     node that stopped syncing serves an old head.
//   - HeadLag: the node is that many blocks behind: eth_blockNumber
//     answers the head less HeadLag, the newer blocks and the receipts of
//     their transactions are null, and eth_getLogs leaves out their logs,
//     as from a provider that syncs late.
//   - Rewrite: a function over every answered call's method, params and
//     result may replace the result, as a lying (or compromised) endpoint
//     would: another amount or recipient in a log, another block hash.
//
// A FullNode HTTP API call of TRON (POST /wallet/...) is forwarded to an
// upstream that serves that API, with RateLimitEvery and Rewrite only
// (tron.go).
//
// It is a test helper: it reads the node over plain HTTP on loopback and
// is not meant for anything else.
package faultproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures Start.
type Config struct {
	// Upstream is the node's JSON-RPC URL (devnet.NetworkStatus.RPCURL),
	// or TRON's FullNode HTTP API (devnet.NetworkStatus.HTTPURL).
	Upstream string
	// LogLag is how many of the newest blocks eth_getLogs does not know
	// yet; 0 hides nothing. SetLogLag changes it while the proxy runs.
	LogLag uint64
	// SaturateBlooms answers every block's logsBloom with all bits set.
	SaturateBlooms bool
	// RefuseBatches answers every JSON-RPC batch with HTTP 400.
	RefuseBatches bool
	// RefuseByHash answers eth_getLogs by blockHash with a JSON-RPC error.
	RefuseByHash bool
	// RateLimitEvery, when above 0, answers every n-th request with 429.
	RateLimitEvery int
	// HeadAge moves every block's timestamp this far back.
	HeadAge time.Duration
	// ChainID, when above 0, is what eth_chainId answers.
	ChainID uint64
	// HeadLag is how many blocks the proxied node seems behind; SetHeadLag
	// changes it while the proxy runs.
	HeadLag uint64
	// Rewrite, when set, is called with the method, the params and the
	// result of every call the node answered without an error (after the
	// other damage); a non-nil return replaces the result. SetRewrite
	// changes it while the proxy runs.
	Rewrite Rewrite
}

// Rewrite replaces the result of a JSON-RPC call; nil keeps it.
type Rewrite func(method string, params []json.RawMessage, result json.RawMessage) json.RawMessage

// Proxy is a running fault-injecting JSON-RPC proxy.
type Proxy struct {
	// URL is the proxy's JSON-RPC URL, for chains.Config.URLs.
	URL string

	upstream string
	saturate bool
	noBatch  bool
	noByHash bool
	limitN   int
	age      time.Duration
	chainID  uint64
	lag      atomic.Uint64
	headLag  atomic.Uint64
	rewrite  atomic.Pointer[Rewrite]
	byHashOK atomic.Bool
	srv      *httptest.Server
	hc       *http.Client

	mu       sync.Mutex
	requests int
	methods  map[string]int
	hidden   int
	changed  int
}

// Start starts a proxy in front of cfg.Upstream on a loopback port.
func Start(cfg Config) *Proxy {
	p := &Proxy{upstream: cfg.Upstream, saturate: cfg.SaturateBlooms, noBatch: cfg.RefuseBatches,
		noByHash: cfg.RefuseByHash, limitN: cfg.RateLimitEvery, age: cfg.HeadAge, chainID: cfg.ChainID, methods: map[string]int{}, hc: &http.Client{}}
	p.lag.Store(cfg.LogLag)
	p.headLag.Store(cfg.HeadLag)
	p.SetRewrite(cfg.Rewrite)
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.srv.URL
	return p
}

// Close stops the proxy.
func (p *Proxy) Close() { p.srv.Close() }

// SetLogLag changes how many of the newest blocks eth_getLogs hides; 0
// makes the log index catch up.
func (p *Proxy) SetLogLag(n uint64) { p.lag.Store(n) }

// SetHeadLag changes how many blocks the node seems behind; 0 catches up.
func (p *Proxy) SetHeadLag(n uint64) { p.headLag.Store(n) }

// SetRewrite changes the Rewrite; nil stops rewriting.
func (p *Proxy) SetRewrite(f Rewrite) {
	if f == nil {
		p.rewrite.Store(nil)
		return
	}
	p.rewrite.Store(&f)
}

// Rewritten returns how many results the Rewrite replaced.
func (p *Proxy) Rewritten() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// HideRangesOnly makes the lag apply to eth_getLogs over block ranges
// only: asked by its hash, a lagging block's logs come back in full, as
// from a provider whose backends lag unevenly.
func (p *Proxy) HideRangesOnly(on bool) { p.byHashOK.Store(on) }

// Requests returns the HTTP requests served so far: a JSON-RPC batch is one.
func (p *Proxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests
}

// Calls returns how many JSON-RPC calls of method were served, batched or
// not.
func (p *Proxy) Calls(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.methods[method]
}

// Hidden returns how many eth_getLogs answers the proxy damaged: logs left
// out, or an "unknown block" error.
func (p *Proxy) Hidden() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hidden
}

// message is a JSON-RPC request or response, as far as the proxy reads it.
type message struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id,omitempty"`
	Method  string            `json:"method,omitempty"`
	Params  []json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage   `json:"result,omitempty"`
	Error   json.RawMessage   `json:"error,omitempty"`
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.requests++
	limited := p.limitN > 0 && p.requests%p.limitN == 0
	p.mu.Unlock()
	if limited {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32005,"message":"rate limit exceeded"}}`)
		return
	}
	if isTron(r) {
		p.serveTron(w, r, body)
		return
	}
	body = bytes.TrimSpace(body)
	var out any
	if len(body) > 0 && body[0] == '[' {
		if p.noBatch {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch requests are not supported"}}`)
			return
		}
		var batch []json.RawMessage
		if err := json.Unmarshal(body, &batch); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answers := make([]json.RawMessage, len(batch))
		for i, m := range batch {
			if answers[i], err = p.handle(m); err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
		}
		out = answers
	} else {
		if out, err = p.handle(body); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// handle answers one JSON-RPC call.
func (p *Proxy) handle(raw json.RawMessage) (json.RawMessage, error) {
	var req message
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.methods[req.Method]++
	p.mu.Unlock()
	if p.noByHash && req.Method == "eth_getLogs" && len(req.Params) == 1 && bytes.Contains(req.Params[0], []byte(`"blockHash"`)) {
		return json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID,
			"error": map[string]any{"code": -32602, "message": "invalid params: blockHash is not supported"}})
	}
	if p.chainID > 0 && req.Method == "eth_chainId" {
		return json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": fmt.Sprintf("0x%x", p.chainID)})
	}
	var known uint64 // with a head lag, the newest block the node has
	if lag := p.headLag.Load(); lag > 0 {
		ans, fwd, k, err := p.lagHead(req, raw, lag)
		if err != nil || ans != nil {
			return ans, err
		}
		raw, known = fwd, k
	}
	resp, err := p.forward(raw)
	if err != nil {
		return nil, err
	}
	switch req.Method {
	case "eth_getLogs":
		if lag := max(p.lag.Load(), p.headLag.Load()); lag > 0 && len(req.Params) == 1 {
			if resp, err = p.lagLogs(req, resp, lag); err != nil {
				return nil, err
			}
		}
	case "eth_getBlockByNumber", "eth_getBlockByHash", "eth_getTransactionReceipt":
		if known > 0 {
			if resp, err = above(resp, known); err != nil {
				return nil, err
			}
		}
		if req.Method == "eth_getTransactionReceipt" {
			break
		}
		if p.age > 0 {
			if resp, err = age(resp, p.age); err != nil {
				return nil, err
			}
		}
		if p.saturate {
			if resp, err = saturate(resp); err != nil {
				return nil, err
			}
		}
	}
	return p.rewritten(req, resp)
}

// forward sends one JSON-RPC message to the node and returns its answer.
func (p *Proxy) forward(raw json.RawMessage) (json.RawMessage, error) {
	resp, err := p.hc.Post(p.upstream, "application/json", bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("upstream: HTTP %d: %s", resp.StatusCode, b)
	}
	return b, nil
}

// call makes a JSON-RPC call of the proxy's own to the node.
func (p *Proxy) call(result any, method string, params ...any) error {
	raw, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	b, err := p.forward(raw)
	if err != nil {
		return err
	}
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if len(m.Error) > 0 {
		return fmt.Errorf("upstream %s: %s", method, m.Error)
	}
	return json.Unmarshal(m.Result, result)
}

// lagLogs damages an eth_getLogs answer as a log index lag blocks behind
// the head would give it.
func (p *Proxy) lagLogs(req message, resp json.RawMessage, lag uint64) (json.RawMessage, error) {
	var r message
	if err := json.Unmarshal(resp, &r); err != nil || len(r.Error) > 0 {
		return resp, err
	}
	var head string
	if err := p.call(&head, "eth_blockNumber"); err != nil {
		return nil, err
	}
	h, err := parseHex(head)
	if err != nil {
		return nil, err
	}
	known := h - min(h, lag) // the newest block the index has
	var filter struct {
		BlockHash string `json:"blockHash"`
	}
	_ = json.Unmarshal(req.Params[0], &filter)
	if filter.BlockHash != "" {
		if p.byHashOK.Load() {
			return resp, nil
		}
		var b struct {
			Number string `json:"number"`
		}
		if err := p.call(&b, "eth_getBlockByHash", filter.BlockHash, false); err != nil {
			return nil, err
		}
		if n, err := parseHex(b.Number); err == nil && n > known {
			p.mu.Lock()
			p.hidden++
			p.mu.Unlock()
			return json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID,
				"error": map[string]any{"code": -32000, "message": "unknown block"}})
		}
		return resp, nil
	}
	var logs []map[string]any
	if err := json.Unmarshal(r.Result, &logs); err != nil {
		return resp, nil //nolint:nilerr // not a list of logs: leave it
	}
	kept := make([]map[string]any, 0, len(logs))
	for _, l := range logs {
		s, _ := l["blockNumber"].(string)
		if n, err := parseHex(s); err == nil && n > known {
			continue
		}
		kept = append(kept, l)
	}
	if len(kept) == len(logs) {
		return resp, nil
	}
	p.mu.Lock()
	p.hidden++
	p.mu.Unlock()
	return json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": kept})
}

// fullBloom is a logsBloom with every bit set.
var fullBloom = "0x" + strings.Repeat("ff", 256)

// saturate sets every bit of a block answer's logsBloom.
func saturate(resp json.RawMessage) (json.RawMessage, error) {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(resp, &r); err != nil {
		return nil, err
	}
	var block map[string]any
	if err := json.Unmarshal(r["result"], &block); err != nil || block == nil {
		return resp, nil //nolint:nilerr // null (unknown block) or an error: leave it
	}
	block["logsBloom"] = fullBloom
	b, err := json.Marshal(block)
	if err != nil {
		return nil, err
	}
	r["result"] = b
	return json.Marshal(r)
}

// age moves a block answer's timestamp d back.
func age(resp json.RawMessage, d time.Duration) (json.RawMessage, error) {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(resp, &r); err != nil {
		return nil, err
	}
	var block map[string]any
	if err := json.Unmarshal(r["result"], &block); err != nil || block == nil {
		return resp, nil //nolint:nilerr // null (unknown block) or an error: leave it
	}
	ts, ok := block["timestamp"].(string)
	if !ok {
		return resp, nil
	}
	n, err := parseHex(ts)
	if err != nil {
		return nil, err
	}
	block["timestamp"] = fmt.Sprintf("0x%x", n-uint64(d.Seconds()))
	b, err := json.Marshal(block)
	if err != nil {
		return nil, err
	}
	r["result"] = b
	return json.Marshal(r)
}

// parseHex parses a JSON-RPC quantity such as "0x1a".
func parseHex(s string) (uint64, error) {
	return strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
}
