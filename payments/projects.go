package payments

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/locale"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/webhooks"
)

// The use cases of a merchant's projects, wallets and payment links: the
// operator endpoints (operations.md §2) and the dashboard (§6) both call
// them with inputs they have decoded.

// CreateProject creates a project with fresh credentials, shown to the
// caller this once. The webhook URL, when given, must pass the delivery's
// own check (see checkWebhookURL); an empty owner e-mail means no owner.
func (s *Service) CreateProject(ctx context.Context, np store.NewProject) (*store.Project, store.Credentials, error) {
	// The slug is checked before the webhook URL's DNS lookup: a request
	// that fails anyway should not wait for one.
	if err := paywatch.ValidateSlug(np.Slug); err != nil {
		return nil, store.Credentials{}, err
	}
	ps, err := s.checkSettings(ctx, np.Settings)
	if err != nil {
		return nil, store.Credentials{}, err
	}
	if ps.OwnerEmail != nil && *ps.OwnerEmail == "" {
		ps.OwnerEmail = nil
	}
	np.Settings = ps
	return s.store.CreateProject(ctx, np)
}

// UpdateProject changes a project's settings (every field of PATCH
// /v1/projects/{slug}). Once a webhook URL is saved, the events kept
// pending while the project had none are delivered.
func (s *Service) UpdateProject(ctx context.Context, slug string, ps store.ProjectSettings) (*store.Project, error) {
	ps, err := s.checkSettings(ctx, ps)
	if err != nil {
		return nil, err
	}
	p, err := s.store.UpdateProject(ctx, slug, ps)
	if err != nil {
		return nil, err
	}
	if p.WebhookURL != "" && ps.WebhookURL != nil {
		s.DeliverPendingWebhooks(ctx, p.ID)
	}
	return p, nil
}

// checkSettings applies the rules of settings the store cannot check: a
// webhook URL is trimmed and checked as delivery checks it.
func (s *Service) checkSettings(ctx context.Context, ps store.ProjectSettings) (store.ProjectSettings, error) {
	if ps.WebhookURL != nil && *ps.WebhookURL != "" {
		u := strings.TrimSpace(*ps.WebhookURL)
		ps.WebhookURL = &u
		if err := s.webhooks.check(ctx, u); err != nil {
			return ps, err
		}
	}
	return ps, nil
}

// PutWallet creates or changes a project's wallet (xPubs, static
// addresses, name; a name alone renames it). A project whose wallet was
// deleted gets it back, derivation counters included, so no address is
// handed out twice.
//
// A change of where payments go (an xPub set, replaced or removed, static
// addresses added) e-mails the owner an alert, as a key regeneration does:
// whoever holds a stolen session or master key could otherwise send the
// customers' funds elsewhere unnoticed.
func (s *Service) PutWallet(ctx context.Context, slug string, u store.WalletUpdate) (*store.Wallet, *store.Project, error) {
	var alert func(*store.Project) *store.Mail
	if WalletChangeRedirects(u) {
		alert = func(p *store.Project) *store.Mail {
			if p.Owner == nil {
				return nil
			}
			m := walletAlert(ownerLang(p), p, u, s.now())
			return &m
		}
	}
	w, p, m, err := s.store.PutWalletAlerted(ctx, slug, u, alert)
	if err != nil {
		return nil, nil, err
	}
	if m != nil {
		// The alert is queued with the change; a client gone by now must
		// not keep it from leaving.
		s.StartMail(context.WithoutCancel(ctx), m.ID)
	}
	return w, p, nil
}

// WalletChangeRedirects reports whether a wallet update changes where
// payments go: an xPub set, replaced or removed, or a static address
// added. A rename alone does not.
func WalletChangeRedirects(u store.WalletUpdate) bool {
	if len(u.XPubs) > 0 {
		return true
	}
	for _, as := range u.Addresses {
		if len(as) > 0 {
			return true
		}
	}
	return false
}

