package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/telegram/telegramtest"
)

// Chat notifications on the whole `paywatch dev`, against an in-process
// fake of the Bot API that speaks Telegram's wire format: the operator
// makes a t.me link, the merchant presses Start (the fake delivers
// "/start <code>" to the bot's poller), a devnet transfer pays a payment
// and the chat receives the message; a 429 is retried after its
// retry_after, a blocked bot is recorded and not retried, and over the
// daily quota a message is skipped.
func TestTelegramNotificationsOnDev(t *testing.T) {
	const token, chat = "123456:test-token", int64(4242)
	bot := telegramtest.New(t, token)
	cfg := devConfig(t, t.TempDir())
	cfg.DevnetBlockInterval = 0
	cfg.TelegramBotToken, cfg.TelegramAPIURL = token, bot.URL()
	m, out := startMain(t, cfg, nil)
	base := "http://" + m.APIAddr()
	c := apiClient{t: t, base: base}
	master := map[string]string{"x-master-key": m.Config.MasterKey}
	devnet := devnetCLI(base)

	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": "tg@merchant.test", "plan": "free"})
	require.Equal(t, http.StatusCreated, code, body)
	code, body = c.do("POST", "/v1/projects", master, map[string]any{"name": "Tee shop", "slug": "tees", "owner_email": "tg@merchant.test"})
	require.Equal(t, http.StatusCreated, code, body)
	merchant := map[string]string{"x-api-key": body["api_key"].(string)}
	code, body = c.do("PUT", "/v1/projects/tees/wallet", master, map[string]any{"xpubs": map[string]any{"tron": accountXPub(t, 195)}})
	require.Equal(t, http.StatusOK, code, body)

	// Linking: the link carries a one-time code for /start.
	code, body = c.do("POST", "/v1/projects/tees/telegram-link", master, nil)
	require.Equal(t, http.StatusOK, code, body)
	link := body["url"].(string)
	start := regexp.MustCompile(`^https://t\.me/` + telegramtest.DefaultUsername + `\?start=([A-Za-z0-9_-]+)$`).FindStringSubmatch(link)
	require.NotNil(t, start, link)
	bot.PushMessage(chat, "/start "+start[1])
	sent := bot.WaitSent(t, 1, 30*time.Second)
	assert.Contains(t, sent[0].Text, "Tee shop")
	code, body = c.do("GET", "/v1/projects", master, nil)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, fmt.Sprint(body["projects"]), "telegram_chat_id:4242")

	create := func(ref string) (string, string) {
		t.Helper()
		code, body := c.do("POST", "/v1/payments", merchant, map[string]any{"amount": 12.5, "external_ref": ref, "external_order_id": "ORDER-" + ref, "network": "TRC20"})
		require.Equal(t, http.StatusCreated, code, body)
		p := body["payment"].(map[string]any)
		return p["id"].(string), p["address"].(string)
	}
	pay := func(address string) {
		t.Helper()
		code, _, errOut := devnet("send", "--network", "TRC20", "--token", "USDT", "--to", address, "--amount", "12.5")
		require.Equal(t, 0, code, errOut)
		code, _, errOut = devnet("blocks", "--network", "TRC20", "--count", "20")
		require.Equal(t, 0, code, errOut)
	}
	chatState := func(paymentID string) store.ChatMessage {
		t.Helper()
		var msg store.ChatMessage
		require.Eventually(t, func() bool {
			p, err := m.store.PaymentByID(context.Background(), paymentID)
			require.NoError(t, err)
			ms, err := m.store.ChatMessagesOf(context.Background(), p.ProjectID, paymentID)
			require.NoError(t, err)
			if len(ms) == 0 || ms[0].State == store.ChatPending {
				return false
			}
			msg = ms[0]
			return true
		}, 60*time.Second, 200*time.Millisecond, out.String())
		return msg
	}

	// A paid payment becomes a message naming the project, the amount, the
	// network, the order and the transaction; a 429 first is retried after
	// its retry_after.
	bot.FailNext("4242", http.StatusTooManyRequests, "", 1)
	id, address := create("a")
	pay(address)
	msg := chatState(id)
	require.Equal(t, store.ChatSent, msg.State, msg.LastError)
	assert.Equal(t, 1, msg.Attempts, "the 429 is counted")
	sent = bot.Sent()
	text := sent[len(sent)-1].Text
	t.Logf("the message as Telegram shows it:\n%s", text)
	for _, want := range []string{"Paid", "12.50 USDT", "TRC20", "Tee shop", "ORDER-a", "tronscan.org/#/transaction/"} {
		assert.Contains(t, text, want)
	}
	assert.Equal(t, 2, bot.Attempts("4242")-1, "the 429 and the send")
	assert.Regexp(t, `level=WARN msg="Activity error\." .*ActivityType=chat\.send .*type: RateLimited`, out.String(), "the 429 is an expected retry")
	assert.NotRegexp(t, `level=ERROR msg="Activity error\." .*ActivityType=chat\.send`, out.String())

	// A blocked bot is recorded, and not retried.
	bot.Block("4242")
	before := bot.Attempts("4242")
	id, _ = create("b")
	code, body = c.do("PATCH", "/v1/payments/"+id, merchant, map[string]any{"status": "cancelled"})
	require.Equal(t, http.StatusOK, code, body)
	msg = chatState(id)
	assert.Equal(t, store.ChatFailed, msg.State)
	assert.Contains(t, msg.LastError, "403")
	time.Sleep(6 * time.Second) // past the first retry interval
	assert.Equal(t, before+1, bot.Attempts("4242"), "a 403 is not retried")
	bot.Unblock("4242")

	// A message waiting for a retry is not sent once the project's chat
	// changed: it was meant for the old chat's readers.
	bot.FailNext("4242", http.StatusBadGateway, "", 0)
	before = bot.Attempts("4242")
	id, _ = create("d")
	code, body = c.do("PATCH", "/v1/payments/"+id, merchant, map[string]any{"status": "cancelled"})
	require.Equal(t, http.StatusOK, code, body)
	require.Eventually(t, func() bool { return bot.Attempts("4242") == before+1 }, 30*time.Second, 100*time.Millisecond)
	code, body = c.do("PATCH", "/v1/projects/tees", master, map[string]any{"telegram_chat_id": "5555"})
	require.Equal(t, http.StatusOK, code, body)
	msg = chatState(id)
	assert.Equal(t, store.ChatFailed, msg.State)
	assert.Contains(t, msg.LastError, "chat changed")
	assert.Equal(t, before+1, bot.Attempts("4242"))
	assert.Zero(t, bot.Attempts("5555"))
	code, body = c.do("PATCH", "/v1/projects/tees", master, map[string]any{"telegram_chat_id": "4242"})
	require.Equal(t, http.StatusOK, code, body)

	// Over the daily quota, a message is skipped.
	code, body = c.do("PATCH", "/v1/accounts/tg@merchant.test", master, map[string]any{"limits": map[string]any{"chat_notifications_per_day": 0}})
	require.Equal(t, http.StatusOK, code, body)
	before = bot.Attempts("4242")
	id, _ = create("c")
	code, body = c.do("PATCH", "/v1/payments/"+id, merchant, map[string]any{"status": "cancelled"})
	require.Equal(t, http.StatusOK, code, body)
	msg = chatState(id)
	assert.Equal(t, store.ChatSkipped, msg.State)
	assert.Equal(t, before, bot.Attempts("4242"))

	// /stop unlinks the chat.
	bot.PushMessage(chat, "/stop")
	require.Eventually(t, func() bool {
		p, err := m.store.ProjectBySlug(context.Background(), "tees")
		return err == nil && p.TelegramChatID == ""
	}, 30*time.Second, 200*time.Millisecond)
	assert.True(t, strings.Contains(bot.Sent()[len(bot.Sent())-1].Text, "no longer"))
}
