package workflows

import "go.temporal.io/sdk/workflow"

// Change IDs of the payment workflow. A change to the order of commands of
// a deployed workflow (a new activity, a different timer) goes behind a new
// change ID and a named helper below, so histories recorded by older code
// still replay: the helper reports whether this run takes the new path.
//
// To add one: declare a change ID, add a helper that calls
// workflow.GetVersion(ctx, id, workflow.DefaultVersion, 1) and returns
// whether the result is ≥ 1, and branch on the helper where the change is.
// Later revisions of the same change raise maxSupported and keep the older
// branches until no running workflow needs them.
const (
	// changeLifecycleV1 marks histories of the first released lifecycle.
	changeLifecycleV1 = "payment-lifecycle-v1"
	// changeOneOwner marks runs that take the money-safety rules of issue
	// 10: a micro-amount match pays its payment even a hair below the
	// adjusted amount, and a pool + txid payment counts a transfer of a
	// claimed hash that a scanner signals (one a reorg dropped and that was
	// mined again).
	changeOneOwner = "payment-one-owner"
	// changeWebhookWorkflow moves webhook delivery from an activity of the
	// payment workflow into a WebhookWorkflow child per event.
	changeWebhookWorkflow = "webhook-workflow"
	// changeChat starts a ChatWorkflow for each event whose chat message
	// was queued (issue 14).
	changeChat = "chat-notifications"
	// changeConfirmationsPushed stops guessing when a transfer has its
	// confirmations from the block time: the scanner signals the block that
	// gives them (SignalTransfersConfirmed), and the payment asks the chain
	// itself only as a safety net, confirmationSafetyCheck apart (issue 15).
	// Version 2 also starts runs with their search attributes (setupVersion).
	changeConfirmationsPushed = "confirmations-pushed"
	// changeSeenDepth takes the depth a scanner's transfer-seen signal
	// carries (a transfer a batch read already confirmed) as the
	// transfer's confirmation (issue 43). It is asked only when a signal
	// carries a depth, so a history without such a signal records no
	// marker; a run whose worker of the release before ignored the depth
	// keeps ignoring it on replay.
	changeSeenDepth = "seen-depth"
)

// versionAtLeast reports whether this run recorded change id at version min
// or later; replays of histories recorded before the change get false.
func versionAtLeast(ctx workflow.Context, changeID string, minVersion, maxSupported workflow.Version) bool {
	return workflow.GetVersion(ctx, changeID, workflow.DefaultVersion, maxSupported) >= minVersion
}

// lifecycleV1 records the lifecycle version in new histories, so the first
// later change can tell runs of this code apart from its own.
func lifecycleV1(ctx workflow.Context) bool {
	return versionAtLeast(ctx, changeLifecycleV1, 1, 1)
}

// webhookWorkflows reports whether this run delivers its webhooks through a
// WebhookWorkflow child; runs recorded before keep the delivery activity
// they had already scheduled.
func webhookWorkflows(ctx workflow.Context) bool {
	return versionAtLeast(ctx, changeWebhookWorkflow, 1, 1)
}

// oneOwnerRules reports whether this run applies the rules of
// changeOneOwner. It is asked once, in setup, so a run recorded before the
// change keeps the old rules for its whole life.
func oneOwnerRules(ctx workflow.Context) bool {
	return versionAtLeast(ctx, changeOneOwner, 1, 1)
}

// chatWorkflows reports whether this run starts a ChatWorkflow for a queued
// chat message; it is asked only when the queue activity says one was
// queued, which histories recorded before the change never do.
func chatWorkflows(ctx workflow.Context) bool {
	return versionAtLeast(ctx, changeChat, 1, 1)
}

// seenDepthTaken reports whether a run that is not lean takes the depth
// of a transfer-seen signal as its confirmation (changeSeenDepth).
func seenDepthTaken(ctx workflow.Context) bool {
	return versionAtLeast(ctx, changeSeenDepth, 1, 1)
}

// setupVersion is this run's version of changeConfirmationsPushed, asked
// once, in setup:
//
//   - 1 and later: the run takes the rules of changeConfirmationsPushed. A
//     run recorded before keeps its block-time waits for its whole life,
//     and never reads a scanner's SignalTransfersConfirmed: such a run may
//     have recorded the signal in its history while an older worker ran
//     it, and handling it on replay would add commands the history lacks.
//   - 2: setup skips its upsert of the search attributes and memo when the
//     run started with the same values (StartAttributes: the API sets them
//     in the start request, issue 15). It is a revision of the same change
//     rather than a change ID of its own, so a new run records no further
//     marker (each also upserts TemporalChangeVersion), and a worker of the
//     release before, which supports version 1 only, refuses such a run's
//     history instead of replaying it under its own rules (its task is
//     retried until a current worker takes it).
//   - 3: the run takes the money-safety rules of issue 24 (safetyRules):
//     patience with an unanswered on-chain check counts from its first
//     failure and lasts outagePatience; buffered signals are read before
//     any expiry; a removal applies only to the block it names; the late
//     window gives transfers confirming at its end the confirming grace; a
//     network selection whose answer was lost is read back from the row;
//     and continuing as new never waits for a webhook. Like version 2 it
//     adds no marker of its own, and the release before refuses it.
//   - 4: the run closes its late window by reading the chain up to the
//     last block before the window's end (lateWindowCheck, issue 37): a
//     late transfer counts by its block's timestamp, not by when its
//     signal arrives. The close waits lateCheckDelay past the end for it.
func setupVersion(ctx workflow.Context) workflow.Version {
	return workflow.GetVersion(ctx, changeConfirmationsPushed, workflow.DefaultVersion, lateCheckVersion)
}

// lateCheckVersion is the setupVersion from which a run reads the chain
// when its late window ends (issue 37, money safety III).
const lateCheckVersion workflow.Version = 4

// safetyVersion is the setupVersion from which a run takes the rules of
// issue 24 (money safety II).
const safetyVersion workflow.Version = 3

// LeanLifecycle is the paywatch.PaymentInput.Lifecycle of payments created
// from issue 43 on: the run records no version markers (the input says
// what it is), persists through local activities, makes a webhook's first
// attempt itself, and keeps one timer for its next deadline. Its rules are
// those of setupVersion lateCheckVersion. Payments whose input has a
// Lifecycle below it take their shape from their history's markers, as
// before.
const LeanLifecycle = 5

// PaymentWorkflowType is the workflow type a payment whose input has
// lifecycle starts as: LeanPaymentWorkflowName for lean payments,
// PaymentWorkflowName before.
func PaymentWorkflowType(lifecycle int) string {
	if lifecycle >= LeanLifecycle {
		return LeanPaymentWorkflowName
	}
	return PaymentWorkflowName
}
