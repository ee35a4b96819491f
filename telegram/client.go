package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultAPIURL is the Bot API base URL used when none is configured.
const DefaultAPIURL = "https://api.telegram.org"

// DefaultTimeout bounds one request, on top of any long-poll wait, when
// Client.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// maxAnswer bounds how much of an answer is read: a full getUpdates batch
// of 100 messages of 4096 characters stays well under it.
const maxAnswer = 8 << 20

// Client calls the Bot API of one bot. It is safe for concurrent use once
// built; set Timeout before the first call.
type Client struct {
	// Timeout bounds each request beyond the long-poll wait of GetUpdates;
	// zero means DefaultTimeout. It is applied through the request's
	// context rather than http.Client.Timeout, because one client timeout
	// cannot suit both a quick sendMessage and a 50-second getUpdates.
	Timeout time.Duration

	apiURL string
	token  string
	http   *http.Client
}

// New returns a client for the bot with the given token. An empty apiURL
// means DefaultAPIURL; a nil httpClient means a client with dial and TLS
// handshake timeouts, no overall timeout (see Client.Timeout) and no
// redirects, since following one would send the token-bearing path to
// wherever the redirect points.
func New(apiURL, token string, httpClient *http.Client) *Client {
	if apiURL == "" {
		apiURL = DefaultAPIURL
	}
	if httpClient == nil {
		httpClient = &http.Client{
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	return &Client{apiURL: strings.TrimRight(apiURL, "/"), token: token, http: httpClient}
}

// User is a Telegram user or bot.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	Username  string `json:"username,omitempty"`
}

// Chat is the chat a message belongs to.
type Chat struct {
	ID int64 `json:"id"`
	// Type is "private", "group", "supergroup" or "channel".
	Type      string `json:"type"`
	Title     string `json:"title,omitempty"`
	Username  string `json:"username,omitempty"`
	FirstName string `json:"first_name,omitempty"`
}

// Message is a message sent by or to the bot.
type Message struct {
	MessageID int64  `json:"message_id"`
	Chat      Chat   `json:"chat"`
	Text      string `json:"text,omitempty"`
	// Date is the Unix time the message was sent.
	Date int64 `json:"date"`
	// From is the sender; nil for messages posted in channels.
	From *User `json:"from,omitempty"`
}

// Update is one incoming update from GetUpdates; Message is nil for update
// types other than "message".
type Update struct {
	UpdateID int64    `json:"update_id"`
	Message  *Message `json:"message,omitempty"`
}

// SendMessage holds the parameters of a sendMessage call.
type SendMessage struct {
	// ChatID is a numeric chat id ("-1001234567890") or a public channel's
	// "@username"; it is sent as a JSON number when it is an integer,
	// because that is the type the Bot API documents for ids.
	ChatID string
	Text   string
	// ParseMode is "", "HTML", "MarkdownV2" or "Markdown"; "" sends plain
	// text, which needs no escaping.
	ParseMode string
	// DisableWebPagePreview suppresses the link preview. It is sent as
	// link_preview_options {"is_disabled": true}: Bot API 7.0 replaced the
	// disable_web_page_preview flag with that object and keeps the flag
	// only for old clients.
	DisableWebPagePreview bool
}

// chatID is a chat id on the wire: a number when it is one, else a string.
type chatID string

// MarshalJSON writes integer ids as JSON numbers and "@channel" names as
// strings, the two forms the Bot API accepts.
func (c chatID) MarshalJSON() ([]byte, error) {
	if n, err := strconv.ParseInt(string(c), 10, 64); err == nil {
		return strconv.AppendInt(nil, n, 10), nil
	}
	return json.Marshal(string(c))
}

type linkPreviewOptions struct {
	IsDisabled bool `json:"is_disabled"`
}

type sendMessageRequest struct {
	ChatID             chatID              `json:"chat_id"`
	Text               string              `json:"text"`
	ParseMode          string              `json:"parse_mode,omitempty"`
	LinkPreviewOptions *linkPreviewOptions `json:"link_preview_options,omitempty"`
}

type getUpdatesRequest struct {
	Offset  int64 `json:"offset,omitzero"`
	Timeout int   `json:"timeout,omitzero"`
	// AllowedUpdates is left out when nil, which keeps the bot's previous
	// setting, and sent when empty, which asks for the default types.
	AllowedUpdates []string `json:"allowed_updates,omitzero"`
}

// GetMe returns the bot's own user; it is the cheap way to check a token.
func (c *Client) GetMe(ctx context.Context) (User, error) {
	var u User
	err := c.call(ctx, "getMe", struct{}{}, &u, 0)
	return u, err
}

// SendMessage sends a text message and returns it as Telegram stored it.
func (c *Client) SendMessage(ctx context.Context, m SendMessage) (Message, error) {
	req := sendMessageRequest{ChatID: chatID(m.ChatID), Text: m.Text, ParseMode: m.ParseMode}
	if m.DisableWebPagePreview {
		req.LinkPreviewOptions = &linkPreviewOptions{IsDisabled: true}
	}
	var msg Message
	err := c.call(ctx, "sendMessage", req, &msg, 0)
	return msg, err
}

// GetUpdates long-polls for updates with update_id >= offset, waiting up to
// timeoutSeconds for one to arrive; passing offset confirms, and so drops,
// every earlier update. allowed limits the update types ("message", ...);
// nil keeps the bot's previous choice.
func (c *Client) GetUpdates(ctx context.Context, offset int64, timeoutSeconds int, allowed []string) ([]Update, error) {
	req := getUpdatesRequest{Offset: offset, Timeout: timeoutSeconds, AllowedUpdates: allowed}
	var ups []Update
	wait := time.Duration(max(timeoutSeconds, 0)) * time.Second
	if err := c.call(ctx, "getUpdates", req, &ups, wait); err != nil {
		return nil, err
	}
	return ups, nil
}

// envelope is the Bot API's answer to every method.
type envelope struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  *struct {
		RetryAfter      int   `json:"retry_after"`
		MigrateToChatID int64 `json:"migrate_to_chat_id"`
	} `json:"parameters"`
}

