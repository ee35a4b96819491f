package devnet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/paywatch/paywatch"
)

// maxBody bounds a control request's body.
const maxBody = 64 << 10

// networkJSON is one entry of GET /devnet.
type networkJSON struct {
	Network paywatch.Network          `json:"network"`
	ChainID int64                     `json:"chain_id"`
	Head    uint64                    `json:"head"`
	RPCURL  string                    `json:"rpc_url"`
	HTTPURL string                    `json:"http_url,omitempty"`
	Tokens  map[paywatch.Token]string `json:"tokens"`
}

// transferJSON is the body of POST /devnet/transfers.
type transferJSON struct {
	Network string          `json:"network"`
	Token   string          `json:"token"`
	To      string          `json:"to"`
	Amount  json.RawMessage `json:"amount"`
	From    string          `json:"from"`
	// Memo (operations.md §9) is SOLANA's Solana Pay reference; the EVM
	// and TRC20 chains refuse one.
	Memo string `json:"memo"`
	// Kind (TransferRequest.Kind) is TON's forged_notification or
	// lookalike_jetton; the other chains refuse one.
	Kind string `json:"kind"`
}

// transferResultJSON is the answer of POST /devnet/transfers.
type transferResultJSON struct {
	TxHash      string           `json:"tx_hash"`
	BlockNumber uint64           `json:"block_number"`
	Network     paywatch.Network `json:"network"`
	Token       paywatch.Token   `json:"token"`
	From        string           `json:"from"`
	To          string           `json:"to"`
	Amount      string           `json:"amount"`
}

// Handler serves the devnet control endpoints of operations.md §4, without
// authentication; mount it on the API listener only while devnet chains run:
//
//	GET  /devnet            200 {networks: [{network, chain_id, head, rpc_url, tokens: {TOKEN: contract, ...}}]}
//	POST /devnet/transfers  {network, token, to, amount, from?, memo?, kind?} → 201 {tx_hash, block_number, network, token, from, to, amount}
//	POST /devnet/blocks     {network, count} → 200 {network, head}
//	POST /devnet/reorg      {network, depth, reinclude?} → 200 {network, head, dropped: [tx_hash, ...]}
//
// With reinclude true, the reorg's dropped transactions are mined again,
// with the same hashes, in the block after the new branch's tip
// (Devnet.ReorgReinclude).
//
// The POST endpoints take only Content-Type application/json (415
// otherwise): a form or text/plain POST is what a web page can send across
// origins without a preflight, and a page a developer visits must not mine
// or reorg the dev chains. The API listener adds its Host rule in front.
//
// amount is a decimal string (a JSON number is accepted too). Errors are
// {"error": "..."}: 400 for bad input (including From not a devnet account
// and insufficient balance), 404 for a network without a devnet chain, 500
// otherwise.
func (d *Devnet) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /devnet", d.handleStatus)
	mux.HandleFunc("POST /devnet/transfers", jsonOnly(d.handleTransfer))
	mux.HandleFunc("POST /devnet/blocks", jsonOnly(d.handleBlocks))
	mux.HandleFunc("POST /devnet/reorg", jsonOnly(d.handleReorg))
	mux.HandleFunc("/devnet/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Not found"})
	})
	return mux
}

func (d *Devnet) handleStatus(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Networks []networkJSON `json:"networks"`
	}{Networks: []networkJSON{}}
	for _, s := range d.Networks() {
		out.Networks = append(out.Networks, networkJSON{
			Network: s.Network, ChainID: s.ChainID, Head: s.Head, RPCURL: s.RPCURL, HTTPURL: s.HTTPURL, Tokens: s.Tokens,
		})
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *Devnet) handleTransfer(w http.ResponseWriter, r *http.Request) {
	var in transferJSON
	if !readJSON(w, r, &in) {
		return
	}
	amount, ok := amountText(in.Amount)
	if in.Network == "" || in.Token == "" || in.To == "" || len(in.Amount) == 0 {
		writeError(w, paywatch.Errorf(paywatch.EINVALID, "network, token, to and amount are required"))
		return
	}
	if !ok {
		writeError(w, paywatch.Errorf(paywatch.EINVALID, "amount must be a decimal string such as \"10.50\""))
		return
	}
	if _, err := d.chain(paywatch.Network(in.Network)); err != nil {
		writeError(w, err)
		return
	}
	res, err := d.Transfer(r.Context(), TransferRequest{
		Network: paywatch.Network(in.Network),
		Token:   paywatch.Token(in.Token),
		To:      in.To,
		Amount:  amount,
		From:    in.From,
		Memo:    in.Memo,
		Kind:    in.Kind,
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, transferResultJSON{
		TxHash: res.TxHash, BlockNumber: res.BlockNumber, Network: res.Network, Token: res.Token,
		From: res.From, To: res.To, Amount: res.Amount,
	})
}

func (d *Devnet) handleBlocks(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Network string `json:"network"`
		Count   *int   `json:"count"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	if _, err := d.chain(paywatch.Network(in.Network)); err != nil {
		writeError(w, err)
		return
	}
	count := 1
	if in.Count != nil {
		count = *in.Count
	}
	head, err := d.Mine(r.Context(), paywatch.Network(in.Network), count)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"network": in.Network, "head": head})
}

func (d *Devnet) handleReorg(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Network   string `json:"network"`
		Depth     *int   `json:"depth"`
		Reinclude bool   `json:"reinclude"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	if _, err := d.chain(paywatch.Network(in.Network)); err != nil {
		writeError(w, err)
		return
	}
	if in.Depth == nil {
		writeError(w, paywatch.Errorf(paywatch.EINVALID, "depth is required"))
		return
	}
	reorg := d.Reorg
	if in.Reinclude {
		reorg = d.ReorgReinclude
	}
	head, dropped, err := reorg(r.Context(), paywatch.Network(in.Network), *in.Depth)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"network": in.Network, "head": head, "dropped": dropped})
}

// amountText returns the text of an amount given as a JSON string or
// number.
func amountText(raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&n); err == nil {
		return string(n), true
	}
	return "", false
}

// readJSON decodes the request body into v, answering 400 itself when it
// cannot.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, paywatch.Errorf(paywatch.EINVALID, "request body too large or unreadable"))
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) && ute.Field != "" {
			writeError(w, paywatch.Errorf(paywatch.EINVALID, "invalid JSON body: %s has the wrong type", ute.Field))
		} else {
			writeError(w, paywatch.Errorf(paywatch.EINVALID, "invalid JSON body"))
		}
		return false
	}
	return true
}

// writeError answers {"error": message} with the status of err's code.
func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch paywatch.ErrorCode(err) {
	case paywatch.EINVALID:
		code = http.StatusBadRequest
	case paywatch.ENOTFOUND:
		code = http.StatusNotFound
	}
	msg := paywatch.ErrorMessage(err)
	if code == http.StatusInternalServerError {
		// The devnet runs on the developer's machine: the real cause helps
		// more than a generic message and leaks nothing.
		msg = fmt.Sprintf("devnet: %v", err)
	}
	writeJSON(w, code, map[string]string{"error": msg})
}

// writeJSON answers v as JSON with the given status.
// msgJSONOnly is the 415 of a control request that is not JSON.
const msgJSONOnly = "Content-Type must be application/json"

// jsonOnly refuses a request whose Content-Type is not application/json.
func jsonOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": msgJSONOnly})
			return
		}
		h(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
