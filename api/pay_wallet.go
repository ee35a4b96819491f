package api

import (
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/payments"
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
// status at now,
//
//	ethereum:<token contract>@<chain id>/transfer?address=<deposit address>&uint256=<amount in base units>
//
// with the amount as a plain integer (never an exponent, which some wallets
// read wrongly): the amount while pending, what is still missing once
// partial. A request asks a wallet to send money, so it is offered only
// while sending is what the buyer should do; it returns "":
//   - in any other status (a detected transfer is confirming, or nothing is
//     to be sent), and once expires_at has passed, in whatever status the
//     payment still reads (the confirming grace, a deadline check waiting
//     out an RPC outage): funds sent late do not count in every mode;
//   - while any transfer of p is unconfirmed: a partial payment stays
//     partial while its follow-up transfer confirms (the workflow's
//     table has no partial → confirming row), and a request for the
//     rest then would have the buyer pay it twice;
//   - for the rest of a partial payment whose address policy counts only
//     a transfer of the exact amount (pool + micro_amount), which a
//     remainder never is;
//   - for a network served by a devnet chain (Deps.DevnetNetworks): it has
//     its network's mainnet chain id but its own contracts, so a real
//     wallet would call transfer on a mainnet contract;
//   - for a Tron payment, a payment without an address yet, and a network
//     without a known contract (Deps.WalletTokens).
//
// A memo payment's is its Solana Pay transfer request instead
// (memoWalletURI), on the same terms.
func (s *Server) walletURI(p *payments.Payment, status paywatch.Status, now time.Time) string {
	if p.Memo != "" {
		return s.memoWalletURI(p, status, now)
	}
	info, ok := paywatch.LookupNetwork(p.Network)
	if !ok || info.Family != paywatch.FamilyEVM || info.ChainID <= 0 || p.Address == "" {
		return ""
	}
	if !now.Before(p.ExpiresAt) || hasUnconfirmed(p.Transactions) || slices.Contains(s.deps.DevnetNetworks, p.Network) {
		return ""
	}
	amount, ok := sendAmount(p, status)
	if !ok {
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

// sendAmount is what a wallet link asks the buyer to send: the amount
// while pending, what is still missing once partial (never for a policy
// that counts only the exact amount); ok is false in any other status.
func sendAmount(p *payments.Payment, status paywatch.Status) (paywatch.Amount, bool) {
	switch status {
	case paywatch.StatusPending:
		return p.Amount, true
	case paywatch.StatusPartial:
		if paywatch.PolicyOf(p.Mode, p.PoolMatching).ExactMatch {
			return paywatch.Amount{}, false
		}
		return p.Amount.Sub(p.PaidAmount), true
	}
	return paywatch.Amount{}, false
}

// memoWalletURI is a memo payment's wallet link (a Solana Pay transfer
// request carrying its reference) on the terms of an EVM payment's:
// while sending is what the buyer should do, for what is still to send.
// A devnet's is offered too: it names the devnet's mint, which no real
// wallet holds, so it cannot move real money.
func (s *Server) memoWalletURI(p *payments.Payment, status paywatch.Status, now time.Time) string {
	if p.Address == "" || !now.Before(p.ExpiresAt) || hasUnconfirmed(p.Transactions) {
		return ""
	}
	amount, ok := sendAmount(p, status)
	if !ok || amount.Sign() <= 0 {
		return ""
	}
	return s.memoLink(p, amount)
}

// hasUnconfirmed reports whether a transfer of txs is still confirming.
func hasUnconfirmed(txs []paywatch.Transaction) bool {
	return slices.ContainsFunc(txs, func(tx paywatch.Transaction) bool { return !tx.Confirmed })
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
