package devnet

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/fbsobreira/gotron-sdk/pkg/proto/api"
	"github.com/fbsobreira/gotron-sdk/pkg/proto/core"

	"github.com/paywatch/paywatch"
)

// The TRC20 devnet's FullNode HTTP API: the /wallet/... paths the clients
// use, answered as java-tron and TronGrid answer them. Bodies are JSON
// (POST, or GET with query parameters); bytes are hex and addresses hex
// with the 0x41 prefix ("visible" false); fields holding protobuf's default
// value are left out, as java-tron's JSON printer leaves them out (block
// 0's number, a successful info's result); an unknown block or
// transaction is {}; a malformed request gets status 200 and
// {"Error": "..."}.

// httpHandler serves the HTTP API.
func (c *tronChain) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/wallet/getnowblock", func(w http.ResponseWriter, r *http.Request) {
		b, _ := c.GetNowBlock2(r.Context(), &api.EmptyMessage{})
		writeTronJSON(w, blockJSON(b))
	})
	mux.HandleFunc("/wallet/getblockbynum", func(w http.ResponseWriter, r *http.Request) {
		n, ok := readTronNum(w, r)
		if !ok {
			return
		}
		b, _ := c.GetBlockByNum2(r.Context(), &api.NumberMessage{Num: n})
		writeTronJSON(w, blockJSON(b))
	})
	mux.HandleFunc("/wallet/getblockbylimitnext", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			StartNum json.Number `json:"startNum"`
			EndNum   json.Number `json:"endNum"`
		}
		if !readTronRequest(w, r, &req) {
			return
		}
		start, err1 := req.StartNum.Int64()
		end, err2 := req.EndNum.Int64()
		if err1 != nil || err2 != nil {
			tronHTTPError(w, "startNum and endNum must be numbers")
			return
		}
		list, _ := c.GetBlockByLimitNext2(r.Context(), &api.BlockLimit{StartNum: start, EndNum: end})
		out := map[string]any{}
		if len(list.GetBlock()) > 0 {
			blocks := make([]any, len(list.GetBlock()))
			for i, b := range list.GetBlock() {
				blocks[i] = blockJSON(b)
			}
			out["block"] = blocks
		}
		writeTronJSON(w, out)
	})
	mux.HandleFunc("/wallet/gettransactioninfobyblocknum", func(w http.ResponseWriter, r *http.Request) {
		n, ok := readTronNum(w, r)
		if !ok {
			return
		}
		list, _ := c.GetTransactionInfoByBlockNum(r.Context(), &api.NumberMessage{Num: n})
		out := make([]any, len(list.GetTransactionInfo()))
		for i, info := range list.GetTransactionInfo() {
			out[i] = infoJSON(info)
		}
		writeTronJSON(w, out)
	})
	mux.HandleFunc("/wallet/gettransactioninfobyid", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Value string `json:"value"`
		}
		if !readTronRequest(w, r, &req) {
			return
		}
		id, err := hex.DecodeString(req.Value)
		if err != nil {
			tronHTTPError(w, "value: "+err.Error())
			return
		}
		info, _ := c.GetTransactionInfoById(r.Context(), &api.BytesMessage{Value: id})
		if len(info.GetId()) == 0 {
			writeTronJSON(w, map[string]any{})
			return
		}
		writeTronJSON(w, infoJSON(info))
	})
	mux.HandleFunc("/wallet/triggerconstantcontract", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Owner            string `json:"owner_address"`
			Contract         string `json:"contract_address"`
			FunctionSelector string `json:"function_selector"`
			Parameter        string `json:"parameter"`
			Data             string `json:"data"`
		}
		if !readTronRequest(w, r, &req) {
			return
		}
		owner, err1 := hex.DecodeString(req.Owner)
		contract, err2 := hex.DecodeString(req.Contract)
		if err1 != nil || err2 != nil {
			tronHTTPError(w, "owner_address and contract_address must be hex")
			return
		}
		data, err := hex.DecodeString(req.Data)
		if req.FunctionSelector != "" {
			var param []byte
			param, err = hex.DecodeString(req.Parameter)
			data = append(selectorOf(req.FunctionSelector), param...)
		}
		if err != nil {
			tronHTTPError(w, "data: "+err.Error())
			return
		}
		tx, _ := c.TriggerConstantContract(r.Context(), &core.TriggerSmartContract{OwnerAddress: owner, ContractAddress: contract, Data: data})
		out := map[string]any{}
		res := map[string]any{}
		if tx.GetResult().GetResult() {
			res["result"] = true
		} else {
			res["code"] = tx.GetResult().GetCode().String()
			res["message"] = hex.EncodeToString(tx.GetResult().GetMessage())
		}
		out["result"] = res
		if len(tx.GetConstantResult()) > 0 {
			rs := make([]string, len(tx.GetConstantResult()))
			for i, b := range tx.GetConstantResult() {
				rs[i] = hex.EncodeToString(b)
			}
			out["constant_result"] = rs
			out["energy_used"] = tx.GetEnergyUsed()
		}
		writeTronJSON(w, out)
	})
	return mux
}

