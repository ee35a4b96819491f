package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// TransferID names one recorded transfer: its network, transaction hash
// and log index (the key it was recorded under).
type TransferID struct {
	Network  paywatch.Network
	TxHash   string
	LogIndex uint32
}

// ID returns the transfer's TransferID.
func (t ProjectTransfer) ID() TransferID {
	return TransferID{Network: t.Network, TxHash: t.TxHash, LogIndex: t.LogIndex}
}

// TransferEventKind names a step of a transfer's timeline.
type TransferEventKind string

// The steps of a transfer's timeline.
const (
	// TransferEventSeen: a scanner recorded the transfer (SeenAt).
	TransferEventSeen TransferEventKind = "seen"
	// TransferEventTold: its transfer.unmatched event was written to the
	// project's event log (TellUnmatched), whether or not it was sent.
	TransferEventTold TransferEventKind = "told"
	// TransferEventHandled: someone marked it handled (MarkTransferHandled).
	TransferEventHandled TransferEventKind = "handled"
)

// TransferEvent is one step of a transfer's timeline.
type TransferEvent struct {
	At    time.Time
	Event TransferEventKind
	// EventID is the transfer.unmatched event's id (told).
	EventID string
	// By and Note are the mark's (handled).
	By, Note string
}

// markTransfer makes m the current mark of the transfer and adds it to the
// transfer's marks, in tx (which holds the transfer's row lock): the
// columns are what the list shows and filters on, the rows are the
// history that a later mark no longer erases.
//
// A mark by the same hand with the same note as the current one adds
// nothing (issue 38): a retried request, or a double click, does not grow
// the timeline.
func markTransfer(ctx context.Context, tx pgx.Tx, projectID int64, n paywatch.Network, txHash string, logIndex int64, m TransferMark) error {
	var same bool
	if err := tx.QueryRow(ctx, `
		SELECT handled_at IS NOT NULL AND handled_by IS NOT DISTINCT FROM $4 AND handled_note IS NOT DISTINCT FROM $5
		FROM chain_transfers
		WHERE network = $1 AND tx_hash = $2 AND log_index = $3`,
		string(n), txHash, logIndex, m.By, m.Note).Scan(&same); err != nil {
		return err
	}
	if same {
		return nil
	}
	if _, err := tx.Exec(ctx, `
		UPDATE chain_transfers SET handled_at = $4, handled_by = $5, handled_note = $6
		WHERE network = $1 AND tx_hash = $2 AND log_index = $3`,
		string(n), txHash, logIndex, m.At, m.By, m.Note); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO chain_transfer_marks (network, tx_hash, log_index, project_id, at, marked_by, note)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		string(n), txHash, logIndex, projectID, m.At, m.By, m.Note)
	return err
}

// Timeline pages (GET /v1/transfers/{network}/{tx_hash}'s
// timeline_limit and timeline_offset).
const (
	// DefaultTimelineLimit is how many steps of a transfer's timeline a
	// page holds unless asked otherwise.
	DefaultTimelineLimit = 100
	// MaxTimelineLimit is the most steps one page holds.
	MaxTimelineLimit = 500
)

