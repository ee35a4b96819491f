package tron

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// node is one TRON endpoint, spoken to over gRPC (grpcNode) or over the
// FullNode HTTP API (httpNode). Both give the same answers in the same
// forms, so the client reads either the same way and fails over across a
// mixed list. Like java-tron, a node answers an unknown block or
// transaction with an empty one, which the methods report as not found.
type node interface {
	// nowBlock returns the newest block.
	nowBlock(ctx context.Context) (blockHead, error)
	// blockByNum returns block n; found is false when the node has none.
	blockByNum(ctx context.Context, n uint64) (b blockHead, found bool, err error)
	// blockRange returns blocks [from, to] (at most 100), or fewer when the
	// range passes the node's head.
	blockRange(ctx context.Context, from, to uint64) ([]blockHead, error)
	// blockInfos returns the transaction infos of block n, in block order.
	blockInfos(ctx context.Context, n uint64) ([]txInfo, error)
	// txInfo returns one transaction's info; found is false when the node
	// knows no such transaction.
	txInfo(ctx context.Context, id []byte) (info txInfo, found bool, err error)
	// constantCall runs a read-only call of the argument-less function
	// selector (such as "decimals()") of contract (21 bytes) with
	// TriggerConstantContract and returns its result.
	constantCall(ctx context.Context, contract []byte, selector string) ([]byte, error)
	close()
}

// blockHead is what the client reads of a block: its number, id, parent's
// id and transaction ids.
type blockHead struct {
	num    uint64
	id     []byte
	parent []byte
	txids  [][]byte
	time   int64 // ms since the epoch
}

// txInfo is what the client reads of a transaction info.
type txInfo struct {
	id          []byte
	blockNumber int64
	// ok is set when the transaction succeeded: Result SUCESS (sic) and a
	// receipt whose contract result is SUCCESS.
	ok   bool
	logs []txLog
}

// txLog is one event log: the contract's address (20 bytes, or 21 with
// the 0x41 prefix some nodes add), topics and data.
type txLog struct {
	address []byte
	topics  [][]byte
	data    []byte
}

// Transports of a TRC20 endpoint, as its URL names them.
const (
	transportGRPC  = "grpc"
	transportGRPCS = "grpcs"
	transportHTTP  = "http"
)

// endpoint is a parsed TRC20 endpoint URL.
type endpoint struct {
	transport string
	// addr is host:port for gRPC; base is the URL before /wallet/... for HTTP.
	addr string
	base *url.URL
}

// parseEndpoint reads a TRC20 endpoint URL: host:port or grpc://host:port
// (gRPC in plaintext, as java-tron serves it on 50051), grpcs://host[:port]
// (gRPC over TLS; port 443 by default), or http(s)://host[:port][/base]
// (the FullNode HTTP API, as java-tron serves it on 8090 and TronGrid on
// https://api.trongrid.io; a base path such as a provider's /TOKEN is kept
// in front of /wallet/...). name is the endpoint's redacted name.
func parseEndpoint(raw, name string) (endpoint, error) {
	bad := func() (endpoint, error) {
		return endpoint{}, fmt.Errorf("RPC address %q: want host:port, grpc://host:port, grpcs://host[:port] or http(s)://host[:port][/path]", name)
	}
	scheme, rest, hasScheme := strings.Cut(raw, "://")
	if !hasScheme {
		scheme, rest = transportGRPC, raw
	}
	switch strings.ToLower(scheme) {
	case "grpc", "grpcs":
		addr := strings.TrimSuffix(rest, "/")
		if strings.ContainsAny(addr, "/?@#") {
			return bad()
		}
		if _, _, err := net.SplitHostPort(addr); err != nil && strings.EqualFold(scheme, "grpcs") {
			addr = net.JoinHostPort(addr, "443")
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host == "" || !validPort(port) {
			return bad()
		}
		return endpoint{transport: strings.ToLower(scheme), addr: addr}, nil
	case "http", "https":
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || u.Fragment != "" {
			return bad()
		}
		if p := u.Port(); p != "" && !validPort(p) {
			return bad()
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.RawPath = strings.TrimSuffix(u.RawPath, "/")
		return endpoint{transport: transportHTTP, base: u}, nil
	default:
		return bad()
	}
}

// dialNode returns the node of one configured endpoint; it does no I/O.
func (c *Client) dialNode(cfg chainapi.Config, i int, name chainapi.Redactor) (node, error) {
	ep, err := parseEndpoint(cfg.URLs[i], name.Name())
	if err != nil {
		return nil, err
	}
	if ep.transport == transportHTTP {
		return newHTTPNode(ep.base, cfg.HeadersOf(i), cfg.TLS, &c.calls, name), nil
	}
	return newGRPCNode(ep.addr, ep.transport == transportGRPCS, cfg.HeadersOf(i), cfg.TLS, &c.calls)
}
