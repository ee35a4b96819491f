// Package payments holds the use cases of paywatch: what a merchant, a
// customer or an operator can do to a payment, whichever edge they come
// through (the REST API, the hosted pages, paywatch admin through the API,
// and the dashboard). It asks store for rows and Temporal, through
// Workflows, to start payment workflows and send them updates, whose
// validators give the verdicts. The edges decode a request, call a use
// case and map its answer; no rule lives in them.
package payments

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/locale"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/telegram"
	"github.com/paywatch/paywatch/workflows"
)

// pendingWebhookBatch bounds how many deliveries one call starts, so that
// saving a URL on a project with a long backlog answers promptly; the
// reconciler starts the rest on its next passes.
const pendingWebhookBatch = 100

// Deps are the collaborators of the use cases.
type Deps struct {
	Store *store.Store
	// Workflows starts and updates payment workflows; nil leaves payments
	// unstarted (the reconciler starts them once it is set).
	Workflows Workflows
	Logger    *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Telegram is the deployment's bot (PAYWATCH_TELEGRAM_BOT_TOKEN); nil
	// when chat notifications are off.
	Telegram *telegram.Client
	// WebhookAllowPrivate lets webhook URLs point at private, reserved and
	// loopback addresses (PAYWATCH_WEBHOOK_ALLOW_PRIVATE; development and
	// tests only).
	WebhookAllowPrivate bool
	// WebhookRequireHTTPS refuses plain http:// webhook URLs when a
	// project is saved, as delivery refuses them.
	WebhookRequireHTTPS bool
}

// Service runs the use cases. It is safe for concurrent use.
type Service struct {
	store     *store.Store
	workflows Workflows
	log       *slog.Logger
	now       func() time.Time
	webhooks  webhookPolicy
	telegram  *telegram.Client
	bot       botName
	marks     *startedMarks
}

// New returns the use cases over deps.
func New(deps Deps) *Service {
	s := &Service{store: deps.Store, workflows: deps.Workflows, log: deps.Logger, now: deps.Now, telegram: deps.Telegram,
		webhooks: webhookPolicy{allowPrivate: deps.WebhookAllowPrivate, requireHTTPS: deps.WebhookRequireHTTPS}}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.marks = &startedMarks{store: s.store, log: s.log}
	return s
}

// Reconciler returns a reconciler over the service's store and workflows.
func (s *Service) Reconciler() *Reconciler {
	return &Reconciler{Store: s.store, Workflows: s.workflows, Logger: s.log, ChatOn: s.telegram != nil}
}

// Created is the outcome of Create.
type Created struct {
	Payment *store.Payment
	// Existing is set for an idempotent repeat of an earlier creation.
	Existing bool
	// Available lists the networks a payment created without one can
	// still choose; nil when it has an address, or when they could not be
	// read (the creation stands all the same).
	Available []paywatch.NetworkInfo
}

// Create creates a payment (or finds the one an idempotent repeat names)
// and starts its workflow. Once the row is committed nothing turns the
// answer into an error, or a client retrying without external_order_id
// would create a duplicate: a workflow that cannot start now is started by
// the reconciler, and networks that cannot be read are left out.
func (s *Service) Create(ctx context.Context, np store.NewPayment) (Created, error) {
	p, existing, err := s.store.CreatePayment(ctx, np)
	if err != nil {
		return Created{}, err
	}
	s.startWorkflow(ctx, p)
	out := Created{Payment: p, Existing: existing}
	if p.AwaitingNetwork() {
		w, err := s.store.WalletOf(ctx, np.ProjectID)
		if err != nil {
			s.log.Error("payment created without available_networks", "paymentId", p.ID, "error", err)
		} else {
			out.Available = s.store.AvailableNetworks(p.Mode, w)
		}
	}
	return out, nil
}

