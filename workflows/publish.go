package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/paywatch/paywatch"
)

// published is what a payment shows the Temporal Web UI: its search
// attributes, to filter payments by, and its memo.
type published struct {
	status, project, network, token, externalRef, externalOrderID string
	amount, address                                               string
}

// publishedOf is what a payment of input in shows in state st.
func publishedOf(in paywatch.PaymentInput, st paywatch.PaymentState) published {
	v := published{
		status: string(st.Status), project: in.ProjectSlug,
		network: string(st.Network), token: string(st.Token),
		externalRef: in.ExternalRef,
		amount:      st.Amount.String(), address: st.Address,
	}
	if in.ExternalOrderID != nil {
		v.externalOrderID = *in.ExternalOrderID
	}
	if in.SearchRefs != nil {
		v.externalRef, v.externalOrderID = in.SearchRefs.ExternalRef, in.SearchRefs.ExternalOrderID
	}
	return v
}

// searchAttributes pairs each search attribute with its value.
func (v published) searchAttributes() []temporal.SearchAttributeUpdate {
	return []temporal.SearchAttributeUpdate{
		SearchAttrPaymentStatus.ValueSet(v.status),
		SearchAttrProjectSlug.ValueSet(v.project),
		SearchAttrNetwork.ValueSet(v.network),
		SearchAttrToken.ValueSet(v.token),
		SearchAttrExternalRef.ValueSet(v.externalRef),
		SearchAttrExternalOrderID.ValueSet(v.externalOrderID),
	}
}

// memo is the payment's memo: what the Web UI shows without a query.
func (v published) memo() map[string]any {
	return map[string]any{"amount": v.amount, "token": v.token, "network": v.network, "address": v.address}
}

// StartAttributes returns the search attributes and memo a new payment's
// workflow starts with: those its first run would publish, so that it need
// not (startAttributes). Setting them with the start saves each creation a
// search-attribute upsert, which is a billable action on a hosted Temporal
// service and a visibility write on every server (issue 15).
func StartAttributes(in paywatch.PaymentInput) (temporal.SearchAttributes, map[string]any) {
	v := publishedOf(in, initialState(in))
	return temporal.NewSearchAttributes(v.searchAttributes()...), v.memo()
}

// publish upserts the search attributes and the memo, so the Temporal Web
// UI can filter payments by status, project, network, token and references.
//
// Lean runs upsert only the search attributes whose value changed, and the
// memo only when it did: an upsert of search attributes is a billable
// Action, and each upsert an event.
func (p *payment) publish(ctx workflow.Context) {
	v := publishedOf(p.in, p.st)
	attrs := v.searchAttributes()
	if p.lean && p.shown != nil {
		attrs = v.changedAttributes(*p.shown)
	}
	if len(attrs) > 0 {
		if err := workflow.UpsertTypedSearchAttributes(ctx, attrs...); err != nil {
			p.logger.Warn("upsert search attributes failed", "paymentId", p.st.PaymentID, "error", err)
		}
	}
	if !p.lean || p.shown == nil || v.memoDiffers(*p.shown) {
		if err := workflow.UpsertMemo(ctx, v.memo()); err != nil {
			p.logger.Warn("upsert memo failed", "paymentId", p.st.PaymentID, "error", err)
		}
	}
	p.shown = &v
}

// publishedAtStart reports whether the run already shows what publish would
// set: its start (StartAttributes, or a continue-as-new, which carries the
// last run's) set every search attribute and memo field to the current
// value.
func (p *payment) publishedAtStart(ctx workflow.Context) bool {
	v := publishedOf(p.in, p.st)
	sa := workflow.GetTypedSearchAttributes(ctx)
	for _, u := range []struct {
		key  temporal.SearchAttributeKeyKeyword
		want string
	}{
		{SearchAttrPaymentStatus, v.status}, {SearchAttrProjectSlug, v.project},
		{SearchAttrNetwork, v.network}, {SearchAttrToken, v.token},
		{SearchAttrExternalRef, v.externalRef}, {SearchAttrExternalOrderID, v.externalOrderID},
	} {
		if got, ok := sa.GetKeyword(u.key); !ok || got != u.want {
			return false
		}
	}
	fields := workflow.GetInfo(ctx).Memo.GetFields()
	for name, want := range v.memo() {
		var got string
		pl, ok := fields[name]
		if !ok || p.payloads.FromPayload(pl, &got) != nil || got != want {
			return false
		}
	}
	return true
}
