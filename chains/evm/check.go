package evm

import (
	"context"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// chainNames names the chain ids an operator is likely to meet: the
// networks' mainnets and their public testnets.
var chainNames = map[int64]string{
	1: "Ethereum mainnet", 56: "BNB Smart Chain mainnet", 137: "Polygon PoS mainnet", 42161: "Arbitrum One", 8453: "Base mainnet",
	11155111: "Sepolia testnet", 17000: "Holesky testnet", 560048: "Hoodi testnet", 97: "BNB Smart Chain testnet",
	80002: "Polygon Amoy testnet", 421614: "Arbitrum Sepolia testnet", 84532: "Base Sepolia testnet",
	31337: "a local anvil or Hardhat node",
}

// identityOf names chain id got for network n: OK when it is n's mainnet
// chain id (the devnet chains use them too).
func identityOf(n paywatch.Network, got int64) chainapi.Identity {
	info, _ := paywatch.LookupNetwork(n)
	name := fmt.Sprintf("chain id %d", got)
	if s, ok := chainNames[got]; ok {
		name += " (" + s + ")"
	}
	return chainapi.Identity{Name: name, OK: got == info.ChainID}
}

// Identity reads eth_chainId from the first endpoint that answers.
func (c *Client) Identity(ctx context.Context) (chainapi.Identity, error) {
	var id *big.Int
	err := c.do(ctx, func(ec *ethclient.Client) (err error) {
		id, err = ec.ChainID(ctx)
		return err
	})
	if err != nil {
		return chainapi.Identity{}, fmt.Errorf("evm: %s eth_chainId: %w", c.network, err)
	}
	if !id.IsInt64() {
		return chainapi.Identity{Name: "chain id " + id.String()}, nil
	}
	return identityOf(c.network, id.Int64()), nil
}

// decimalsSelector is the selector of decimals().
var decimalsSelector = crypto.Keccak256([]byte("decimals()"))[:4]

// Check runs `paywatch check` against the client's endpoints as one (dial
// one endpoint to check it alone).
func (c *Client) Check(ctx context.Context) chainapi.EndpointCheck {
	out := chainapi.EndpointCheck{Network: c.network, Endpoint: c.eps.Name(0), Transport: "json-rpc"}
	problem := out.Problem
	info, _ := paywatch.LookupNetwork(c.network)
	if !out.Identify(ctx, c.Identity, fmt.Sprintf("chain id %d", info.ChainID)) {
		return out
	}

	var head struct {
		Hash      common.Hash    `json:"hash"`
		Number    hexutil.Uint64 `json:"number"`
		Timestamp hexutil.Uint64 `json:"timestamp"`
	}
	err := c.do(ctx, func(ec *ethclient.Client) error {
		return ec.Client().CallContext(ctx, &head, "eth_getBlockByNumber", "latest", false)
	})
	if err != nil {
		problem("newest block: %v", err)
		return out
	}
	out.Head = uint64(head.Number)
	out.HeadAge = time.Since(time.Unix(int64(head.Timestamp), 0)).Round(time.Second)
	out.HeadAge = max(out.HeadAge, 0) // a head a little ahead of this clock is not stale

	for _, a := range c.addresses {
		tok := c.tokens[a]
		tc := chainapi.TokenCheck{Token: tok, Contract: a.Hex(), Decimals: -1, Want: paywatch.Decimals(c.network, tok)}
		var res []byte
		to := a
		err := c.do(ctx, func(ec *ethclient.Client) (err error) {
			res, err = ec.CallContract(ctx, ethereum.CallMsg{To: &to, Data: decimalsSelector}, nil)
			return err
		})
		switch {
		case err != nil:
			tc.Err = err.Error()
			problem("%s contract %s: %v", tok, a.Hex(), err)
		case len(res) != 32 || new(big.Int).SetBytes(res).BitLen() > 8:
			tc.Err = fmt.Sprintf("decimals() answered %#x (no token contract there?)", res)
			problem("%s contract %s: decimals() answered %#x: no token contract at that address", tok, a.Hex(), res)
		default:
			tc.Decimals = int(new(big.Int).SetBytes(res).Int64())
			if tc.Decimals != tc.Want {
				problem("%s contract %s has %d decimals, paywatch expects %d", tok, a.Hex(), tc.Decimals, tc.Want)
			}
		}
		out.Tokens = append(out.Tokens, tc)
	}

	// JSON-RPC batches save calls; without them the client sends one at a time.
	batch := chainapi.FeatureCheck{Name: "JSON-RPC batches"}
	var n1, n2 hexutil.Uint64
	err = c.do(ctx, func(ec *ethclient.Client) error {
		return ec.Client().BatchCallContext(ctx, []rpc.BatchElem{
			{Method: "eth_blockNumber", Result: &n1},
			{Method: "eth_chainId", Result: &n2},
		})
	})
	batch.OK = err == nil && n1 > 0 && n2 > 0
	if batch.OK {
		batch.Detail = "accepted"
	} else {
		batch.Detail = "refused; calls go one at a time (more requests)"
		if err != nil {
			batch.Detail += ": " + err.Error()
		}
	}
	out.Features = append(out.Features, batch)

	// The eth_getLogs range: the client halves a refused one, at a cost in calls.
	span := c.maxRange
	if span > out.Head+1 {
		span = out.Head + 1
	}
	logs := chainapi.FeatureCheck{Name: "eth_getLogs range"}
	_, err = c.rawLogsOnce(ctx, out.Head+1-span, out.Head)
	logs.OK = err == nil
	if logs.OK {
		logs.Detail = fmt.Sprintf("%d blocks accepted", span)
	} else {
		logs.Detail = fmt.Sprintf("%d blocks refused (the client halves the range: more requests): %v", span, err)
	}
	out.Features = append(out.Features, logs)

	// Logs by block hash (EIP-234): the client checks blocks near the head
	// with them, and can't vouch for a batch without.
	byHash := chainapi.FeatureCheck{Name: "logs by block hash (EIP-234)", Required: true}
	hash := head.Hash
	err = c.do(ctx, func(ec *ethclient.Client) error {
		_, err := ec.FilterLogs(ctx, ethereum.FilterQuery{BlockHash: &hash, Addresses: c.addresses, Topics: [][]common.Hash{{TransferTopic}}})
		return err
	})
	byHash.OK = err == nil
	if byHash.OK {
		byHash.Detail = "accepted"
	} else {
		byHash.Detail = "refused: " + err.Error()
		problem("eth_getLogs by blockHash refused: %v", err)
	}
	out.Features = append(out.Features, byHash)
	return out
}

// rawLogsOnce is one eth_getLogs over [from, to] for the token contracts'
// Transfer events, without the range halving of rawLogs.
func (c *Client) rawLogsOnce(ctx context.Context, from, to uint64) (int, error) {
	var n int
	err := c.do(ctx, func(ec *ethclient.Client) error {
		logs, err := ec.FilterLogs(ctx, ethereum.FilterQuery{
			FromBlock: new(big.Int).SetUint64(from), ToBlock: new(big.Int).SetUint64(to),
			Addresses: c.addresses, Topics: [][]common.Hash{{TransferTopic}},
		})
		n = len(logs)
		return err
	})
	return n, err
}
