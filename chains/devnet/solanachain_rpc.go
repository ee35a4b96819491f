package devnet

import (
	"encoding/json"
	"io"
	"math/big"
	"net/http"

	sol "github.com/gagliardetto/solana-go"
)

// answer is getTransaction's result for tx (encoding json), less slot and
// blockTime, which the server adds: the keys and shapes of mainnet-beta's
// answer for a legacy transaction. Callers hold c.mu.
func (c *solanaChain) answer(tx *sol.Transaction, pre, post []map[string]any, failed bool) map[string]any {
	var ixs []map[string]any
	for _, ix := range tx.Message.Instructions {
		ixs = append(ixs, map[string]any{
			"accounts": ix.Accounts, "data": ix.Data.String(), "programIdIndex": ix.ProgramIDIndex, "stackHeight": 1,
		})
	}
	keys := make([]string, len(tx.Message.AccountKeys))
	lamports := make([]uint64, len(keys))
	for i, k := range tx.Message.AccountKeys {
		keys[i] = k.String()
		lamports[i] = 2_039_280 // a token account's rent-exempt minimum
	}
	const fee = 5000
	postLamports := append([]uint64(nil), lamports...)
	postLamports[0] -= fee
	program := keys[tx.Message.Instructions[0].ProgramIDIndex]
	logs := []string{"Program " + program + " invoke [1]", "Program log: Instruction: TransferChecked"}
	var errV, status any = nil, map[string]any{"Ok": nil}
	if failed {
		errV = map[string]any{"InstructionError": []any{0, map[string]any{"Custom": 1}}}
		status = map[string]any{"Err": errV}
		logs = append(logs, "Program log: Error: insufficient funds", "Program "+program+" failed: custom program error: 0x1")
	} else {
		logs = append(logs, "Program "+program+" consumed 6200 of 200000 compute units", "Program "+program+" success")
	}
	return map[string]any{
		"meta": map[string]any{
			"computeUnitsConsumed": 6200, "err": errV, "fee": fee,
			"innerInstructions": []any{}, "loadedAddresses": map[string]any{"readonly": []any{}, "writable": []any{}},
			"logMessages": logs, "postBalances": postLamports, "postTokenBalances": post,
			"preBalances": lamports, "preTokenBalances": pre, "rewards": []any{}, "status": status,
		},
		"transaction": map[string]any{
			"message": map[string]any{
				"accountKeys": keys,
				"header": map[string]any{
					"numReadonlySignedAccounts":   tx.Message.Header.NumReadonlySignedAccounts,
					"numReadonlyUnsignedAccounts": tx.Message.Header.NumReadonlyUnsignedAccounts,
					"numRequiredSignatures":       tx.Message.Header.NumRequiredSignatures,
				},
				"instructions":    ixs,
				"recentBlockhash": tx.Message.RecentBlockhash.String(),
			},
			"signatures": []string{tx.Signatures[0].String()},
		},
		"version": "legacy",
	}
}

