package workflows

import (
	"errors"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/paywatch/paywatch"
)

// reject returns an update rejection: a non-retryable application error
// whose message is the API text and whose type selects the HTTP status.
func reject(errType, msg string) error {
	return temporal.NewApplicationErrorWithOptions(msg, errType, temporal.ApplicationErrorOptions{NonRetryable: true})
}

// rejectWithFields is reject with extra response fields as the error's one
// detail (an ErrorFields).
func rejectWithFields(errType, msg string, fields ErrorFields) error {
	return temporal.NewApplicationErrorWithOptions(msg, errType, temporal.ApplicationErrorOptions{
		NonRetryable: true, Details: []any{fields},
	})
}

// updateError turns an activity's domain error into the update's rejection,
// keeping its type, message and fields; other errors pass unchanged.
func updateError(err error) error {
	code := ErrorCode(err)
	if code == "" {
		return err
	}
	var app *temporal.ApplicationError
	errors.As(err, &app)
	var fields ErrorFields
	if app.HasDetails() && app.Details(&fields) == nil && len(fields) > 0 {
		return rejectWithFields(code, app.Message(), fields)
	}
	return reject(code, app.Message())
}

// validateCancel accepts a cancel only for a payment that is pending and
// shown as pending: from PendingShownExpiredAfter past expires_at, GET and
// the hosted page show it expired (the final on-chain check may still be
// running), and the cancel is refused with that status.
func (p *payment) validateCancel(ctx workflow.Context, _ CancelRequest) error {
	if st := paywatch.ShownStatus(p.st.Status, p.st.ExpiresAt, workflow.Now(ctx)); st != paywatch.StatusPending {
		return reject(paywatch.ECONFLICT, paywatch.MsgCancelRefused(st))
	}
	return nil
}

// cancel cancels a pending payment. Transfers that reached the workflow
// before the cancel are handled first: if one changed the status, the
// transfer wins and the cancel is refused. Once the status is cancelled,
// later transfers are ignored.
func (p *payment) cancel(ctx workflow.Context, _ CancelRequest) (paywatch.PaymentState, error) {
	p.drainSignals(ctx)
	if p.st.Status != paywatch.StatusPending {
		return paywatch.PaymentState{}, reject(paywatch.ECONFLICT, paywatch.MsgCancelChanged)
	}
	p.st.Status = paywatch.StatusCancelled
	p.changed = true
	p.commit(ctx)
	p.wake = true
	return p.snapshot(), nil
}

// validateSelectNetwork checks a network selection: a valid pair, no
// network yet, inside the window, still pending.
func (p *payment) validateSelectNetwork(ctx workflow.Context, req SelectNetworkRequest) error {
	if err := paywatch.ValidatePair(req.Network, req.Token); err != nil {
		return reject(paywatch.EINVALID, paywatch.ErrorMessage(err))
	}
	err := paywatch.SelectNetworkRefusal(p.st.Network != "" || p.held.network, p.st.Status, p.st.ExpiresAt, workflow.Now(ctx))
	if err != nil {
		return reject(paywatch.ErrorCode(err), paywatch.ErrorMessage(err))
	}
	return nil
}

// selectNetwork assigns the deposit address. The in-progress flag is set
// before awaiting the activity, so a second concurrent selection is
// refused; the window is never extended.
func (p *payment) selectNetwork(ctx workflow.Context, req SelectNetworkRequest) (paywatch.Assignment, error) {
	if err := p.validateSelectNetwork(ctx, req); err != nil {
		return paywatch.Assignment{}, err
	}
	defer p.reserveNetwork()()
	var a paywatch.Assignment
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, interactiveOptions), ActivitySelectNetwork,
		SelectNetworkInput{PaymentID: p.st.PaymentID, Network: req.Network, Token: req.Token}).Get(ctx, &a); err != nil {
		if p.safety && selectionUnknown(err) && p.st.Network == "" {
			// The row may hold an address the customer will be shown
			// while this run never learns it: read it back.
			p.syncSelection = true
			p.syncRetry = time.Time{}
		}
		return paywatch.Assignment{}, updateError(err)
	}
	p.adopt(ctx, a)
	if p.st.Status != paywatch.StatusPending {
		// Cancelled while the address was being assigned: the address is
		// recorded so that it is released, but the selection failed.
		return paywatch.Assignment{}, reject(paywatch.ECONFLICT, paywatch.MsgNotPending)
	}
	return a, nil
}

