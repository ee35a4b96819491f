package telegram_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/telegram"
	"github.com/paywatch/paywatch/telegram/telegramtest"
)

const token = "123456:AAH-secret_TokenValue"

func newClient(t *testing.T) (*telegram.Client, *telegramtest.Server) {
	t.Helper()
	fake := telegramtest.New(t, token)
	return telegram.New(fake.URL(), token, nil), fake
}

func TestGetMe(t *testing.T) {
	c, _ := newClient(t)
	me, err := c.GetMe(t.Context())
	require.NoError(t, err)
	assert.Equal(t, telegram.User{ID: 123456, IsBot: true, FirstName: "paywatch", Username: "paywatch_test_bot"}, me)
}

func TestSendMessage(t *testing.T) {
	c, fake := newClient(t)
	ctx := t.Context()

	m1, err := c.SendMessage(ctx, telegram.SendMessage{ChatID: "42", Text: "✅ Paid: 25.00 USDT on TRC20", DisableWebPagePreview: true})
	require.NoError(t, err)
	m2, err := c.SendMessage(ctx, telegram.SendMessage{ChatID: "@shop_alerts", Text: "second"})
	require.NoError(t, err)

	assert.Equal(t, int64(1), m1.MessageID)
	assert.Equal(t, int64(42), m1.Chat.ID)
	assert.Equal(t, "private", m1.Chat.Type)
	assert.Equal(t, "✅ Paid: 25.00 USDT on TRC20", m1.Text)
	assert.NotZero(t, m1.Date)
	require.NotNil(t, m1.From)
	assert.True(t, m1.From.IsBot)
	assert.Equal(t, int64(2), m2.MessageID)
	assert.Equal(t, "channel", m2.Chat.Type)

	sent := fake.Sent()
	require.Len(t, sent, 2)
	assert.Equal(t, "42", sent[0].ChatID)
	assert.True(t, sent[0].LinkPreviewDisabled)
	assert.Equal(t, "@shop_alerts", sent[1].ChatID)
	assert.False(t, sent[1].LinkPreviewDisabled)
}

// TestSendMessageWire pins the request body: ids as JSON numbers, names as
// strings, no parse_mode for plain text, the preview off through
// link_preview_options.
func TestSendMessageWire(t *testing.T) {
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/bot"+token+"/sendMessage", r.URL.Path)
		assert.Equal(t, http.MethodPost, r.Method)
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
		var b map[string]any
		dec := json.NewDecoder(r.Body)
		dec.UseNumber()
		assert.NoError(t, dec.Decode(&b))
		bodies = append(bodies, b)
		fmt.Fprint(w, `{"ok":true,"result":{"message_id":7,"date":1,"chat":{"id":-1001234567890,"type":"supergroup","title":"Shop"},"text":"x"}}`)
	}))
	defer srv.Close()
	c := telegram.New(srv.URL+"/", token, nil)

	_, err := c.SendMessage(t.Context(), telegram.SendMessage{ChatID: "-1001234567890", Text: "x", DisableWebPagePreview: true})
	require.NoError(t, err)
	_, err = c.SendMessage(t.Context(), telegram.SendMessage{ChatID: "@shop", Text: "y", ParseMode: "HTML"})
	require.NoError(t, err)

	require.Len(t, bodies, 2)
	assert.Equal(t, json.Number("-1001234567890"), bodies[0]["chat_id"])
	assert.Equal(t, map[string]any{"is_disabled": true}, bodies[0]["link_preview_options"])
	assert.NotContains(t, bodies[0], "parse_mode")
	assert.Equal(t, "@shop", bodies[1]["chat_id"])
	assert.Equal(t, "HTML", bodies[1]["parse_mode"])
	assert.NotContains(t, bodies[1], "link_preview_options")
}

func TestSendMessageRateLimited(t *testing.T) {
	c, fake := newClient(t)
	fake.FailNext("42", http.StatusTooManyRequests, "", 7)

	_, err := c.SendMessage(t.Context(), telegram.SendMessage{ChatID: "42", Text: "hi"})
	var e *telegram.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusTooManyRequests, e.Code)
	assert.Equal(t, 7*time.Second, e.RetryAfter)
	assert.Equal(t, "Too Many Requests: retry after 7", e.Description)
	d, ok := telegram.RetryAfter(err)
	assert.True(t, ok)
	assert.Equal(t, 7*time.Second, d)
	assert.True(t, telegram.IsTemporary(err))
	assert.False(t, telegram.IsPermanent(err))

	// The failure was for one attempt only.
	_, err = c.SendMessage(t.Context(), telegram.SendMessage{ChatID: "42", Text: "hi"})
	require.NoError(t, err)
	assert.Equal(t, 2, fake.Attempts("42"))
	assert.Len(t, fake.Sent(), 1)
}