// TransferTimeline returns what happened to one of a project's recorded
// transfers, oldest first: when a scanner recorded it, when its
// transfer.unmatched event was written (if it was), and every mark of it
// as handled, the current one last. Steps at the same instant keep that
// order. It returns the page of at most limit steps from offset on, and
// how many steps there are in all: a transfer marked many times (each
// mark is kept) is read a page at a time. ENOTFOUND "Transfer not found"
// when the project has no such transfer (or a reorg removed it).
func (s *Store) TransferTimeline(ctx context.Context, projectID int64, id TransferID, limit, offset int) ([]TransferEvent, int, error) {
	// Every transfer's timeline holds its own row's step: without it the
	// project has no such transfer (or a reorg removed it), whatever
	// events and marks it once had.
	var found bool
	if err := s.pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM chain_transfers t
		               WHERE t.network = $2 AND t.tx_hash = $3 AND t.log_index = $4 AND t.project_id = $1 AND NOT t.removed)`,
		projectID, string(id.Network), id.TxHash, int64(id.LogIndex)).Scan(&found); err != nil {
		return nil, 0, fmt.Errorf("read transfer timeline: %w", err)
	}
	if !found {
		return nil, 0, notFound(paywatch.MsgTransferNotFound)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT at, event, event_id, marked_by, note, count(*) OVER () FROM (
			SELECT t.created_at AS at, 'seen' AS event, NULL::text AS event_id, NULL::text AS marked_by, NULL::text AS note,
			       0 AS step, 0::bigint AS seq
			FROM chain_transfers t
			WHERE t.network = $2 AND t.tx_hash = $3 AND t.log_index = $4 AND t.project_id = $1 AND NOT t.removed
			UNION ALL
			SELECT e.created_at, 'told', e.event_id::text, NULL, NULL, 1, 0
			FROM webhook_events e
			WHERE e.network = $2 AND e.tx_hash = $3 AND e.log_index = $4 AND e.project_id = $1 AND e.event = $5
			UNION ALL
			SELECT m.at, 'handled', NULL, m.marked_by, m.note, 2, m.id
			FROM chain_transfer_marks m
			WHERE m.network = $2 AND m.tx_hash = $3 AND m.log_index = $4 AND m.project_id = $1
		) steps ORDER BY at, step, seq LIMIT $6 OFFSET $7`,
		projectID, string(id.Network), id.TxHash, int64(id.LogIndex), string(EventTransferUnmatched), limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("read transfer timeline: %w", err)
	}
	total := 0
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TransferEvent, error) {
		var (
			e                 TransferEvent
			kind              string
			eventID, by, note *string
		)
		if err := r.Scan(&e.At, &kind, &eventID, &by, &note, &total); err != nil {
			return e, err
		}
		e.At, e.Event = e.At.UTC(), TransferEventKind(kind)
		if eventID != nil {
			e.EventID = *eventID
		}
		if by != nil {
			e.By = *by
		}
		if note != nil {
			e.Note = *note
		}
		return e, nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read transfer timeline: %w", err)
	}
	if len(out) == 0 && offset > 0 {
		// Past the end: the total is the steps there are.
		if err := s.pool.QueryRow(ctx, `
			SELECT 1 + (SELECT count(*) FROM webhook_events e
			            WHERE e.network = $2 AND e.tx_hash = $3 AND e.log_index = $4 AND e.project_id = $1 AND e.event = $5)
			         + (SELECT count(*) FROM chain_transfer_marks m
			            WHERE m.network = $2 AND m.tx_hash = $3 AND m.log_index = $4 AND m.project_id = $1)`,
			projectID, string(id.Network), id.TxHash, int64(id.LogIndex), string(EventTransferUnmatched)).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("read transfer timeline: %w", err)
		}
	}
	return out, total, nil
}

// TransferMarks returns the marks of a project's transfers ids, each
// transfer's oldest first (its current mark last), in one read: the
// history a page of transfers shows. Transfers never marked are absent.
func (s *Store) TransferMarks(ctx context.Context, projectID int64, ids []TransferID) (map[TransferID][]TransferMark, error) {
	out := map[TransferID][]TransferMark{}
	if len(ids) == 0 {
		return out, nil
	}
	var (
		networks, hashes []string
		indexes          []int64
	)
	for _, id := range ids {
		networks = append(networks, string(id.Network))
		hashes = append(hashes, id.TxHash)
		indexes = append(indexes, int64(id.LogIndex))
	}
	rows, err := s.pool.Query(ctx, `
		SELECT m.network, m.tx_hash, m.log_index, m.at, m.marked_by, m.note
		FROM unnest($2::text[], $3::text[], $4::bigint[]) AS k(network, tx_hash, log_index)
		JOIN chain_transfer_marks m ON m.network = k.network AND m.tx_hash = k.tx_hash AND m.log_index = k.log_index
		WHERE m.project_id = $1
		ORDER BY m.id`, projectID, networks, hashes, indexes)
	if err != nil {
		return nil, fmt.Errorf("read transfer marks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			network string
			id      TransferID
			idx     int64
			m       TransferMark
		)
		if err := rows.Scan(&network, &id.TxHash, &idx, &m.At, &m.By, &m.Note); err != nil {
			return nil, fmt.Errorf("read transfer marks: %w", err)
		}
		id.Network, id.LogIndex, m.At = paywatch.Network(network), uint32(idx), m.At.UTC()
		out[id] = append(out[id], m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read transfer marks: %w", err)
	}
	return out, nil
}