// hashKnown reports whether a hash was already submitted to this payment.
func (p *payment) hashKnown(h string) bool {
	return slices.Contains(p.st.SubmittedHashes, h) || slices.Contains(p.held.hashes, h) ||
		slices.ContainsFunc(p.st.Transactions, func(t paywatch.Transaction) bool { return t.TxHash == h })
}

// validateSubmitTxHash applies the 409 rules of POST /v1/payments/:id/confirm.
// An expired pool + txid payment still takes hashes during its late window.
func (p *payment) validateSubmitTxHash(ctx workflow.Context, req SubmitTxHashRequest) error {
	if req.TxHash == "" {
		return reject(paywatch.EINVALID, paywatch.MsgHashRequired)
	}
	if !p.txidMode() {
		return reject(paywatch.EINVALID, paywatch.MsgNotTxidPayment)
	}
	if p.st.Network == "" {
		return reject(paywatch.EINVALID, paywatch.MsgNoNetworkForHash)
	}
	if !p.acceptsTransfers(workflow.Now(ctx)) {
		return reject(paywatch.ECONFLICT, paywatch.MsgFinalized)
	}
	if p.hashKnown(req.TxHash) {
		return rejectWithFields(paywatch.ECONFLICT, paywatch.MsgHashPending, ErrorFields{"submitted_tx_hash": req.TxHash})
	}
	return nil
}

// submitTxHash verifies a submitted hash at once: on chain and valid, it is
// claimed for this payment and counted (confirming); not on chain yet, it is
// recorded and re-checked on a timer until the window closes.
func (p *payment) submitTxHash(ctx workflow.Context, req SubmitTxHashRequest) (SubmitTxHashResult, error) {
	if err := p.validateSubmitTxHash(ctx, req); err != nil {
		return SubmitTxHashResult{}, err
	}
	h := req.TxHash
	defer p.reserveHash(h)()
	var res VerifyTxHashResult
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, interactiveOptions), ActivityVerifyTxHash,
		p.verifyInput(h)).Get(ctx, &res); err != nil {
		p.logger.Warn("tx hash verification failed; re-checking later", "paymentId", p.st.PaymentID, "txHash", h, "error", err)
		res = VerifyTxHashResult{Found: false}
	}
	if !p.acceptsTransfers(workflow.Now(ctx)) {
		// Cancelled (or final) while the hash was being verified: it is
		// neither claimed nor recorded.
		return SubmitTxHashResult{}, reject(paywatch.ECONFLICT, paywatch.MsgFinalized)
	}
	amount, found, err := p.applyVerified(ctx, h, res)
	if err != nil {
		return SubmitTxHashResult{}, err
	}
	if !found {
		p.st.SubmittedHashes = append(p.st.SubmittedHashes, h)
		p.nextHashCheck = workflow.Now(ctx).Add(hashRecheckMin)
		p.hashInterval = hashRecheckMin
		p.changed = true
		p.commit(ctx)
		return SubmitTxHashResult{Verified: false, Status: p.st.Status, Message: paywatch.MsgTxUnverified}, nil
	}
	p.commit(ctx)
	return SubmitTxHashResult{Verified: true, Status: p.st.Status, AmountReceived: &amount, Message: paywatch.MsgTxVerified}, nil
}

// verifyInput is the activity input that verifies hash h for this payment.
func (p *payment) verifyInput(h string) VerifyTxHashInput {
	return VerifyTxHashInput{Network: p.st.Network, Token: p.st.Token, Address: p.st.Address, StartBlock: p.st.StartBlock, TxHash: h}
}

