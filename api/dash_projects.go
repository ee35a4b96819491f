package api

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/accounts"
	"github.com/paywatch/paywatch/payments"
)

// homePage is the data of the dashboard's first page: the account's
// projects and its usage against the plan.
type homePage struct {
	dashPage
	Projects []accounts.ProjectRole
	Usage    *payments.Usage
	CanAdd   bool
	// ViewerOnly marks an account that owns no project and views some:
	// its home lists what it views, without creating projects or the
	// plan's usage, neither of which a viewer uses.
	ViewerOnly bool
}

// dashHome lists the account's projects and its usage.
func (s *Server) dashHome(c echo.Context) error {
	ctx := c.Request().Context()
	sess := session(c)
	prs, err := s.accounts.Projects(ctx, sess.Account.ID)
	if err != nil {
		return err
	}
	u, err := s.payments.Usage(ctx, sess.Account.ID)
	if err != nil {
		return err
	}
	pg := homePage{dashPage: s.page(c, "Projects"), Projects: prs, Usage: &u}
	pg.CanAdd = u.Limits.Projects < 0 || int64(u.Projects) < u.Limits.Projects
	if u.Projects == 0 && len(prs) > 0 {
		pg.ViewerOnly, pg.CanAdd, pg.Usage = true, false, nil
		pg.Title = "Projects shared with you"
	}
	return renderDash(c, http.StatusOK, "home", pg)
}

// projectForm is the data of the new-project and settings pages: the
// project's values as typed, so a refused form keeps them.
type projectForm struct {
	dashPage
	Slug                 string
	Name                 string
	WebhookURL           string
	OwnerEmail           string
	AddressMode          string
	PoolMatching         string
	MinAmount            string
	MicroAmountDecimals  string
	RotationThreshold    string
	PaymentExpiryMinutes string
	TelegramChatID       string
	// UnmatchedWebhooks is the transfer.unmatched opt-in checkbox.
	UnmatchedWebhooks bool
	// TelegramChatWas is the chat the form was shown with: the field is
	// saved only when it was changed, so a chat linked with /start while
	// the page was open is not undone by saving other settings.
	TelegramChatWas string
	Modes           []string
	// ChatOn tells whether the server has a Telegram bot, and
	// TelegramLink is a chat link just made, shown once.
	ChatOn       bool
	TelegramLink string
	// Credentials are shown once, after creation.
	Credentials payments.Credentials
	// WebhookRule says what this deployment takes as a webhook URL.
	WebhookRule string
}

// webhookRule is the webhook URL hint of this deployment's rules
// (PAYWATCH_WEBHOOK_ALLOW_HTTP, PAYWATCH_WEBHOOK_ALLOW_PRIVATE), so that a
// hint never says what the deployment does not do.
func (s *Server) webhookRule() string {
	switch https, public := s.deps.WebhookRequireHTTPS, !s.deps.WebhookAllowPrivate; {
	case https && public:
		return "HTTPS; private and local addresses are refused."
	case https:
		return "HTTPS; private and local addresses are accepted on this server."
	case public:
		return "HTTP or HTTPS; private and local addresses are refused."
	}
	return "HTTP or HTTPS, local and private addresses included (this server is in development mode)."
}

// formOf fills a settings form from a stored project.
func formOf(p *payments.Project) projectForm {
	f := projectForm{
		Slug: p.Slug, Name: p.Name, WebhookURL: p.WebhookURL, OwnerEmail: p.OwnerEmail(),
		AddressMode: string(p.AddressMode), PoolMatching: string(p.PoolMatching),
		MicroAmountDecimals:  itoa(p.MicroAmountDecimals),
		PaymentExpiryMinutes: itoa(p.PaymentExpiryMinutes),
		TelegramChatID:       p.TelegramChatID,
		TelegramChatWas:      p.TelegramChatID,
		UnmatchedWebhooks:    p.UnmatchedWebhooks,
	}
	if p.MinAmount != nil {
		f.MinAmount = p.MinAmount.String()
	}
	if p.RotationThreshold != nil {
		f.RotationThreshold = p.RotationThreshold.String()
	}
	return f
}

