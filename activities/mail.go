package activities

import (
	"context"
	"errors"
	"fmt"
	netmail "net/mail"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"github.com/wneessen/go-mail"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/workflows"
)

// Mailer hands an e-mail to a mail server. Message is what it sends;
// nil Mailer (dev without PAYWATCH_SMTP_URL) files every message in the
// outbox instead, the mail_messages table that GET /dev/mail lists.
type Mailer interface {
	Send(ctx context.Context, m store.Mail) error
}

// SendMail sends one queued message through the Mailer, or files it in
// the dev outbox, and marks it sent. A message already sent is left alone,
// so a retried activity sends it once; should the worker die between the
// send and the mark, the message goes out again with the same Message-ID,
// which mail servers and clients recognise.
func (a *Activities) SendMail(ctx context.Context, in workflows.SendMailInput) error {
	m, ok, err := a.store.MailByID(ctx, in.MailID)
	if err != nil {
		return err
	}
	if !ok {
		activity.GetLogger(ctx).Error("e-mail to send not found", "mailId", in.MailID)
		return nil
	}
	if m.Sent {
		return nil
	}
	if a.mailer != nil {
		if err := a.mailer.Send(ctx, m); err != nil {
			activity.GetLogger(ctx).Warn("e-mail not sent; retrying", "mailId", m.ID, "error", err)
			if rerr := a.store.RecordMailFailure(ctx, m.ID, err.Error()); rerr != nil {
				return rerr
			}
			if smtpTemporary(err) {
				return temporal.NewApplicationErrorWithOptions("e-mail deferred by the mail server",
					workflows.ErrTypeMailDeferred, temporal.ApplicationErrorOptions{Cause: err})
			}
			return err
		}
	}
	return a.store.MarkMailSent(ctx, m.ID, a.mailer != nil)
}

// smtpTemporary reports whether err is a mail server's temporary refusal,
// an SMTP 4xx reply, which the retry is meant for. Anything else (a 5xx,
// a server that cannot be reached, a TLS or authentication failure) is a
// real fault and is reported as one.
func smtpTemporary(err error) bool {
	var se *mail.SendError
	if errors.As(err, &se) && (se.IsTemp() || se.ErrorCode()/100 == 4) {
		return true
	}
	var te *textproto.Error
	return errors.As(err, &te) && te.Code/100 == 4
}

// SMTPMailer sends e-mail through one SMTP server (PAYWATCH_SMTP_URL) with
// go-mail.
type SMTPMailer struct {
	client *mail.Client
	from   string
	domain string // of from, for Message-IDs
}

// NewSMTPMailer returns a Mailer for rawURL, smtp://user:pass@host:port
// (STARTTLS when the server offers it) or smtps://... (implicit TLS), that
// sends as from (PAYWATCH_MAIL_FROM).
func NewSMTPMailer(rawURL, from string) (*SMTPMailer, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" || (u.Scheme != "smtp" && u.Scheme != "smtps") {
		return nil, fmt.Errorf("PAYWATCH_SMTP_URL must be smtp://user:pass@host:port or smtps://...")
	}
	// STARTTLS when the server offers it; required once there are
	// credentials, so that a man in the middle who strips the offer never
	// gets them (or the mail) in the clear.
	policy := mail.TLSOpportunistic
	if u.User != nil {
		policy = mail.TLSMandatory
	}
	opts := []mail.Option{mail.WithTLSPolicy(policy)}
	port := 587
	if u.Scheme == "smtps" {
		port = 465
		opts = []mail.Option{mail.WithSSL()}
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("PAYWATCH_SMTP_URL: bad port %q", p)
		}
	}
	opts = append(opts, mail.WithPort(port))
	if u.User != nil {
		pass, _ := u.User.Password()
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover), mail.WithUsername(u.User.Username()), mail.WithPassword(pass))
	}
	c, err := mail.NewClient(u.Hostname(), opts...)
	if err != nil {
		return nil, fmt.Errorf("PAYWATCH_SMTP_URL: %w", err)
	}
	addr, err := netmail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("PAYWATCH_MAIL_FROM: %q is not an e-mail address", from)
	}
	domain := addr.Address[strings.LastIndex(addr.Address, "@")+1:]
	return &SMTPMailer{client: c, from: from, domain: domain}, nil
}

// Send sends m, with the Message-ID <id@domain-of-from> so that a resend
// after a crash is recognised as the same message.
func (s *SMTPMailer) Send(ctx context.Context, m store.Mail) error {
	msg := mail.NewMsg()
	if err := msg.From(s.from); err != nil {
		return fmt.Errorf("mail from %q: %w", s.from, err)
	}
	if err := msg.To(m.To); err != nil {
		return fmt.Errorf("mail to: %w", err)
	}
	msg.Subject(m.Subject)
	msg.SetMessageIDWithValue(m.ID + "@" + s.domain)
	msg.SetBodyString(mail.TypeTextPlain, m.Text)
	if m.HTML != "" {
		msg.AddAlternativeString(mail.TypeTextHTML, m.HTML)
	}
	return s.client.DialAndSendWithContext(ctx, msg)
}