// CreateFromLink creates the payment a buyer submits on payment link l,
// within the link's cap of open payments and the owner's limits, and
// starts its workflow as Create does.
func (s *Service) CreateFromLink(ctx context.Context, l *store.PaymentLink, np store.NewPayment, b store.Buyer) (*store.Payment, error) {
	p, _, err := s.store.CreateLinkPayment(ctx, l, np, b)
	if err != nil {
		return nil, err
	}
	s.startWorkflow(ctx, p)
	return p, nil
}

// Get returns a project's payment, as the workflow last saved it.
func (s *Service) Get(ctx context.Context, projectID int64, id string) (*store.Payment, error) {
	return s.store.GetPayment(ctx, projectID, id)
}

// List returns a project's payments that f selects, newest first, and how
// many there are in all.
func (s *Service) List(ctx context.Context, projectID int64, f store.ListFilter) ([]*store.Payment, int, error) {
	return s.store.ListPayments(ctx, projectID, f)
}

// Cancel cancels a project's pending payment through its workflow's cancel
// update, whose validator gives the verdict, so a cancel racing a detected
// transfer is settled in one place. What GET shows is what the merchant may
// cancel: a pending payment shown as expired is refused here as by the
// validator. It returns the payment as cancelled.
func (s *Service) Cancel(ctx context.Context, projectID int64, id string) (*store.Payment, error) {
	p, err := s.store.GetPayment(ctx, projectID, id)
	if err != nil {
		return nil, err
	}
	if st := paywatch.ShownStatus(p.Status, p.ExpiresAt, s.now()); st != paywatch.StatusPending {
		return nil, cannotCancel(st)
	}
	if err := s.EnsureStarted(ctx, p); err != nil {
		return nil, err
	}
	state, err := s.workflows.Cancel(ctx, p.ID)
	if workflowClosed(err) {
		// The workflow has ended, so the payment is final: refuse as the
		// workflow's validator would.
		if p, err = s.store.GetPayment(ctx, projectID, p.ID); err != nil {
			return nil, err
		}
		return nil, cannotCancel(p.Status)
	}
	if err != nil {
		return nil, err
	}
	if p, err = s.store.GetPayment(ctx, projectID, p.ID); err != nil {
		return nil, err
	}
	// The workflow saved the state before answering; should the save have
	// failed, the update's own answer still shows the cancellation.
	if p.Status != state.Status && state.Status != "" {
		p.Status = state.Status
	}
	return p, nil
}

// cannotCancel is the 409 for a payment that is not pending.
func cannotCancel(st paywatch.Status) error {
	return paywatch.Errorf(paywatch.ECONFLICT, "%s", paywatch.MsgCancelRefused(st))
}

// ConfirmTxHash submits a transaction hash for a project's pool + txid
// payment: it is normalised for the payment's network (an invalid one is
// "Invalid request body"), and the workflow's submit-tx-hash update
// applies every rule and verifies it on chain. The answer's Status is the
// contract's verdict on the hash (interface.md, POST
// /v1/payments/:id/confirm), not the payment's status: confirming when it
// verified at once, pending when it was recorded to be verified later,
// whatever the payment shows (partial with funds still due, or expired in
// its late window); GET /v1/payments/:id gives the payment's own.
func (s *Service) ConfirmTxHash(ctx context.Context, projectID int64, id, hash string) (workflows.SubmitTxHashResult, error) {
	var none workflows.SubmitTxHashResult
	p, err := s.store.GetPayment(ctx, projectID, id)
	if err != nil {
		return none, err
	}
	if p.Network != "" {
		if hash, err = paywatch.NormalizeTxHash(p.Network, hash); err != nil {
			return none, paywatch.Errorf(paywatch.EINVALID, "%s", paywatch.MsgInvalidRequestBody)
		}
	}
	if err := s.EnsureStarted(ctx, p); err != nil {
		return none, err
	}
	res, err := s.workflows.SubmitTxHash(ctx, p.ID, workflows.SubmitTxHashRequest{TxHash: hash})
	if workflowClosed(err) {
		return none, paywatch.Errorf(paywatch.ECONFLICT, "%s", paywatch.MsgFinalized)
	}
	if err != nil {
		return none, err
	}
	res.Status = paywatch.StatusPending
	if res.Verified {
		res.Status = paywatch.StatusConfirming
	}
	return res, nil
}

