package devnet

import (
	"cmp"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/xssnick/tonutils-go/address"
)

// The TON devnet's API: the subset of TON Center's HTTP API v3 that
// chains/ton reads, in TON Center's wire format (ton-index-go's models,
// toncenter/ton-indexer; chains/ton/testdata/FACTS.md): amounts and
// logical times as decimal strings, hashes as padded standard base64,
// addresses raw ("0:" and upper-case hex), errors {"error": "..."}.

// tonMaxLimit is the largest page (ton-index-go's --max-limit default).
const tonMaxLimit = 1000

// tonShard is the only shard: the whole of each workchain.
const tonShard = "8000000000000000"

// tonAPIError is an answer's refusal: {"error": msg} with status.
type tonAPIError struct {
	status int
	msg    string
}

// serveAPI answers one API call.
func (c *tonChain) serveAPI(w http.ResponseWriter, r *http.Request) {
	var out any
	var e *tonAPIError
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/v3/masterchainInfo":
		c.mu.RLock()
		out = map[string]any{"last": c.blockJSON(c.head(), -1), "first": c.blockJSON(c.blocks[0], -1)}
		c.mu.RUnlock()
	case r.Method == http.MethodGet && r.URL.Path == "/api/v3/blocks":
		out, e = c.blocksAPI(q)
	case r.Method == http.MethodGet && r.URL.Path == "/api/v3/transactions":
		out, e = c.transactionsAPI(q)
	case r.Method == http.MethodGet && r.URL.Path == "/api/v3/jetton/wallets":
		out, e = c.jettonWalletsAPI(q)
	case r.Method == http.MethodGet && r.URL.Path == "/api/v3/jetton/masters":
		out, e = c.jettonMastersAPI(q)
	case r.Method == http.MethodPost && r.URL.Path == "/api/v3/runGetMethod":
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			e = &tonAPIError{http.StatusBadRequest, "failed to read body"}
			break
		}
		out, e = c.runGetMethod(body)
	default:
		e = &tonAPIError{http.StatusNotFound, "not found"}
	}
	w.Header().Set("Content-Type", "application/json")
	if e != nil {
		w.WriteHeader(e.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": e.msg})
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

// b64 writes a hash as TON Center does: standard base64, padded.
func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// page reads limit (default 10, toncenter.com's; at most tonMaxLimit,
// beyond it 422 "limit is not allowed: N > M"), offset and sort (asc or
// desc, default def; "" reports sorted false).
func page(q url.Values, def string) (limit, offset int, desc bool, e *tonAPIError) {
	limit, offset, desc, _, e = sortedPage(q, def)
	return limit, offset, desc, e
}

// sortedPage is page, also telling whether a sort applies.
func sortedPage(q url.Values, def string) (limit, offset int, desc, sorted bool, e *tonAPIError) {
	limit = 10
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, 0, false, false, &tonAPIError{http.StatusUnprocessableEntity, "failed to parse limit"}
		}
		if n < 1 || n > tonMaxLimit {
			return 0, 0, false, false, &tonAPIError{http.StatusUnprocessableEntity, fmt.Sprintf("limit is not allowed: %d > %d", n, tonMaxLimit)}
		}
		limit = n
	}
	if s := q.Get("offset"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return 0, 0, false, false, &tonAPIError{http.StatusUnprocessableEntity, "failed to parse offset"}
		}
		offset = n
	}
	sort := cmp.Or(q.Get("sort"), def)
	if sort != "" && sort != "asc" && sort != "desc" {
		return 0, 0, false, false, &tonAPIError{http.StatusUnprocessableEntity, "failed to parse sort"}
	}
	return limit, offset, sort == "desc", sort != "", nil
}

// window cuts a page out of list.
func window[T any](list []T, limit, offset int) []T {
	if offset >= len(list) {
		return []T{}
	}
	return list[offset:min(len(list), offset+limit)]
}

// uintParam reads an optional unsigned number.
func uintParam(q url.Values, name string) (uint64, bool, *tonAPIError) {
	s := q.Get(name)
	if s == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, &tonAPIError{http.StatusUnprocessableEntity, fmt.Sprintf("failed to parse %s", name)}
	}
	return n, true, nil
}

// addrsParam reads a repeatable address parameter, any form, as raw keys.
func addrsParam(q url.Values, name string) ([]string, *tonAPIError) {
	var out []string
	for _, s := range q[name] {
		a, err := parseTONAddr(s)
		if err != nil {
			return nil, &tonAPIError{http.StatusUnprocessableEntity, fmt.Sprintf("failed to parse %s: %v", name, err)}
		}
		out = append(out, tonRaw(a))
	}
	return out, nil
}

