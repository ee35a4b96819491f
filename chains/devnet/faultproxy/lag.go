package faultproxy

import (
	"encoding/json"
	"fmt"
)

// rewritten applies the Rewrite, if any, to an answer without an error.
func (p *Proxy) rewritten(req message, resp json.RawMessage) (json.RawMessage, error) {
	f := p.rewrite.Load()
	if f == nil {
		return resp, nil
	}
	var m message
	if err := json.Unmarshal(resp, &m); err != nil || len(m.Error) > 0 || len(m.Result) == 0 {
		return resp, nil //nolint:nilerr // not an answer to rewrite
	}
	out := (*f)(req.Method, req.Params, m.Result)
	if out == nil {
		return resp, nil
	}
	p.mu.Lock()
	p.changed++
	p.mu.Unlock()
	m.Result = out
	return json.Marshal(m)
}

// lagHead answers a call as a node lag blocks behind the head would:
// eth_blockNumber itself; eth_getBlockByNumber of a newer block with null
// (done here: ans), or of "latest" as of the lagging head (fwd, the call
// to forward instead). known is the newest block the node has.
func (p *Proxy) lagHead(req message, raw json.RawMessage, lag uint64) (ans, fwd json.RawMessage, known uint64, err error) {
	var head string
	if err := p.call(&head, "eth_blockNumber"); err != nil {
		return nil, nil, 0, err
	}
	h, err := parseHex(head)
	if err != nil {
		return nil, nil, 0, err
	}
	known = max(h-min(h, lag), 1) // genesis alone makes no chain to read
	reply := func(result any) (json.RawMessage, json.RawMessage, uint64, error) {
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
		return b, nil, known, err
	}
	switch req.Method {
	case "eth_blockNumber":
		return reply(fmt.Sprintf("0x%x", known))
	case "eth_getBlockByNumber":
		var tag string
		if len(req.Params) == 0 || json.Unmarshal(req.Params[0], &tag) != nil {
			break
		}
		if tag == "latest" || tag == "pending" || tag == "safe" || tag == "finalized" {
			req.Params[0] = json.RawMessage(fmt.Sprintf("%q", fmt.Sprintf("0x%x", known)))
			b, err := json.Marshal(req)
			return nil, b, known, err
		}
		if n, err := parseHex(tag); err == nil && n > known {
			return reply(nil)
		}
	}
	return nil, raw, known, nil
}

// above nulls a block or receipt answer of a block above known.
func above(resp json.RawMessage, known uint64) (json.RawMessage, error) {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(resp, &r); err != nil {
		return nil, err
	}
	var v struct {
		Number      string `json:"number"`
		BlockNumber string `json:"blockNumber"`
	}
	if err := json.Unmarshal(r["result"], &v); err != nil {
		return resp, nil //nolint:nilerr // null or an error: leave it
	}
	n, err := parseHex(v.Number + v.BlockNumber)
	if err != nil || n <= known {
		return resp, nil //nolint:nilerr // not a block or receipt: leave it
	}
	r["result"] = json.RawMessage("null")
	return json.Marshal(r)
}