// readTronRequest decodes the request's JSON body, or its query string
// for a GET, into v; it answers java-tron's error and reports false when
// it can't.
func readTronRequest(w http.ResponseWriter, r *http.Request, v any) bool {
	var body []byte
	if r.Method == http.MethodGet {
		q := map[string]any{}
		for k, vs := range r.URL.Query() {
			if len(vs) == 0 {
				continue
			}
			if _, err := strconv.ParseInt(vs[0], 10, 64); err == nil {
				q[k] = json.Number(vs[0])
			} else {
				q[k] = vs[0]
			}
		}
		body, _ = json.Marshal(q)
	} else {
		b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			tronHTTPError(w, err.Error())
			return false
		}
		body = b
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		tronHTTPError(w, "class com.google.protobuf.InvalidProtocolBufferException : "+err.Error())
		return false
	}
	return true
}

// readTronNum reads a {"num": N} request, answering java-tron's error and
// reporting false when it can't.
func readTronNum(w http.ResponseWriter, r *http.Request) (int64, bool) {
	var req struct {
		Num json.Number `json:"num"`
	}
	if !readTronRequest(w, r, &req) {
		return 0, false
	}
	n, err := req.Num.Int64()
	if err != nil {
		tronHTTPError(w, "num: "+err.Error())
		return 0, false
	}
	return n, true
}

// tronHTTPError answers as java-tron answers a request it can't read.
func tronHTTPError(w http.ResponseWriter, msg string) {
	writeTronJSON(w, map[string]string{"Error": msg})
}

func writeTronJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// blockJSON is a BlockExtention as the HTTP API prints a block; {} for the
// empty message of an unknown height.
func blockJSON(b *api.BlockExtention) map[string]any {
	out := map[string]any{}
	if len(b.GetBlockid()) == 0 {
		return out
	}
	raw := b.GetBlockHeader().GetRawData()
	rawJSON := map[string]any{
		"txTrieRoot":      hex.EncodeToString(raw.GetTxTrieRoot()),
		"witness_address": hex.EncodeToString(raw.GetWitnessAddress()),
		"parentHash":      hex.EncodeToString(raw.GetParentHash()),
	}
	if raw.GetNumber() != 0 {
		rawJSON["number"] = raw.GetNumber()
	}
	if raw.GetVersion() != 0 {
		rawJSON["version"] = raw.GetVersion()
	}
	if raw.GetTimestamp() != 0 {
		rawJSON["timestamp"] = raw.GetTimestamp()
	}
	out["blockID"] = hex.EncodeToString(b.GetBlockid())
	out["block_header"] = map[string]any{
		"raw_data":          rawJSON,
		"witness_signature": hex.EncodeToString(b.GetBlockHeader().GetWitnessSignature()),
	}
	if len(b.GetTransactions()) > 0 {
		txs := make([]any, len(b.GetTransactions()))
		for i, tx := range b.GetTransactions() {
			txs[i] = transactionJSON(tx.GetTransaction(), tx.GetTxid())
		}
		out["transactions"] = txs
	}
	return out
}

