package chains

import (
	"context"
	"errors"

	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// ErrIncompleteRead means a batch was not read fully: the node's answers
// disagree about a recent block (an EVM block whose logsBloom says it may
// hold token transfers while eth_getLogs returned none for it, and
// eth_getLogs by its hash failed or found some), as when a load-balanced
// provider's log index lags behind the backend that served the head. The
// caller must not pass the batch; it reads it again on its next poll.
var ErrIncompleteRead = chainapi.ErrIncompleteRead

// BatchQuery asks ReadBatch for one scanner batch.
//
//	type BatchQuery struct {
//	    From, To uint64 // the batch's blocks, inclusive; To ≤ head
//	    Head     uint64 // the newest block the caller knows of
//	    Cursor   uint64 // the caller's cursor block, whose hash is read after To's; 0: none
//	}
type BatchQuery = chainapi.BatchQuery

// BatchRead is one scanner batch as read.
//
//	type BatchRead struct {
//	    Hash       string // of block To, read before the transfers
//	    CursorHash string // of block Cursor, read after To's ("" without one)
//	    Transfers  []Transfer
//	}
type BatchRead = chainapi.BatchRead

// BatchReader is implemented by clients with their own way of reading a
// scanner batch (the EVM clients: fewer calls, and a completeness check of
// the blocks near the head).
type BatchReader = chainapi.BatchReader

// ReadBatch reads one scanner batch from c: the hash of block q.To, the
// transfers of blocks [q.From, q.To], and the hash of block q.Cursor when
// it is above 0, in that order, so that a reorg at any moment either shows
// at the cursor now or changes To's hash for the next batch. Clients that
// implement BatchReader do it their way; for the others (Tron, which reads
// whole blocks and fails on a node that answers a block's transaction
// infos short) it is BlockHash, Transfers and BlockHash.
//
// It returns ErrBlockNotFound when the node has no block To or Cursor (a
// node behind its own head, or a shorter branch), and ErrIncompleteRead
// when the client cannot vouch that the transfers are all there.
func ReadBatch(ctx context.Context, c Client, q BatchQuery) (BatchRead, error) {
	if q.To < q.From {
		return BatchRead{}, errors.New("chains: batch ends before it starts")
	}
	if br, ok := c.(BatchReader); ok {
		return br.ReadBatch(ctx, q)
	}
	var b BatchRead
	var err error
	if b.Hash, err = c.BlockHash(ctx, q.To); err != nil {
		return BatchRead{}, err
	}
	if b.Transfers, err = c.Transfers(ctx, q.From, q.To); err != nil {
		return BatchRead{}, err
	}
	if q.Cursor > 0 {
		if b.CursorHash, err = c.BlockHash(ctx, q.Cursor); err != nil {
			return BatchRead{}, err
		}
	}
	return b, nil
}

// TipRead is what a TipReader found at the tip of the chain.
//
//	type TipRead struct {
//	    Head             uint64 // the node's newest block
//	    Found            bool   // the node has the block asked for
//	    Hash, ParentHash string // of the block found
//	    Transfers        []Transfer
//	}
type TipRead = chainapi.TipRead

// TipReader is implemented by clients that read the block after a
// caught-up scanner's cursor, with the head, in about one request per
// block (see chainapi.TipReader). The scanner uses it while payments wait
// and it is at the head; the others read single-block batches.
type TipReader = chainapi.TipReader

// AccountCursor is how far one account of an AccountReader was read
// (chainapi.AccountCursor).
type AccountCursor = chainapi.AccountCursor

// AccountReader is implemented by clients that read each watched
// account's history rather than whole blocks (SOLANA): the scanner puts
// the accounts of the network's owned addresses, with their cursors, in
// every BatchQuery, and records the BatchRead's cursors with the batch.
type AccountReader = chainapi.AccountReader

// FinalityReader is implemented by clients of chains that name their
// final block (SOLANA's finalized slot): a transfer has its
// confirmations once its block is final, not at a depth.
type FinalityReader = chainapi.FinalityReader
