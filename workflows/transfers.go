package workflows

import (
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/paywatch/paywatch"
)

// acceptsTransfers reports whether a transfer can still change the payment:
// an open payment with an address, or an expired one inside its late window.
func (p *payment) acceptsTransfers(now time.Time) bool {
	switch p.st.Status {
	case paywatch.StatusPaid, paywatch.StatusOverpaid, paywatch.StatusCancelled:
		return false
	case paywatch.StatusExpired:
		return p.lateEligible() && now.Before(p.lateEnd())
	}
	return p.st.Network != ""
}

// lateEligible reports whether full funds after expiry still count:
// per_payment and pool + txid payments that got an address.
func (p *payment) lateEligible() bool {
	if p.st.Network == "" {
		return false
	}
	return p.policy().LateFunds
}

// lateOpen reports an expired payment whose late window the workflow has
// not closed yet (LateClosed): its end may have passed while its close
// waits for the chain's answer.
func (p *payment) lateOpen() bool {
	return p.st.Status == paywatch.StatusExpired && p.lateEligible() && !p.st.LateClosed
}

// lateEnd is when the late window closes.
func (p *payment) lateEnd() time.Time { return p.st.ExpiresAt.Add(paywatch.LateWindow) }

// policy is the payment's mode policy (paywatch.PolicyOf).
func (p *payment) policy() paywatch.Policy { return paywatch.PolicyOf(p.in.Mode, p.in.PoolMatching) }

// txidMode reports pool + txid: only submitted hashes count.
func (p *payment) txidMode() bool { return p.policy().TxIDOnly }

// microMode reports pool + micro_amount: only exact single transfers count.
func (p *payment) microMode() bool { return p.policy().ExactMatch }

// find returns the index of the transaction with this key, or -1.
func (p *payment) find(txHash string, logIndex uint32) int {
	return slices.IndexFunc(p.st.Transactions, func(t paywatch.Transaction) bool {
		return t.TxHash == txHash && t.LogIndex == logIndex
	})
}

// hasUnconfirmed reports whether a counted transfer still waits for
// confirmations.
func (p *payment) hasUnconfirmed() bool {
	return slices.ContainsFunc(p.st.Transactions, func(t paywatch.Transaction) bool { return !t.Confirmed })
}

// fullyPaid reports paid or overpaid.
func (p *payment) fullyPaid() bool {
	return p.st.Status == paywatch.StatusPaid || p.st.Status == paywatch.StatusOverpaid
}

// addTransfer counts a transfer to the payment's address, if the rules let
// it: keyed by (tx hash, log index), above the dust threshold, an exact
// match in pool + micro_amount mode, and in pool + txid mode from a
// verified submitted hash (submitted true) or one claimed for this payment
// before (ClaimedHashes). A repeated transfer is a no-op unless
// it was re-mined in another block, which restarts its confirmations.
func (p *payment) addTransfer(ctx workflow.Context, t paywatch.Transaction, submitted bool) bool {
	return p.addTransferJudged(ctx, t, submitted, false)
}

// addSeen adds a transfer a scanner signalled. One that the scanner read
// already deep enough (Confirmations: a batch that read a burst of
// blocks) is confirmed at once, by the rules of the scanner's
// SignalTransfersConfirmed, in the block the scanner read: the scanner
// sends no second signal for it. Runs before changeConfirmationsPushed
// never read the scanner's confirmations, and take it as seen only; runs
// that are not lean take the depth from changeSeenDepth on (their
// history's handling of such a signal by a worker of the release before
// replays as it was). A transfer taken as seen only is confirmed by the
// scanner's confirmation pass, once the payment awaits it.
func (p *payment) addSeen(ctx workflow.Context, t paywatch.Transaction) {
	p.addTransfer(ctx, t, false)
	if !p.pushed || t.Confirmations <= 0 || !p.lean && !seenDepthTaken(ctx) {
		return
	}
	p.confirmTransfers(ctx, TransfersConfirmed{Transfers: []TransferConfirmed{{
		TxHash: t.TxHash, LogIndex: t.LogIndex, BlockNumber: t.BlockNumber, BlockHash: t.BlockHash,
		Confirmations: t.Confirmations, Canonical: true,
	}}})
}

