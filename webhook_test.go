package paywatch_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

func TestWebhookTimestamp(t *testing.T) {
	ts := time.Date(2025, 3, 4, 5, 6, 7, 890_000_000, time.FixedZone("CET", 3600))
	assert.Equal(t, "2025-03-04T04:06:07Z", paywatch.WebhookTimestamp(ts))
	assert.Equal(t, "2025-03-04T04:06:07Z", paywatch.WebhookTimestamp(ts.UTC()))
}

func TestSignWebhook(t *testing.T) {
	secret, ts, body := "whsec_test", "2025-03-04T04:06:07Z", []byte(`{"event":"payment.completed"}`)
	sig := paywatch.SignWebhook(secret, ts, body)

	// Independently: HMAC-SHA256(secret, timestamp + "." + body), hex.
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(body)))
	assert.Equal(t, hex.EncodeToString(mac.Sum(nil)), sig)
	assert.Len(t, sig, 64)
	assert.Equal(t, strings.ToLower(sig), sig)

	// A fixed vector, checked with openssl and Python: printf %s "2025-01-01T00:00:00Z.{}" | openssl dgst -sha256 -hmac secret
	assert.Equal(t, "2d286188bb249712cedaf4f1f5d1ff730aa0acb1bf56bd0f4f30a66d1183390d", paywatch.SignWebhook("secret", "2025-01-01T00:00:00Z", []byte(`{}`)))
}

func TestVerifyWebhook(t *testing.T) {
	const secret = "whsec_test"
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	ts := paywatch.WebhookTimestamp(now)
	body := []byte(`{"event":"payment.completed","amount":"10.50"}`)
	sig := paywatch.SignWebhook(secret, ts, body)
	fracTS := "2025-03-04T05:06:07.123456Z"
	offsetTS := "2025-03-04T06:06:07+01:00"

	tests := []struct {
		name      string
		secret    string
		sig, ts   string
		body      []byte
		now       time.Time
		wantError error
	}{
		{"valid", secret, sig, ts, body, now, nil},
		{"valid, uppercase hex", secret, strings.ToUpper(sig), ts, body, now, nil},
		{"valid, 5 minutes old exactly", secret, sig, ts, body, now.Add(5 * time.Minute), nil},
		{"valid, 5 minutes ahead exactly", secret, sig, ts, body, now.Add(-5 * time.Minute), nil},
		{"valid, fractional seconds", secret, paywatch.SignWebhook(secret, fracTS, body), fracTS, body, now, nil},
		{"valid, offset time zone", secret, paywatch.SignWebhook(secret, offsetTS, body), offsetTS, body, now, nil},
		{"valid, empty body", secret, paywatch.SignWebhook(secret, ts, nil), ts, nil, now, nil},
		{"missing signature", secret, "", ts, body, now, paywatch.ErrMissingSignature},
		{"missing timestamp", secret, sig, "", body, now, paywatch.ErrMissingTimestamp},
		{"short signature", secret, sig[:63], ts, body, now, paywatch.ErrMalformedSignature},
		{"long signature", secret, sig + "0", ts, body, now, paywatch.ErrMalformedSignature},
		{"sha256= prefix", secret, "sha256=" + sig[:57], ts, body, now, paywatch.ErrMalformedSignature},
		{"non-hex signature", secret, sig[:63] + "g", ts, body, now, paywatch.ErrMalformedSignature},
		{"unparseable timestamp", secret, sig, "yesterday", body, now, paywatch.ErrBadTimestamp},
		{"unix timestamp", secret, sig, "1741064767", body, now, paywatch.ErrBadTimestamp},
		{"date only", secret, sig, "2025-03-04", body, now, paywatch.ErrBadTimestamp},
		{"too old", secret, sig, ts, body, now.Add(5*time.Minute + time.Second), paywatch.ErrStaleTimestamp},
		{"too new", secret, sig, ts, body, now.Add(-5*time.Minute - time.Second), paywatch.ErrStaleTimestamp},
		{"body changed", secret, sig, ts, append(append([]byte(nil), body...), ' '), now, paywatch.ErrSignatureMismatch},
		{"timestamp changed", secret, sig, "2025-03-04T05:06:08Z", body, now, paywatch.ErrSignatureMismatch},
		{"timestamp respelled", secret, sig, "2025-03-04T05:06:07.000Z", body, now, paywatch.ErrSignatureMismatch},
		{"wrong secret", "whsec_old", sig, ts, body, now, paywatch.ErrSignatureMismatch},
		{"body-only signature (old scheme)", secret, hexMAC(secret, string(body)), ts, body, now, paywatch.ErrSignatureMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := paywatch.VerifyWebhook(tt.secret, tt.sig, tt.ts, tt.body, tt.now)
			if tt.wantError == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantError)
			assert.Equal(t, paywatch.EUNAUTHORIZED, paywatch.ErrorCode(err))
		})
	}
}

