package store

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// ChatState is the delivery state of a chat message.
type ChatState string

// The chat message states. Skipped messages were over the daily chat
// quota; failed ones met a permanent refusal (the bot blocked, the chat
// gone) or ran out of retries.
const (
	ChatPending ChatState = "pending"
	ChatSent    ChatState = "sent"
	ChatFailed  ChatState = "failed"
	ChatSkipped ChatState = "skipped"
)

// ChatMessage is a Telegram notification of one webhook event.
type ChatMessage struct {
	EventID   string
	ProjectID int64
	PaymentID string
	ChatID    string
	Text      string
	State     ChatState
	Attempts  int
	// TelegramMessageID is Telegram's id of the sent message; 0 until sent.
	TelegramMessageID int64
	// CurrentChatID is the project's chat now ("" when unlinked): a message
	// queued for a chat that was unlinked or replaced since is not sent.
	CurrentChatID string
	LastError     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// chatIDPattern is a Telegram chat id (a user, group or supergroup number)
// or a public channel's @username.
var chatIDPattern = regexp.MustCompile(`^(-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{4,31})$`)

// ValidateChatID checks a telegram_chat_id setting.
func ValidateChatID(id string) error {
	if !chatIDPattern.MatchString(id) {
		return invalid(paywatch.MsgChatID)
	}
	return nil
}

// ChatNotice is what QueueChatMessage needs to write a message: the
// project's name, for the text.
type ChatNotice struct {
	ProjectName string
}

// QueueChatMessage records the chat message of a queued webhook event when
// the event's project has a chat, and counts it against the owner's daily
// chat quota; over the quota it is recorded as skipped and never sent.
// queued is false when the project has no chat. Queueing an event again
// changes nothing and returns the stored state, so a retried activity
// counts the message once.
func (s *Store) QueueChatMessage(ctx context.Context, eventID string, text func(ChatNotice) string) (state ChatState, queued bool, err error) {
	now := s.now().UTC()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var projectID int64
		var paymentID, name string
		var chat *string
		err := tx.QueryRow(ctx, `
			SELECT e.project_id, COALESCE(e.payment_id::text, ''), pr.name, pr.telegram_chat_id
			FROM webhook_events e JOIN projects pr ON pr.id = e.project_id
			WHERE e.event_id = $1`, eventID).Scan(&projectID, &paymentID, &name, &chat)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("webhook event %s not found", eventID)
		}
		if err != nil {
			return err
		}
		var existing ChatState
		err = tx.QueryRow(ctx, `SELECT state FROM chat_messages WHERE event_id = $1`, eventID).Scan(&existing)
		switch {
		case err == nil:
			state, queued = existing, true
			return nil
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if chat == nil {
			return nil
		}
		state, queued = ChatPending, true
		within, err := countQuota(ctx, tx, projectID, "chat_notifications", now, chatQuota)
		if err != nil {
			return err
		}
		if !within {
			state = ChatSkipped
		}
		var lastError *string
		if state == ChatSkipped {
			msg := "skipped: daily chat notification quota exhausted"
			lastError = &msg
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO chat_messages (event_id, project_id, payment_id, chat_id, text_body, state, last_error, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
			eventID, projectID, paymentID, *chat, text(ChatNotice{ProjectName: name}), state, lastError, now)
		return err
	})
	if err != nil {
		return "", false, fmt.Errorf("queue chat message %s: %w", eventID, err)
	}
	return state, queued, nil
}

// chatQuota returns the account that owns a project and its daily chat
// limit (negative for unlimited); accountID is 0 without an owner.
func chatQuota(ctx context.Context, tx pgx.Tx, projectID int64) (accountID, limit int64, err error) {
	var plan string
	var overrides []byte
	err = tx.QueryRow(ctx, `
		SELECT a.id, a.plan, a.limits FROM projects pr JOIN accounts a ON a.id = pr.owner_id
		WHERE pr.id = $1`, projectID).Scan(&accountID, &plan, &overrides)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	var o paywatch.LimitOverrides
	if len(overrides) > 0 {
		if err := json.Unmarshal(overrides, &o); err != nil {
			return 0, 0, fmt.Errorf("account %d limits: %w", accountID, err)
		}
	}
	return accountID, paywatch.EffectiveLimits(paywatch.Plan(plan), o).ChatNotificationsPerDay, nil
}

const chatSelect = `SELECT m.event_id::text, m.project_id, COALESCE(m.payment_id::text, ''), m.chat_id, m.text_body, m.state, m.attempts,
	COALESCE(m.telegram_message_id, 0), COALESCE(m.last_error, ''), m.created_at, m.updated_at, COALESCE(pr.telegram_chat_id, '')
	FROM chat_messages m JOIN projects pr ON pr.id = m.project_id`

func scanChat(row pgx.Row) (ChatMessage, error) {
	var m ChatMessage
	err := row.Scan(&m.EventID, &m.ProjectID, &m.PaymentID, &m.ChatID, &m.Text, &m.State, &m.Attempts,
		&m.TelegramMessageID, &m.LastError, &m.CreatedAt, &m.UpdatedAt, &m.CurrentChatID)
	return m, err
}