// SelectNetwork picks the network of a payment created without one (the
// hosted page) through its workflow's select-network update, whose
// validator and activity give the verdicts of interface.md's table (409,
// 410, 400, 429). A payment link that fixes the token takes only that
// token. The window is never extended. A workflow that has ended answers
// from the row.
func (s *Service) SelectNetwork(ctx context.Context, id string, n paywatch.Network, t paywatch.Token) (paywatch.Assignment, error) {
	var none paywatch.Assignment
	p, err := s.store.PaymentByID(ctx, id)
	if err != nil {
		return none, err
	}
	if !p.AwaitingNetwork() {
		return none, paywatch.SelectNetworkRefusal(true, p.Status, p.ExpiresAt, s.now())
	}
	if p.Status == paywatch.StatusPending && s.now().Before(p.ExpiresAt) {
		only, err := s.store.PaymentLinkToken(ctx, p.ID)
		if err != nil {
			return none, err
		}
		if only != "" && only != t {
			return none, paywatch.Errorf(paywatch.EINVALID, "%s", paywatch.MsgNotAvailable(paywatch.Pair{Network: n, Token: t}))
		}
	}
	if err := s.EnsureStarted(ctx, p); err != nil {
		return none, err
	}
	a, err := s.workflows.SelectNetwork(ctx, p.ID, workflows.SelectNetworkRequest{Network: n, Token: t})
	if workflowClosed(err) {
		if p, err = s.store.PaymentByID(ctx, id); err != nil {
			return none, err
		}
		if err := paywatch.SelectNetworkRefusal(!p.AwaitingNetwork(), p.Status, p.ExpiresAt, s.now()); err != nil {
			return none, err
		}
		return none, paywatch.Errorf(paywatch.ECONFLICT, "%s", paywatch.MsgNotPending) // the workflow ended: no longer pending
	}
	if err != nil {
		return none, err
	}
	return a, nil
}

// recheckPerMinute bounds the manual re-checks of one payment.
const recheckPerMinute = 6

// RecheckChain asks a project's payment's workflow to check the chain now
// for transfers to its address, as the final check does (the dashboard's
// "re-check chain", operations.md §6). The status changes only as a
// transfer found would; the payment is returned as the workflow then
// shows it. A payment whose workflow has ended is final.
func (s *Service) RecheckChain(ctx context.Context, projectID int64, id string) (*store.Payment, error) {
	p, err := s.store.GetPayment(ctx, projectID, id)
	if err != nil {
		return nil, err
	}
	// Each check reads the chain: a payment is checked at most
	// recheckPerMinute times a minute, however often the button is pressed.
	w, err := s.store.HitRate(ctx, "recheck:"+p.ID, time.Minute)
	if err != nil {
		return nil, err
	}
	if w.Count > recheckPerMinute {
		return nil, paywatch.Errorf(paywatch.ERATELIMIT, "%s", paywatch.MsgTooManyRequests)
	}
	if err := s.EnsureStarted(ctx, p); err != nil {
		return nil, err
	}
	state, err := s.workflows.Recheck(ctx, p.ID)
	if workflowClosed(err) {
		return nil, paywatch.Errorf(paywatch.ECONFLICT, "%s", paywatch.MsgFinalized)
	}
	if err != nil {
		return nil, err
	}
	if p, err = s.store.GetPayment(ctx, projectID, p.ID); err != nil {
		return nil, err
	}
	if state.Version > 0 && len(state.Transactions) > len(p.Transactions) {
		// Not saved yet: the update's own answer shows what was found.
		p.Transactions = state.Transactions
	}
	return p, nil
}

