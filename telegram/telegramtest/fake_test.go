package telegramtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/telegram/telegramtest"
)

const token = "4242:fake-TOKEN"

// call POSTs a JSON body straight to the fake, so these tests pin the wire
// format independently of the telegram client.
func call(t *testing.T, ctx context.Context, base, tok, method, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/bot"+tok+"/"+method, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

func TestAuthAndRouting(t *testing.T) {
	s := telegramtest.New(t, token)

	code, body := call(t, t.Context(), s.URL(), "1:wrong", "getMe", `{}`)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Equal(t, map[string]any{"ok": false, "error_code": 401.0, "description": "Unauthorized"}, body)

	code, body = call(t, t.Context(), s.URL(), token, "sendSticker", `{}`)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, map[string]any{"ok": false, "error_code": 404.0, "description": "Not Found"}, body)

	code, body = call(t, t.Context(), s.URL(), token, "getme", `{}`)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, true, body["ok"])
	me := body["result"].(map[string]any)
	assert.Equal(t, 4242.0, me["id"])
	assert.Equal(t, true, me["is_bot"])
	assert.Equal(t, telegramtest.DefaultUsername, me["username"])
}

func TestUsername(t *testing.T) {
	s := telegramtest.New(t, token)
	s.Username = "shop_bot"
	_, body := call(t, t.Context(), s.URL(), token, "getMe", `{}`)
	assert.Equal(t, "shop_bot", body["result"].(map[string]any)["username"])
}

func TestSendMessageRecords(t *testing.T) {
	s := telegramtest.New(t, token)

	code, body := call(t, t.Context(), s.URL(), token, "sendMessage", `{"chat_id":42,"text":"hello","link_preview_options":{"is_disabled":true}}`)
	require.Equal(t, http.StatusOK, code)
	res := body["result"].(map[string]any)
	assert.Equal(t, 1.0, res["message_id"])
	assert.Equal(t, "hello", res["text"])
	assert.NotZero(t, res["date"])
	assert.Equal(t, map[string]any{"id": 42.0, "type": "private", "first_name": "Test"}, res["chat"])

	// Form encoding and the legacy preview flag work too, as on Telegram.
	resp, err := http.PostForm(s.URL()+"/bot"+token+"/sendMessage", url.Values{
		"chat_id": {"@news"}, "text": {"second"}, "disable_web_page_preview": {"true"}, "parse_mode": {"HTML"},
	})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	sent := s.WaitSent(t, 2, time.Second)
	require.Len(t, sent, 2)
	assert.Equal(t, int64(1), sent[0].MessageID)
	assert.Equal(t, "42", sent[0].ChatID)
	assert.Equal(t, "hello", sent[0].Text)
	assert.True(t, sent[0].LinkPreviewDisabled)
	assert.Equal(t, int64(2), sent[1].MessageID)
	assert.Equal(t, "@news", sent[1].ChatID)
	assert.Equal(t, "HTML", sent[1].ParseMode)
	assert.True(t, sent[1].LinkPreviewDisabled)
}

func TestSendMessageValidates(t *testing.T) {
	s := telegramtest.New(t, token)
	tests := []struct {
		body, description string
	}{
		{`{"text":"x"}`, "Bad Request: chat_id is empty"},
		{`{"chat_id":1,"text":"  "}`, "Bad Request: message text is empty"},
		{`{"chat_id":1,"text":"` + strings.Repeat("😀", 2049) + `"}`, "Bad Request: message is too long"},
		{`{"chat_id":1,"text":"x","parse_mode":"BBCode"}`, "Bad Request: unsupported parse_mode"},
	}
	for _, tt := range tests {
		code, body := call(t, t.Context(), s.URL(), token, "sendMessage", tt.body)
		assert.Equal(t, http.StatusBadRequest, code)
		assert.Equal(t, tt.description, body["description"])
	}
	assert.Empty(t, s.Sent())
	assert.Equal(t, 3, s.Attempts("1"))
}