func TestSendMessageBlocked(t *testing.T) {
	c, fake := newClient(t)
	fake.Block("42")

	_, err := c.SendMessage(t.Context(), telegram.SendMessage{ChatID: "42", Text: "hi"})
	var e *telegram.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusForbidden, e.Code)
	assert.Equal(t, "Forbidden: bot was blocked by the user", e.Description)
	assert.True(t, e.Permanent())
	assert.True(t, telegram.IsPermanent(err))
	assert.False(t, telegram.IsTemporary(err))
	_, ok := telegram.RetryAfter(err)
	assert.False(t, ok)
	assert.Equal(t, "telegram sendMessage: 403 Forbidden: bot was blocked by the user", err.Error())
}

func TestSendMessageServerError(t *testing.T) {
	c, fake := newClient(t)
	fake.FailNext("42", http.StatusBadGateway, "", 0)

	_, err := c.SendMessage(t.Context(), telegram.SendMessage{ChatID: "42", Text: "hi"})
	var e *telegram.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusBadGateway, e.Code)
	assert.True(t, e.Temporary())
	assert.True(t, telegram.IsTemporary(err))
	assert.False(t, telegram.IsPermanent(err))
}

func TestSendMessageMigratedGroup(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"ok":false,"error_code":400,"description":"Bad Request: group chat was upgraded to a supergroup chat","parameters":{"migrate_to_chat_id":-1009876543210}}`)
	}))
	defer srv.Close()

	_, err := telegram.New(srv.URL, token, nil).SendMessage(t.Context(), telegram.SendMessage{ChatID: "-42", Text: "hi"})
	var e *telegram.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, int64(-1009876543210), e.MigrateToChatID)
	assert.True(t, e.Permanent())
}

func TestWrongToken(t *testing.T) {
	fake := telegramtest.New(t, token)
	wrong := "999999:WRONG-token_value"
	c := telegram.New(fake.URL(), wrong, nil)

	_, err := c.GetMe(t.Context())
	var e *telegram.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusUnauthorized, e.Code)
	assert.Equal(t, "Unauthorized", e.Description)
	assert.True(t, e.Permanent())
	assert.NotContains(t, err.Error(), wrong)
	assert.NotContains(t, err.Error(), "WRONG")
}

// TestProxyErrorPage covers an answer that is not the Bot API's envelope,
// such as a reverse proxy's HTML page: the HTTP status decides.
func TestProxyErrorPage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, "<html>maintenance</html>")
	}))
	defer srv.Close()

	_, err := telegram.New(srv.URL, token, nil).GetMe(t.Context())
	var e *telegram.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusServiceUnavailable, e.Code)
	assert.True(t, telegram.IsTemporary(err))
}

func TestGetUpdatesLongPoll(t *testing.T) {
	c, fake := newClient(t)
	ctx := t.Context()

	type result struct {
		ups []telegram.Update
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		ups, err := c.GetUpdates(ctx, 0, 10, []string{"message"})
		done <- result{ups, err}
	}()
	time.Sleep(100 * time.Millisecond)
	fake.PushMessage(42, "/start abc")

	var r result
	select {
	case r = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("long poll did not return when an update arrived")
	}
	require.NoError(t, r.err)
	assert.Less(t, time.Since(start), 5*time.Second)
	require.Len(t, r.ups, 1)
	u := r.ups[0]
	require.NotNil(t, u.Message)
	assert.Equal(t, "/start abc", u.Message.Text)
	assert.Equal(t, int64(42), u.Message.Chat.ID)
	assert.Equal(t, "private", u.Message.Chat.Type)
	require.NotNil(t, u.Message.From)
	assert.False(t, u.Message.From.IsBot)
	assert.Equal(t, "Test", u.Message.From.FirstName)

	// Unconfirmed, the update comes again; confirmed by offset, it is gone.
	again, err := c.GetUpdates(ctx, 0, 0, nil)
	require.NoError(t, err)
	require.Len(t, again, 1)
	assert.Equal(t, u.UpdateID, again[0].UpdateID)

	none, err := c.GetUpdates(ctx, u.UpdateID+1, 0, nil)
	require.NoError(t, err)
	assert.Empty(t, none)
	none, err = c.GetUpdates(ctx, 0, 0, nil)
	require.NoError(t, err)
	assert.Empty(t, none)
}

func TestGetUpdatesConcurrentConflict(t *testing.T) {
	c, _ := newClient(t)
	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan error, 1)
	go func() {
		_, err := c.GetUpdates(ctx, 0, 10, nil)
		first <- err
	}()
	time.Sleep(200 * time.Millisecond)

	_, err := c.GetUpdates(t.Context(), 0, 0, nil)
	var e *telegram.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusConflict, e.Code)
	assert.Contains(t, e.Description, "terminated by other getUpdates request")

	// The caller ending its poll is shutdown, not a flaky network.
	cancel()
	err = <-first
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, telegram.IsTemporary(err))

	// Once the first poll is gone, polling works again.
	_, err = c.GetUpdates(t.Context(), 0, 0, nil)
	require.NoError(t, err)
}

func TestNetworkError(t *testing.T) {
	fake := telegramtest.New(t, token)
	c := telegram.New(fake.URL(), token, nil)
	fake.Close()

	_, err := c.SendMessage(t.Context(), telegram.SendMessage{ChatID: "42", Text: "hi"})
	require.Error(t, err)
	var ne *telegram.NetworkError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "sendMessage", ne.Method)
	assert.True(t, telegram.IsTemporary(err))
	assert.False(t, telegram.IsPermanent(err))
	assert.NotContains(t, err.Error(), token)
	assert.NotContains(t, err.Error(), "/bot")
}

func TestTimeoutIsTemporary(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets the server notice the client hanging up.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := telegram.New(srv.URL, token, nil)
	c.Timeout = 50 * time.Millisecond

	_, err := c.GetMe(t.Context())
	var ne *telegram.NetworkError
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout())
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.True(t, telegram.IsTemporary(err))
	assert.NotContains(t, err.Error(), token)
}

// TestLongPollOutlivesTimeout shows the per-request timeout is added to the
// poll's wait, so a long poll is not cut off as a timeout.
func TestLongPollOutlivesTimeout(t *testing.T) {
	c, _ := newClient(t)
	c.Timeout = 500 * time.Millisecond
	start := time.Now()
	ups, err := c.GetUpdates(t.Context(), 0, 1, nil)
	require.NoError(t, err)
	assert.Empty(t, ups)
	assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond)
}

type failingTransport struct{}

// RoundTrip fails with the request URL in the text, as some transport
// errors do, to prove the client redacts what it did not build itself.
func (failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("proxy refused %s (path %s)", r.URL, r.URL.EscapedPath())
}

func TestTransportErrorRedacted(t *testing.T) {
	c := telegram.New("http://telegram.invalid", token, &http.Client{Transport: failingTransport{}})
	_, err := c.GetMe(t.Context())
	require.Error(t, err)
	assert.True(t, telegram.IsTemporary(err))
	assert.NotContains(t, err.Error(), token)
	assert.NotContains(t, err.Error(), "secret_TokenValue")
	assert.Contains(t, err.Error(), "<token>")
}

func TestInvalidAPIURL(t *testing.T) {
	c := telegram.New("http://bad host\x7f", token, nil)
	_, err := c.GetMe(t.Context())
	require.Error(t, err)
	assert.NotContains(t, err.Error(), token)
	assert.False(t, telegram.IsTemporary(err))
}

func TestRedact(t *testing.T) {
	tests := []struct {
		name, in, token, want string
	}{
		{"plain", `Post "https://api.telegram.org/bot1:abc/sendMessage": EOF`, "1:abc", `Post "https://api.telegram.org/bot<token>/sendMessage": EOF`},
		{"escaped", "GET /bot1%3Aabc/getMe", "1:abc", "GET /bot<token>/getMe"},
		{"twice", "1:abc 1:abc", "1:abc", "<token> <token>"},
		{"absent", "connection refused", "1:abc", "connection refused"},
		{"empty token", "anything", "", "anything"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, telegram.Redact(tt.in, tt.token))
		})
	}
}

func TestErrorClasses(t *testing.T) {
	tests := []struct {
		code                 int
		permanent, temporary bool
	}{
		{400, true, false},
		{401, true, false},
		{403, true, false},
		{404, true, false},
		{409, false, false},
		{429, false, true},
		{500, false, true},
		{502, false, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.code), func(t *testing.T) {
			e := &telegram.Error{Method: "sendMessage", Code: tt.code}
			assert.Equal(t, tt.permanent, e.Permanent())
			assert.Equal(t, tt.temporary, e.Temporary())
			wrapped := fmt.Errorf("notify: %w", e)
			assert.Equal(t, tt.permanent, telegram.IsPermanent(wrapped))
			assert.Equal(t, tt.temporary, telegram.IsTemporary(wrapped))
		})
	}
	assert.False(t, telegram.IsTemporary(errors.New("other")))
	assert.False(t, telegram.IsTemporary(nil))
}

// TestDefaultAPIURL checks that an empty URL means Telegram itself, without
// calling it: the transport records where the request would have gone.
func TestDefaultAPIURL(t *testing.T) {
	var got string
	c := telegram.New("", token, &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.URL.String()
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(`{"ok":true,"result":{"id":1,"is_bot":true,"first_name":"b"}}`))}, nil
	})})
	_, err := c.GetMe(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "https://api.telegram.org/bot"+token+"/getMe", got)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
