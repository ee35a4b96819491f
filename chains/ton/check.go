package ton

import (
	"context"
	"fmt"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// What `paywatch check` asks of a TON endpoint (issue 41, item 6): the
// network its blocks name, the master's decimals, and what its key
// allows.

// The networks' global ids (a block's global_id).
const (
	MainnetGlobalID = -239
	TestnetGlobalID = -3
	// DevnetGlobalID is paywatch's in-process TON devnet's
	// (chains/devnet): `paywatch check` and the start-up guard take it for
	// the network, as they take the EVM devnets' mainnet chain ids.
	DevnetGlobalID = 6626
)

// Identity implements chainapi.Checker: the network the newest
// masterchain block's global id names; only mainnet (and the paywatch
// devnet) is TON.
func (c *Chain) Identity(ctx context.Context) (chainapi.Identity, error) {
	last, _, err := c.Masterchain(ctx)
	switch {
	case err != nil:
		return chainapi.Identity{}, fmt.Errorf("ton: %s masterchainInfo: %w", c.network, err)
	case last.GlobalID == MainnetGlobalID:
		return chainapi.Identity{Name: "TON mainnet", OK: true}, nil
	case last.GlobalID == DevnetGlobalID:
		return chainapi.Identity{Name: "the paywatch devnet", OK: true}, nil
	case last.GlobalID == TestnetGlobalID:
		return chainapi.Identity{Name: "TON testnet (global id -3)"}, nil
	}
	return chainapi.Identity{Name: fmt.Sprintf("unknown network (global id %d)", last.GlobalID)}, nil
}

// Check implements chainapi.Checker: the network, the newest masterchain
// block and its age, the indexer's first block (how far back history
// reaches), the master's decimals and the key's rate limit.
func (c *Chain) Check(ctx context.Context) chainapi.EndpointCheck {
	out := chainapi.EndpointCheck{Network: c.network, Endpoint: c.eps.Name(0), Transport: "http"}
	problem := out.Problem
	if !out.Identify(ctx, c.Identity, fmt.Sprintf("TON mainnet (global id %d)", MainnetGlobalID)) {
		return out
	}
	last, first, err := c.Masterchain(ctx)
	if err != nil {
		problem("masterchainInfo: %v", err)
		return out
	}
	out.Head = last.Seqno
	out.HeadAge = max(time.Since(time.Unix(int64(last.GenUtime), 0)).Round(time.Second), 0)
	out.Features = append(out.Features, chainapi.FeatureCheck{
		Name: "indexed history", OK: true, Required: true, Tell: true,
		Detail: fmt.Sprintf("from masterchain block %d (%d blocks back)", first.Seqno, last.Seqno-min(last.Seqno, first.Seqno)),
	})
	tc := chainapi.TokenCheck{Token: c.token, Contract: c.master.String(), Decimals: -1, Want: paywatch.Decimals(c.network, c.token)}
	if d, err := c.Decimals(ctx, c.master); err != nil {
		tc.Err = err.Error()
		problem("%s master %s: %v", c.token, c.master, err)
	} else {
		tc.Decimals = d
		if d != tc.Want {
			problem("%s master %s has %d decimals, paywatch expects %d", c.token, c.master, d, tc.Want)
		}
	}
	out.Tokens = append(out.Tokens, tc)
	key := c.keyCheck()
	if !key.OK {
		problem("%s", key.Detail)
	}
	out.Features = append(out.Features, key)
	return out
}

// keyCheck says what the endpoint's key allows: TON Center serves 1
// request a second without a key, 10 with a free one (its rate-limit
// page; testdata/FACTS.md §2). A self-hosted indexer has no limit.
func (c *Chain) keyCheck() chainapi.FeatureCheck {
	f := chainapi.FeatureCheck{Name: "API key", OK: true, Tell: true}
	ep := c.eps.All()[0]
	keyed := ep.header.Get("X-API-Key") != "" || ep.base.Query().Get("api_key") != ""
	switch {
	case keyed:
		f.Detail = "a key is sent (X-API-Key); TON Center allows 10 requests a second on a free key"
	case ep.base.Host == "toncenter.com":
		f.OK, f.Required = false, true
		f.Detail = "no key: TON Center allows 1 request a second without one, too few to scan; get a free key from @tonapibot and set it as X-API-Key"
	default:
		f.Detail = "no key sent (a self-hosted indexer needs none)"
	}
	return f
}
