package solana

import (
	"context"
	"fmt"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// What `paywatch check` is to ask of a Solana endpoint (issue 40, item 6):
// its health, each mint's decimals, and how far back its history reaches.

// Health returns the node's getHealth answer: nil when it says "ok", its
// error (the node is behind, say) otherwise.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, func(rc *rpc.Client) error {
		s, err := rc.GetHealth(ctx)
		if err == nil && s != rpc.HealthOk {
			return fmt.Errorf("solana: getHealth answered %q", s)
		}
		return err
	})
}

// MintDecimals returns a mint's decimals as the chain records them
// (getTokenSupply), to hold against the table's.
func (c *Client) MintDecimals(ctx context.Context, mint string) (int, error) {
	key, err := sol.PublicKeyFromBase58(mint)
	if err != nil {
		return 0, fmt.Errorf("solana: mint %q: %w", mint, err)
	}
	var res *rpc.GetTokenSupplyResult
	err = c.do(ctx, func(rc *rpc.Client) (err error) {
		res, err = rc.GetTokenSupply(ctx, key, rpc.CommitmentFinalized)
		return err
	})
	if err != nil {
		return 0, err
	}
	if res == nil || res.Value == nil {
		return 0, fmt.Errorf("solana: no token supply for %s: not a mint?", mint)
	}
	return int(res.Value.Decimals), nil
}

// HistoryStart returns the oldest slot the node keeps (minimumLedgerSlot):
// a cursor older than it may have transfers the node can no longer list,
// which /health and `paywatch check` must say rather than pass over.
func (c *Client) HistoryStart(ctx context.Context) (uint64, error) {
	var slot uint64
	err := c.do(ctx, func(rc *rpc.Client) (err error) {
		slot, err = rc.MinimumLedgerSlot(ctx)
		return err
	})
	return slot, err
}