// ltRange reads start_lt and end_lt, inclusive.
func ltRange(q url.Values) (lo, hi uint64, e *tonAPIError) {
	lo, _, e = uintParam(q, "start_lt")
	if e != nil {
		return 0, 0, e
	}
	hi, ok, e := uintParam(q, "end_lt")
	if !ok {
		hi = ^uint64(0)
	}
	return lo, hi, e
}

// blockID is a BlockId: {workchain, shard, seqno}.
type blockID struct {
	Workchain int32  `json:"workchain"`
	Shard     string `json:"shard"`
	Seqno     uint64 `json:"seqno"`
}

// blockJSON is a Block: masterchain block b (workchain -1) or the one
// basechain block it commits (workchain 0, same seqno), which holds its
// transactions. Callers hold c.mu.
func (c *tonChain) blockJSON(b tonBlock, workchain int32) map[string]any {
	prev := []blockID{}
	if b.seqno > 0 {
		prev = append(prev, blockID{workchain, tonShard, b.seqno - 1})
	}
	wc := strconv.Itoa(int(workchain))
	root, file := c.digest("root", wc, b.seqno), c.digest("file", wc, b.seqno)
	seed, by := c.digest("seed", wc, b.seqno), c.digest("validator")
	masterRef, minRef := uint64(0), max(b.seqno, 1)-1
	if workchain == 0 {
		masterRef, minRef = b.seqno, b.seqno
	}
	return map[string]any{
		"workchain": workchain, "shard": tonShard, "seqno": b.seqno, "root_hash": b64(root[:]), "file_hash": b64(file[:]),
		"global_id": TONGlobalID, "version": 0, "after_merge": false, "before_split": false, "after_split": false,
		"want_merge": false, "want_split": false, "key_block": b.seqno == 0 && workchain == -1, "vert_seqno_incr": false, "flags": 1,
		"gen_utime": strconv.FormatInt(b.utime, 10), "start_lt": strconv.FormatUint(b.startLT, 10), "end_lt": strconv.FormatUint(b.endLT, 10),
		"validator_list_hash_short": 1, "gen_catchain_seqno": 0, "min_ref_mc_seqno": minRef,
		"prev_key_block_seqno": 0, "vert_seqno": 0, "master_ref_seqno": masterRef,
		"rand_seed": b64(seed[:]), "created_by": b64(by[:]), "tx_count": b.txs,
		"masterchain_block_ref": blockID{-1, tonShard, b.seqno}, "prev_blocks": prev,
	}
}

// blocksAPI answers /blocks as ton-index-go does: filters by workchain,
// shard, seqno, mc_seqno, start_utime/end_utime and start_lt/end_lt (on
// a block's start_lt), ANDed; ordered by gen_utime only when sort is
// given (by seqno within a second, as blocks made in one second tie),
// else in storing order. There is no seqno range: start_seqno and
// end_seqno are unknown parameters, ignored as TON Center ignores them.
func (c *tonChain) blocksAPI(q url.Values) (any, *tonAPIError) {
	limit, offset, desc, _, e := sortedPage(q, "")
	if e != nil {
		return nil, e
	}
	lt0, lt1, e := ltRange(q)
	if e != nil {
		return nil, e
	}
	filters := map[string]uint64{}
	for _, name := range []string{"seqno", "mc_seqno", "start_utime", "end_utime"} {
		if n, ok, e := uintParam(q, name); e != nil {
			return nil, e
		} else if ok {
			filters[name] = n
		}
	}
	if s := q.Get("shard"); s != "" && !strings.EqualFold(strings.TrimPrefix(s, "0x"), tonShard) && s != "-9223372036854775808" {
		return map[string]any{"blocks": []any{}}, nil
	}
	has := func(name string, ok func(uint64) bool) bool { n, set := filters[name]; return !set || ok(n) }
	c.mu.RLock()
	defer c.mu.RUnlock()
	type wcBlock struct {
		b  tonBlock
		wc int32
	}
	var list []wcBlock
	for _, b := range c.blocks {
		if b.startLT < lt0 || b.startLT > lt1 || !has("seqno", func(n uint64) bool { return b.seqno == n }) ||
			!has("mc_seqno", func(n uint64) bool { return b.seqno == n }) ||
			!has("start_utime", func(n uint64) bool { return uint64(b.utime) >= n }) ||
			!has("end_utime", func(n uint64) bool { return uint64(b.utime) <= n }) {
			continue
		}
		for _, wc := range []int32{-1, 0} {
			if w := q.Get("workchain"); w == "" || w == strconv.Itoa(int(wc)) {
				list = append(list, wcBlock{b, wc})
			}
		}
	}
	if desc {
		slices.Reverse(list)
	}
	out := []map[string]any{}
	for _, x := range window(list, limit, offset) {
		out = append(out, c.blockJSON(x.b, x.wc))
	}
	return map[string]any{"blocks": out}, nil
}