// formValues reads a settings form as typed.
func formValues(c echo.Context) projectForm {
	v := func(k string) string { return strings.TrimSpace(c.FormValue(k)) }
	return projectForm{
		Slug: v("slug"), Name: v("name"), WebhookURL: v("webhook_url"),
		AddressMode: v("address_mode"), PoolMatching: v("pool_matching"), MinAmount: v("minAmount"),
		MicroAmountDecimals: v("micro_amount_decimals"), RotationThreshold: v("rotation_threshold"),
		PaymentExpiryMinutes: v("payment_expiry_minutes"), TelegramChatID: v("telegram_chat_id"),
		TelegramChatWas: v("telegram_chat_was"), UnmatchedWebhooks: v("unmatched_webhooks") == "on",
	}
}

var wholeNumber = regexp.MustCompile(`^[0-9]{1,9}$`)

// request turns a settings form into the body PATCH /v1/projects/{slug}
// takes, so the form gets the same checks and messages as the API. An
// empty optional field clears the setting; a field the form does not show
// (all is false: the new-project form) is left out.
func (f projectForm) request(all bool) (projectRequest, error) {
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	orNull := func(s string) json.RawMessage {
		if s == "" {
			return json.RawMessage("null")
		}
		return str(s)
	}
	req := projectRequest{Name: str(f.Name), WebhookURL: orNull(f.WebhookURL)}
	if f.Name == "" {
		req.Name = nil
	}
	if !all {
		if f.WebhookURL == "" {
			req.WebhookURL = nil
		}
		return req, nil
	}
	req.AddressMode, req.PoolMatching = str(f.AddressMode), str(f.PoolMatching)
	req.MinAmount, req.RotationThreshold = orNull(f.MinAmount), orNull(f.RotationThreshold)
	req.UnmatchedWebhooks = json.RawMessage(strconv.FormatBool(f.UnmatchedWebhooks))
	if f.TelegramChatID != f.TelegramChatWas {
		req.TelegramChatID = orNull(f.TelegramChatID)
	}
	for _, n := range []struct {
		text  string
		field string
		dst   *json.RawMessage
	}{
		{f.MicroAmountDecimals, "micro_amount_decimals", &req.MicroAmountDecimals},
		{f.PaymentExpiryMinutes, "payment_expiry_minutes", &req.PaymentExpiryMinutes},
	} {
		if !wholeNumber.MatchString(n.text) {
			return req, paywatch.Errorf(paywatch.EINVALID, paywatch.MsgWholeNumber, n.field)
		}
		*n.dst = json.RawMessage(n.text)
	}
	return req, nil
}

// modes are the address modes the settings form offers.
var modes = []string{string(paywatch.ModePerPayment), string(paywatch.ModePerUser), string(paywatch.ModeDedicated), string(paywatch.ModePool)}

// projectFormRender renders the new-project or settings form with err's
// message.
func (s *Server) projectFormRender(c echo.Context, name, title string, f projectForm, err error) error {
	status := http.StatusOK
	f.dashPage = s.page(c, title)
	f.Tab, f.Modes, f.ChatOn, f.WebhookRule = "settings", modes, s.payments.ChatNotificationsOn(), s.webhookRule()
	if err != nil {
		st, msg, ok := formError(err)
		if !ok {
			return err
		}
		status, f.Error, f.Flash = st, msg, ""
	}
	return renderDash(c, status, name, f)
}

func (s *Server) projectNewShow(c echo.Context) error {
	return s.projectFormRender(c, "project_new", "New project", projectForm{}, nil)
}

// projectNewSubmit creates a project owned by the signed-in account, within
// its plan, and shows its credentials once.
func (s *Server) projectNewSubmit(c echo.Context) error {
	f := formValues(c)
	p, creds, err := s.createOwnProject(c, f)
	if err != nil {
		return s.projectFormRender(c, "project_new", "New project", f, err)
	}
	// The keys cross the redirect sealed (dash_reveal.go): a reload of the
	// page that shows them neither creates the project again nor shows
	// them twice.
	if err := s.reveal(c, revealProject, p.Slug, creds); err != nil {
		return err
	}
	return s.redirect(c, DashboardPath+"/p/"+p.Slug+"/created", "")
}