// walletAlert is the e-mail an owner gets when a wallet's xPubs or static
// addresses change, in the owner's language.
func walletAlert(l locale.Lang, p *store.Project, u store.WalletUpdate, at time.Time) store.Mail {
	var changes []string
	for _, f := range paywatch.DerivedFamilies() {
		x, ok := u.XPubs[string(f)]
		switch {
		case !ok:
		case x == nil || *x == "":
			changes = append(changes, l.T("mail.wallet.xpub_removed", "Family", string(f)))
		default:
			changes = append(changes, l.T("mail.wallet.xpub_set", "Family", string(f)))
		}
	}
	added := 0
	for _, as := range u.Addresses {
		added += len(as)
	}
	if added > 0 {
		changes = append(changes, l.T("mail.wallet.addresses", "Count", added))
	}
	return store.Mail{
		To:      p.Owner.Email,
		Subject: l.T("mail.wallet.subject", "Project", p.Name),
		Text: l.T("mail.wallet.text", "Project", p.Name, "Slug", p.Slug,
			"At", at.UTC().Format("2006-01-02 15:04:05"), "Changes", strings.Join(changes, "\n")),
	}
}

// RemoveStaticAddress takes a static address out of project slug's wallet,
// so no new payment gets it; refused while a payment still needs it
// watched, and for a dedicated address assigned to a customer. Like a
// wallet change, it e-mails the owner an alert naming the network, the
// address and by, who removed it (the signed-in account), queued with the
// removal: whoever holds a stolen session could otherwise thin out the
// addresses customers pay to unnoticed.
func (s *Service) RemoveStaticAddress(ctx context.Context, slug string, n paywatch.Network, address, by string) error {
	m, err := s.store.RemoveStaticAddressAlerted(ctx, slug, n, address, func(p *store.Project, address string) *store.Mail {
		if p.Owner == nil {
			return nil
		}
		m := staticAddressRemovedAlert(ownerLang(p), p, n, address, by, s.now())
		return &m
	})
	if err != nil {
		return err
	}
	if m != nil {
		// As for PutWallet: a client gone by now must not keep it from
		// leaving.
		s.StartMail(context.WithoutCancel(ctx), m.ID)
	}
	return nil
}

// staticAddressRemovedAlert is the wallet alert, in the owner's language,
// for a static address removed by by.
func staticAddressRemovedAlert(l locale.Lang, p *store.Project, n paywatch.Network, address, by string, at time.Time) store.Mail {
	return store.Mail{
		To:      p.Owner.Email,
		Subject: l.T("mail.wallet.subject", "Project", p.Name),
		Text: l.T("mail.wallet.text", "Project", p.Name, "Slug", p.Slug, "At", at.UTC().Format("2006-01-02 15:04:05"),
			"Changes", l.T("mail.wallet.address_removed", "Network", string(n), "Address", address, "By", by)),
	}
}

// DeleteWallet deletes a project's wallet, refused with 409 while any of
// its payments may still be paid into it (store.DeleteWallet). The
// dashboard asks for the owner's protection key before calling it.
func (s *Service) DeleteWallet(ctx context.Context, slug string) error {
	return s.store.DeleteWallet(ctx, slug)
}

// PreviewAddresses derives the first n payment addresses (indexes 1..n) of
// an xPub in family f, for the merchant to compare with their wallet
// before saving it; a malformed or private key gets the wallet endpoint's
// message.
func PreviewAddresses(xpub string, f paywatch.Family, n int) ([]string, error) {
	return store.WalletPreview(xpub, f, n)
}

// networklessDecimals is the precision of a link amount whose network is
// left to the buyer: the fewest decimals of any token, which every network
// the buyer may pick represents exactly.
var networklessDecimals = func() int {
	d := paywatch.MaxDecimals
	for _, p := range paywatch.Pairs() {
		d = min(d, paywatch.Decimals(p.Network, p.Token))
	}
	return d
}()

// LinkAmount reads the fixed amount of a payment link (text in JSON number
// form) at the precision the link allows: the token's decimals on a fixed
// network (paywatch.LinkToken when none is given; an unsupported pair is refused
// with its message), or the fewest decimals of any token otherwise.
func LinkAmount(n paywatch.Network, t paywatch.Token, text string) (paywatch.Amount, error) {
	decimals := networklessDecimals
	if n != "" {
		if t == "" {
			t = paywatch.LinkToken(n)
		}
		if err := paywatch.ValidatePair(n, t); err != nil {
			return paywatch.Amount{}, err
		}
		decimals = paywatch.Decimals(n, t)
	}
	return paywatch.ParseAmount(text, decimals)
}