// rpcRequest is one JSON-RPC call.
type rpcRequest struct {
	ID     json.RawMessage   `json:"id"`
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

// commitmentOf reads the commitment of an options object; the node's
// default is finalized.
func commitmentOf(params []json.RawMessage, at int) string {
	var opts struct {
		Commitment string `json:"commitment"`
	}
	if len(params) > at {
		_ = json.Unmarshal(params[at], &opts)
	}
	if opts.Commitment == "" {
		return "finalized"
	}
	return opts.Commitment
}

// serveRPC answers one JSON-RPC call as a Solana node does.
func (c *solanaChain) serveRPC(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var req rpcRequest
	if err != nil || json.Unmarshal(body, &req) != nil {
		writeRPC(w, nil, nil, &rpcErr{-32700, "Parse error"})
		return
	}
	result, e := c.call(req)
	writeRPC(w, req.ID, result, e)
}

// errCommitment is a node's answer to "processed" where it is refused.
var errCommitment = &rpcErr{-32602, "Method does not support commitment below `confirmed`"}

// call answers one call under the read lock; the answer is written after
// it is released, so a slow reader does not hold up the chain.
func (c *solanaChain) call(req rpcRequest) (any, *rpcErr) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	switch req.Method {
	case "getGenesisHash":
		return c.genesis, nil
	case "getHealth":
		return "ok", nil
	case "minimumLedgerSlot":
		return 0, nil
	case "getSlot":
		if commitmentOf(req.Params, 0) == "finalized" {
			return c.finalized(), nil
		}
		return c.slot, nil
	case "getTokenSupply":
		var mint string
		if len(req.Params) > 0 {
			_ = json.Unmarshal(req.Params[0], &mint)
		}
		for _, m := range c.mints {
			if m.Mint == mint {
				return map[string]any{"context": map[string]any{"apiVersion": "2.3.6", "slot": c.slot},
					"value": map[string]any{"amount": "0", "decimals": m.Decimals, "uiAmount": 0, "uiAmountString": "0"}}, nil
			}
		}
		return nil, &rpcErr{-32602, "Invalid param: not a Token mint"}
	case "getSignaturesForAddress":
		return c.signatures(req)
	case "getBlock":
		return c.block(req)
	case "getBlocks":
		return c.blocks(req)
	case "getBlockTime":
		return c.blockTime(req)
	case "getTransaction":
		var sig string
		if len(req.Params) > 0 {
			_ = json.Unmarshal(req.Params[0], &sig)
		}
		commitment := commitmentOf(req.Params, 1)
		if commitment == "processed" {
			return nil, errCommitment
		}
		tx, ok := c.txs[sig]
		if !ok || !c.visible(tx, commitment) {
			return nil, nil
		}
		res := map[string]any{"slot": tx.slot, "blockTime": c.times[tx.slot]}
		for k, v := range tx.result {
			res[k] = v
		}
		return res, nil
	}
	return nil, &rpcErr{-32601, "Method not found"}
}

// signatures answers getSignaturesForAddress: newest first, before and
// until exclusive (looked up among what the commitment sees; a before it
// does not see answers []), at most limit (1,000 when left out; 0 or more
// than 1,000 is refused, as agave refuses it), only the transactions the
// commitment sees. Callers hold c.mu.
func (c *solanaChain) signatures(req rpcRequest) (any, *rpcErr) {
	var addr string
	var opts struct {
		Limit          *int   `json:"limit"`
		Before         string `json:"before"`
		Until          string `json:"until"`
		MinContextSlot uint64 `json:"minContextSlot"`
	}
	if len(req.Params) > 0 {
		_ = json.Unmarshal(req.Params[0], &addr)
	}
	if len(req.Params) > 1 {
		_ = json.Unmarshal(req.Params[1], &opts)
	}
	limit := 1000
	if opts.Limit != nil {
		if *opts.Limit < 1 || *opts.Limit > 1000 {
			return nil, &rpcErr{-32602, "Invalid limit; max 1000"}
		}
		limit = *opts.Limit
	}
	commitment := commitmentOf(req.Params, 1)
	if commitment == "processed" {
		return nil, errCommitment
	}
	if opts.MinContextSlot > c.tipAt(commitment) {
		return nil, &rpcErr{-32016, "Minimum context slot has not been reached"}
	}
	out := []map[string]any{}
	started := opts.Before == ""
	for i := len(c.order) - 1; i >= 0 && len(out) < limit; i-- {
		tx := c.order[i]
		if !c.visible(tx, commitment) {
			continue
		}
		if !started {
			started = tx.sig == opts.Before
			continue
		}
		if tx.sig == opts.Until {
			break
		}
		if !contains(tx.accounts, addr) {
			continue
		}
		status := "confirmed"
		if tx.slot <= c.finalized() {
			status = "finalized"
		}
		var errV any
		if tx.failed {
			errV = map[string]any{"InstructionError": []any{0, map[string]any{"Custom": 1}}}
		}
		out = append(out, map[string]any{"blockTime": c.times[tx.slot], "confirmationStatus": status, "err": errV, "memo": nil, "signature": tx.sig, "slot": tx.slot})
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// rpcErr is a JSON-RPC error object.
type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, e *rpcErr) {
	if id == nil {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	out := map[string]any{"jsonrpc": "2.0", "id": id}
	if e != nil {
		out["error"] = e
	} else {
		out["result"] = result
	}
	_ = json.NewEncoder(w).Encode(out)
}

// balanceOf returns a token account's balance (tests).
func (c *solanaChain) balanceOf(acct string) *big.Int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if b, ok := c.balances[acct]; ok {
		return new(big.Int).Set(b)
	}
	return new(big.Int)
}