// call POSTs params as JSON to method and decodes the result into out. The
// request may take Timeout plus wait, the time the server may hold a long
// poll.
func (c *Client) call(ctx context.Context, method string, params, out any, wait time.Duration) error {
	body, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("telegram %s: encode request: %w", method, err)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout+wait)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.apiURL+"/bot"+c.token+"/"+method, bytes.NewReader(body))
	if err != nil {
		// A bad PAYWATCH_TELEGRAM_API_URL: a configuration mistake that
		// retrying cannot fix, reported without the URL, which holds the token.
		return fmt.Errorf("telegram %s: invalid API URL: %s", method, Redact(withoutURL(err).Error(), c.token))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "paywatch-telegram/1")
	resp, err := c.http.Do(req)
	if err != nil {
		return c.transportError(ctx, method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return c.transportError(ctx, method, err)
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil || (!env.OK && env.ErrorCode == 0 && env.Description == "") {
		// Not a Bot API answer, such as a proxy's HTML error page: the
		// HTTP status is all there is to go on.
		if resp.StatusCode >= 300 {
			return &Error{Method: method, Code: resp.StatusCode, Description: http.StatusText(resp.StatusCode)}
		}
		return fmt.Errorf("telegram %s: malformed answer (HTTP %d)", method, resp.StatusCode)
	}
	if !env.OK {
		e := &Error{Method: method, Code: env.ErrorCode, Description: env.Description}
		if e.Code == 0 {
			e.Code = resp.StatusCode
		}
		if p := env.Parameters; p != nil {
			e.RetryAfter = time.Duration(p.RetryAfter) * time.Second
			e.MigrateToChatID = p.MigrateToChatID
		}
		return e
	}
	if err := json.Unmarshal(env.Result, out); err != nil {
		return fmt.Errorf("telegram %s: decode result: %w", method, err)
	}
	return nil
}

// transportError turns a failed round trip into an error without the URL.
// When the caller's own context ended, its error is returned (wrapped), so
// shutdown is not mistaken for a flaky network; otherwise, including the
// per-request timeout, the result is a temporary *NetworkError.
func (c *Client) transportError(ctx context.Context, method string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("telegram %s: %w", method, context.Cause(ctx))
	}
	return &NetworkError{Method: method, Err: &redacted{err: withoutURL(err), token: c.token}}
}

