package paywatch

import "math/big"

// Memo payments (operations.md §9): per_payment and per_user payments on a
// network whose wallets have no watch-only derivation share the wallet's
// first registered address and are told apart by a memo. What a memo is,
// and the wallet link that carries it, is the family's.

// memoFamily is what a family of memo payments brings.
type memoFamily struct {
	// new returns a fresh memo.
	new func() string
	// link returns the wallet link that carries r's memo.
	link func(r MemoRequest) string
	// short marks memos short enough to repeat (a TON comment a person
	// types): a fresh one is checked against those in use.
	short bool
}

// memoFamilies are the families whose HD-mode payments are memo payments.
var memoFamilies = map[Family]memoFamily{
	FamilySolana: {
		new: NewSolanaReference,
		link: func(r MemoRequest) string {
			return SolanaPayRequest{Recipient: r.Address, Amount: r.Amount, Mint: r.Contract, Reference: r.Memo,
				Label: r.Label, Message: r.Message}.URL()
		},
	},
	FamilyTON: {
		new: NewTONComment, short: true,
		link: func(r MemoRequest) string {
			// A TON link names base units; an amount finer than the
			// jetton's decimals never reaches here (creation refuses it),
			// and would leave the amount to the buyer.
			var units *big.Int
			if a, err := r.Amount.Rescale(Decimals(r.Network, r.Token)); err == nil {
				units = a.Units()
			}
			return TONTransferRequest{Recipient: r.Address, Jetton: r.Contract, Units: units, Text: r.Memo}.URL()
		},
	},
}

// NewMemo returns a fresh memo for a memo payment on network n (a Solana
// Pay reference on SOLANA, a comment of 8 characters on TON), "" for a
// network without memo payments.
func NewMemo(n Network) string {
	if f, ok := memoFamilies[n.Family()]; ok {
		return f.new()
	}
	return ""
}

// MemoMayRepeat reports whether a fresh memo on network n may be one
// already in use (TON's 8 characters), so that it must be checked; a
// Solana Pay reference is 32 random bytes and never repeats.
func MemoMayRepeat(n Network) bool { return memoFamilies[n.Family()].short }

// MemoRequest is what a memo payment's wallet link says.
type MemoRequest struct {
	Network Network
	Token   Token
	// Address is the merchant's wallet; Amount the amount in whole tokens;
	// Contract the token's contract (SOLANA: its mint; TON: its jetton
	// master).
	Address  string
	Amount   Amount
	Contract string
	Memo     string
	// Label names the merchant, Message the item; both optional.
	Label, Message string
}

// URI returns the wallet link that carries the memo (SOLANA: a Solana Pay
// transfer request; TON: a ton://transfer link), which a memo payment's qr_code encodes: the address
// alone would lose the memo. Without a memo, or on a network without
// memo payments, it is the address.
func (r MemoRequest) URI() string {
	f, ok := memoFamilies[r.Network.Family()]
	if !ok || r.Memo == "" {
		return r.Address
	}
	return f.link(r)
}
