package main

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The SDK's "Activity error." records of expected retries (a legacy
// webhook 5xx, a chain rate limit, a webhook read during an outage) reach
// the log at WARN; every other error stays at ERROR.
func TestExpectedActivityErrorsAreWarnings(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(leveled{slog.NewTextHandler(&buf, nil), slog.LevelWarn})
	log.Error("Activity error.", "ActivityType", "webhook.deliver", "Error", "webhook e attempt 2: HTTP 503: busy (type: WebhookRetry, retryable: true)")
	assert.Contains(t, buf.String(), "level=WARN")
	buf.Reset()
	log.Error("Activity error.", "ActivityType", "mail.send", "Error", "e-mail deferred by the mail server (type: MailDeferred, retryable: true): 451 try again later")
	assert.Contains(t, buf.String(), "level=WARN", "an SMTP 4xx")
	buf.Reset()
	log.Error("Activity error.", "ActivityType", "mail.send", "Error", "554 refused for good")
	assert.Contains(t, buf.String(), "level=ERROR", "an SMTP 5xx")
	buf.Reset()
	log.Error("Activity error.", "ActivityType", "payment.save-state", "Error", "save payment: connection refused")
	assert.Contains(t, buf.String(), "level=ERROR")
	buf.Reset()
	slog.New(leveled{slog.NewTextHandler(&buf, nil), slog.LevelError}).Error("Activity error.", "Error", "x (type: RateLimited, retryable: true)")
	assert.Empty(t, buf.String(), "below the SDK's level")

	// Issue 28, item 16: a request's rejection (an unauthenticated
	// select-network for a network the project cannot serve) and a task
	// cancelled by a clean SIGTERM need no operator.
	info := slog.New(leveled{slog.NewTextHandler(&buf, nil), slog.LevelInfo})
	buf.Reset()
	info.Error("Activity error.", "ActivityType", "payment.select-network",
		"Error", "USDC is not supported on TRC20 (type: invalid, retryable: false)")
	assert.Contains(t, buf.String(), "level=INFO")
	buf.Reset()
	info.Error("Activity task postprocess error: context canceled", "Error", "context canceled")
	assert.Contains(t, buf.String(), "level=INFO")
	buf.Reset()
	info.Error("Activity task postprocess error: connection refused", "Error", "connection refused")
	assert.Contains(t, buf.String(), "level=ERROR", "anything else stays an ERROR")
}