// projectCreatedShow shows a new project's keys, once, and what to do
// next.
func (s *Server) projectCreatedShow(c echo.Context) error {
	var creds payments.Credentials
	p := dashProject(c)
	if !s.takeReveal(c, revealProject, p.Slug, &creds) {
		return s.redirect(c, DashboardPath+"/p/"+p.Slug+"/keys", flashShownOnce)
	}
	out := formOf(p)
	out.Credentials = creds
	out.dashPage = s.page(c, "Project created")
	out.Project, out.Owner = p, true
	return renderDash(c, http.StatusOK, "project_created", out)
}

// createOwnProject checks the new-project form and creates the project.
func (s *Server) createOwnProject(c echo.Context, f projectForm) (*payments.Project, payments.Credentials, error) {
	if err := paywatch.ValidateSlug(f.Slug); err != nil {
		return nil, payments.Credentials{}, err
	}
	req, err := f.request(false)
	if err != nil {
		return nil, payments.Credentials{}, err
	}
	ps, err := projectSettings(req)
	if err != nil {
		return nil, payments.Credentials{}, err
	}
	email := session(c).Account.Email
	ps.OwnerEmail = &email
	return s.payments.CreateProject(c.Request().Context(), payments.NewProject{Slug: f.Slug, Settings: ps})
}

// projectShow opens a project: its payments.
func (s *Server) projectShow(c echo.Context) error {
	return c.Redirect(http.StatusSeeOther, DashboardPath+"/p/"+dashProject(c).Slug+"/payments")
}

func (s *Server) settingsShow(c echo.Context) error {
	f := formOf(dashProject(c))
	s.takeReveal(c, revealTelegram, dashProject(c).Slug, &f.TelegramLink)
	return s.projectFormRender(c, "settings", "Settings", f, nil)
}

// settingsSubmit saves the settings of PATCH /v1/projects/{slug} but the
// owner: handing a project to another account stays the operator's step,
// or anyone could push a project (and its use of the plan's quotas) onto
// an account, and learn from the answer which addresses have one.
func (s *Server) settingsSubmit(c echo.Context) error {
	f := formValues(c)
	p := dashProject(c)
	f.Slug, f.OwnerEmail = p.Slug, p.OwnerEmail()
	req, err := f.request(true)
	if err == nil {
		var ps payments.ProjectSettings
		if ps, err = projectSettings(req); err == nil {
			ps.ByOwner = true
			_, err = s.payments.UpdateProject(c.Request().Context(), p.Slug, ps)
		}
	}
	if err != nil {
		return s.projectFormRender(c, "settings", "Settings", f, err)
	}
	return s.redirect(c, DashboardPath+"/p/"+p.Slug+"/settings", flashSaved)
}

// projectDeactivate turns a project off (its API key and pages stop) or,
// with active=true, on again.
func (s *Server) projectDeactivate(c echo.Context) error {
	on := c.FormValue("active") == "true"
	p := dashProject(c)
	if _, err := s.payments.UpdateProject(c.Request().Context(), p.Slug, payments.ProjectSettings{Active: &on, ByOwner: true}); err != nil {
		return s.projectFormRender(c, "settings", "Settings", formOf(p), err)
	}
	flash := flashDeactivated
	if on {
		flash = flashActivated
	}
	return s.redirect(c, DashboardPath+"/p/"+p.Slug+"/settings", flash)
}

// itoa formats an int for a form field.
func itoa(i int) string { return strconv.Itoa(i) }

// telegramLinkMake makes a one-time t.me link that connects the chat which
// presses Start to the project (operations.md §7), and shows it once.
func (s *Server) telegramLinkMake(c echo.Context) error {
	p := dashProject(c)
	l, err := s.payments.TelegramLink(c.Request().Context(), p.Slug)
	if err != nil {
		return s.projectFormRender(c, "settings", "Settings", formOf(p), err)
	}
	if err := s.reveal(c, revealTelegram, p.Slug, l.URL); err != nil {
		return err
	}
	return s.redirect(c, DashboardPath+"/p/"+p.Slug+"/settings#telegram-link", "")
}
