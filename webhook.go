package paywatch

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"time"
)

// Webhook headers: every delivery carries both.
const (
	// HeaderSignature carries the HMAC-SHA256 signature as 64 hex digits.
	HeaderSignature = "X-Service-Signature"
	// HeaderTimestamp carries the signing time, RFC 3339 in UTC.
	HeaderTimestamp = "X-Service-Timestamp"
)

// MaxWebhookAge is how far a webhook's timestamp may be from the receiver's
// clock, either way, before the receiver must refuse it as a replay.
const MaxWebhookAge = 5 * time.Minute

// MaxWebhookBody is the body size VerifyWebhookRequest reads at most;
// webhook payloads are a few kilobytes even with 4 KB of metadata.
const MaxWebhookBody = 1 << 20

// Webhook verification errors. They are *Error values with code
// EUNAUTHORIZED, and callers compare them with errors.Is.
var (
	// ErrMissingSignature means the X-Service-Signature header is absent.
	ErrMissingSignature = &Error{Code: EUNAUTHORIZED, Message: "missing " + HeaderSignature + " header"}
	// ErrMissingTimestamp means the X-Service-Timestamp header is absent.
	ErrMissingTimestamp = &Error{Code: EUNAUTHORIZED, Message: "missing " + HeaderTimestamp + " header"}
	// ErrMalformedSignature means the signature is not 64 hex characters.
	ErrMalformedSignature = &Error{Code: EUNAUTHORIZED, Message: "webhook signature is not 64 hex characters"}
	// ErrBadTimestamp means the timestamp is not an RFC 3339 time.
	ErrBadTimestamp = &Error{Code: EUNAUTHORIZED, Message: "webhook timestamp is not an RFC 3339 time"}
	// ErrStaleTimestamp means the timestamp is more than MaxWebhookAge
	// before or after the receiver's clock.
	ErrStaleTimestamp = &Error{Code: EUNAUTHORIZED, Message: "webhook timestamp is more than 5 minutes from now"}
	// ErrSignatureMismatch means the signature does not match the body.
	ErrSignatureMismatch = &Error{Code: EUNAUTHORIZED, Message: "webhook signature does not match"}
	// ErrBodyTooLarge means the request body exceeds MaxWebhookBody.
	ErrBodyTooLarge = &Error{Code: EUNAUTHORIZED, Message: "webhook body is too large"}
)

// WebhookTimestamp formats t as the X-Service-Timestamp value: RFC 3339 in
// UTC with second precision, such as "2025-01-02T03:04:05Z".
func WebhookTimestamp(t time.Time) string {
	return t.UTC().Truncate(time.Second).Format("2006-01-02T15:04:05Z")
}

// SignWebhook returns the X-Service-Signature value: HMAC-SHA256 keyed with
// the webhook secret over timestamp + "." + body, as 64 lowercase hex
// digits. Signing the timestamp with the body is what makes a captured
// delivery useless for replay after MaxWebhookAge.
func SignWebhook(secret, timestamp string, body []byte) string {
	return hex.EncodeToString(webhookMAC(secret, timestamp, body))
}

func webhookMAC(secret, timestamp string, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return mac.Sum(nil)
}

// VerifyWebhook checks a webhook as a receiver must: both headers present,
// a signature of 64 hex characters (either case), an RFC 3339 timestamp
// (fractional seconds allowed) no more than MaxWebhookAge from now, and a
// signature over the timestamp exactly as received and the raw body,
// compared in constant time. It returns nil or one of the Err* values above.
func VerifyWebhook(secret string, signature, timestamp string, body []byte, now time.Time) error {
	if signature == "" {
		return ErrMissingSignature
	}
	if timestamp == "" {
		return ErrMissingTimestamp
	}
	if len(signature) != sha256.Size*2 {
		return ErrMalformedSignature
	}
	got, err := hex.DecodeString(signature)
	if err != nil {
		return ErrMalformedSignature
	}
	ts, err := time.Parse(time.RFC3339Nano, timestamp)
	if err != nil {
		return ErrBadTimestamp
	}
	if age := now.Sub(ts); age > MaxWebhookAge || age < -MaxWebhookAge {
		return ErrStaleTimestamp
	}
	if !hmac.Equal(got, webhookMAC(secret, timestamp, body)) {
		return ErrSignatureMismatch
	}
	return nil
}

// VerifyWebhookRequest reads and verifies a webhook delivery in a Go HTTP
// handler and returns its body. It reads at most MaxWebhookBody bytes, and
// leaves r.Body readable again so the handler can decode it as usual:
//
//	body, err := paywatch.VerifyWebhookRequest(secret, r, time.Now())
//	if err != nil {
//		http.Error(w, "bad signature", http.StatusUnauthorized)
//		return
//	}
func VerifyWebhookRequest(secret string, r *http.Request, now time.Time) ([]byte, error) {
	sig := r.Header.Get(HeaderSignature)
	ts := r.Header.Get(HeaderTimestamp)
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, MaxWebhookBody+1))
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		if len(body) > MaxWebhookBody {
			return nil, ErrBodyTooLarge
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if err := VerifyWebhook(secret, sig, ts, body, now); err != nil {
		return nil, err
	}
	return body, nil
}
