package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// EventTransferUnmatched is the event of an unmatched transfer: in the
// event log always, sent as a webhook when the project opted in.
const EventTransferUnmatched paywatch.Event = "transfer.unmatched"

// settleBatch is how many transfer verdicts one statement settles.
const settleBatch = 1000

// unmatchedOff is the logged "response" of a transfer.unmatched event of a
// project that did not opt in to its webhook.
const unmatchedOff = "transfer.unmatched webhooks are off for this project"

// DueUnmatched settles the verdicts of recorded transfers whose verdict is
// due and returns up to limit of them to tell: the unmatched ones not told
// yet, oldest first. Those whose verdict is final without a word (held by
// a payment that no longer takes transfers, or below the dust minimum)
// are marked settled here, so that each pass reads only the transfers
// still pending and the new ones. Transfers recorded before this existed
// are among them the first time, so nothing received before an upgrade
// stays silent.
func (s *Store) DueUnmatched(ctx context.Context, limit int) ([]ProjectTransfer, error) {
	late := s.lateWindowStart()
	due := "t.project_id IS NOT NULL AND t.notified_at IS NULL"
	// Settled in rounds of settleBatch, oldest first, so that the first
	// pass over a long history after an upgrade is many short statements.
	//
	// Each round first takes a share lock on the projects it may settle
	// for: a change of a project's dust minimum (UpdateProject, whose
	// reopenUnderLoweredMinimum makes settled dust due again) then either
	// waits for the round to commit, and so reopens what it settled, or
	// commits first, and the round's statement, which starts after the
	// lock, reads the new minimum; it settles only for the projects
	// locked. A project locked by a writer at that moment is skipped
	// (SKIP LOCKED) and settled by the next pass, so a settle never waits
	// for a project's lock, nor deadlocks with a writer that takes
	// several (UnlinkTelegramChat). Without it, a round that settled a
	// transfer as dust under the old minimum and committed after the
	// change looked left it unmatched and never told
	// (TestLoweredMinimumRacesTheSettle).
	for {
		var settled int64
		err := s.inTx(ctx, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `
				SELECT id FROM projects WHERE id IN (
				  SELECT DISTINCT project_id FROM chain_transfers t WHERE `+due+`)
				ORDER BY id FOR SHARE SKIP LOCKED`)
			if err != nil {
				return err
			}
			locked, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, `
				UPDATE chain_transfers t SET notified_at = $2
				FROM (`+classifiedSQL(due+" AND t.project_id = ANY($4)", "$1")+`
				      WHERE s.state = 'below_minimum'
				         OR (s.state = 'matched' AND NOT EXISTS (
				               SELECT 1 FROM payments p WHERE p.id::text = s.payment_id AND `+liveSQL("p", "$1")+`))
				      ORDER BY s.created_at LIMIT $3) v
				WHERE t.network = v.network AND t.tx_hash = v.tx_hash AND t.log_index = v.log_index`,
				late, s.clock().UTC(), settleBatch, locked)
			settled = tag.RowsAffected()
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("settle transfer verdicts: %w", err)
		}
		if settled < settleBatch {
			break
		}
	}
	rows, err := s.pool.Query(ctx, classifiedSQL(due, "$1")+`
		WHERE s.state = 'unmatched' ORDER BY s.created_at, s.network, s.tx_hash, s.log_index LIMIT $2`, late, limit)
	if err != nil {
		return nil, fmt.Errorf("list unmatched transfers to tell: %w", err)
	}
	return scanTransfers(rows)
}

// UnmatchedNotice is what telling an unmatched transfer writes: the
// event's stable id, its exact payload, and the chat message's text (""
// when chat notifications are off).
type UnmatchedNotice struct {
	EventID  string
	Payload  []byte
	ChatText string
}

// UnmatchedTold is how a transfer was told: its event's state (pending to
// be sent, or skipped: webhooks off or over the quota) and its chat
// message's ("" without a chat).
type UnmatchedTold struct {
	Webhook WebhookState
	Chat    ChatState
}

