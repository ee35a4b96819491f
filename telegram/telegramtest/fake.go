// Package telegramtest provides an in-process fake of the Telegram Bot API
// for tests: it speaks the real wire format (JSON or form parameters in,
// the {"ok": ...} envelope out), records sent messages, scripts failures
// and serves long-polled updates.
package telegramtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
)

// DefaultUsername is the bot username getMe answers unless Server.Username
// is changed.
const DefaultUsername = "paywatch_test_bot"

// conflictGrace is how long a getUpdates waits for another one still in
// progress before answering 409. A client that cancels its poll and polls
// again at once is not a second bot instance, but the server learns of the
// cancellation only a moment later, when the connection closes.
const conflictGrace = 100 * time.Millisecond

// maxTextLength is Telegram's message limit in UTF-16 code units.
const maxTextLength = 4096

// SentMessage is one message the fake accepted through sendMessage.
type SentMessage struct {
	// MessageID is the id the fake answered with; it increases by one per
	// accepted message.
	MessageID int64
	// ChatID is chat_id as sent: the decimal text of a number, or the
	// "@channel" string.
	ChatID string
	Text   string
	// ParseMode is parse_mode as sent, "" for plain text.
	ParseMode string
	// LinkPreviewDisabled reports link_preview_options.is_disabled or the
	// legacy disable_web_page_preview.
	LinkPreviewDisabled bool
	// Date is when the fake accepted the message.
	Date time.Time
}

// failure is one scripted error answer.
type failure struct {
	code        int
	description string
	retryAfter  int
}

// Server is a fake Bot API for one bot token. It is safe for concurrent use.
type Server struct {
	// Username is the bot's username in getMe answers; change it, if at
	// all, before the code under test calls getMe.
	Username string

	srv       *httptest.Server
	token     string
	done      chan struct{}
	closeOnce sync.Once

	mu            sync.Mutex
	changed       chan struct{} // closed and replaced on every change, to wake waiters
	sent          []SentMessage
	attempts      map[string]int
	failures      map[string][]failure
	blocked       map[string]bool
	nextMessageID int64
	updates       []update
	nextUpdateID  int64
	allowed       []string // the last allowed_updates; nil means the default types
	polling       bool
}

// update is one queued update and its wire form.
type update struct {
	id   int64
	kind string
	wire map[string]any
}

// New starts a fake Bot API that accepts token and closes it when the test
// ends.
func New(t testing.TB, token string) *Server {
	s := &Server{
		Username: DefaultUsername,
		token:    token,
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
		attempts: map[string]int{},
		failures: map[string][]failure{},
		blocked:  map[string]bool{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// URL returns the API base URL, the value for PAYWATCH_TELEGRAM_API_URL.
func (s *Server) URL() string {
	return s.srv.URL
}

// Close stops the server; later requests fail as on a network outage.
// Pending long polls end first, since httptest waits for open requests.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.srv.Close()
	})
}

// Sent returns the accepted messages in order; the caller owns the slice.
func (s *Server) Sent() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}

// WaitSent waits until at least n messages were accepted and returns all of
// them; it fails the test if that takes longer than within.
func (s *Server) WaitSent(t testing.TB, n int, within time.Duration) []SentMessage {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if len(s.sent) >= n {
			out := slices.Clone(s.sent)
			s.mu.Unlock()
			return out
		}
		got, ch := slices.Clone(s.sent), s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("telegramtest: want %d sent messages within %s, got %d: %+v", n, within, len(got), got)
			return nil
		}
	}
}

// FailNext makes the next sendMessage to chatID fail with code and
// description; calls queue up in order. A positive retryAfter is sent as
// parameters.retry_after, as Telegram does with 429. An empty description
// becomes Telegram's usual one for the code.
func (s *Server) FailNext(chatID string, code int, description string, retryAfter int) {
	if description == "" {
		description = defaultDescription(code, retryAfter)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[chatID] = append(s.failures[chatID], failure{code, description, retryAfter})
}

// Block makes every sendMessage to chatID answer 403 "Forbidden: bot was
// blocked by the user" until Unblock.
func (s *Server) Block(chatID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocked[chatID] = true
}

// Unblock undoes Block, as when the user restarts the bot.
func (s *Server) Unblock(chatID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.blocked, chatID)
}

// Attempts counts every sendMessage call for chatID, failed ones included.
func (s *Server) Attempts(chatID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts[chatID]
}

// PushMessage queues a private message from user chatID to the bot, as if
// the user had written it; getUpdates delivers it as a "message" update.
func (s *Server) PushMessage(chatID int64, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextUpdateID++
	s.nextMessageID++
	msg := map[string]any{
		"message_id": s.nextMessageID,
		"from":       map[string]any{"id": chatID, "is_bot": false, "first_name": "Test"},
		"chat":       map[string]any{"id": chatID, "type": "private", "first_name": "Test"},
		"date":       time.Now().Unix(),
		"text":       text,
	}
	s.updates = append(s.updates, update{
		id:   s.nextUpdateID,
		kind: "message",
		wire: map[string]any{"update_id": s.nextUpdateID, "message": msg},
	})
	s.notifyLocked()
}

// notifyLocked wakes every waiter; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		writeError(w, http.StatusNotFound, "Not Found", 0)
		return
	}
	if token != s.token {
		writeError(w, http.StatusUnauthorized, "Unauthorized", 0)
		return
	}
	p, err := readParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Bad Request: can't parse request parameters", 0)
		return
	}
	// Telegram matches method names case-insensitively.
	switch strings.ToLower(method) {
	case "getme":
		s.getMe(w)
	case "sendmessage":
		s.sendMessage(w, p)
	case "getupdates":
		s.getUpdates(w, r, p)
	default:
		writeError(w, http.StatusNotFound, "Not Found", 0)
	}
}

