package tron

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/big"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// Genesis block ids of the TRON networks, as java-tron answers
// /wallet/getblockbynum {"num": 0}. A node's block 0 tells which chain it
// serves (TRON has no chain id call).
const (
	MainnetGenesisID = "00000000000000001ebf88508a03865c71d452e25f4d51194196a1d22b6653dc"
	NileGenesisID    = "0000000000000000d698d4192c56cb6be724a558448e2684802de4d6cd8690dc"
	ShastaGenesisID  = "0000000000000000de1aa88295e1fcf982742f773e0419c5a9c134c994a9059e"
	// DevnetGenesisID is the paywatch devnet's block 0 (chains/devnet
	// makes it the same on every run).
	DevnetGenesisID = "0000000000000000fa7d8f8b1cc452772cc454222199ecc1aaba4d5dc494a0c1"
)

// identityOf names the chain whose block 0 has id.
func identityOf(id string) chainapi.Identity {
	switch id {
	case MainnetGenesisID:
		return chainapi.Identity{Name: "TRON mainnet", OK: true}
	case DevnetGenesisID:
		return chainapi.Identity{Name: "the paywatch devnet", OK: true}
	case NileGenesisID:
		return chainapi.Identity{Name: "Nile testnet"}
	case ShastaGenesisID:
		return chainapi.Identity{Name: "Shasta testnet"}
	}
	return chainapi.Identity{Name: "unknown chain (genesis " + id + ")"}
}

// Identity reads block 0 of the first endpoint that answers.
func (c *Client) Identity(ctx context.Context) (chainapi.Identity, error) {
	id, err := c.BlockHash(ctx, 0)
	if err != nil {
		return chainapi.Identity{}, err
	}
	return identityOf(id), nil
}

// Check runs `paywatch check` against the client's endpoints as one (dial
// one endpoint to check it alone).
func (c *Client) Check(ctx context.Context) chainapi.EndpointCheck {
	out := chainapi.EndpointCheck{Network: c.network, Endpoint: c.eps.Name(0), Transport: c.transports[0]}
	problem := func(format string, args ...any) { out.Problems = append(out.Problems, fmt.Sprintf(format, args...)) }
	start := time.Now()
	head, err := c.nowBlock(ctx)
	out.Latency = time.Since(start)
	if err != nil {
		out.Err = err.Error()
		problem("unreachable: %v", err)
		return out
	}
	out.Head = head.num
	if head.time > 0 {
		out.HeadAge = max(time.Since(time.UnixMilli(head.time)).Round(time.Second), 0) // a head a little ahead of this clock is not stale
	}
	if ident, err := c.Identity(ctx); err != nil {
		problem("block 0: %v", err)
	} else {
		out.Identity = ident
		if !ident.OK {
			problem("serves %s, not TRON mainnet", ident.Name)
		}
	}
	for _, ct := range c.contractList() {
		tc := chainapi.TokenCheck{Token: ct.Token, Contract: ct.Address, Decimals: -1, Want: paywatch.Decimals(c.network, ct.Token)}
		addr, _ := paywatch.TronAddressBytes(ct.Address)
		var res []byte
		err := c.do(ctx, func(ctx context.Context, n node) (err error) {
			res, err = n.constantCall(ctx, addr, "decimals()")
			return err
		})
		switch {
		case err != nil:
			tc.Err = err.Error()
			problem("%s contract %s: %v", ct.Token, ct.Address, err)
		case len(res) != 32 || new(big.Int).SetBytes(res).BitLen() > 8:
			tc.Err = "decimals() answered " + hex.EncodeToString(res)
			problem("%s contract %s: decimals() answered %x", ct.Token, ct.Address, res)
		default:
			tc.Decimals = int(new(big.Int).SetBytes(res).Int64())
			if tc.Decimals != tc.Want {
				problem("%s contract %s has %d decimals, paywatch expects %d", ct.Token, ct.Address, tc.Decimals, tc.Want)
			}
		}
		out.Tokens = append(out.Tokens, tc)
	}
	// A node without transaction history answers a block's infos short.
	f := chainapi.FeatureCheck{Name: "transaction infos", Required: true}
	b, ok, err := c.recentBusyBlock(ctx, head.num)
	switch {
	case err != nil:
		// GetBlockByLimitNext is the scanner's main call.
		f.Detail = "blocks by range: " + err.Error()
		problem("blocks by range (getblockbylimitnext): %v", err)
	case ok:
		bl := block{num: b.num, id: hex.EncodeToString(b.id), txs: map[string]bool{}}
		for _, id := range b.txids {
			bl.txs[hex.EncodeToString(id)] = true
		}
		_, err := c.blockInfos(ctx, bl)
		f.OK = err == nil
		f.Detail = fmt.Sprintf("block %d: %d transactions", b.num, len(b.txids))
		if err != nil {
			f.Detail += ": " + err.Error()
			problem("transaction infos of block %d: %v", b.num, err)
		}
	default:
		f.OK, f.Detail = true, "no transactions in the newest blocks to check"
	}
	out.Features = append(out.Features, f)
	return out
}

// recentBusyBlock returns the newest block with transactions among the 20
// up to head, read as the scanner reads blocks (by range).
func (c *Client) recentBusyBlock(ctx context.Context, head uint64) (blockHead, bool, error) {
	from := uint64(0)
	if head >= 20 {
		from = head - 19
	}
	var got []blockHead
	err := c.do(ctx, func(ctx context.Context, n node) (err error) {
		got, err = n.blockRange(ctx, from, head)
		return err
	})
	if err != nil {
		return blockHead{}, false, err
	}
	if uint64(len(got)) != head-from+1 {
		return blockHead{}, false, fmt.Errorf("asked for blocks %d-%d, got %d", from, head, len(got))
	}
	for i := len(got) - 1; i >= 0; i-- {
		if len(got[i].txids) > 0 {
			return got[i], true, nil
		}
	}
	return blockHead{}, false, nil
}

// contractList returns the configured contracts in API order.
func (c *Client) contractList() []chainapi.Contract {
	var out []chainapi.Contract
	info, _ := paywatch.LookupNetwork(c.network)
	for _, t := range info.Tokens {
		for _, ct := range c.contracts {
			if ct.Token == t {
				out = append(out, ct)
			}
		}
	}
	return out
}