func TestScriptedFailures(t *testing.T) {
	s := telegramtest.New(t, token)
	s.FailNext("7", http.StatusTooManyRequests, "", 3)
	s.FailNext("7", http.StatusInternalServerError, "Internal Server Error", 0)

	code, body := call(t, t.Context(), s.URL(), token, "sendMessage", `{"chat_id":"7","text":"a"}`)
	assert.Equal(t, http.StatusTooManyRequests, code)
	assert.Equal(t, map[string]any{
		"ok": false, "error_code": 429.0, "description": "Too Many Requests: retry after 3",
		"parameters": map[string]any{"retry_after": 3.0},
	}, body)

	code, body = call(t, t.Context(), s.URL(), token, "sendMessage", `{"chat_id":7,"text":"a"}`)
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.NotContains(t, body, "parameters")

	// Another chat is unaffected; the queue for chat 7 is now empty.
	code, _ = call(t, t.Context(), s.URL(), token, "sendMessage", `{"chat_id":8,"text":"a"}`)
	assert.Equal(t, http.StatusOK, code)
	code, _ = call(t, t.Context(), s.URL(), token, "sendMessage", `{"chat_id":7,"text":"a"}`)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, 3, s.Attempts("7"))
	assert.Equal(t, 1, s.Attempts("8"))

	s.Block("7")
	for range 2 {
		code, body = call(t, t.Context(), s.URL(), token, "sendMessage", `{"chat_id":7,"text":"a"}`)
		assert.Equal(t, http.StatusForbidden, code)
		assert.Equal(t, "Forbidden: bot was blocked by the user", body["description"])
	}
	assert.Equal(t, 5, s.Attempts("7"))
	s.Unblock("7")
	code, _ = call(t, t.Context(), s.URL(), token, "sendMessage", `{"chat_id":7,"text":"a"}`)
	assert.Equal(t, http.StatusOK, code)
	assert.Len(t, s.Sent(), 3)
}

func updateIDs(t *testing.T, body map[string]any) []float64 {
	t.Helper()
	require.Equal(t, true, body["ok"], body)
	ids := []float64{}
	for _, u := range body["result"].([]any) {
		ids = append(ids, u.(map[string]any)["update_id"].(float64))
	}
	return ids
}

func TestGetUpdatesOffset(t *testing.T) {
	s := telegramtest.New(t, token)
	_, body := call(t, t.Context(), s.URL(), token, "getUpdates", `{}`)
	assert.Equal(t, []any{}, body["result"], "an empty batch is [], not null")

	s.PushMessage(42, "one")
	s.PushMessage(42, "two")
	s.PushMessage(43, "three")

	_, body = call(t, t.Context(), s.URL(), token, "getUpdates", `{}`)
	assert.Equal(t, []float64{1, 2, 3}, updateIDs(t, body))
	u := body["result"].([]any)[0].(map[string]any)
	msg := u["message"].(map[string]any)
	assert.Equal(t, "one", msg["text"])
	assert.Equal(t, map[string]any{"id": 42.0, "type": "private", "first_name": "Test"}, msg["chat"])
	assert.Equal(t, map[string]any{"id": 42.0, "is_bot": false, "first_name": "Test"}, msg["from"])
	assert.NotZero(t, msg["date"])
	assert.NotZero(t, msg["message_id"])

	_, body = call(t, t.Context(), s.URL(), token, "getUpdates", `{"offset":2,"limit":1}`)
	assert.Equal(t, []float64{2}, updateIDs(t, body))
	// Offset 2 confirmed update 1 for good.
	_, body = call(t, t.Context(), s.URL(), token, "getUpdates", `{}`)
	assert.Equal(t, []float64{2, 3}, updateIDs(t, body))
	_, body = call(t, t.Context(), s.URL(), token, "getUpdates", `{"offset":-1}`)
	assert.Equal(t, []float64{3}, updateIDs(t, body))
	_, body = call(t, t.Context(), s.URL(), token, "getUpdates", `{"offset":4}`)
	assert.Equal(t, []float64{}, updateIDs(t, body))
}

