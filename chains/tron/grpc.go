package tron

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/fbsobreira/gotron-sdk/pkg/proto/api"
	"github.com/fbsobreira/gotron-sdk/pkg/proto/core"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// maxGRPCMessage bounds one gRPC answer: a batch of 100 busy mainnet blocks
// runs to several MB, past gRPC's default of 4 MB.
const maxGRPCMessage = 64 << 20

// grpcNode speaks java-tron's gRPC Wallet API, in plaintext or over TLS,
// with the endpoint's headers sent as metadata on every call.
type grpcNode struct {
	conn   *grpc.ClientConn
	wallet api.WalletClient
}

// newGRPCNode connects lazily to addr (host:port).
func newGRPCNode(addr string, useTLS bool, headers http.Header, tlsCfg *tls.Config, calls *atomic.Uint64) (*grpcNode, error) {
	creds := insecure.NewCredentials()
	if useTLS {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if tlsCfg != nil {
			cfg = tlsCfg.Clone()
		}
		creds = credentials.NewTLS(cfg)
	}
	var md metadata.MD
	for k, vs := range headers {
		for _, v := range vs {
			md = metadata.Join(md, metadata.Pairs(strings.ToLower(k), v))
		}
	}
	intercept := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		calls.Add(1)
		if len(md) > 0 {
			out, _ := metadata.FromOutgoingContext(ctx)
			ctx = metadata.NewOutgoingContext(ctx, metadata.Join(out, md))
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(creds),
		grpc.WithUnaryInterceptor(intercept),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxGRPCMessage)),
	)
	if err != nil {
		return nil, fmt.Errorf("gRPC client: %w", err)
	}
	return &grpcNode{conn: conn, wallet: api.NewWalletClient(conn)}, nil
}

func (g *grpcNode) close() { _ = g.conn.Close() }

func (g *grpcNode) nowBlock(ctx context.Context) (blockHead, error) {
	b, err := g.wallet.GetNowBlock2(ctx, &api.EmptyMessage{})
	if err != nil {
		return blockHead{}, err
	}
	h, ok := headOfExtention(b)
	if !ok {
		return blockHead{}, errEmptyHead
	}
	return h, nil
}

func (g *grpcNode) blockByNum(ctx context.Context, n uint64) (blockHead, bool, error) {
	b, err := g.wallet.GetBlockByNum2(ctx, &api.NumberMessage{Num: int64(n)})
	if err != nil {
		return blockHead{}, false, err
	}
	h, ok := headOfExtention(b)
	return h, ok, nil
}

func (g *grpcNode) blockRange(ctx context.Context, from, to uint64) ([]blockHead, error) {
	list, err := g.wallet.GetBlockByLimitNext2(ctx, &api.BlockLimit{StartNum: int64(from), EndNum: int64(to) + 1})
	if err != nil {
		return nil, err
	}
	out := make([]blockHead, 0, len(list.GetBlock()))
	for _, b := range list.GetBlock() {
		h, ok := headOfExtention(b)
		if !ok {
			return nil, fmt.Errorf("node returned an empty block in blocks %d-%d", from, to)
		}
		out = append(out, h)
	}
	return out, nil
}

func (g *grpcNode) blockInfos(ctx context.Context, n uint64) ([]txInfo, error) {
	list, err := g.wallet.GetTransactionInfoByBlockNum(ctx, &api.NumberMessage{Num: int64(n)})
	if err != nil {
		return nil, err
	}
	out := make([]txInfo, len(list.GetTransactionInfo()))
	for i, info := range list.GetTransactionInfo() {
		out[i] = infoOfProto(info)
	}
	return out, nil
}

func (g *grpcNode) txInfo(ctx context.Context, id []byte) (txInfo, bool, error) {
	info, err := g.wallet.GetTransactionInfoById(ctx, &api.BytesMessage{Value: id})
	if err != nil {
		return txInfo{}, false, err
	}
	if len(info.GetId()) == 0 {
		return txInfo{}, false, nil
	}
	return infoOfProto(info), true, nil
}

func (g *grpcNode) constantCall(ctx context.Context, contract []byte, selector string) ([]byte, error) {
	tx, err := g.wallet.TriggerConstantContract(ctx, &core.TriggerSmartContract{
		OwnerAddress:    constantCaller,
		ContractAddress: contract,
		Data:            crypto.Keccak256([]byte(selector))[:4],
	})
	if err != nil {
		return nil, err
	}
	if r := tx.GetResult(); r != nil && !r.GetResult() {
		return nil, fmt.Errorf("constant call failed: %s", string(r.GetMessage()))
	}
	if len(tx.GetConstantResult()) == 0 {
		return nil, fmt.Errorf("constant call returned nothing")
	}
	return tx.GetConstantResult()[0], nil
}

// headOfExtention reads a block as the gRPC API returns it; ok is false
// for the empty block java-tron answers for an unknown height.
func headOfExtention(b *api.BlockExtention) (blockHead, bool) {
	if len(b.GetBlockid()) == 0 {
		return blockHead{}, false
	}
	raw := b.GetBlockHeader().GetRawData()
	h := blockHead{num: uint64(raw.GetNumber()), id: b.GetBlockid(), parent: raw.GetParentHash(), time: raw.GetTimestamp()}
	for _, tx := range b.GetTransactions() {
		h.txids = append(h.txids, tx.GetTxid())
	}
	return h, true
}

// infoOfProto reads a transaction info as the gRPC API returns it.
func infoOfProto(info *core.TransactionInfo) txInfo {
	out := txInfo{
		id:          info.GetId(),
		blockNumber: info.GetBlockNumber(),
		ok: info.GetResult() == core.TransactionInfo_SUCESS &&
			info.GetReceipt().GetResult() == core.Transaction_Result_SUCCESS,
	}
	for _, l := range info.GetLog() {
		out.logs = append(out.logs, txLog{address: l.GetAddress(), topics: l.GetTopics(), data: l.GetData()})
	}
	return out
}
