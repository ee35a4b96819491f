package tron

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// maxHTTPAnswer bounds one HTTP API answer, as maxGRPCMessage does gRPC's.
const maxHTTPAnswer = 64 << 20

// httpNode speaks java-tron's FullNode HTTP API (/wallet/...), as java-tron
// serves it on port 8090 and TronGrid at https://api.trongrid.io: POST with
// a JSON body, bytes as hex, addresses as hex with the 0x41 prefix
// ("visible" left false). The endpoint's headers go with every request.
type httpNode struct {
	base    *url.URL
	headers http.Header
	client  *http.Client
	// maxAnswer bounds an answer's size (maxHTTPAnswer; tests lower it).
	maxAnswer int
	// redact scrubs the endpoint's credentials from an answer before it is
	// cut short for an error: cut first, a key across the cut would lose
	// the end that the redactor recognises it by.
	redact chainapi.Redactor
}

// newHTTPNode returns the node at base; it does no I/O.
func newHTTPNode(base *url.URL, headers http.Header, tlsCfg *tls.Config, calls *atomic.Uint64, redact chainapi.Redactor) *httpNode {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 16
	if tlsCfg != nil {
		t.TLSClientConfig = tlsCfg.Clone()
	}
	return &httpNode{
		base:      base,
		maxAnswer: maxHTTPAnswer,
		redact:    redact,
		headers:   headers.Clone(),
		client: &http.Client{
			Transport: countingRoundTripper{t, calls},
			// java-tron never redirects, and a redirect would carry the
			// endpoint's key headers to wherever it points.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// countingRoundTripper counts HTTP requests, which are API calls.
type countingRoundTripper struct {
	base  http.RoundTripper
	calls *atomic.Uint64
}

func (t countingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	t.calls.Add(1)
	return t.base.RoundTrip(r)
}

func (h *httpNode) close() { h.client.CloseIdleConnections() }

// httpStatusError is an HTTP API answer with a status other than 200.
type httpStatusError struct {
	status int
	body   string
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.status, e.body)
}

// nodeError is java-tron's {"Error": "..."} answer, given with status 200.
type nodeError struct{ msg string }

func (e *nodeError) Error() string { return "node error: " + e.msg }

// Phrases of rate-limit answers, lowercased: TronGrid's "The key exceeds
// the frequency limit(15), and the query server is suspended for 30s"
// (HTTP 403 without a key, 503 with one), and other providers' wording.
var ratePhrases = []string{"frequency limit", "rate limit", "too many requests", "exceeds the limit", "quota"}

// call POSTs body to /wallet/method and decodes the answer into out.
func (h *httpNode) call(ctx context.Context, method string, body, out any) error {
	u := *h.base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/wallet/" + method
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(b))
	if err != nil {
		return err
	}
	for k, vs := range h.headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := h.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, int64(h.maxAnswer)+1))
	if err != nil {
		return err
	}
	if len(raw) > h.maxAnswer {
		return fmt.Errorf("%w: answer of %s is over %d bytes", chainapi.ErrRangeTooLarge, method, h.maxAnswer)
	}
	if res.StatusCode != http.StatusOK {
		body := []rune(h.redact.String(strings.TrimSpace(string(raw[:min(len(raw), 16<<10)]))))
		if len(body) > 200 {
			body = append(body[:200], '…')
		}
		var err error = &httpStatusError{status: res.StatusCode, body: string(body)}
		if rateLimited(res.StatusCode, string(body)) {
			err = fmt.Errorf("%w: %w", chainapi.ErrRateLimited, err)
		}
		if d := chainapi.ParseRetryAfter(res.Header.Get("Retry-After"), time.Now()); d > 0 {
			err = &chainapi.RetryAfterError{After: d, Err: err}
		}
		return err
	}
	var e struct {
		Error string `json:"Error"`
	}
	if t := bytes.TrimSpace(raw); bytes.HasPrefix(t, []byte(`{"Error"`)) && json.Unmarshal(t, &e) == nil && e.Error != "" {
		if rateLimited(0, e.Error) {
			return fmt.Errorf("%w: %w", chainapi.ErrRateLimited, &nodeError{e.Error})
		}
		return &nodeError{e.Error}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("read answer of %s: %w", method, err)
	}
	return nil
}

// rateLimited reports whether an answer refuses the request for its rate.
func rateLimited(status int, body string) bool {
	if status == http.StatusTooManyRequests {
		return true
	}
	lower := strings.ToLower(body)
	for _, p := range ratePhrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

// hexBytes is a byte string in the HTTP API's hex form.
type hexBytes []byte

func (b *hexBytes) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	d, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil {
		return fmt.Errorf("hex field %q: %w", s, err)
	}
	*b = d
	return nil
}

// httpBlock is a block in the HTTP API's form. An unknown height gives {}.
type httpBlock struct {
	BlockID     hexBytes `json:"blockID"`
	BlockHeader struct {
		RawData struct {
			// Number is left out for block 0, as protobuf's JSON leaves
			// out default values.
			Number     uint64   `json:"number"`
			Timestamp  int64    `json:"timestamp"`
			ParentHash hexBytes `json:"parentHash"`
		} `json:"raw_data"`
	} `json:"block_header"`
	Transactions []struct {
		TxID hexBytes `json:"txID"`
	} `json:"transactions"`
}