// withoutURL drops a *url.Error's URL, which carries the bot token.
func withoutURL(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}

// Redact returns s with every occurrence of token, plain or URL-escaped,
// replaced by "<token>". Every error text this package builds from net/http
// passes through it, as a second line of defence behind dropping URLs.
func Redact(s, token string) string {
	if token == "" {
		return s
	}
	for _, t := range []string{token, url.PathEscape(token), url.QueryEscape(token)} {
		s = strings.ReplaceAll(s, t, "<token>")
	}
	return s
}

// redacted is an error whose text has the token redacted; Unwrap keeps
// errors.Is and errors.As working on the cause.
type redacted struct {
	err   error
	token string
}

func (r *redacted) Error() string { return Redact(r.err.Error(), r.token) }
func (r *redacted) Unwrap() error { return r.err }

// Error is an error answer of the Bot API ("ok": false).
type Error struct {
	// Method is the Bot API method that failed, such as "sendMessage".
	Method string
	// Code is Telegram's error_code, which equals the HTTP status.
	Code int
	// Description is Telegram's text, such as "Forbidden: bot was blocked
	// by the user".
	Description string
	// RetryAfter is how long to wait before retrying a 429; zero otherwise.
	RetryAfter time.Duration
	// MigrateToChatID is the new id of a group that became a supergroup;
	// the old id then answers 400 and the setting should be updated.
	MigrateToChatID int64
}

// Error returns "telegram sendMessage: 403 Forbidden: bot was blocked by
// the user"; Telegram's descriptions never contain the token.
func (e *Error) Error() string {
	s := "telegram " + e.Method + ": " + strconv.Itoa(e.Code) + " " + e.Description
	if e.RetryAfter > 0 {
		s += " (retry after " + e.RetryAfter.String() + ")"
	}
	return s
}

// Permanent reports whether retrying cannot help: a bad request, a wrong
// token, a bot blocked by the user or kicked from the chat, or a chat that
// does not exist. The chat setting or the token must change first.
func (e *Error) Permanent() bool {
	switch e.Code {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return true
	}
	return false
}

// Temporary reports whether the same request may succeed later: a 429
// (after RetryAfter) or a server error.
func (e *Error) Temporary() bool {
	return e.Code == http.StatusTooManyRequests || e.Code >= 500
}

// NetworkError is a request that got no answer: a refused connection, a
// reset, a DNS failure or the per-request timeout. It is always temporary.
type NetworkError struct {
	// Method is the Bot API method that failed.
	Method string
	// Err is the cause, without the request URL and with the token
	// redacted from its text.
	Err error
}

// Error returns the method and the cause, never the URL.
func (e *NetworkError) Error() string {
	return "telegram " + e.Method + ": " + e.Err.Error()
}

// Unwrap returns the cause, so errors.Is(err, context.DeadlineExceeded)
// tells a timeout.
func (e *NetworkError) Unwrap() error { return e.Err }

// Temporary reports true: nothing is known to be wrong with the request.
func (e *NetworkError) Temporary() bool { return true }

// Timeout reports whether the request timed out rather than failed.
func (e *NetworkError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.Is(e.Err, context.DeadlineExceeded) || (errors.As(e.Err, &t) && t.Timeout())
}

var _ net.Error = (*NetworkError)(nil)

// IsTemporary reports whether err is worth retrying as it is: a 429, a 5xx
// or a network failure. A context ended by the caller is not temporary.
func IsTemporary(err error) bool {
	var ne *NetworkError
	if errors.As(err, &ne) {
		return true
	}
	var e *Error
	return errors.As(err, &e) && e.Temporary()
}

// IsPermanent reports whether err is a Bot API answer that retrying cannot
// change (see Error.Permanent).
func IsPermanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Permanent()
}

// RetryAfter returns the wait Telegram asked for in a 429 answer; ok is
// false when err carries none.
func RetryAfter(err error) (d time.Duration, ok bool) {
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter, true
	}
	return 0, false
}
