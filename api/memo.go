package api

import (
	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/payments"
)

// qrTarget is what a payment's qr_code encodes: its address, or, for a
// memo payment (operations.md §9), the wallet link that carries its memo
// (a Solana Pay transfer request naming the mint the scanner watches, or
// a ton://transfer link naming the jetton master,
// the project as label and a payment link's title as message), for what
// is still missing once the payment is partial.
func (s *Server) qrTarget(p *payments.Payment) string {
	if p.Memo == "" {
		return p.Address
	}
	amount := p.Amount
	if rest, ok := sendAmount(p, p.Status); ok && p.Status == paywatch.StatusPartial {
		// What is still missing: a buyer scanning the code again must
		// not send the whole amount twice.
		amount = rest
	}
	return s.memoLink(p, amount)
}

// memoLink is the wallet link of memo payment p for amount.
func (s *Server) memoLink(p *payments.Payment, amount paywatch.Amount) string {
	r := paywatch.MemoRequest{
		Network: p.Network, Token: p.Token, Address: p.Address, Amount: amount, Contract: s.mint(p.Network, p.Token),
		Memo: p.Memo, Label: p.ProjectName,
	}
	if p.Link != nil {
		r.Message = p.Link.LinkTitle
	}
	return r.URI()
}

// mint is the contract of token t on a memo-payment network n that its
// scanner watches.
func (s *Server) mint(n paywatch.Network, t paywatch.Token) string {
	if c := s.deps.Mints[n][t]; c != "" {
		return c
	}
	return paywatch.DefaultContract(n, t)
}