// TellUnmatched records, in one transaction, the transfer.unmatched event
// of transfer t and its chat message, and marks t told, once: under the
// transfer's row lock it checks again that t is still unmatched and not
// told (ok false otherwise: another replica told it, or a payment took it
// meanwhile). The event counts against the owner's daily webhook quota
// when the project opted in to it (skipped past the quota, as other
// events); without the opt-in it is logged as skipped and never sent. The
// chat message counts against the daily chat quota. The reconciler starts
// the deliveries of both.
func (s *Store) TellUnmatched(ctx context.Context, t ProjectTransfer, n UnmatchedNotice) (told UnmatchedTold, ok bool, err error) {
	now := s.clock().UTC()
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var notified *time.Time
		err := tx.QueryRow(ctx, `
			SELECT notified_at FROM chain_transfers WHERE network = $1 AND tx_hash = $2 AND log_index = $3 FOR UPDATE`,
			string(t.Network), t.TxHash, int64(t.LogIndex)).Scan(&notified)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && notified != nil) {
			return nil
		}
		if err != nil {
			return err
		}
		var state TransferState
		err = tx.QueryRow(ctx, `SELECT s.state FROM (`+classifiedSQL("t.project_id = $1", "$2")+
			` WHERE s.network = $3 AND s.tx_hash = $4 AND s.log_index = $5) s`,
			t.ProjectID, s.lateWindowStart(), string(t.Network), t.TxHash, int64(t.LogIndex)).Scan(&state)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && state != TransferUnmatched) {
			return nil
		}
		if err != nil {
			return err
		}
		var optIn bool
		var chat *string
		if err := tx.QueryRow(ctx, `SELECT unmatched_webhooks, telegram_chat_id FROM projects WHERE id = $1`,
			t.ProjectID).Scan(&optIn, &chat); err != nil {
			return err
		}
		told.Webhook = WebhookPending
		tag, err := tx.Exec(ctx, `
			INSERT INTO webhook_events (event_id, project_id, payment_id, event, sequence, payload, state, created_at, updated_at,
			                            network, tx_hash, log_index)
			VALUES ($1, $2, NULL, $3, 1, $4::jsonb, 'pending', $5, $5, $6, $7, $8)
			ON CONFLICT DO NOTHING`,
			n.EventID, t.ProjectID, string(EventTransferUnmatched), string(n.Payload), now,
			string(t.Network), t.TxHash, int64(t.LogIndex))
		if err != nil {
			return fmt.Errorf("record event: %w", err)
		}
		if tag.RowsAffected() == 0 {
			// Told before, under a record this database no longer has (a
			// devnet run's, whose chain state was reset): settled, not told
			// again.
			_, err := tx.Exec(ctx, `UPDATE chain_transfers SET notified_at = $4 WHERE network = $1 AND tx_hash = $2 AND log_index = $3`,
				string(t.Network), t.TxHash, int64(t.LogIndex), now)
			return err
		}
		skip := func(why string) error {
			told.Webhook = WebhookSkipped
			if _, err := tx.Exec(ctx, `UPDATE webhook_events SET state = 'skipped' WHERE event_id = $1`, n.EventID); err != nil {
				return err
			}
			return recordAttempt(ctx, tx, WebhookAttempt{EventID: n.EventID, Attempt: 1, ResponseBody: why, State: WebhookSkipped}, now)
		}
		if !optIn {
			if err := skip(unmatchedOff); err != nil {
				return err
			}
		} else if within, err := countQuota(ctx, tx, t.ProjectID, "webhooks", now, webhookQuota); err != nil {
			return err
		} else if !within {
			if err := skip(quotaSkippedBody); err != nil {
				return err
			}
		}
		if chat != nil && n.ChatText != "" {
			within, err := countQuota(ctx, tx, t.ProjectID, "chat_notifications", now, chatQuota)
			if err != nil {
				return err
			}
			told.Chat = ChatPending
			var lastError *string
			if !within {
				told.Chat = ChatSkipped
				msg := "skipped: daily chat notification quota exhausted"
				lastError = &msg
			}
			if _, err := tx.Exec(ctx, `
				INSERT INTO chat_messages (event_id, project_id, payment_id, chat_id, text_body, state, last_error, created_at, updated_at)
				VALUES ($1, $2, NULL, $3, $4, $5, $6, $7, $7)`,
				n.EventID, t.ProjectID, *chat, n.ChatText, string(told.Chat), lastError, now); err != nil {
				return fmt.Errorf("record chat message: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE chain_transfers SET notified_at = $4 WHERE network = $1 AND tx_hash = $2 AND log_index = $3`,
			string(t.Network), t.TxHash, int64(t.LogIndex), now); err != nil {
			return err
		}
		ok = true
		return nil
	})
	if err != nil {
		return UnmatchedTold{}, false, fmt.Errorf("tell unmatched transfer %s/%d: %w", t.TxHash, t.LogIndex, err)
	}
	return told, ok, nil
}

