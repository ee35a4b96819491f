package activities

import (
	"context"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// ScannerStore is what the scanners need from PostgreSQL; *store.Store
// implements it.
type ScannerStore interface {
	// AcquireScanLease makes the caller the network's newest scan and
	// returns its generation; batches of older generations are refused.
	AcquireScanLease(ctx context.Context, n paywatch.Network) (uint64, error)
	// ChainCursor returns a network's cursor; ok is false if it has none.
	ChainCursor(ctx context.Context, n paywatch.Network) (store.ChainCursor, bool, error)
	// EarliestWatchedBlock is the smallest start block of the watched
	// payments on a network.
	EarliestWatchedBlock(ctx context.Context, n paywatch.Network) (uint64, bool, error)
	// Waiting reports whether a payment is watched on a network.
	Waiting(ctx context.Context, n paywatch.Network) (bool, error)
	// WatchedAddresses matches a batch's recipients (and, for pool + txid,
	// its transaction hashes) against watched payments in one query.
	WatchedAddresses(ctx context.Context, n paywatch.Network, addresses, txHashes, memos []string) (map[string][]store.WatchedPayment, error)
	// WatchedOwners lists the addresses projects own or owned on a
	// network's family: whose accounts a network read per account reads.
	WatchedOwners(ctx context.Context, n paywatch.Network) ([]string, error)
	// AccountCursors returns the recorded cursors of a network's accounts.
	AccountCursors(ctx context.Context, n paywatch.Network) (map[string]store.AccountCursor, error)
	// OwnedAddresses returns those of addresses a project owns or owned:
	// transfers to them no payment takes are recorded too.
	OwnedAddresses(ctx context.Context, n paywatch.Network, addresses []string) (map[string]bool, error)
	// RecordScan records a batch's transfers and their claims and moves the
	// cursor in one transaction, running beforeCommit inside it with each
	// claimed transfer under its recorded key and the payment it counts for.
	RecordScan(ctx context.Context, b store.ScanBatch, beforeCommit func(ctx context.Context, claimed []store.ClaimedTransfer) error) (store.RecordResult, error)
	// TransferOwners returns the payments that claimed transfers.
	TransferOwners(ctx context.Context, n paywatch.Network, keys []paywatch.TransferKey) (map[paywatch.TransferKey]string, error)
	// RecentTransfers lists recorded, still canonical transfers from a block on.
	RecentTransfers(ctx context.Context, n paywatch.Network, fromBlock uint64) ([]paywatch.Transfer, error)
	// MarkTransfersRemoved flags transfers a reorg dropped.
	MarkTransfersRemoved(ctx context.Context, n paywatch.Network, keys []paywatch.TransferKey) error
	// PaymentsWithoutWorkflow returns, for those of ids whose workflow is not
	// recorded as started, when their row was created.
	PaymentsWithoutWorkflow(ctx context.Context, ids []string) (map[string]time.Time, error)
	// DueConfirmations lists awaited transfers not yet signalled whose
	// block is at most upTo.
	DueConfirmations(ctx context.Context, n paywatch.Network, upTo uint64, limit int) ([]store.AwaitedConfirmation, error)
	// MarkConfirmationsSignalled records that awaited transfers were
	// signalled in their blocks.
	MarkConfirmationsSignalled(ctx context.Context, as []store.AwaitedConfirmation) error
	// RecordScanFailure counts a failed poll of a network, for /health.
	RecordScanFailure(ctx context.Context, n paywatch.Network, msg string) error
	// ClearScanFailure ends a network's failure record.
	ClearScanFailure(ctx context.Context, n paywatch.Network) error
	// AddRPCUsage adds requests to a network's count for the UTC day of
	// at, with the daily budget in force, and returns the day's total.
	AddRPCUsage(ctx context.Context, n paywatch.Network, at time.Time, requests, budget uint64) (uint64, error)
}