// transactionJSON is a TRC20 transfer transaction as the HTTP API prints
// it, with txID and raw_data_hex added and the contract's parameter
// decoded.
func transactionJSON(tx *core.Transaction, id []byte) map[string]any {
	raw := tx.GetRawData()
	var contracts []any
	for _, ct := range raw.GetContract() {
		var trigger core.TriggerSmartContract
		value := map[string]any{}
		if ct.GetParameter().UnmarshalTo(&trigger) == nil {
			value["data"] = hex.EncodeToString(trigger.GetData())
			value["owner_address"] = hex.EncodeToString(trigger.GetOwnerAddress())
			value["contract_address"] = hex.EncodeToString(trigger.GetContractAddress())
		}
		contracts = append(contracts, map[string]any{
			"parameter": map[string]any{"value": value, "type_url": ct.GetParameter().GetTypeUrl()},
			"type":      ct.GetType().String(),
		})
	}
	sigs := make([]string, len(tx.GetSignature()))
	for i, s := range tx.GetSignature() {
		sigs[i] = hex.EncodeToString(s)
	}
	rets := make([]any, len(tx.GetRet()))
	for i, r := range tx.GetRet() {
		rets[i] = map[string]any{"contractRet": r.GetContractRet().String()}
	}
	return map[string]any{
		"ret":       rets,
		"signature": sigs,
		"txID":      hex.EncodeToString(id),
		"raw_data": map[string]any{
			"contract":        contracts,
			"ref_block_bytes": hex.EncodeToString(raw.GetRefBlockBytes()),
			"ref_block_hash":  hex.EncodeToString(raw.GetRefBlockHash()),
			"expiration":      raw.GetExpiration(),
			"fee_limit":       raw.GetFeeLimit(),
			"timestamp":       raw.GetTimestamp(),
		},
		"raw_data_hex": hex.EncodeToString(marshal(raw)),
	}
}

// infoJSON is a TransactionInfo as the HTTP API prints it: result only
// when it is FAILED, log addresses of 20 bytes without the 0x41 prefix.
func infoJSON(info *core.TransactionInfo) map[string]any {
	results := make([]string, len(info.GetContractResult()))
	for i, r := range info.GetContractResult() {
		results[i] = hex.EncodeToString(r)
	}
	rc := info.GetReceipt()
	receipt := map[string]any{"result": rc.GetResult().String()}
	if rc.GetEnergyUsage() != 0 {
		receipt["energy_usage"] = rc.GetEnergyUsage()
	}
	if rc.GetEnergyUsageTotal() != 0 {
		receipt["energy_usage_total"] = rc.GetEnergyUsageTotal()
	}
	if rc.GetNetUsage() != 0 {
		receipt["net_usage"] = rc.GetNetUsage()
	}
	out := map[string]any{
		"id":               hex.EncodeToString(info.GetId()),
		"blockNumber":      info.GetBlockNumber(),
		"blockTimeStamp":   info.GetBlockTimeStamp(),
		"contractResult":   results,
		"contract_address": hex.EncodeToString(info.GetContractAddress()),
		"receipt":          receipt,
	}
	if info.GetFee() != 0 {
		out["fee"] = info.GetFee()
	}
	if info.GetResult() != core.TransactionInfo_SUCESS {
		out["result"] = info.GetResult().String()
		out["resMessage"] = hex.EncodeToString(info.GetResMessage())
	}
	var logs []any
	for _, l := range info.GetLog() {
		topics := make([]string, len(l.GetTopics()))
		for i, t := range l.GetTopics() {
			topics[i] = hex.EncodeToString(t)
		}
		logs = append(logs, map[string]any{
			"address": hex.EncodeToString(l.GetAddress()),
			"topics":  topics,
			"data":    hex.EncodeToString(l.GetData()),
		})
	}
	if len(logs) > 0 {
		out["log"] = logs
	}
	return out
}

// TriggerConstantContract runs a read-only call. The devnet's token answers
// decimals(); any other contract or function fails as java-tron fails a
// call to a contract that does not exist.
func (c *tronChain) TriggerConstantContract(_ context.Context, m *core.TriggerSmartContract) (*api.TransactionExtention, error) {
	addr := m.GetContractAddress()
	if len(addr) == 21 && addr[0] == 0x41 && common.BytesToAddress(addr[1:]) == c.contract &&
		bytes.Equal(m.GetData(), selectorOf("decimals()")) {
		ret := common.LeftPadBytes([]byte{byte(paywatch.Decimals(c.info.Network, paywatch.USDT))}, 32)
		return &api.TransactionExtention{
			Result:         &api.Return{Result: true},
			ConstantResult: [][]byte{ret},
			EnergyUsed:     290,
		}, nil
	}
	return &api.TransactionExtention{
		Result: &api.Return{Code: api.Return_CONTRACT_VALIDATE_ERROR, Message: []byte("Smart contract is not exist.")},
	}, nil
}

// selectorOf returns the 4-byte selector of a function signature such as
// "decimals()".
func selectorOf(signature string) []byte {
	return crypto.Keccak256([]byte(signature))[:4]
}