func hexMAC(secret, msg string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(msg))
	return hex.EncodeToString(mac.Sum(nil))
}

func TestVerifyWebhookRequest(t *testing.T) {
	const secret = "whsec_test"
	now := time.Now()
	body := `{"event":"payment.partial","paid_amount":"25.00"}`
	ts := paywatch.WebhookTimestamp(now)

	newReq := func(body, sig, ts string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(body))
		if sig != "" {
			r.Header.Set(paywatch.HeaderSignature, sig)
		}
		if ts != "" {
			r.Header.Set(paywatch.HeaderTimestamp, ts)
		}
		return r
	}

	r := newReq(body, paywatch.SignWebhook(secret, ts, []byte(body)), ts)
	got, err := paywatch.VerifyWebhookRequest(secret, r, now)
	require.NoError(t, err)
	assert.Equal(t, body, string(got))
	// The handler can still read the body.
	again, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	assert.Equal(t, body, string(again))

	_, err = paywatch.VerifyWebhookRequest(secret, newReq(body, "", ts), now)
	assert.ErrorIs(t, err, paywatch.ErrMissingSignature)
	_, err = paywatch.VerifyWebhookRequest(secret, newReq(body, paywatch.SignWebhook(secret, ts, []byte(body)), ""), now)
	assert.ErrorIs(t, err, paywatch.ErrMissingTimestamp)
	_, err = paywatch.VerifyWebhookRequest(secret, newReq(body+" ", paywatch.SignWebhook(secret, ts, []byte(body)), ts), now)
	assert.ErrorIs(t, err, paywatch.ErrSignatureMismatch)

	big := strings.Repeat("x", paywatch.MaxWebhookBody+1)
	_, err = paywatch.VerifyWebhookRequest(secret, newReq(big, paywatch.SignWebhook(secret, ts, []byte(big)), ts), now)
	assert.ErrorIs(t, err, paywatch.ErrBodyTooLarge)
	exact := strings.Repeat("x", paywatch.MaxWebhookBody)
	_, err = paywatch.VerifyWebhookRequest(secret, newReq(exact, paywatch.SignWebhook(secret, ts, []byte(exact)), ts), now)
	assert.NoError(t, err)

	// Header names are case-insensitive on the wire.
	r = httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader([]byte(body)))
	r.Header["X-Service-Signature"] = []string{paywatch.SignWebhook(secret, ts, []byte(body))}
	r.Header.Set("x-service-timestamp", ts)
	_, err = paywatch.VerifyWebhookRequest(secret, r, now)
	assert.NoError(t, err)

	// A body read error is reported, not mistaken for a bad signature.
	r = newReq("", "x", ts)
	r.Body = io.NopCloser(errReader{})
	_, err = paywatch.VerifyWebhookRequest(secret, r, now)
	require.Error(t, err)
	assert.False(t, errors.Is(err, paywatch.ErrSignatureMismatch))
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestVerifyWebhookEndToEnd(t *testing.T) {
	// A merchant's Go handler receiving a signed delivery over real HTTP.
	const secret = "whsec_e2e"
	var gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := paywatch.VerifyWebhookRequest(secret, r, time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		gotBody = string(body)
	}))
	defer srv.Close()

	body := []byte(`{"event":"payment.completed"}`)
	ts := paywatch.WebhookTimestamp(time.Now())
	req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set(paywatch.HeaderSignature, paywatch.SignWebhook(secret, ts, body))
	req.Header.Set(paywatch.HeaderTimestamp, ts)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, string(body), gotBody)

	req, _ = http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
	req.Header.Set(paywatch.HeaderSignature, paywatch.SignWebhook("other", ts, body))
	req.Header.Set(paywatch.HeaderTimestamp, ts)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}
