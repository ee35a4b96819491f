package activities

import (
	"context"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/paywatch/paywatch/telegram"
	"github.com/paywatch/paywatch/workflows"
)

// pollStretch is how long one PollTelegram runs before it returns, and
// pollWait the long-poll wait of each getUpdates inside it.
const (
	pollStretch = 9 * time.Minute
	pollWait    = 25
	// replyTimeout bounds an answer to /start or /stop, so a slow one
	// cannot outlast the poll's heartbeat.
	replyTimeout = 10 * time.Second
)

// PollTelegram reads the bot's updates by long polling, from the stored
// offset, for one stretch, heartbeating after each read. A chat that sends
// "/start <code>" (the t.me link of the dashboard or paywatch admin) is
// linked to the code's project; "/stop" unlinks it from every project. The
// offset is stored after each update is handled, so a lost worker reads an
// update again at most once, and handling one twice changes nothing.
func (a *Activities) PollTelegram(ctx context.Context) error {
	if a.telegram == nil {
		return temporal.NewNonRetryableApplicationError("chat notifications are off on this worker (PAYWATCH_TELEGRAM_BOT_TOKEN)", workflows.ErrTypeChatOff, nil)
	}
	end := a.now().Add(pollStretch)
	for a.now().Before(end) {
		activity.RecordHeartbeat(ctx)
		offset, err := a.store.TelegramOffset(ctx)
		if err != nil {
			return err
		}
		updates, err := a.telegram.GetUpdates(ctx, offset, pollWait, []string{"message"})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		for _, u := range updates {
			activity.RecordHeartbeat(ctx)
			if u.Message != nil {
				a.handleChatCommand(ctx, u.Message)
			}
			if err := a.store.SetTelegramOffset(ctx, u.UpdateID+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// handleChatCommand links or unlinks a chat and answers it. Other messages
// are ignored.
func (a *Activities) handleChatCommand(ctx context.Context, m *telegram.Message) {
	chatID := strconv.FormatInt(m.Chat.ID, 10)
	fields := strings.Fields(m.Text)
	if len(fields) == 0 {
		return
	}
	// "/start@paywatch_bot code" in groups names the bot.
	command, _, _ := strings.Cut(fields[0], "@")
	var reply string
	switch command {
	case "/start":
		if len(fields) < 2 {
			reply = "Hello! To get a project's payment notifications here, open the Telegram link shown in the paywatch dashboard (project settings) or by paywatch admin."
			break
		}
		project, ok, err := a.store.LinkTelegramChat(ctx, fields[1], chatID)
		switch {
		case err != nil:
			activity.GetLogger(ctx).Warn("link telegram chat", "chatId", chatID, "error", err)
			reply = "Something went wrong. Please try the link again in a minute."
		case !ok:
			reply = "This link has expired or was already used. Make a new one in the paywatch dashboard."
		default:
			activity.GetLogger(ctx).Info("telegram chat linked", "chatId", chatID, "project", project)
			reply = "This chat now gets the payment notifications of " + project + ". Send /stop to end them."
		}
	case "/stop":
		names, err := a.store.UnlinkTelegramChat(ctx, chatID)
		switch {
		case err != nil:
			activity.GetLogger(ctx).Warn("unlink telegram chat", "chatId", chatID, "error", err)
			reply = "Something went wrong. Please send /stop again in a minute."
		case len(names) == 0:
			reply = "This chat gets no payment notifications."
		default:
			activity.GetLogger(ctx).Info("telegram chat unlinked", "chatId", chatID, "projects", names)
			reply = "This chat no longer gets the payment notifications of " + strings.Join(names, ", ") + "."
		}
	default:
		return
	}
	rctx, cancel := context.WithTimeout(ctx, replyTimeout)
	defer cancel()
	if _, err := a.telegram.SendMessage(rctx, telegram.SendMessage{ChatID: chatID, Text: reply}); err != nil {
		activity.GetLogger(ctx).Warn("answer telegram chat", "chatId", chatID, "error", err)
	}
}