// addTransferJudged is addTransfer for a transfer whose block the chain
// itself placed before the late window's end (onTime: the close's check,
// lateWindowCheck): it counts while the window is not closed, however late
// the check ran, since a transfer is on time or late by its block's
// timestamp, never by when the workflow hears of it.
func (p *payment) addTransferJudged(ctx workflow.Context, t paywatch.Transaction, submitted, onTime bool) bool {
	now := workflow.Now(ctx)
	known := p.find(t.TxHash, t.LogIndex) >= 0
	// A transfer still confirming past the late window's end (its grace)
	// may be mined again; a new one no longer counts.
	if !p.acceptsTransfers(now) && !(p.safety && known && !p.over(now)) && !(onTime && p.lateOpen()) {
		return false
	}
	if i := p.find(t.TxHash, t.LogIndex); i >= 0 {
		tx := &p.st.Transactions[i]
		if tx.Confirmed || (tx.BlockHash == t.BlockHash && tx.BlockNumber == t.BlockNumber) {
			return false
		}
		tx.BlockHash, tx.BlockNumber, tx.Confirmations = t.BlockHash, t.BlockNumber, 0
		p.scheduleConfCheck(now)
		p.changed = true
		return true
	}
	if p.txidMode() && !submitted && !(p.oneOwner && slices.Contains(p.st.ClaimedHashes, t.TxHash)) {
		return false
	}
	if paywatch.IsDust(t.Amount, p.in.DustMinimum) {
		return false
	}
	if p.microMode() && !paywatch.MicroMatch(t.Amount, p.st.Amount) {
		return false
	}
	p.st.Transactions = append(p.st.Transactions, paywatch.Transaction{
		TxHash:      t.TxHash,
		LogIndex:    t.LogIndex,
		BlockNumber: t.BlockNumber,
		BlockHash:   t.BlockHash,
		From:        t.From,
		Amount:      t.Amount,
	})
	p.scheduleConfCheck(now)
	p.settle(now)
	p.changed = true
	return true
}

// removeTransfer drops a transfer that vanished in a reorg; the status goes
// back to what the remaining funds say. Confirmed transfers are final.
//
// A removal speaks of the transfer in the block it names. In runs that
// take the safety rules, a transfer the payment has since seen mined again
// in another block stays: the scanner sends the removal before the
// transfer's new copy, but both may reach the workflow in one task, where
// transfer-seen signals are read first.
func (p *payment) removeTransfer(ctx workflow.Context, r TransferRemoved) {
	i := p.find(r.TxHash, r.LogIndex)
	if i < 0 || p.over(workflow.Now(ctx)) && p.st.Status != paywatch.StatusExpired {
		return
	}
	tx := p.st.Transactions[i]
	if p.safety && r.BlockHash != "" && (tx.BlockNumber != r.BlockNumber || !strings.EqualFold(tx.BlockHash, r.BlockHash)) {
		p.logger.Info("ignoring removal of a transfer's earlier block", "paymentId", p.st.PaymentID, "txHash", r.TxHash,
			"removedBlock", r.BlockNumber, "block", tx.BlockNumber)
		return
	}
	if tx.Confirmed {
		p.logger.Warn("ignoring removal of a confirmed transfer", "paymentId", p.st.PaymentID, "txHash", r.TxHash, "logIndex", r.LogIndex)
		return
	}
	p.st.Transactions = slices.Delete(p.st.Transactions, i, i+1)
	p.settle(workflow.Now(ctx))
	p.changed = true
}

// settle derives paid_amount, tx_hash and the status from the counted
// transfers (the amount rule over confirmed funds only; in pool +
// micro_amount mode a match within 0.0001 of the adjusted amount is paid,
// paywatch.ClassifyMicro). Final statuses
// never move; an expired payment only moves to paid or overpaid (late).
func (p *payment) settle(now time.Time) {
	switch p.st.Status {
	case paywatch.StatusPaid, paywatch.StatusOverpaid, paywatch.StatusCancelled:
		return
	}
	confirmed := paywatch.NewAmount(nil, p.st.Amount.Decimals())
	var lastConfirmed, firstUnconfirmed string
	unconfirmed := false
	for _, tx := range p.st.Transactions {
		if tx.Confirmed {
			confirmed = confirmed.Add(tx.Amount)
			lastConfirmed = tx.TxHash
		} else if !unconfirmed {
			unconfirmed = true
			firstUnconfirmed = tx.TxHash
		}
	}
	p.st.PaidAmount = confirmed
	p.st.TxHash = lastConfirmed
	if p.st.TxHash == "" {
		p.st.TxHash = firstUnconfirmed
	}
	class := paywatch.StatusPartial
	switch {
	case confirmed.Sign() == 0:
	case p.microMode() && p.oneOwner:
		class = paywatch.ClassifyMicro(confirmed, p.st.Amount)
	default:
		class = paywatch.Classify(confirmed, p.st.Amount)
	}
	full := class == paywatch.StatusPaid || class == paywatch.StatusOverpaid
	if p.st.Status == paywatch.StatusExpired {
		if full {
			p.st.Status = class
			p.st.LatePayment = true
			p.st.PaidAt = &now
		}
		return
	}
	switch {
	case full:
		p.st.Status = class
		p.st.PaidAt = &now
	case confirmed.Sign() > 0:
		p.st.Status = paywatch.StatusPartial
	case unconfirmed:
		p.st.Status = paywatch.StatusConfirming
	default:
		p.st.Status = paywatch.StatusPending
	}
}