// hashParam reads a transaction hash as ton-index-go does: 64 hex digits
// (0x allowed) or 44 characters of padded base64, standard or URL-safe.
func hashParam(s string) ([32]byte, bool) {
	var h [32]byte
	var b []byte
	var err error
	switch {
	case len(s) == 64 || len(s) == 66 && s[:2] == "0x":
		b, err = hex.DecodeString(strings.TrimPrefix(s, "0x"))
	case len(s) == 44:
		if b, err = base64.StdEncoding.DecodeString(s); err != nil {
			b, err = base64.URLEncoding.DecodeString(s)
		}
	default:
		return h, false
	}
	if err != nil || len(b) != 32 {
		return h, false
	}
	copy(h[:], b)
	return h, true
}

// transactionsAPI answers /transactions as ton-index-go does: filters by
// account and hash (each repeatable), lt, workchain, seqno and mc_seqno,
// start_utime/end_utime and start_lt/end_lt (inclusive), ANDed; ordered
// by hash when hashes are asked, by time when a utime bound is, else by
// logical time, newest first unless sort is asc.
func (c *tonChain) transactionsAPI(q url.Values) (any, *tonAPIError) {
	limit, offset, desc, e := page(q, "desc")
	if e != nil {
		return nil, e
	}
	accounts, e := addrsParam(q, "account")
	if e != nil {
		return nil, e
	}
	lo, hi, e := ltRange(q)
	if e != nil {
		return nil, e
	}
	filters := map[string]uint64{}
	for _, name := range []string{"lt", "seqno", "mc_seqno", "start_utime", "end_utime"} {
		if n, ok, e := uintParam(q, name); e != nil {
			return nil, e
		} else if ok {
			filters[name] = n
		}
	}
	var hashes [][32]byte
	for _, s := range q["hash"] {
		h, ok := hashParam(s)
		if !ok {
			return nil, &tonAPIError{http.StatusUnprocessableEntity, "failed to parse hash"}
		}
		hashes = append(hashes, h)
	}
	if w := q.Get("workchain"); w != "" && w != "0" {
		return map[string]any{"transactions": []any{}, "address_book": map[string]any{}}, nil
	}
	has := func(name string, ok func(uint64) bool) bool { n, set := filters[name]; return !set || ok(n) }
	c.mu.RLock()
	defer c.mu.RUnlock()
	var list []*tonTx
	for _, t := range c.txs {
		if !c.unstored[t.seqno] && (len(accounts) == 0 || slices.Contains(accounts, tonRaw(t.account))) && t.lt >= lo && t.lt <= hi &&
			(len(hashes) == 0 || slices.Contains(hashes, t.hash)) && has("lt", func(n uint64) bool { return t.lt == n }) &&
			has("seqno", func(n uint64) bool { return t.seqno == n }) && has("mc_seqno", func(n uint64) bool { return t.seqno == n }) &&
			has("start_utime", func(n uint64) bool { return uint64(t.now) >= n }) &&
			has("end_utime", func(n uint64) bool { return uint64(t.now) <= n }) {
			list = append(list, t)
		}
	}
	_, byTime := filters["start_utime"]
	if _, ok := filters["end_utime"]; ok {
		byTime = true
	}
	slices.SortStableFunc(list, func(a, b *tonTx) int {
		switch {
		case len(hashes) > 0:
			return strings.Compare(b64(a.hash[:]), b64(b.hash[:]))
		case byTime:
			return cmp.Or(cmp.Compare(a.now, b.now), cmp.Compare(a.lt, b.lt))
		}
		return cmp.Or(cmp.Compare(a.lt, b.lt), strings.Compare(tonRaw(a.account), tonRaw(b.account)))
	})
	if desc && len(hashes) == 0 {
		slices.Reverse(list)
	}
	book := map[string]any{}
	out := []map[string]any{}
	for _, t := range window(list, limit, offset) {
		out = append(out, c.txJSON(t, book))
	}
	return map[string]any{"transactions": out, "address_book": book}, nil
}

// bookEntry adds a to an address book: wallets (owners) user-friendly
// non-bounceable, contracts bounceable, as TON Center writes them.
func (c *tonChain) bookEntry(book map[string]any, a *address.Address) string {
	raw := tonRaw(a)
	if _, ok := book[raw]; !ok {
		contract, interfaces := c.wallets[raw] != nil, any(nil)
		switch {
		case contract:
			interfaces = []string{"jetton_wallet"}
		case a.Equals(tonMaster) || a.Equals(tonLookalike):
			contract, interfaces = true, []string{"jetton_master"}
		case a.Equals(tonAttacker):
			contract = true
		}
		book[raw] = map[string]any{"user_friendly": tonFriendly(a, contract), "domain": nil, "interfaces": interfaces}
	}
	return raw
}

