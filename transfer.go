package paywatch

import "math/big"

// Transfer is one token Transfer event on chain: the one form a transfer
// has from the chain clients, through the scanners' records and claims,
// to the checks the payment workflow asks for. (The workflow's own signal,
// paywatch.Transaction, carries what a payment needs of it, its amount at
// the token's decimals.)
type Transfer struct {
	Network  Network
	Token    Token
	Contract string // normalised token contract address; empty once recorded
	TxHash   string // normalised as NormalizeTxHash
	// LogIndex identifies the log within its block. EVM: the log's index in
	// its block, as the node reports it. Tron: the log's position in the
	// block's flattened log list, that is in the logs of the block's
	// TransactionInfos taken in block order (every log counts, whatever its
	// contract or its transaction's result), because Tron nodes report no
	// log index at all.
	LogIndex    uint32
	BlockNumber uint64
	BlockHash   string // "0x…" EVM; 64 lowercase hex Tron block id
	From, To    string // normalised addresses (EIP-55 / Tron base58)
	// Amount is in the token's base units.
	Amount *big.Int
	// Removed is set on a recorded transfer once it left the canonical
	// chain.
	Removed bool
	// Memos are what the transfer carries to tell payments to one address
	// apart: on SOLANA its instruction's Solana Pay references (accounts
	// that do not sign); empty elsewhere.
	Memos []string
}

// TransferKey identifies a transfer on a network.
type TransferKey struct {
	TxHash   string
	LogIndex uint32
}

// Key returns the transfer's key.
func (t Transfer) Key() TransferKey { return TransferKey{t.TxHash, t.LogIndex} }

// FailingPolls is how many failed polls in a row make a scanner failing:
// /health reports it (api.FailingPolls) and the scanner logs it at ERROR.
// One failed poll is a provider's hiccup, retried a second later; three
// are an outage of a few seconds (of 15 s for rate limits, which are
// retried more slowly).
const FailingPolls = 3
