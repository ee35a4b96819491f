package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/paywatch/paywatch"
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

// rejectionTypes are the application error types of an activity's
// verdict on a caller's request (workflows.Rejectable: invalid, conflict,
// not found, ...): the caller gets a 4xx, and the log gets no ERROR, since
// nothing is wrong with the service.
var rejectionTypes = []string{
	"(type: " + paywatch.EINVALID + ",", "(type: " + paywatch.EFORBIDDEN + ",", "(type: " + paywatch.ERATELIMIT + ",",
	"(type: " + paywatch.ECONFLICT + ",", "(type: " + paywatch.EGONE + ",", "(type: " + paywatch.ENOTFOUND + ",",
}

// Handle lowers the SDK's ERROR records that need no operator: "Activity
// error." of expected retries to WARN, of a request's rejection to INFO,
// and a task's "context canceled" while the worker stops (SIGTERM) to
// INFO; then it passes every record on.
func (l leveled) Handle(ctx context.Context, r slog.Record) error {
	if r.Level != slog.LevelError {
		return l.Handler.Handle(ctx, r)
	}
	text := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "Error" {
			text += " " + a.Value.String()
		}
		return true
	})
	contains := func(list []string) bool {
		for _, s := range list {
			if strings.Contains(text, s) {
				return true
			}
		}
		return false
	}
	level := slog.LevelError
	switch {
	case r.Message == "Activity error." && contains(expectedActivityErrors):
		level = slog.LevelWarn
	case r.Message == "Activity error." && contains(rejectionTypes):
		level = slog.LevelInfo
	case strings.HasPrefix(r.Message, "Activity task postprocess error") && strings.Contains(text, context.Canceled.Error()):
		level = slog.LevelInfo
	}
	if level == slog.LevelError {
		return l.Handler.Handle(ctx, r)
	}
	if !l.Enabled(ctx, level) {
		return nil
	}
	w := slog.NewRecord(r.Time, level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool { w.AddAttrs(a); return true })
	return l.Handler.Handle(ctx, w)
}

func (l leveled) WithAttrs(a []slog.Attr) slog.Handler { return leveled{l.Handler.WithAttrs(a), l.min} }

func (l leveled) WithGroup(n string) slog.Handler { return leveled{l.Handler.WithGroup(n), l.min} }