// msgJSON is a Message. Callers hold c.mu.
func (c *tonChain) msgJSON(m *tonMsg, book map[string]any) map[string]any {
	str := func(n uint64) string { return strconv.FormatUint(n, 10) }
	var op any
	if m.hasOp {
		op = fmt.Sprintf("0x%08x", m.op)
	}
	bodyHash := m.body.Hash()
	var init any
	if m.init != nil {
		init = map[string]any{"hash": b64(m.init.Hash()), "body": b64(m.init.ToBOC()), "decoded": nil}
	}
	return map[string]any{
		"hash": b64(m.hash[:]), "source": c.bookEntry(book, m.src), "destination": c.bookEntry(book, m.dst),
		"value": str(m.value), "value_extra_currencies": map[string]string{}, "fwd_fee": str(m.fwdFee), "ihr_fee": "0",
		"created_lt": str(m.createdLT), "created_at": strconv.FormatInt(m.createdAt, 10),
		"opcode": op, "ihr_disabled": true, "bounce": m.bounce, "bounced": m.bounced,
		"import_fee": nil, "message_content": map[string]any{"hash": b64(bodyHash), "body": b64(m.body.ToBOC()), "decoded": nil},
		"init_state": init,
	}
}

// txJSON is a Transaction, its addresses added to book. Callers hold
// c.mu.
func (c *tonChain) txJSON(t *tonTx, book map[string]any) map[string]any {
	str := func(n uint64) string { return strconv.FormatUint(n, 10) }
	c.bookEntry(book, t.account)
	compute := map[string]any{
		"skipped": false, "success": !t.aborted, "msg_state_used": false, "account_activated": t.origStatus != t.endStatus,
		"gas_fees": "3308000", "gas_used": "8270", "gas_limit": "250000", "mode": 0, "exit_code": t.exitCode, "vm_steps": 188,
		"vm_init_state_hash": b64(make([]byte, 32)), "vm_final_state_hash": b64(make([]byte, 32)),
	}
	descr := map[string]any{
		"type": "ord", "aborted": t.aborted, "destroyed": false, "credit_first": !t.in.bounce,
		"storage_ph": map[string]any{"storage_fees_collected": "0", "status_change": "unchanged"},
		"credit_ph":  map[string]any{"credit": str(t.in.value)},
		"compute_ph": compute,
	}
	if t.aborted {
		descr["bounce"] = map[string]any{"type": "ok", "msg_size": map[string]any{"cells": "1", "bits": "96"},
			"msg_fees": "0", "fwd_fees": "400000"}
	} else {
		action := c.digest("actions", t.hash[:])
		descr["action"] = map[string]any{
			"success": true, "valid": true, "no_funds": false, "status_change": "unchanged",
			"total_fwd_fees": "0", "total_action_fees": "0", "result_code": 0, "tot_actions": len(t.out),
			"spec_actions": 0, "skipped_actions": 0, "msgs_created": len(t.out), "action_list_hash": b64(action[:]),
			"tot_msg_size": map[string]any{"cells": str(uint64(len(t.out))), "bits": str(uint64(len(t.out)) * 700)},
		}
	}
	out := []map[string]any{}
	for _, m := range t.out {
		out = append(out, c.msgJSON(m, book))
	}
	state := func(which string) map[string]any {
		h, data := c.digest("state", which, t.hash[:]), c.digest("data", which, t.hash[:])
		code := c.digest("code", tonRaw(t.account))
		status := t.origStatus
		if which == "after" {
			status = t.endStatus
		}
		s := map[string]any{"hash": b64(h[:]), "balance": "50000000", "extra_currencies": map[string]string{},
			"account_status": status, "frozen_hash": nil, "data_hash": b64(data[:]), "code_hash": b64(code[:])}
		if status == "nonexist" {
			s["balance"], s["account_status"], s["data_hash"], s["code_hash"] = nil, nil, nil, nil
		}
		return s
	}
	return map[string]any{
		"account": tonRaw(t.account), "hash": b64(t.hash[:]), "lt": str(t.lt), "now": t.now, "mc_block_seqno": t.seqno,
		"trace_id": b64(t.trace[:]), "prev_trans_hash": b64(t.prevHash[:]), "prev_trans_lt": str(t.prevLT),
		"orig_status": t.origStatus, "end_status": t.endStatus, "total_fees": "3308000", "total_fees_extra_currencies": map[string]string{},
		"description": descr, "block_ref": blockID{0, tonShard, t.seqno}, "in_msg": c.msgJSON(t.in, book), "out_msgs": out,
		"account_state_before": state("before"), "account_state_after": state("after"), "emulated": false,
	}
}
