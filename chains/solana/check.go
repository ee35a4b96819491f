package solana

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
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

// DevnetGenesis is the genesis hash of paywatch's in-process Solana devnet
// (chains/devnet): `paywatch check` and the start-up guard take it for
// the network, as they take the EVM devnets' mainnet chain ids.
var DevnetGenesis = func() string {
	g := sha256.Sum256([]byte("paywatch devnet solana genesis"))
	return sol.PublicKeyFromBytes(g[:]).String()
}()

// Identity implements chainapi.Checker: the cluster the genesis hash
// names; only mainnet-beta (and the paywatch devnet) is the network.
func (c *Chain) Identity(ctx context.Context) (chainapi.Identity, error) {
	genesis, cluster, err := c.Cluster(ctx)
	switch {
	case err != nil:
		return chainapi.Identity{}, fmt.Errorf("solana: %s getGenesisHash: %w", c.network, err)
	case genesis == MainnetGenesis:
		return chainapi.Identity{Name: "Solana mainnet-beta", OK: true}, nil
	case genesis == DevnetGenesis:
		return chainapi.Identity{Name: "the paywatch devnet", OK: true}, nil
	case cluster != "":
		return chainapi.Identity{Name: "Solana " + cluster + " (genesis " + genesis + ")"}, nil
	}
	return chainapi.Identity{Name: "unknown cluster (genesis " + genesis + ")"}, nil
}

// Check implements chainapi.Checker: the cluster, getHealth, the newest
// confirmed slot and its age, each mint's decimals (getTokenSupply), and
// how far back the endpoint's history reaches (minimumLedgerSlot): a
// scanner whose cursor is older than that can miss transfers, and
// /health says so too.
func (c *Chain) Check(ctx context.Context) chainapi.EndpointCheck {
	out := chainapi.EndpointCheck{Network: c.network, Endpoint: c.eps.Name(0), Transport: "json-rpc"}
	problem := out.Problem
	if !out.Identify(ctx, c.Identity, "Solana mainnet-beta (genesis "+MainnetGenesis+")") {
		return out
	}
	health := chainapi.FeatureCheck{Name: "getHealth", Required: true}
	if err := c.Health(ctx); err != nil {
		health.Detail = err.Error()
		problem("getHealth: %v", err)
	} else {
		health.OK, health.Detail = true, "ok"
	}
	out.Features = append(out.Features, health)
	head, err := c.Head(ctx)
	if err != nil {
		problem("newest confirmed slot: %v", err)
		return out
	}
	out.Head = head
	if at, err := c.BlockTime(ctx, head); err == nil {
		out.HeadAge = max(time.Since(at).Round(time.Second), 0)
	}
	for _, m := range c.mints {
		tc := chainapi.TokenCheck{Token: m.Token, Contract: m.Mint, Decimals: -1, Want: paywatch.Decimals(c.network, m.Token)}
		d, err := c.MintDecimals(ctx, m.Mint)
		switch {
		case err != nil:
			tc.Err = err.Error()
			problem("%s mint %s: %v", m.Token, m.Mint, err)
		default:
			tc.Decimals = d
			if d != tc.Want {
				problem("%s mint %s has %d decimals, paywatch expects %d", m.Token, m.Mint, d, tc.Want)
			}
		}
		out.Tokens = append(out.Tokens, tc)
	}
	hist := chainapi.FeatureCheck{Name: "getSignaturesForAddress history", Required: true}
	if first, err := c.HistoryStart(ctx); err != nil {
		hist.Detail = err.Error()
		problem("minimumLedgerSlot: %v", err)
	} else {
		hist.OK, hist.Tell = true, true
		hist.Detail = HistoryDetail(first, head)
	}
	out.Features = append(out.Features, hist)
	return out
}

// HistoryDetail says how far back an endpoint's history reaches: from
// slot first, with head the newest, at mainnet's 400 ms a slot.
func HistoryDetail(first, head uint64) string {
	if first == 0 {
		return "reaches back to genesis"
	}
	behind := time.Duration(head-min(head, first)) * 400 * time.Millisecond
	return fmt.Sprintf("reaches back to slot %d, about %s (a scanner stopped for longer must be given an archive endpoint)", first, behind.Round(time.Minute))
}