// scheduleConfCheck sets when the chain is next asked about a transfer
// just counted (or mined again). Runs before changeConfirmationsPushed ask
// at once and then at block-time estimates; later runs leave it to the
// network's scanner, which signals the block that gives the confirmations
// (confirmTransfers), and ask the chain themselves only as a safety net,
// confirmationSafetyCheck later, unless a check is due sooner.
func (p *payment) scheduleConfCheck(now time.Time) {
	if !p.pushed {
		p.nextConfCheck = now
		return
	}
	if !p.nextConfCheck.After(now) {
		p.nextConfCheck = now.Add(confirmationSafetyCheck)
	}
}

// confirmTransfers counts a scanner's word that transfers' blocks have the
// network's confirmations, or drops a transfer whose block left the chain,
// as checkConfirmations does on the chain's own answer, then settles once:
// transfers confirmed by the same block count together. Only a transfer in
// the block the signal names is concerned: one the payment has since seen
// mined in another block, or one already confirmed, is left alone, and a
// payment that is over (final, or expired with no late window left) changes
// no more, even when the signal was buffered while it got there.
func (p *payment) confirmTransfers(ctx workflow.Context, cs TransfersConfirmed) {
	now := workflow.Now(ctx)
	info, ok := paywatch.LookupNetwork(p.st.Network)
	if !ok || p.over(now) {
		return
	}
	changed := false
	for _, c := range cs.Transfers {
		i := p.find(c.TxHash, c.LogIndex)
		if i < 0 {
			continue
		}
		tx := &p.st.Transactions[i]
		if tx.Confirmed || tx.BlockNumber != c.BlockNumber || !strings.EqualFold(tx.BlockHash, c.BlockHash) {
			continue
		}
		switch {
		case !c.Canonical:
			p.logger.Info("transfer left the canonical chain", "paymentId", p.st.PaymentID, "txHash", c.TxHash)
			p.st.Transactions = slices.Delete(p.st.Transactions, i, i+1)
		case c.Confirmations >= info.Confirmations:
			tx.Confirmations = c.Confirmations
			tx.Confirmed = true
		default:
			continue
		}
		changed = true
	}
	if changed {
		p.settle(now)
		p.changed = true
	}
}

