package accounts

import (
	"fmt"
	"strings"

	"github.com/paywatch/paywatch/store"
)

// The e-mails of the account use cases: plain text, with no secret but the
// link itself.

// confirmMail carries a registration's confirmation link.
func (s *Service) confirmMail(email, token string) store.Mail {
	return store.Mail{
		To:      email,
		Subject: "Confirm your paywatch account",
		Text: "Someone, hopefully you, asked to open a paywatch account with this address.\n\n" +
			"To confirm the address and create the account, open this link within 24 hours:\n\n" +
			s.link("/confirm", token) + "\n\n" +
			"The link works once. If you did not ask for an account, ignore this e-mail: no account is created without it.\n",
	}
}

// registeredAgainMail answers a registration with an address that has an
// account already: the form said the same as for a new address, and the
// owner of the address learns what happened.
func (s *Service) registeredAgainMail(email string) store.Mail {
	return store.Mail{
		To:      email,
		Subject: "Someone tried to register with your paywatch address",
		Text: "Someone tried to register a new paywatch account with this address, which already has an account.\n\n" +
			"If it was you, sign in at " + s.dashboardURL() + " instead; if you forgot your password, " +
			"reset it from the sign-in page.\n\n" +
			"If it was not you, you need not do anything: your account has not changed.\n",
	}
}

// setPasswordMail carries an operator-created account's first password
// link.
func (s *Service) setPasswordMail(a *store.Account, token string) store.Mail {
	return store.Mail{
		To:      a.Email,
		Subject: "Set your paywatch password",
		Text: fmt.Sprintf("A paywatch account (plan %s) was created for this address.\n\n", a.Plan) +
			"To set your password and sign in to the dashboard, open this link within 7 days:\n\n" +
			s.link("/password/reset", token) + "\n\n" +
			"The link works once. After it expires, use \"forgot your password\" on the sign-in page at " +
			s.dashboardURL() + ".\n",
	}
}

// resetMail carries a password reset link.
func (s *Service) resetMail(email, token string) store.Mail {
	return store.Mail{
		To:      email,
		Subject: "Reset your paywatch password",
		Text: "Someone, hopefully you, asked to reset the password of the paywatch account of this address.\n\n" +
			"To choose a new password, open this link within 1 hour:\n\n" +
			s.link("/password/reset", token) + "\n\n" +
			"The link works once, and setting a new password signs you out everywhere. " +
			"If you did not ask for this, ignore this e-mail: your password stays as it is.\n",
	}
}

// inviteMail carries an invitation to view a project's payments.
func (s *Service) inviteMail(p *store.Project, email, token string) store.Mail {
	from := "The owner"
	if o := p.OwnerEmail(); o != "" {
		from = o
	}
	return store.Mail{
		To:      email,
		Subject: fmt.Sprintf("You're invited to view %s on paywatch", oneLine(p.Name)),
		Text: fmt.Sprintf("%s invited you to view the payments of the project %s on paywatch.\n\n", from, oneLine(p.Name)) +
			"To accept, open this link within 7 days:\n\n" +
			s.link("/invite", token) + "\n\n" +
			"The link works once. If you do not know this project, ignore this e-mail.\n",
	}
}

// dashboardURL is where the dashboard's sign-in page is.
func (s *Service) dashboardURL() string {
	return strings.TrimRight(s.deps.BaseURL, "/") + "/dashboard"
}

// oneLine keeps a project name from breaking a subject line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