// ChatMessageByID returns a chat message by its event id.
func (s *Store) ChatMessageByID(ctx context.Context, eventID string) (ChatMessage, error) {
	m, err := scanChat(s.pool.QueryRow(ctx, chatSelect+` WHERE m.event_id = $1`, eventID))
	if errors.Is(err, pgx.ErrNoRows) {
		return m, notFound(paywatch.MsgEventNotFound)
	}
	return m, err
}

// ChatMessagesOf lists a project's payment's chat messages, oldest first,
// for the dashboard's delivery log.
func (s *Store) ChatMessagesOf(ctx context.Context, projectID int64, paymentID string) ([]ChatMessage, error) {
	rows, err := s.pool.Query(ctx, chatSelect+` WHERE m.project_id = $1 AND m.payment_id = $2::uuid ORDER BY m.created_at, m.event_id`, projectID, paymentID)
	if err != nil {
		return nil, fmt.Errorf("list chat messages: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ChatMessage, error) { return scanChat(r) })
}

// MarkChatStarted records that a delivery workflow was started for the
// message.
func (s *Store) MarkChatStarted(ctx context.Context, eventID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE chat_messages SET started = true WHERE event_id = $1`, eventID)
	return err
}

// UnstartedChatMessages lists pending messages older than minAge whose
// delivery workflow was never started, oldest first, for the reconciler.
func (s *Store) UnstartedChatMessages(ctx context.Context, minAge time.Duration, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT event_id::text FROM chat_messages WHERE state = 'pending' AND NOT started AND created_at < $1
		ORDER BY created_at LIMIT $2`, s.now().UTC().Add(-minAge), limit)
	if err != nil {
		return nil, fmt.Errorf("list unstarted chat messages: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// RecordChatAttempt counts one attempt and its error, if any.
func (s *Store) RecordChatAttempt(ctx context.Context, eventID, errText string) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE chat_messages SET attempts = attempts + 1, last_error = NULLIF($2, ''), updated_at = $3
		WHERE event_id = $1 AND state = 'pending'`, eventID, CutResponseBody(errText), s.now().UTC())
	return err
}

// MarkChatSent records Telegram's acknowledgement with its message id.
func (s *Store) MarkChatSent(ctx context.Context, eventID string, telegramID int64) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE chat_messages SET state = 'sent', telegram_message_id = $2, last_error = NULL, updated_at = $3
		WHERE event_id = $1 AND state = 'pending'`, eventID, telegramID, s.now().UTC())
	return err
}

// MarkChatFailed records a permanent failure; the message is not retried.
func (s *Store) MarkChatFailed(ctx context.Context, eventID, reason string) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE chat_messages SET state = 'failed', last_error = $2, updated_at = $3
		WHERE event_id = $1 AND state = 'pending'`, eventID, CutResponseBody(reason), s.now().UTC())
	return err
}

// telegramCodeTTL is how long a chat link code works.
const telegramCodeTTL = time.Hour

// NewTelegramLinkCode stores the hash of a one-time code that links the
// chat which sends "/start <code>" to the project, valid for an hour.
func (s *Store) NewTelegramLinkCode(ctx context.Context, projectID int64, code string) (time.Time, error) {
	h := sha256.Sum256([]byte(code))
	exp := s.now().UTC().Add(telegramCodeTTL)
	_, err := s.pool.Exec(ctx, `INSERT INTO telegram_link_codes (code_hash, project_id, expires_at) VALUES ($1, $2, $3)`, h[:], projectID, exp)
	if err != nil {
		return time.Time{}, fmt.Errorf("store telegram link code: %w", err)
	}
	return exp, nil
}

// LinkTelegramChat uses a link code once: the project's chat becomes
// chatID. It returns the project's name; ok is false for an unknown, used
// or expired code.
func (s *Store) LinkTelegramChat(ctx context.Context, code, chatID string) (project string, ok bool, err error) {
	h := sha256.Sum256([]byte(code))
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var projectID int64
		err := tx.QueryRow(ctx, `
			UPDATE telegram_link_codes SET used_at = $2
			WHERE code_hash = $1 AND used_at IS NULL AND expires_at > $2
			RETURNING project_id`, h[:], s.now().UTC()).Scan(&projectID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		ok = true
		return tx.QueryRow(ctx, `
			UPDATE projects SET telegram_chat_id = $2, updated_at = $3 WHERE id = $1 RETURNING name`,
			projectID, chatID, s.now().UTC()).Scan(&project)
	})
	return project, ok, err
}

// UnlinkTelegramChat removes chatID from every project that sends to it
// (the chat sent /stop) and returns their names.
func (s *Store) UnlinkTelegramChat(ctx context.Context, chatID string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		UPDATE projects SET telegram_chat_id = NULL, updated_at = $2 WHERE telegram_chat_id = $1 RETURNING name`,
		chatID, s.now().UTC())
	if err != nil {
		return nil, fmt.Errorf("unlink telegram chat: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// TelegramOffset returns the bot's next getUpdates offset.
func (s *Store) TelegramOffset(ctx context.Context) (int64, error) {
	var off int64
	err := s.pool.QueryRow(ctx, `SELECT update_offset FROM telegram_state`).Scan(&off)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return off, err
}

// SetTelegramOffset stores the bot's next getUpdates offset.
func (s *Store) SetTelegramOffset(ctx context.Context, offset int64) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO telegram_state (id, update_offset) VALUES (true, $1)
		ON CONFLICT (id) DO UPDATE SET update_offset = GREATEST(telegram_state.update_offset, $1)`, offset)
	return err
}
