package ton

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/xssnick/tonutils-go/address"
)

// The answers of TON Center's API v3 that the scanner reads, as its
// indexer writes them (testdata/FACTS.md): logical times and amounts as
// decimal strings, hashes as standard base64, addresses in raw form
// ("0:" and upper-case hex). Only the keys read are declared.

// Block is a masterchain block (/api/v3/blocks, /api/v3/masterchainInfo).
type Block struct {
	Workchain int32  `json:"workchain"`
	Shard     string `json:"shard"`
	Seqno     uint64 `json:"seqno"`
	RootHash  string `json:"root_hash"`
	// GlobalID names the network: -239 mainnet, -3 testnet.
	GlobalID int32 `json:"global_id"`
	// GenUtime is the block's unix time (a string in TON Center's
	// answers; a number is read too).
	GenUtime flexUint `json:"gen_utime"`
	// StartLT is the first logical time of the block: it grows with
	// the seqno.
	StartLT flexUint `json:"start_lt"`
}

// Transaction is one transaction (/api/v3/transactions).
type Transaction struct {
	Account string   `json:"account"`
	Hash    string   `json:"hash"`
	LT      flexUint `json:"lt"`
	Now     int64    `json:"now"`
	// PrevLT is the logical time of the account's transaction before
	// this one (0 for its first): an account's transactions form a
	// chain, so a read can show it has them all.
	PrevLT flexUint `json:"prev_trans_lt"`
	// McBlockSeqno is the masterchain block that committed the
	// transaction.
	McBlockSeqno *uint64 `json:"mc_block_seqno"`
	Description  struct {
		Aborted bool `json:"aborted"`
	} `json:"description"`
	InMsg *Message `json:"in_msg"`
}

// Message is a transaction's inbound message.
type Message struct {
	// Source is null for an external message.
	Source  *string `json:"source"`
	Bounced bool    `json:"bounced"`
	// Content's Body is the message body, a base64 BOC.
	Content *struct {
		Body *string `json:"body"`
	} `json:"message_content"`
}

// flexUint reads a JSON unsigned integer written as a string or as a
// number.
type flexUint uint64

func (f *flexUint) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(b, `"`)
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("ton: %q is not an unsigned integer", b)
	}
	*f = flexUint(n)
	return nil
}

// hashHex turns a 32-byte hash as TON Center writes it (base64, standard
// or URL-safe; hex is read too) into 64 lowercase hex digits, the form
// paywatch keeps.
func hashHex(s string) (string, error) {
	if len(s) == 64 {
		if b, err := hex.DecodeString(s); err == nil {
			return hex.EncodeToString(b), nil
		}
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.NewReplacer("+", "-", "/", "_").Replace(strings.TrimRight(s, "=")))
	if err != nil || len(b) != 32 {
		return "", fmt.Errorf("ton: %q is not a 32-byte hash", s)
	}
	return hex.EncodeToString(b), nil
}

// parseAddr reads an address in any form TON Center or an operator
// writes: raw ("0:<hex>", any case) or user-friendly.
func parseAddr(s string) (*address.Address, error) {
	if strings.Contains(s, ":") {
		return address.ParseRawAddr(strings.ToLower(s))
	}
	return address.ParseAddr(strings.NewReplacer("+", "-", "/", "_").Replace(s))
}

// rawKey is an address's raw form in lower case, the key addresses are
// compared by whatever form they came in.
func rawKey(a *address.Address) string {
	return strings.ToLower(a.StringRaw())
}

// keyOf is rawKey of an address in any form, "" for one that does not
// read.
func keyOf(s string) string {
	a, err := parseAddr(s)
	if err != nil {
		return ""
	}
	return rawKey(a)
}
