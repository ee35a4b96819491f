package main

import (
	"context"
	"errors"

	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/telegram"
)

// mailer is the worker's Mailer: SMTP when PAYWATCH_SMTP_URL is set; none
// (the dev outbox) in dev without it; elsewhere without it, one that fails,
// so every e-mail is retried and logged until an SMTP server is set.
func (m *Main) mailer() (activities.Mailer, error) {
	cfg := &m.Config
	switch {
	case cfg.SMTPURL != "":
		return activities.NewSMTPMailer(cfg.SMTPURL, cfg.MailFrom)
	case cfg.Mode == ModeDev:
		return nil, nil
	}
	m.logger.Warn("PAYWATCH_SMTP_URL is not set: e-mails are kept and retried until it is")
	return noSMTP{}, nil
}

// noSMTP is the Mailer of a deployment without PAYWATCH_SMTP_URL.
type noSMTP struct{}

func (noSMTP) Send(context.Context, store.Mail) error {
	return errors.New("PAYWATCH_SMTP_URL is not set")
}

// telegramClient is the deployment's bot, or nil when
// PAYWATCH_TELEGRAM_BOT_TOKEN is unset (chat notifications off).
func (m *Main) telegramClient() *telegram.Client {
	if m.Config.TelegramBotToken == "" {
		return nil
	}
	return telegram.New(m.Config.TelegramAPIURL, m.Config.TelegramBotToken, nil)
}
