package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/paywatch/paywatch"
)

// Outcome is how one delivery attempt ended.
type Outcome string

const (
	// Delivered is a 2xx answer.
	Delivered Outcome = "delivered"
	// Retry is any answer but a 2xx or a 4xx (a 5xx, a 3xx: redirects are
	// not followed), a timeout, a network error, or, with no request made,
	// a host name whose DNS answer was a private or reserved address: the
	// next attempt may succeed.
	Retry Outcome = "retry"
	// Failed is a permanent failure: a 4xx answer, or, with no request made
	// (Result.Sent false), a refused URL (a scheme not allowed, a malformed
	// URL, or one naming a private address itself) or a missing secret.
	Failed Outcome = "failed"
)

// MaxAnswer is how much of a receiver's answer Send reads.
const MaxAnswer = 1024

// Result is how Send's attempt ended.
type Result struct {
	Outcome Outcome
	// StatusCode is the receiver's HTTP status, 0 if there was no answer.
	StatusCode int
	// Answer is what the project's delivery log may show: the start of the
	// receiver's answer, or a fixed description of why there was none. It
	// never names an address of the network paywatch runs in.
	Answer string
	// Err is the full error of a refused URL or a failed request, for the
	// service's own log; the URL is left out, since its query may carry a
	// receiver's token.
	Err error
	// Sent reports that the attempt went to the network: the receiver
	// answered, or looking up its host, connecting or the request failed.
	// It is false when Send refused the attempt before any request: a
	// missing secret, a scheme not allowed, a URL that may not be used (a
	// private address, found before the request or at dial time). The
	// metrics count only the attempts sent.
	Sent bool
}

// Sender makes signed delivery attempts.
type Sender struct {
	// Client sends the requests; NewClient's guards private addresses at
	// dial time.
	Client *http.Client
	// Resolver looks up the URL's host for the check before every
	// attempt; nil means the system's. Tests point it at a scripted DNS
	// server (webhookstest.DNS).
	Resolver *net.Resolver
	// AllowPrivate lets URLs point at private and reserved addresses
	// (PAYWATCH_WEBHOOK_ALLOW_PRIVATE).
	AllowPrivate bool
	// RequireHTTPS refuses plain http:// URLs (outside paywatch dev).
	RequireHTTPS bool
	// Now is the clock of the signature's timestamp; nil means time.Now.
	Now func() time.Time
}

// Send makes one attempt: it checks the URL's scheme and, before the
// request, that its host is or resolves only to public addresses (the
// dialer checks again on the address it connects to), signs
// timestamp + "." + payload with secret (paywatch.SignWebhook) and POSTs
// the payload. A 2xx answer is Delivered; a 4xx answer, a refused URL and
// a missing secret are Failed; anything else is Retry: a 3xx or 5xx
// answer, a timeout, a network error, and a host name that resolved to a
// private address, before the request or at dial time, since a DNS answer
// can change back where a URL cannot. Only what the receiver or the URL
// itself says is ever permanent, so a transient fault never fails an event
// such as payment.completed for good.
func (s *Sender) Send(ctx context.Context, rawURL, secret string, payload []byte) Result {
	if secret == "" {
		return Result{Outcome: Failed, Answer: "project has no webhook secret; webhooks are never sent unsigned"}
	}
	if err := CheckScheme(rawURL, !s.RequireHTTPS); err != nil {
		return Result{Outcome: Failed, Answer: err.Error()}
	}
	if err := checkURL(ctx, s.Resolver, rawURL, s.AllowPrivate); err != nil {
		switch {
		case fromDNSAnswer(err):
			return refusedForNow(err)
		case errors.Is(err, ErrPrivateAddress) || errors.Is(err, ErrBadURL):
			return refused(err)
		}
		return networkFailure(err)
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(payload))
	if err != nil {
		return Result{Outcome: Failed, Answer: ErrBadURL.Error(), Err: withoutURL(err)}
	}
	ts := paywatch.WebhookTimestamp(now())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "paywatch-webhooks/1")
	req.Header.Set(paywatch.HeaderTimestamp, ts)
	req.Header.Set(paywatch.HeaderSignature, paywatch.SignWebhook(secret, ts, payload))
	resp, err := s.Client.Do(req)
	if err != nil {
		if errors.Is(err, ErrPrivateAddress) {
			// Refused at dial time: what a DNS answer said then.
			return refusedForNow(err)
		}
		return networkFailure(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer))
	out := Result{StatusCode: resp.StatusCode, Answer: string(raw), Sent: true}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		out.Outcome = Delivered
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		out.Outcome = Failed
	default:
		out.Outcome = Retry
	}
	return out
}

// refused is the result of a refused URL: the reason alone, such as
// "webhook URL points to a private or reserved address". The delivery log
// is the project's to read, so it never names the address a host name
// resolved to, before the attempt or at dial time: a webhook URL must not
// serve to map the network paywatch runs in.
func refused(err error) Result {
	answer := ErrBadURL.Error()
	if errors.Is(err, ErrPrivateAddress) {
		answer = ErrPrivateAddress.Error()
	}
	return Result{Outcome: Failed, Answer: answer, Err: withoutURL(err)}
}

// refusedForNow is the result of a host name whose DNS answer was a
// private or reserved address: refused like a URL naming one, with the
// same answer, but retried, since the next answer may be public again.
func refusedForNow(err error) Result {
	r := refused(err)
	r.Outcome = Retry
	return r
}

// networkFailure is the result of an attempt that failed in the network.
func networkFailure(err error) Result {
	return Result{Outcome: Retry, Answer: networkFailureText(err), Err: withoutURL(err), Sent: true}
}

// networkFailureText describes an attempt that failed in the network with
// a fixed text ("timeout", "connection refused", "DNS lookup failed", ...),
// never Go's error text, which names addresses of the network paywatch runs
// in, such as the resolver's ("lookup x on 10.0.0.2:53") or the local
// socket's ("read tcp 10.1.2.3:5555->...").
func networkFailureText(err error) string {
	var dnsErr *net.DNSError
	var timeout interface{ Timeout() bool }
	var alert tls.AlertError
	var record tls.RecordHeaderError
	var verify *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &dnsErr):
		return "DNS lookup failed"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &timeout) && timeout.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed without an answer"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable"
	case errors.As(err, &alert), errors.As(err, &record), errors.As(err, &verify),
		errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid):
		return "TLS handshake failed"
	}
	return "network error"
}

// withoutURL is err for the service's log: a *url.Error's URL is dropped.
func withoutURL(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}