// applyVerified counts a verified transaction: its transfers to the
// payment's address above the dust threshold, after the hash is claimed for
// this payment. found is false when the transaction is not on chain yet.
// The caller awaited the verification, so the payment may have been
// cancelled or finalized meanwhile: that is checked before claiming, so a
// hash is never claimed for a payment it can no longer pay.
func (p *payment) applyVerified(ctx workflow.Context, h string, res VerifyTxHashResult) (amount paywatch.Amount, found bool, err error) {
	amount = paywatch.NewAmount(nil, p.st.Amount.Decimals())
	if !res.Found {
		return amount, false, nil
	}
	var valid []paywatch.Transaction
	for _, t := range res.Transfers {
		if !paywatch.IsDust(t.Amount, p.in.DustMinimum) {
			valid = append(valid, t)
		}
	}
	switch {
	case len(res.Transfers) == 0:
		msg := paywatch.MsgHashNoTransfer
		if res.Reason != "" {
			msg = res.Reason
		}
		return amount, true, reject(paywatch.EINVALID, msg)
	case len(valid) == 0:
		return amount, true, reject(paywatch.EINVALID, paywatch.MsgHashBelowMinimum)
	}
	if !p.acceptsTransfers(workflow.Now(ctx)) {
		return amount, true, reject(paywatch.ECONFLICT, paywatch.MsgFinalized)
	}
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, interactiveOptions), ActivityClaimTxHash,
		ClaimTxHashInput{PaymentID: p.st.PaymentID, Network: p.st.Network, TxHash: h,
			Address: p.st.Address, Token: p.st.Token, Transfers: valid}).Get(ctx, nil); err != nil {
		return amount, true, updateError(err)
	}
	if !p.acceptsTransfers(workflow.Now(ctx)) {
		// Finalized during the claim's own round trip. tx_claims has no
		// release, so the claim stays on this payment: the transaction was
		// submitted for it and pays its address, and like any transfer
		// after a cancel it is for the merchant to refund. Only a
		// resubmission of the same hash to another payment of the same pool
		// address is refused because of it.
		return amount, true, reject(paywatch.ECONFLICT, paywatch.MsgFinalized)
	}
	if !slices.Contains(p.st.ClaimedHashes, h) {
		p.st.ClaimedHashes = append(p.st.ClaimedHashes, h)
		p.changed = true
	}
	for _, t := range valid {
		if p.addTransfer(ctx, t, true) {
			amount = amount.Add(t.Amount)
		}
	}
	return amount, true, nil
}

// recheckHashes verifies the submitted hashes that were not on chain yet.
// A hash that counted, or that can never count (a non-retryable Conflict or
// Invalid verdict: no valid transfer, claimed by another payment), leaves
// the list; a hash whose verification or claim failed for any other reason
// (a transient chain or database error) stays for the next re-check. It
// stops once the payment no longer takes transfers (a cancel may land while
// it awaits), and reports whether every hash it looked at got an answer.
func (p *payment) recheckHashes(ctx workflow.Context) (answered bool) {
	answered = true
	for _, h := range slices.Clone(p.st.SubmittedHashes) {
		if !p.acceptsTransfers(workflow.Now(ctx)) {
			break
		}
		var res VerifyTxHashResult
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, chainOptions), ActivityVerifyTxHash,
			p.verifyInput(h)).Get(ctx, &res); err != nil {
			p.logger.Warn("tx hash re-check failed", "paymentId", p.st.PaymentID, "txHash", h, "error", err)
			answered = false
			continue
		}
		_, found, err := p.applyVerified(ctx, h, res)
		switch {
		case !found:
			continue
		case err == nil:
		case hashRejected(err):
			p.logger.Info("submitted tx hash does not count", "paymentId", p.st.PaymentID, "txHash", h, "reason", err)
		default:
			p.logger.Warn("tx hash claim failed; re-checking later", "paymentId", p.st.PaymentID, "txHash", h, "error", err)
			answered = false
			continue
		}
		p.st.SubmittedHashes = slices.DeleteFunc(p.st.SubmittedHashes, func(v string) bool { return v == h })
		p.changed = true
	}
	p.hashInterval = min(max(p.hashInterval*2, hashRecheckMin), hashRecheckMax)
	p.nextHashCheck = workflow.Now(ctx).Add(p.hashInterval)
	return answered
}

