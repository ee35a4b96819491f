package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"go.temporal.io/api/serviceerror"
	"golang.org/x/sync/errgroup"

	"github.com/paywatch/paywatch/workflows"
)

// signal is one signal to one payment workflow.
type signal struct {
	paymentID string
	name      string
	arg       any
}

// errWorkflowNotStarted fails a batch with a signal for a payment whose
// workflow has not started yet.
var errWorkflowNotStarted = errors.New("payment workflow not started yet")

// send delivers signals, a few at a time. A workflow that has ended (paid,
// cancelled, or past its late window) no longer listens: NotFound from it is
// not an error. NotFound from a workflow that has not started yet is: see
// checkNotFound.
func (s *Scanner) send(ctx context.Context, signals []signal) error {
	notFound, err := s.deliver(ctx, signals)
	if err != nil {
		return err
	}
	started, err := s.checkNotFound(ctx, notFound)
	if err != nil || len(started) == 0 {
		return err
	}
	// A row marked started whose signal found no workflow: either the
	// workflow ended, or it started between the signal and the read of the
	// row (the API's or the reconciler's start, then its mark, landing in
	// that window; it opens wide while Temporal is slow to answer, as after
	// its restart). The row is marked only after a start succeeded, so the
	// workflow has existed since: signalled again, one that still answers
	// NotFound has ended.
	var again []signal
	for _, sg := range signals {
		if slices.Contains(started, sg.paymentID) {
			again = append(again, sg)
		}
	}
	_, err = s.deliver(ctx, again)
	return err
}

// deliver sends signals, a few at a time, and returns the payments whose
// workflow answered NotFound.
func (s *Scanner) deliver(ctx context.Context, signals []signal) ([]string, error) {
	if len(signals) == 0 {
		return nil, nil
	}
	var (
		mu       sync.Mutex
		notFound []string
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(signalConcurrency)
	for _, sg := range signals {
		g.Go(func() error {
			sctx, cancel := context.WithTimeout(gctx, signalTimeout)
			defer cancel()
			err := s.signals.SignalWorkflow(sctx, workflows.PaymentWorkflowID(sg.paymentID), "", sg.name, sg.arg)
			var nf *serviceerror.NotFound
			if errors.As(err, &nf) {
				mu.Lock()
				notFound = append(notFound, sg.paymentID)
				mu.Unlock()
				return nil
			}
			if err != nil {
				return fmt.Errorf("signal %s to payment %s: %w", sg.name, sg.paymentID, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return notFound, nil
}

// checkNotFound tells the payments whose workflow answered NotFound apart,
// and returns those whose row says started (see send),
// with one query for the batch: a workflow that ended leaves its row marked
// started, and its signal is rightly dropped; a row not marked started is a
// workflow yet to start, and the batch fails (errWorkflowNotStarted), so
// that it is scanned and signalled again after the backoff rather than the
// cursor passing a transfer the payment never heard of. Rows without a
// workflow for longer than workflowStartGrace are dropped with an error log.
func (s *Scanner) checkNotFound(ctx context.Context, ids []string) (started []string, err error) {
	if len(ids) == 0 {
		return nil, nil
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	unstarted, err := s.store.PaymentsWithoutWorkflow(ctx, ids)
	if err != nil {
		return nil, err
	}
	oldest := s.now().Add(-workflowStartGrace)
	var waiting []string
	for _, id := range ids {
		created, ok := unstarted[id]
		switch {
		case !ok:
			started = append(started, id)
		case created.After(oldest):
			waiting = append(waiting, id)
		default:
			s.log.Error("payment workflow never started; signal dropped", "paymentId", id, "createdAt", created)
		}
	}
	if len(waiting) > 0 {
		return nil, fmt.Errorf("%w: payments %s", errWorkflowNotStarted, strings.Join(waiting, ", "))
	}
	return started, nil
}