// checkConfirmations asks the chain how deep the unconfirmed transfers are
// and whether their blocks are still canonical. A transfer counts once it
// has the network's confirmations in a canonical block; one whose block was
// replaced is dropped. In runs before changeConfirmationsPushed the next
// check is due when the shallowest transfer should have enough blocks
// (block time × blocks missing); later runs wait for the scanner's signal
// and check again only confirmationSafetyCheck later. It reports whether
// the chain answered; a failed check is tried again a minute later.
func (p *payment) checkConfirmations(ctx workflow.Context) bool {
	info, _ := paywatch.LookupNetwork(p.st.Network)
	var refs []TransferRef
	for _, tx := range p.st.Transactions {
		if !tx.Confirmed {
			refs = append(refs, TransferRef{TxHash: tx.TxHash, LogIndex: tx.LogIndex, BlockNumber: tx.BlockNumber, BlockHash: tx.BlockHash})
		}
	}
	if len(refs) == 0 {
		return true
	}
	var res CheckTransfersResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, chainOptions), ActivityCheckTransfers,
		CheckTransfersInput{Network: p.st.Network, Transfers: refs}).Get(ctx, &res)
	now := workflow.Now(ctx)
	if err != nil {
		p.logger.Warn("confirmation check failed", "paymentId", p.st.PaymentID, "error", err)
		p.nextConfCheck = now.Add(chainRetryAfter)
		return false
	}
	required := info.Confirmations
	minMissing := 0
	for _, c := range res.Transfers {
		i := p.find(c.TxHash, c.LogIndex)
		if i < 0 || p.st.Transactions[i].Confirmed {
			continue
		}
		tx := &p.st.Transactions[i]
		switch {
		case !c.Canonical:
			p.logger.Info("transfer left the canonical chain", "paymentId", p.st.PaymentID, "txHash", c.TxHash)
			p.st.Transactions = slices.Delete(p.st.Transactions, i, i+1)
		case c.Confirmations >= required:
			tx.Confirmations = c.Confirmations
			tx.Confirmed = true
		default:
			tx.Confirmations = c.Confirmations
			if missing := required - c.Confirmations; minMissing == 0 || missing < minMissing {
				minMissing = missing
			}
		}
		p.changed = true
	}
	p.settle(now)
	if minMissing == 0 {
		minMissing = 1
	}
	blockTime := info.BlockTime
	if res.BlockTime > 0 {
		blockTime = res.BlockTime
	}
	wait := min(time.Duration(minMissing)*blockTime, maxConfirmationWait)
	if p.pushed {
		wait = confirmationSafetyCheck
	}
	p.nextConfCheck = now.Add(wait)
	return true
}

// finalCheck looks on-chain once more after the deadline, for transfers a
// scanner may have missed; txid payments re-check their submitted hashes
// instead, since only those count. It reports whether the check got its
// answers: false when the chain could not be asked (after the activity's
// retries), so that the caller tries again rather than expire unchecked.
// Transfers it finds count only if the payment still takes them: a cancel
// may have landed while it awaited.
func (p *payment) finalCheck(ctx workflow.Context) bool {
	if p.txidMode() {
		if len(p.st.SubmittedHashes) > 0 {
			return p.recheckHashes(ctx)
		}
		return true
	}
	var res FinalCheckResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, chainOptions), ActivityFinalCheck, FinalCheckInput{
		PaymentID: p.st.PaymentID, Network: p.st.Network, Token: p.st.Token, Address: p.st.Address, StartBlock: p.st.StartBlock,
	}).Get(ctx, &res)
	if err != nil {
		p.logger.Warn("final on-chain check failed", "paymentId", p.st.PaymentID, "error", err)
		return false
	}
	p.st.FinalHead = max(p.st.FinalHead, res.Head)
	for _, t := range res.Transfers {
		p.addTransfer(ctx, t, false)
	}
	return true
}

// lateWindowCheck reads the chain for the payment's address once its late
// window has ended, up to the last block mined before that end (Until), as
// the final check does at the payment's deadline: a late transfer counts by
// its block's timestamp, so one a lagging scanner (a spent RPC budget, a
// provider's outage) had not signalled by then still counts. Blocks the
// deadline's check read already (FinalHead) are not read from the chain
// again. A pool + txid payment counts only the hashes submitted to it,
// which its re-checks and the scanner's signals handle: it has nothing to
// read. It reports whether the chain answered; the activity fails, and is
// tried again, until the chain has a block at or after the window's end.
func (p *payment) lateWindowCheck(ctx workflow.Context) bool {
	if p.txidMode() {
		return true
	}
	var res FinalCheckResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, chainOptions), ActivityFinalCheck, FinalCheckInput{
		PaymentID: p.st.PaymentID, Network: p.st.Network, Token: p.st.Token, Address: p.st.Address, StartBlock: p.st.StartBlock,
		Until: p.lateEnd(), ReadFrom: p.st.FinalHead + 1,
		// A scanner that moves but never gets past the window's end is
		// waited for no longer than a failing check's first patience.
		NoWait: p.st.CheckFailingSince != nil && workflow.Now(ctx).Sub(*p.st.CheckFailingSince) >= deadlineCheckPatience,
	}).Get(ctx, &res)
	if err != nil {
		p.logger.Warn("on-chain check at the late window's end failed", "paymentId", p.st.PaymentID, "error", err)
		return false
	}
	for _, t := range res.Transfers {
		p.addTransferJudged(ctx, t, false, true)
	}
	return true
}