// botID is the bot's user id: the digits before the token's colon, as in
// real tokens, or 1.
func (s *Server) botID() int64 {
	head, _, _ := strings.Cut(s.token, ":")
	if id, err := strconv.ParseInt(head, 10, 64); err == nil {
		return id
	}
	return 1
}

func (s *Server) botUser() map[string]any {
	return map[string]any{"id": s.botID(), "is_bot": true, "first_name": "paywatch", "username": s.Username}
}

func (s *Server) getMe(w http.ResponseWriter) {
	u := s.botUser()
	u["can_join_groups"] = true
	writeResult(w, u)
}

func (s *Server) sendMessage(w http.ResponseWriter, p params) {
	chatID := p["chat_id"]
	text := p["text"]
	parseMode := p["parse_mode"]

	s.mu.Lock()
	s.attempts[chatID]++
	s.notifyLocked()
	fail := func(code int, description string, retryAfter int) {
		s.mu.Unlock()
		writeError(w, code, description, retryAfter)
	}
	switch {
	case chatID == "":
		fail(http.StatusBadRequest, "Bad Request: chat_id is empty", 0)
		return
	case s.blocked[chatID]:
		fail(http.StatusForbidden, "Forbidden: bot was blocked by the user", 0)
		return
	case len(s.failures[chatID]) > 0:
		f := s.failures[chatID][0]
		s.failures[chatID] = s.failures[chatID][1:]
		fail(f.code, f.description, f.retryAfter)
		return
	case strings.TrimSpace(text) == "":
		fail(http.StatusBadRequest, "Bad Request: message text is empty", 0)
		return
	case len(utf16.Encode([]rune(text))) > maxTextLength:
		fail(http.StatusBadRequest, "Bad Request: message is too long", 0)
		return
	}
	switch strings.ToLower(parseMode) {
	case "", "html", "markdown", "markdownv2":
	default:
		fail(http.StatusBadRequest, "Bad Request: unsupported parse_mode", 0)
		return
	}
	var lpo struct {
		IsDisabled bool `json:"is_disabled"`
	}
	if raw := p["link_preview_options"]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &lpo); err != nil {
			fail(http.StatusBadRequest, "Bad Request: can't parse link preview options JSON object", 0)
			return
		}
	}
	now := time.Now()
	s.nextMessageID++
	m := SentMessage{
		MessageID:           s.nextMessageID,
		ChatID:              chatID,
		Text:                text,
		ParseMode:           parseMode,
		LinkPreviewDisabled: lpo.IsDisabled || p["disable_web_page_preview"] == "true",
		Date:                now,
	}
	s.sent = append(s.sent, m)
	s.notifyLocked()
	s.mu.Unlock()

	chat := chatObject(chatID)
	result := map[string]any{
		"message_id": m.MessageID,
		"date":       now.Unix(),
		"chat":       chat,
		"text":       text,
	}
	if chat["type"] != "channel" {
		result["from"] = s.botUser()
	}
	writeResult(w, result)
}

// chatObject is the chat of an answer: a user for positive ids, a group or
// supergroup for negative ones, a channel for "@name".
func chatObject(chatID string) map[string]any {
	id, err := strconv.ParseInt(chatID, 10, 64)
	switch {
	case err != nil:
		h := fnv.New32a()
		h.Write([]byte(chatID))
		return map[string]any{
			"id": -1000000000000 - int64(h.Sum32()), "type": "channel",
			"title": "Test channel", "username": strings.TrimPrefix(chatID, "@"),
		}
	case id > 0:
		return map[string]any{"id": id, "type": "private", "first_name": "Test"}
	case strings.HasPrefix(chatID, "-100"):
		return map[string]any{"id": id, "type": "supergroup", "title": "Test group"}
	default:
		return map[string]any{"id": id, "type": "group", "title": "Test group"}
	}
}

// readParams accepts the encodings Telegram accepts: a JSON body, or query
// and form parameters.
func readParams(r *http.Request) (params, error) {
	p := params{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		var raw map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&raw); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		// Reading to the end lets net/http watch the connection, so a long
		// poll learns at once that its client hung up.
		_, _ = io.Copy(io.Discard, r.Body)
		for k, v := range raw {
			var str string
			if err := json.Unmarshal(v, &str); err == nil {
				p[k] = str
			} else if string(v) != "null" {
				p[k] = string(v)
			}
		}
		for k, v := range r.URL.Query() {
			if _, ok := p[k]; !ok && len(v) > 0 {
				p[k] = v[0]
			}
		}
		return p, nil
	}
	if err := r.ParseForm(); err != nil {
		return nil, err
	}
	for k, v := range r.Form {
		if len(v) > 0 {
			p[k] = v[0]
		}
	}
	return p, nil
}

func writeResult(w http.ResponseWriter, result any) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": result})
}

// writeError answers like Telegram: the HTTP status equals error_code.
func writeError(w http.ResponseWriter, code int, description string, retryAfter int) {
	body := map[string]any{"ok": false, "error_code": code, "description": description}
	if retryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": retryAfter}
	}
	writeJSON(w, code, body)
}

func writeJSON(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// defaultDescription is Telegram's usual description for an error code.
func defaultDescription(code, retryAfter int) string {
	switch code {
	case http.StatusBadRequest:
		return "Bad Request: chat not found"
	case http.StatusForbidden:
		return "Forbidden: bot was blocked by the user"
	case http.StatusTooManyRequests:
		return fmt.Sprintf("Too Many Requests: retry after %d", retryAfter)
	}
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "Error " + strconv.Itoa(code)
}