// hashRejected reports whether err is a verdict that a submitted hash can
// never count for this payment: a non-retryable Conflict or Invalid
// application error, from applyVerified itself or from the claim activity.
func hashRejected(err error) bool {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() {
		return false
	}
	code := ErrorCode(err)
	return code == paywatch.ECONFLICT || code == paywatch.EINVALID
}

// validateRecheck accepts a re-check of a payment whose address can still
// receive funds that count: open, or expired inside its late window.
func (p *payment) validateRecheck(ctx workflow.Context, _ RecheckRequest) error {
	if p.st.Network == "" {
		return reject(paywatch.EINVALID, paywatch.MsgNoNetworkToRecheck)
	}
	if !p.acceptsTransfers(workflow.Now(ctx)) {
		return reject(paywatch.ECONFLICT, paywatch.MsgFinalized)
	}
	return nil
}

// recheck asks the chain now for transfers to the payment's address, as the
// final check does, and counts what it finds; the status changes only as a
// transfer found would, once the main loop has looked at it. A chain that
// cannot be read is refused with a message to try again.
func (p *payment) recheck(ctx workflow.Context, req RecheckRequest) (paywatch.PaymentState, error) {
	if err := p.validateRecheck(ctx, req); err != nil {
		return paywatch.PaymentState{}, err
	}
	if !p.finalCheck(ctx) {
		return paywatch.PaymentState{}, reject(paywatch.ERATELIMIT, paywatch.MsgRecheckFailed)
	}
	p.wake = true
	return p.snapshot(), nil
}

// selectionUnknown reports whether a select-network activity that failed
// with err may still have recorded a selection on the payment's row: its
// answer was lost (a timeout, a lost worker, a database that failed over
// after the commit) rather than a verdict; or its verdict was that the row
// already has a network, which this run does not know.
func selectionUnknown(err error) bool {
	code := ErrorCode(err)
	if code == "" {
		return true
	}
	var app *temporal.ApplicationError
	return code == paywatch.ECONFLICT && errors.As(err, &app) && app.Message() == paywatch.MsgNetworkSelected
}

// adopt records an assignment as the payment's network, token, address and
// amount (at the token's decimals), persists it and publishes the search
// attributes.
func (p *payment) adopt(ctx workflow.Context, a paywatch.Assignment) {
	if d := paywatch.Decimals(a.Network, a.Token); a.Amount.Decimals() != d {
		if r, err := a.Amount.Rescale(d); err == nil {
			a.Amount = r
		}
	}
	p.st.Network, p.st.Token, p.st.Address = a.Network, a.Token, a.Address
	p.st.Amount = a.Amount
	if a.OriginalAmount != nil {
		p.st.OriginalAmount = a.OriginalAmount
	}
	p.st.PaidAmount = paywatch.NewAmount(nil, a.Amount.Decimals())
	p.st.StartBlock = a.StartBlock
	if !a.AssignedAt.IsZero() {
		t := a.AssignedAt
		p.st.AddressAssignedAt = &t
	}
	p.changed = true
	p.commit(ctx)
	p.publish(ctx)
}

// syncAssignment reads the payment's row back for a network selection the
// run never learned (syncSelection) and adopts it; it reports whether the
// row answered. A failed read is tried again chainRetryAfter later.
// Adopting a selection is safe whenever it comes: the address was
// recorded for this payment, and the deadline that follows (the final
// on-chain check) finds what was paid to it.
func (p *payment) syncAssignment(ctx workflow.Context) bool {
	var res LoadAssignmentResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, chainOptions), ActivityLoadAssignment,
		LoadAssignmentInput{PaymentID: p.st.PaymentID}).Get(ctx, &res)
	if err != nil {
		p.syncRetry = workflow.Now(ctx).Add(chainRetryAfter)
		p.logger.Warn("reading the network selection back failed; trying again", "paymentId", p.st.PaymentID,
			"retryAt", p.syncRetry, "error", err)
		return false
	}
	p.syncSelection = false
	p.syncedAt = workflow.Now(ctx)
	if res.Assigned && p.st.Network == "" && !p.held.network {
		p.logger.Warn("adopting a network selection whose answer was lost", "paymentId", p.st.PaymentID,
			"network", res.Assignment.Network, "address", res.Assignment.Address)
		p.adopt(ctx, res.Assignment)
	}
	return true
}
