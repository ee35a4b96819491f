package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/paywatch/paywatch/workflows"
)

// leveled raises the minimum level of a handler; the Temporal SDK logs every
// poll at info, which would drown paywatch's own logs.
type leveled struct {
	slog.Handler
	min slog.Level
}

func (l leveled) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= l.min && l.Handler.Enabled(ctx, lv)
}

// expectedActivityErrors are the application error types of activity
// failures that are part of normal operation, retried by design: a legacy
// webhook attempt answered 5xx, a chain provider's rate limit, a webhook
// read during a database outage, a mail server's 4xx. The SDK logs every
// failed activity attempt at ERROR; these are logged at WARN instead.
var expectedActivityErrors = []string{
	"(type: " + workflows.ErrTypeWebhookRetry + ",",
	"(type: " + workflows.ErrTypeRateLimited + ",",
	"(type: " + workflows.ErrTypeWebhookNotSent + ",",
	"(type: " + workflows.ErrTypeMailDeferred + ",",
}

// Handle lowers the SDK's "Activity error." records of expected retries
// to WARN, then passes every record on.
func (l leveled) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelError && r.Message == "Activity error." {
		expected := false
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "Error" {
				v := a.Value.String()
				for _, typ := range expectedActivityErrors {
					expected = expected || strings.Contains(v, typ)
				}
			}
			return true
		})
		if expected {
			if !l.Enabled(ctx, slog.LevelWarn) {
				return nil
			}
			w := slog.NewRecord(r.Time, slog.LevelWarn, r.Message, r.PC)
			r.Attrs(func(a slog.Attr) bool { w.AddAttrs(a); return true })
			r = w
		}
	}
	return l.Handler.Handle(ctx, r)
}

func (l leveled) WithAttrs(a []slog.Attr) slog.Handler { return leveled{l.Handler.WithAttrs(a), l.min} }

func (l leveled) WithGroup(n string) slog.Handler { return leveled{l.Handler.WithGroup(n), l.min} }
