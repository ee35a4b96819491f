package api

import (
	"math/big"
	"strconv"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// The hosted page's wallet link: for a payment on an EVM network, an
// EIP-681 payment request that a wallet reading such requests turns into
// the transfer of the exact amount of the payment's token, on its chain, to
// its deposit address. It is offered next to the address, never instead of
// it: the QR code shown first holds the address only (paywatch.QRCodeDataURI),
// because many wallets and every exchange withdrawal page read only
// addresses, and a wallet that misreads a request could take the token
// contract for the recipient.

// walletURI returns the EIP-681 token transfer request of p, shown with
// status,
//
//	ethereum:<token contract>@<chain id>/transfer?address=<deposit address>&uint256=<amount in base units>
//
// with the amount as a plain integer (never an exponent, which some wallets
// read wrongly): the amount while pending, what is still missing once
// partial. It returns "" in any other status (a detected transfer is
// confirming, or nothing is to be sent), for a Tron payment, a payment
// without an address yet, and a network without a known contract
// (Deps.WalletTokens).
func (s *Server) walletURI(p *store.Payment, status paywatch.Status) string {
	info, ok := paywatch.LookupNetwork(p.Network)
	if !ok || info.Family != paywatch.FamilyEVM || info.ChainID <= 0 || p.Address == "" {
		return ""
	}
	amount := p.Amount
	switch status {
	case paywatch.StatusPending:
	case paywatch.StatusPartial:
		amount = p.Amount.Sub(p.PaidAmount)
	default:
		return ""
	}
	contract := s.walletContract(p.Network, p.Token)
	if contract == "" {
		return ""
	}
	units, err := amount.Rescale(paywatch.Decimals(p.Network, p.Token))
	if err != nil || units.Sign() <= 0 {
		return ""
	}
	return eip681Transfer(contract, info.ChainID, p.Address, units.Units())
}

// eip681Transfer formats an EIP-681 request for the ERC-20 transfer of
// units base units of the token at contract, on chain chainID, to to.
func eip681Transfer(contract string, chainID int64, to string, units *big.Int) string {
	return "ethereum:" + contract + "@" + strconv.FormatInt(chainID, 10) +
		"/transfer?address=" + to + "&uint256=" + units.String()
}

// walletContract is the contract of token t on network n that the
// scanners watch, in EIP-55 form; "" when the deployment names none.
func (s *Server) walletContract(n paywatch.Network, t paywatch.Token) string {
	c := paywatch.DefaultContract(n, t)
	if s.deps.WalletTokens != nil {
		c = s.deps.WalletTokens[n][t]
	}
	if c == "" {
		return ""
	}
	norm, err := paywatch.NormalizeAddress(paywatch.FamilyEVM, c)
	if err != nil {
		return ""
	}
	return norm
}
