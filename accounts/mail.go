package accounts

import (
	"strings"

	"github.com/paywatch/paywatch/locale"
	"github.com/paywatch/paywatch/store"
)

// The e-mails of the account use cases: plain text, with no secret but the
// link itself, in the language of the person whose request sends them
// (locale.FromContext: the dashboard's Accept-Language; English for the
// operator's API unless its request names a language).

// confirmMail carries a registration's confirmation link.
func (s *Service) confirmMail(l locale.Lang, email, token string) store.Mail {
	return store.Mail{
		To:      email,
		Subject: l.T("mail.confirm.subject"),
		Text:    l.T("mail.confirm.text", "Link", s.link("/confirm", token)),
	}
}

// registeredAgainMail answers a registration with an address that has an
// account already: the form said the same as for a new address, and the
// owner of the address learns what happened.
func (s *Service) registeredAgainMail(l locale.Lang, email string) store.Mail {
	return store.Mail{
		To:      email,
		Subject: l.T("mail.registered_again.subject"),
		Text:    l.T("mail.registered_again.text", "Dashboard", s.dashboardURL()),
	}
}

// setPasswordMail carries an operator-created account's first password
// link.
func (s *Service) setPasswordMail(l locale.Lang, a *store.Account, token string) store.Mail {
	return store.Mail{
		To:      a.Email,
		Subject: l.T("mail.set_password.subject"),
		Text: l.T("mail.set_password.text", "Plan", string(a.Plan),
			"Link", s.link("/password/reset", token), "Dashboard", s.dashboardURL()),
	}
}

// resetMail carries a password reset link.
func (s *Service) resetMail(l locale.Lang, email, token string) store.Mail {
	return store.Mail{
		To:      email,
		Subject: l.T("mail.reset.subject"),
		Text:    l.T("mail.reset.text", "Link", s.link("/password/reset", token)),
	}
}

// inviteMail carries an invitation to view a project's payments, in the
// language of the owner who invites.
func (s *Service) inviteMail(l locale.Lang, p *store.Project, email, token string) store.Mail {
	from := l.T("mail.invite.from_owner")
	if o := p.OwnerEmail(); o != "" {
		from = o
	}
	return store.Mail{
		To:      email,
		Subject: l.T("mail.invite.subject", "Project", oneLine(p.Name)),
		Text:    l.T("mail.invite.text", "From", from, "Project", oneLine(p.Name), "Link", s.link("/invite", token)),
	}
}

// accountLang is the language of mail to an existing account: its own
// (recorded at sign-in), never the language of whoever asked for the mail,
// who may be someone else; English for an account that never signed in.
func accountLang(a *store.Account) locale.Lang {
	if a != nil {
		if l, ok := locale.Parse(a.Locale); ok {
			return l
		}
	}
	return locale.English
}

// dashboardURL is where the dashboard's sign-in page is.
func (s *Service) dashboardURL() string {
	return strings.TrimRight(s.deps.BaseURL, "/") + "/dashboard"
}

// oneLine keeps a project name from breaking a subject line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
