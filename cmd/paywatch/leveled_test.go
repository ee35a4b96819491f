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
}