// CreatePaymentLink adds a payment link to a project, within the owner's
// plan limit; a project without an owner cannot have one.
func (s *Service) CreatePaymentLink(ctx context.Context, nl store.NewPaymentLink) (*store.PaymentLink, error) {
	return s.store.CreatePaymentLink(ctx, nl)
}

// ListPaymentLinks returns a project's payment links, newest first, with
// how many payments each made and how many of them were paid.
func (s *Service) ListPaymentLinks(ctx context.Context, projectID int64) ([]store.LinkSummary, error) {
	return s.store.ListPaymentLinks(ctx, projectID)
}

// DeactivatePaymentLink stops a project's payment link from taking new
// payments; its page says so, and payments already made go on. Another
// project's link is "Payment link not found".
func (s *Service) DeactivatePaymentLink(ctx context.Context, projectID int64, id string) (*store.PaymentLink, error) {
	return s.store.SetPaymentLinkActive(ctx, projectID, id, false)
}

// ActivatePaymentLink lets a deactivated payment link of a project take
// payments again.
func (s *Service) ActivatePaymentLink(ctx context.Context, projectID int64, id string) (*store.PaymentLink, error) {
	return s.store.SetPaymentLinkActive(ctx, projectID, id, true)
}

// ProjectsOwnedBy returns the projects an account owns, by name.
func (s *Service) ProjectsOwnedBy(ctx context.Context, accountID int64) ([]*store.Project, error) {
	return s.store.ProjectsOwnedBy(ctx, accountID)
}

// Usage returns an account's usage against its plan: today's API calls and
// webhooks, and its projects, wallets and payment links as the limits
// count them, with the effective limits.
func (s *Service) Usage(ctx context.Context, accountID int64) (store.Usage, error) {
	return s.store.Usage(ctx, accountID)
}

// PaymentTimeline returns the statuses a project's payment went through,
// oldest first.
func (s *Service) PaymentTimeline(ctx context.Context, projectID int64, paymentID string) ([]store.StatusChange, error) {
	return s.store.PaymentTimeline(ctx, projectID, paymentID)
}

// maxWebhookURLLength bounds stored webhook URLs.
const maxWebhookURLLength = 2048

// webhookLookupTimeout bounds the DNS lookup of a webhook host when saved.
const webhookLookupTimeout = 3 * time.Second

// webhookPolicy is the deployment's rule for webhook URLs.
type webhookPolicy struct {
	// allowPrivate: PAYWATCH_WEBHOOK_ALLOW_PRIVATE.
	allowPrivate bool
	// requireHTTPS: paywatch serve, api and worker, unless
	// PAYWATCH_WEBHOOK_ALLOW_HTTP.
	requireHTTPS bool
}

// check applies the delivery's own URL check (webhooks.CheckURL: absolute
// http(s), no private, reserved or loopback target unless allowPrivate)
// when a webhook URL is saved, so the two can never disagree. A host name
// that does not resolve now is accepted: the address is checked again
// before every delivery. With requireHTTPS a plain http:// URL is refused
// too, as delivery refuses it.
func (p webhookPolicy) check(ctx context.Context, raw string) error {
	if len(raw) > maxWebhookURLLength {
		return paywatch.Errorf(paywatch.EINVALID, paywatch.MsgWebhookURLShape)
	}
	if err := webhooks.CheckScheme(raw, !p.requireHTTPS); errors.Is(err, webhooks.ErrInsecureURL) {
		return paywatch.Errorf(paywatch.EINVALID, paywatch.MsgWebhookURLHTTPS)
	}
	ctx, cancel := context.WithTimeout(ctx, webhookLookupTimeout)
	defer cancel()
	err := webhooks.CheckURL(ctx, raw, p.allowPrivate)
	switch {
	case errors.Is(err, webhooks.ErrBadURL):
		return paywatch.Errorf(paywatch.EINVALID, paywatch.MsgWebhookURLShape)
	case errors.Is(err, webhooks.ErrPrivateAddress):
		return paywatch.Errorf(paywatch.EINVALID, paywatch.MsgWebhookURLPrivate)
	}
	return nil
}
