package api

import (
	"context"
	"errors"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/webhooks"
)

// maxWebhookURLLength bounds stored webhook URLs.
const maxWebhookURLLength = 2048

// webhookLookupTimeout bounds the DNS lookup of a webhook host when saved.
const webhookLookupTimeout = 3 * time.Second

// checkWebhookURL applies the delivery's own URL check
// (webhooks.CheckURL: absolute http(s), no private, reserved or
// loopback target unless allowPrivate) when a webhook URL is saved, so the
// two can never disagree. A host name that does not resolve now is
// accepted: the address is checked again before every delivery.
//
// With requireHTTPS (paywatch serve, api and worker, unless
// PAYWATCH_WEBHOOK_ALLOW_HTTP) a plain http:// URL is refused too, as
// delivery refuses it.
func checkWebhookURL(ctx context.Context, raw string, allowPrivate, requireHTTPS bool) error {
	if len(raw) > maxWebhookURLLength {
		return paywatch.Errorf(paywatch.EINVALID, paywatch.MsgWebhookURLShape)
	}
	if err := webhooks.CheckScheme(raw, !requireHTTPS); errors.Is(err, webhooks.ErrInsecureURL) {
		return paywatch.Errorf(paywatch.EINVALID, paywatch.MsgWebhookURLHTTPS)
	}
	ctx, cancel := context.WithTimeout(ctx, webhookLookupTimeout)
	defer cancel()
	err := webhooks.CheckURL(ctx, raw, allowPrivate)
	switch {
	case errors.Is(err, webhooks.ErrBadURL):
		return paywatch.Errorf(paywatch.EINVALID, paywatch.MsgWebhookURLShape)
	case errors.Is(err, webhooks.ErrPrivateAddress):
		return paywatch.Errorf(paywatch.EINVALID, paywatch.MsgWebhookURLPrivate)
	}
	return nil
}