// CountUnmatched returns how many of a project's transfers were told as
// unmatched (the reconciler's transfer.unmatched events, DueUnmatched),
// are not marked handled, and are still unmatched as far as can be known
// without classifying: no payment counted one since (a reorg mined it
// again after a newer payment of the address started) and the project's
// dust minimum has not since been raised above it. That is what the
// Unmatched page lists by default, so the count can always be cleared
// there. It is the dashboard's count, shown on every project page, so it
// reads the told events and two index probes each rather than
// classifying every transfer. A transfer is counted within a reconciler
// pass (10 s) of turning unmatched; one a payment may take again after a
// reorg stays counted while it is pending.
func (s *Store) CountUnmatched(ctx context.Context, projectID int64) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
		SELECT count(*) FROM chain_transfers t
		JOIN webhook_events e ON e.network = t.network AND e.tx_hash = t.tx_hash AND e.log_index = t.log_index
		JOIN projects pr ON pr.id = t.project_id
		WHERE e.project_id = $1 AND e.event = 'transfer.unmatched'
		  AND t.project_id = $1 AND t.handled_at IS NULL AND NOT t.removed
		  AND NOT `+belowMinimumSQL()+`
		  AND NOT EXISTS (SELECT 1 FROM transfer_claims c
		                  WHERE c.network = t.network AND c.tx_hash = t.tx_hash AND c.log_index = t.log_index
		                    AND c.counted_at IS NOT NULL)`, projectID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count unmatched transfers: %w", err)
	}
	return n, nil
}

// reopenUnderLoweredMinimum runs in the transaction that changes project
// id's dust minimum from oldMin (nil: the global 0.10), after the change.
// When the minimum went down, the transfers DueUnmatched settled silently
// as dust that are at or above the new minimum are unmatched now (the
// verdict reads the current minimum): they are made due again, so that
// the next pass tells each once and the dashboard's count, which counts
// told transfers, agrees with the Unmatched page. Those told before, those
// a payment counted, and those marked handled are left alone. A raised
// minimum needs nothing: the verdict and the count both read it.
func reopenUnderLoweredMinimum(ctx context.Context, tx pgx.Tx, id int64, oldMin *paywatch.Amount) error {
	_, err := tx.Exec(ctx, `
		UPDATE chain_transfers t SET notified_at = NULL
		FROM projects pr
		WHERE pr.id = $1 AND t.project_id = $1 AND t.notified_at IS NOT NULL AND t.handled_at IS NULL
		  AND COALESCE(pr.min_amount, 0.10) < COALESCE($2::numeric, 0.10)
		  AND t.amount < COALESCE($2::numeric, 0.10) * power(10::numeric, `+decimalsSQL("t.network", "t.token")+`)
		  AND NOT `+belowMinimumSQL()+`
		  AND NOT EXISTS (SELECT 1 FROM webhook_events e
		                  WHERE e.network = t.network AND e.tx_hash = t.tx_hash AND e.log_index = t.log_index)
		  AND NOT EXISTS (SELECT 1 FROM transfer_claims c
		                  WHERE c.network = t.network AND c.tx_hash = t.tx_hash AND c.log_index = t.log_index
		                    AND c.counted_at IS NOT NULL)`,
		id, decimalText(oldMin))
	if err != nil {
		return fmt.Errorf("reopen settled dust: %w", err)
	}
	return nil
}