// RegenerateKeys gives a project a new API key, API secret and webhook
// secret; the old ones stop working at once. The project's owner gets a
// security alert e-mail; the keys are regenerated whether or not it can be
// queued (a failure is logged), and it names no secret.
func (s *Service) RegenerateKeys(ctx context.Context, slug string) (store.Credentials, error) {
	at := s.now()
	creds, alert, err := s.store.RegenerateKeys(ctx, slug, func(p *store.Project) *store.Mail {
		if p.Owner == nil {
			return nil
		}
		m := securityAlert(ownerLang(p), p, at)
		return &m
	})
	if err != nil {
		return creds, err
	}
	if alert != nil {
		s.StartMail(context.WithoutCancel(ctx), alert.ID)
	}
	return creds, nil
}

// ownerLang is the language of mail to a project's owner: the owner's own
// (recorded at sign-in), not that of whoever acted, who may be a thief the
// alert is about; English for an owner who never signed in.
func ownerLang(p *store.Project) locale.Lang {
	if p.Owner != nil {
		if l, ok := locale.Parse(p.Owner.Locale); ok {
			return l
		}
	}
	return locale.English
}

// securityAlert is the e-mail an owner gets when a project's keys are
// regenerated, in the owner's language.
func securityAlert(l locale.Lang, p *store.Project, at time.Time) store.Mail {
	return store.Mail{
		To:      p.Owner.Email,
		Subject: l.T("mail.keys.subject", "Project", p.Name),
		Text: l.T("mail.keys.text", "Project", p.Name, "Slug", p.Slug,
			"At", at.UTC().Format("2006-01-02 15:04:05")),
	}
}

// Mail queues an e-mail and starts its delivery. A failure to queue is
// logged; a queued message whose delivery did not start is started by the
// reconciler.
func (s *Service) Mail(ctx context.Context, m store.Mail) {
	queued, err := s.store.QueueMail(ctx, m)
	if err != nil {
		s.log.Error("e-mail not queued", "subject", m.Subject, "error", err)
		return
	}
	s.StartMail(ctx, queued.ID)
}

// StartMail starts the delivery of a message already queued (for example in
// the transaction that made the token it carries) and records it; a
// failure is logged, and the reconciler starts it later.
func (s *Service) StartMail(ctx context.Context, id string) {
	if s.workflows == nil {
		return
	}
	if err := s.workflows.SendMail(ctx, id); err != nil {
		s.log.Warn("start e-mail delivery; the reconciler will retry", "mailId", id, "error", err)
		return
	}
	if err := s.store.MarkMailStarted(ctx, id); err != nil {
		s.log.Warn("record e-mail delivery start", "mailId", id, "error", err)
	}
}

// EnsureStarted starts the payment's workflow unless its row says it runs.
func (s *Service) EnsureStarted(ctx context.Context, p *store.Payment) error {
	if s.workflows == nil {
		return fmt.Errorf("no workflow client")
	}
	if p.WorkflowStarted {
		return nil
	}
	if err := s.workflows.Start(ctx, p.WorkflowInput()); err != nil {
		return err
	}
	if err := s.store.MarkWorkflowStarted(ctx, p.ID); err != nil {
		return err
	}
	p.WorkflowStarted = true
	return nil
}

// startWorkflow starts a new payment's workflow and has it recorded after
// the answer (startedMarks). A failure is only logged: the row is the
// truth, and the reconciler starts any workflow whose row says it has none.
func (s *Service) startWorkflow(ctx context.Context, p *store.Payment) {
	if p.WorkflowStarted {
		return // an idempotent repeat
	}
	if s.workflows == nil {
		s.log.Warn("payment workflow not started; the reconciler will retry", "paymentId", p.ID, "error", "no workflow client")
		return
	}
	if err := s.workflows.Start(ctx, p.WorkflowInput()); err != nil {
		s.log.Warn("payment workflow not started; the reconciler will retry", "paymentId", p.ID, "error", err)
		return
	}
	s.marks.add(ctx, p.ID)
	p.WorkflowStarted = true
}

