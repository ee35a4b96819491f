package chains

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// accountQuorum is the quorum client (quorum.go) of a network read per
// watched account (SOLANA, chains.AccountReader): the same reads, taken
// only when Quorum endpoints give them field for field, with the account
// cursors of a batch among the fields, and the final block the Quorum-th
// highest of the endpoints' (the slowest agreeing one's, so a transfer
// is final only once Quorum endpoints say so). It reads no tip: its
// endpoints' clients have none, so it is no TipReader.
type accountQuorum struct {
	qc *quorumClient
}

var (
	_ Client             = (*accountQuorum)(nil)
	_ BatchReader        = (*accountQuorum)(nil)
	_ AccountReader      = (*accountQuorum)(nil)
	_ FinalityReader     = (*accountQuorum)(nil)
	_ AddressRangeReader = (*accountQuorum)(nil)
	_ BlockTimer         = (*accountQuorum)(nil)
	_ CallCounter        = (*accountQuorum)(nil)
	_ chainapi.Checker   = (*accountQuorum)(nil)
)

// accountQuorumOf returns the quorum client of qc's endpoints when they
// read per account, checking that each reads what a scanner asks.
func accountQuorumOf(qc *quorumClient) (*accountQuorum, bool, error) {
	if _, ok := qc.eps[0].(AccountReader); !ok {
		return nil, false, nil
	}
	for _, c := range qc.eps {
		_, ar := c.(AccountReader)
		_, fr := c.(FinalityReader)
		_, rr := c.(AddressRangeReader)
		_, bt := c.(BlockTimer)
		_, ck := c.(chainapi.Checker)
		if !ar || !fr || !rr || !bt || !ck {
			return nil, true, fmt.Errorf("chains: %s: a quorum needs clients that read accounts, finality and address ranges", qc.network)
		}
	}
	return &accountQuorum{qc: qc}, true, nil
}

func (a *accountQuorum) Network() paywatch.Network                { return a.qc.network }
func (a *accountQuorum) Head(ctx context.Context) (uint64, error) { return a.qc.Head(ctx) }
func (a *accountQuorum) Calls() uint64                            { return a.qc.Calls() }
func (a *accountQuorum) Close()                                   { a.qc.Close() }

func (a *accountQuorum) BlockHash(ctx context.Context, n uint64) (string, error) {
	return a.qc.BlockHash(ctx, n)
}

func (a *accountQuorum) BlockTime(ctx context.Context, n uint64) (time.Time, error) {
	return a.qc.BlockTime(ctx, n)
}

func (a *accountQuorum) Transfers(ctx context.Context, from, to uint64) ([]Transfer, error) {
	return a.qc.eps[0].Transfers(ctx, from, to) // refused: read per account
}

func (a *accountQuorum) TransactionTransfers(ctx context.Context, txHash string) ([]Transfer, bool, error) {
	return a.qc.TransactionTransfers(ctx, txHash)
}

func (a *accountQuorum) AddressTransfers(ctx context.Context, addr string, from uint64) ([]Transfer, error) {
	return a.qc.AddressTransfers(ctx, addr, from)
}

func (a *accountQuorum) AddressTransfersIn(ctx context.Context, addr string, from, to uint64) ([]Transfer, error) {
	return a.qc.AddressTransfersIn(ctx, addr, from, to)
}

func (a *accountQuorum) Identity(ctx context.Context) (Identity, error) { return a.qc.Identity(ctx) }
func (a *accountQuorum) Check(ctx context.Context) EndpointCheck        { return a.qc.Check(ctx) }

// Accounts derives the accounts (no I/O): every endpoint's client derives
// the same.
func (a *accountQuorum) Accounts(owners []string) ([]AccountCursor, error) {
	return a.qc.eps[0].(AccountReader).Accounts(owners)
}

// Finalized returns the Quorum-th highest of the endpoints' final blocks.
func (a *accountQuorum) Finalized(ctx context.Context) (uint64, error) {
	qc := a.qc
	as, errs := gather(ctx, qc, func(as []answer[uint64]) int { return qc.q - len(as) },
		func(ctx context.Context, ep int) (uint64, error) {
			return qc.eps[ep].(FinalityReader).Finalized(ctx)
		})
	if len(as) < qc.q {
		return 0, qc.short("final block", len(as), errs)
	}
	finals := make([]uint64, len(as))
	for i, x := range as {
		finals[i] = x.v
	}
	return qc.qth(finals), nil
}

// accountsKey is a batch's account cursors in a form equal for two
// batches exactly when every account was read to the same signature.
func accountsKey(cs []AccountCursor) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.Account + "@" + c.Signature + ":" + strconv.FormatUint(c.Slot, 10) + ";")
	}
	return b.String()
}

// ReadBatch reads a scanner batch from Quorum endpoints that agree on its
// hashes, its transfers (their memos included) and where each account was
// read to. Endpoints at different points of the chain disagree on the
// cursors: the batch is read again at the next poll (ErrIncompleteRead).
func (a *accountQuorum) ReadBatch(ctx context.Context, q BatchQuery) (BatchRead, error) {
	qc := a.qc
	key := func(b BatchRead) string {
		return b.Hash + "|" + b.CursorHash + "|" + transfersKey(b.Transfers) + "|" + accountsKey(b.Accounts)
	}
	as, errs := gather(ctx, qc, agreeing(qc, key), func(ctx context.Context, ep int) (BatchRead, error) {
		b, err := ReadBatch(ctx, qc.eps[ep], q)
		return b, qc.missing(q.To, false, err)
	})
	group, err := decide(qc, fmt.Sprintf("batch %d-%d", q.From, q.To), as, errs, key, func(x, y BatchRead) string {
		switch {
		case x.Hash != y.Hash:
			return fmt.Sprintf("hash of block %d %s ≠ %s", q.To, x.Hash, y.Hash)
		case x.CursorHash != y.CursorHash:
			return fmt.Sprintf("hash of block %d %s ≠ %s", q.Cursor, x.CursorHash, y.CursorHash)
		case transfersKey(x.Transfers) != transfersKey(y.Transfers):
			return transfersDiff(x.Transfers, y.Transfers)
		}
		return "account cursors " + accountsKey(x.Accounts) + " ≠ " + accountsKey(y.Accounts)
	})
	if err != nil {
		return BatchRead{}, err
	}
	return group[0].v, nil
}
