package payments

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/paywatch/paywatch"
)

// TelegramLink is a one-time link that connects a Telegram chat to a
// project: opening it and pressing Start sends the bot "/start <code>".
type TelegramLink struct {
	URL       string
	ExpiresAt time.Time
}

// botName caches the bot's username, read once with getMe.
type botName struct {
	mu   sync.Mutex
	name string
}

// TelegramLink makes a one-time link for a project's chat (operations.md
// §7): https://t.me/<bot>?start=<code>, valid for an hour. Without a bot
// token it is refused with a message saying so.
func (s *Service) TelegramLink(ctx context.Context, slug string) (TelegramLink, error) {
	if s.telegram == nil {
		return TelegramLink{}, paywatch.Errorf(paywatch.EINVALID, "%s", paywatch.MsgTelegramOff)
	}
	p, err := s.store.ProjectBySlug(ctx, slug)
	if err != nil {
		return TelegramLink{}, err
	}
	name, err := s.botUsername(ctx)
	if err != nil {
		return TelegramLink{}, err
	}
	// rand.Text is 26 base32 characters: within the 64 [A-Za-z0-9_-] of a
	// start parameter, and 130 bits that cannot be guessed.
	code := rand.Text()
	exp, err := s.store.NewTelegramLinkCode(ctx, p.ID, code)
	if err != nil {
		return TelegramLink{}, err
	}
	return TelegramLink{URL: "https://t.me/" + name + "?start=" + code, ExpiresAt: exp}, nil
}

// botUsername returns the bot's username, asking Telegram the first time.
func (s *Service) botUsername(ctx context.Context) (string, error) {
	s.bot.mu.Lock()
	defer s.bot.mu.Unlock()
	if s.bot.name != "" {
		return s.bot.name, nil
	}
	me, err := s.telegram.GetMe(ctx)
	if err != nil {
		return "", fmt.Errorf("read the bot's name: %w", err)
	}
	s.bot.name = me.Username
	return me.Username, nil
}

// ChatNotificationsOn reports whether the deployment has a bot.
func (s *Service) ChatNotificationsOn() bool { return s.telegram != nil }