// Redeliver sends one of a project's webhook events again now, with its
// event_id and payload unchanged, signed with the project's current secret
// at every attempt, with a fresh set of up to 5 attempts on the usual
// schedule, logged after the event's earlier ones. A skipped event is sent
// too and counts toward the daily quota now. It is the one implementation
// of "send again": the operator endpoint, the merchant's and the
// dashboard's call it with the project they authenticated, so another
// project's event is "Event not found" for all of them.
//
// Once the event is marked pending the redelivery is durable: if its
// workflow cannot be started now, the reconciler starts it, so the caller
// still gets its answer. The event moves to a new delivery generation at
// the same time, so the run being replaced, whose attempt may be in flight
// or whose start here may fail, can no longer send the event nor mark it
// failed after the answer was given.
func (s *Service) Redeliver(ctx context.Context, projectID int64, eventID string) error {
	ev, err := s.store.PrepareRedelivery(ctx, projectID, eventID)
	if err != nil {
		return err
	}
	if s.workflows == nil {
		return nil
	}
	in := workflows.WebhookInput{EventID: ev.EventID, FirstAttempt: ev.NextAttempt, Redeliver: true, Generation: ev.Generation}
	if err := s.workflows.DeliverWebhook(ctx, in); err != nil {
		s.log.Warn("start webhook redelivery; the reconciler will retry", "eventId", ev.EventID, "error", err)
		return nil
	}
	if err := s.store.MarkWebhookStarted(ctx, ev.EventID, ev.Generation); err != nil {
		s.log.Warn("mark webhook redelivery started", "eventId", ev.EventID, "error", err)
	}
	return nil
}

// DeliverPendingWebhooks starts the deliveries a project's newly saved
// webhook URL makes possible: events raised while it had none were kept
// pending for this moment, even if their payment's workflow has ended. A
// failure is logged, not returned: the URL is saved, and the reconciler
// starts whatever is left.
func (s *Service) DeliverPendingWebhooks(ctx context.Context, projectID int64) {
	n, err := startPendingWebhooks(ctx, s.store, s.workflows, projectID, 0, 0)
	if err != nil {
		s.log.Warn("start pending webhooks; the reconciler will retry", "projectId", projectID, "error", err)
	}
	if n > 0 {
		s.log.Info("started pending webhooks", "projectId", projectID, "count", n)
	}
}

// startPendingWebhooks starts the deliveries of pending events whose
// project has a webhook URL (of one project, or of all for projectID 0),
// leaving out those changed within minAge, and returns how many it started.
// It stops at the first failure: Temporal is then unreachable, and the
// events stay pending for the next call.
func startPendingWebhooks(ctx context.Context, st *store.Store, wf Workflows, projectID int64, minAge, paymentMinAge time.Duration) (int, error) {
	if wf == nil {
		return 0, nil
	}
	evs, err := st.PendingWebhooksAged(ctx, projectID, minAge, paymentMinAge, pendingWebhookBatch)
	if err != nil {
		return 0, err
	}
	for i, ev := range evs {
		// An unstarted redelivery replaces the run it superseded, which
		// may still hold the workflow ID until its next attempt.
		in := workflows.WebhookInput{EventID: ev.EventID, FirstAttempt: ev.NextAttempt, Generation: ev.Generation, Redeliver: ev.Replace}
		if err := wf.DeliverWebhook(ctx, in); err != nil {
			return i, err
		}
		if ev.Replace {
			if err := st.MarkWebhookStarted(ctx, ev.EventID, ev.Generation); err != nil {
				return i + 1, err
			}
		}
	}
	return len(evs), nil
}