func (b httpBlock) head() (blockHead, bool) {
	if len(b.BlockID) == 0 {
		return blockHead{}, false
	}
	h := blockHead{num: b.BlockHeader.RawData.Number, id: b.BlockID, parent: b.BlockHeader.RawData.ParentHash, time: b.BlockHeader.RawData.Timestamp}
	for _, tx := range b.Transactions {
		h.txids = append(h.txids, tx.TxID)
	}
	return h, true
}

// httpInfo is a transaction info in the HTTP API's form. Result is absent
// when it is SUCESS (protobuf's default) and "FAILED" otherwise.
type httpInfo struct {
	ID          hexBytes `json:"id"`
	BlockNumber int64    `json:"blockNumber"`
	Result      string   `json:"result"`
	Receipt     struct {
		Result string `json:"result"`
	} `json:"receipt"`
	Log []struct {
		Address hexBytes   `json:"address"`
		Topics  []hexBytes `json:"topics"`
		Data    hexBytes   `json:"data"`
	} `json:"log"`
}

func (i httpInfo) info() txInfo {
	out := txInfo{
		id:          i.ID,
		blockNumber: i.BlockNumber,
		ok:          (i.Result == "" || i.Result == "SUCESS") && i.Receipt.Result == "SUCCESS",
	}
	for _, l := range i.Log {
		topics := make([][]byte, len(l.Topics))
		for j, t := range l.Topics {
			topics[j] = t
		}
		out.logs = append(out.logs, txLog{address: l.Address, topics: topics, data: l.Data})
	}
	return out
}

func (h *httpNode) nowBlock(ctx context.Context) (blockHead, error) {
	var b httpBlock
	if err := h.call(ctx, "getnowblock", struct{}{}, &b); err != nil {
		return blockHead{}, err
	}
	head, ok := b.head()
	if !ok {
		return blockHead{}, errEmptyHead
	}
	return head, nil
}

func (h *httpNode) blockByNum(ctx context.Context, n uint64) (blockHead, bool, error) {
	var b httpBlock
	if err := h.call(ctx, "getblockbynum", map[string]uint64{"num": n}, &b); err != nil {
		return blockHead{}, false, err
	}
	head, ok := b.head()
	return head, ok, nil
}

func (h *httpNode) blockRange(ctx context.Context, from, to uint64) ([]blockHead, error) {
	var list struct {
		Block []httpBlock `json:"block"`
	}
	if err := h.call(ctx, "getblockbylimitnext", map[string]uint64{"startNum": from, "endNum": to + 1}, &list); err != nil {
		return nil, err
	}
	out := make([]blockHead, 0, len(list.Block))
	for _, b := range list.Block {
		head, ok := b.head()
		if !ok {
			return nil, fmt.Errorf("node returned an empty block in blocks %d-%d", from, to)
		}
		out = append(out, head)
	}
	return out, nil
}

func (h *httpNode) blockInfos(ctx context.Context, n uint64) ([]txInfo, error) {
	var raw json.RawMessage
	if err := h.call(ctx, "gettransactioninfobyblocknum", map[string]uint64{"num": n}, &raw); err != nil {
		return nil, err
	}
	var infos []httpInfo
	if t := bytes.TrimSpace(raw); !bytes.Equal(t, []byte("{}")) { // java-tron answers a block without transactions with [] or {}
		if err := json.Unmarshal(t, &infos); err != nil {
			return nil, fmt.Errorf("read transaction infos of block %d: %w", n, err)
		}
	}
	out := make([]txInfo, len(infos))
	for i, info := range infos {
		out[i] = info.info()
	}
	return out, nil
}

func (h *httpNode) txInfo(ctx context.Context, id []byte) (txInfo, bool, error) {
	var info httpInfo
	if err := h.call(ctx, "gettransactioninfobyid", map[string]string{"value": hex.EncodeToString(id)}, &info); err != nil {
		return txInfo{}, false, err
	}
	if len(info.ID) == 0 {
		return txInfo{}, false, nil
	}
	return info.info(), true, nil
}

func (h *httpNode) constantCall(ctx context.Context, contract []byte, selector string) ([]byte, error) {
	var ans struct {
		Result struct {
			Result  bool   `json:"result"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"result"`
		ConstantResult []hexBytes `json:"constant_result"`
	}
	err := h.call(ctx, "triggerconstantcontract", map[string]string{
		"owner_address":     hex.EncodeToString(constantCaller),
		"contract_address":  hex.EncodeToString(contract),
		"function_selector": selector,
		"parameter":         "",
	}, &ans)
	if err != nil {
		return nil, err
	}
	if !ans.Result.Result {
		msg := ans.Result.Message
		if m, err := hex.DecodeString(msg); err == nil {
			msg = string(m)
		}
		return nil, fmt.Errorf("constant call failed: %s %s", ans.Result.Code, msg)
	}
	if len(ans.ConstantResult) == 0 {
		return nil, errors.New("constant call returned nothing")
	}
	return ans.ConstantResult[0], nil
}
