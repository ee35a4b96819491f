package workflows

import "go.temporal.io/sdk/workflow"

// continueAsNewSuggested reports whether the history is long enough to
// start afresh (many small transfers, long txid re-check loops).
func (p *payment) continueAsNewSuggested(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= maxHistoryEvents
}

// continueAsNew carries the state into a new run once every signal is
// handled and every change persisted.
func (p *payment) continueAsNew(ctx workflow.Context) error {
	for {
		p.drainSignals(ctx)
		if !p.changed && p.quiet(ctx) {
			break
		}
		p.commit(ctx)
		_ = workflow.Await(ctx, func() bool { return p.quiet(ctx) })
	}
	return p.continueAsNewNow(ctx)
}

// continueAsNewNow carries the state into a new run as it stands: the
// caller saw every signal handled, every change persisted and nothing
// running. Runs that take the safety rules come here straight from the
// main loop, which never waits for a webhook to finish before it goes on
// handling signals and deadlines (continueAsNew did, for up to the half
// hour of a webhook's retries).
func (p *payment) continueAsNewNow(ctx workflow.Context) error {
	next := p.in
	st := p.snapshot()
	next.Carry = &st
	next.Network, next.Token, next.Address = st.Network, st.Token, st.Address
	next.Amount, next.OriginalAmount = st.Amount, st.OriginalAmount
	next.StartBlock = st.StartBlock
	if st.AddressAssignedAt != nil {
		next.AddressAssignedAt = *st.AddressAssignedAt
	}
	p.logger.Info("continuing as new", "paymentId", st.PaymentID, "transactions", len(st.Transactions))
	return workflow.NewContinueAsNewError(ctx, PaymentWorkflowType(next.Lifecycle), next)
}
