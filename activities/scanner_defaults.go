package activities

import (
	"time"

	"github.com/paywatch/paywatch"
)

// Scanner defaults.
const (
	// DefaultEVMBatch is the most blocks an EVM batch reads: one eth_getLogs
	// at the clients' default range.
	DefaultEVMBatch = 1000
	// DefaultTronBatch is the most blocks a Tron batch reads: one
	// GetBlockByLimitNext, the API's maximum.
	DefaultTronBatch = 100
	// DefaultSolanaBatch is the most slots a SOLANA batch reads: ten
	// minutes. A batch costs a getSignaturesForAddress per watched account
	// whatever its length, and a getTransaction per new transaction (8 at
	// once per account): ten minutes of a busy wallet's transactions fit a
	// poll's RPC timeout, so a catch-up after an outage moves at every
	// poll instead of timing out for good.
	DefaultSolanaBatch = 1500
	// DefaultTONBatch is the most masterchain blocks a TON batch reads:
	// six minutes at mainnet's pace. A batch costs its last block and a
	// transactions page per watched owner whatever its length.
	DefaultTONBatch = 900
	// MinPollInterval is the shortest poll interval.
	MinPollInterval = 50 * time.Millisecond
	// DefaultEVMIdlePoll is how often an EVM network on which nothing waits
	// is polled: a head read, the range's last header, and its eth_getLogs
	// with the cursor's header (4 calls in 3 HTTP requests) each time,
	// 1,440 polls and about 5,800 calls a day whatever the block time.
	DefaultEVMIdlePoll = 60 * time.Second
	// DefaultWakeCheck is how often an idle scanner asks PostgreSQL (no RPC)
	// whether a payment now waits on its network.
	DefaultWakeCheck = time.Second
	// waitingTimeout bounds the wake check's query.
	waitingTimeout = 5 * time.Second
	// DefaultRPCTimeout bounds one poll's chain reads.
	DefaultRPCTimeout = 40 * time.Second
	// signalTimeout bounds one signal.
	signalTimeout = 10 * time.Second
	// signalConcurrency is how many signals a batch sends at once.
	signalConcurrency = 8
	// workflowStartGrace is how long a signal waits for the workflow of a
	// payment whose row exists but whose workflow has not started: the API
	// starts it right after writing the row, or the reconciler within about
	// 15 s when that failed. Past it, the row is taken to be stuck and the
	// signal is dropped rather than holding up the network's scan for good;
	// the transfer is recorded, and the payment's final check reads it.
	workflowStartGrace = 10 * time.Minute
	// maxWait is the longest a scanner waits without heartbeating.
	maxWait = time.Second
	// maxLookback bounds how far back a network's first scan starts: the
	// longest payment window (24 h) plus the late window (24 h).
	maxLookback = 48 * time.Hour
)

// defaultBatch is each family's DefaultXBatch.
var defaultBatch = map[paywatch.Family]uint64{
	paywatch.FamilyEVM: DefaultEVMBatch, paywatch.FamilyTron: DefaultTronBatch, paywatch.FamilySolana: DefaultSolanaBatch,
	paywatch.FamilyTON: DefaultTONBatch,
}

// Backoff after failed polls: RPC and database errors start at a second,
// rate limits at five, both doubling up to their caps, with jitter.
const (
	backoffMin          = time.Second
	backoffMax          = time.Minute
	rateLimitBackoffMin = 5 * time.Second
	rateLimitBackoffMax = 2 * time.Minute
)