func TestGetUpdatesAllowed(t *testing.T) {
	s := telegramtest.New(t, token)
	s.PushMessage(42, "hi")

	_, body := call(t, t.Context(), s.URL(), token, "getUpdates", `{"allowed_updates":["callback_query"]}`)
	assert.Equal(t, []float64{}, updateIDs(t, body))
	// The choice sticks until changed, as on Telegram.
	_, body = call(t, t.Context(), s.URL(), token, "getUpdates", `{}`)
	assert.Equal(t, []float64{}, updateIDs(t, body))
	_, body = call(t, t.Context(), s.URL(), token, "getUpdates", `{"allowed_updates":["message"]}`)
	assert.Equal(t, []float64{1}, updateIDs(t, body))
}

func TestGetUpdatesLongPoll(t *testing.T) {
	s := telegramtest.New(t, token)

	start := time.Now()
	_, body := call(t, t.Context(), s.URL(), token, "getUpdates", `{"timeout":1}`)
	assert.Equal(t, []float64{}, updateIDs(t, body))
	assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "waits out the timeout")

	go func() {
		time.Sleep(100 * time.Millisecond)
		s.PushMessage(42, "hi")
	}()
	start = time.Now()
	_, body = call(t, t.Context(), s.URL(), token, "getUpdates", `{"timeout":10}`)
	assert.Equal(t, []float64{1}, updateIDs(t, body))
	assert.Less(t, time.Since(start), 5*time.Second, "returns as soon as an update arrives")
}

func TestGetUpdatesConflict(t *testing.T) {
	s := telegramtest.New(t, token)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/bot"+token+"/getUpdates", strings.NewReader(`{"timeout":30}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	time.Sleep(200 * time.Millisecond)

	code, body := call(t, t.Context(), s.URL(), token, "getUpdates", `{}`)
	assert.Equal(t, http.StatusConflict, code)
	assert.Equal(t, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running", body["description"])

	// A poll whose client hung up ends, and the next one is not a conflict.
	cancel()
	wg.Wait()
	code, _ = call(t, t.Context(), s.URL(), token, "getUpdates", `{}`)
	assert.Equal(t, http.StatusOK, code)
}

// TestCloseEndsLongPolls shows Close does not wait out pending long polls.
func TestCloseEndsLongPolls(t *testing.T) {
	s := telegramtest.New(t, token)
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/bot"+token+"/getUpdates", strings.NewReader(`{"timeout":60}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	s.Close()
	<-done
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestConcurrentSends(t *testing.T) {
	s := telegramtest.New(t, token)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			// Not call: require must not stop the test from another goroutine.
			resp, err := http.Post(s.URL()+"/bot"+token+"/sendMessage", "application/json", strings.NewReader(`{"chat_id":1,"text":"x"}`))
			if assert.NoError(t, err) {
				resp.Body.Close()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
			}
		})
	}
	sent := s.WaitSent(t, 20, 5*time.Second)
	wg.Wait()
	seen := map[int64]bool{}
	for _, m := range sent {
		seen[m.MessageID] = true
	}
	assert.Len(t, seen, 20, "message ids are unique")
	assert.Equal(t, 20, s.Attempts("1"))
}

// recordingTB captures a fatal failure instead of failing the real test.
type recordingTB struct {
	testing.TB
	fatal string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestWaitSentFailsAfterDeadline(t *testing.T) {
	s := telegramtest.New(t, token)
	_, _ = call(t, t.Context(), s.URL(), token, "sendMessage", `{"chat_id":1,"text":"only one"}`)

	rec := &recordingTB{TB: t}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		s.WaitSent(rec, 2, 100*time.Millisecond)
	}()
	<-done
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	assert.Contains(t, rec.fatal, "want 2 sent messages within 100ms, got 1")
	assert.Contains(t, rec.fatal, "only one")
}
