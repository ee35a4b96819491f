package api

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/locale"
	"github.com/paywatch/paywatch/payments"
)

// paymentLinkRequest is the body of POST /v1/projects/{slug}/payment-links.
type paymentLinkRequest struct {
	Slug    json.RawMessage `json:"slug"`
	Title   json.RawMessage `json:"title"`
	Amount  json.RawMessage `json:"amount"`
	Token   json.RawMessage `json:"token"`
	Network json.RawMessage `json:"network"`
	Locale  json.RawMessage `json:"locale"`
}

// createPaymentLink is POST /v1/projects/{slug}/payment-links (operations.md
// §2): 201 {success, payment_link: {id, slug, url}}. It counts against the
// owner's plan payment-link limit (403 when reached).
func (s *Server) createPaymentLink(c echo.Context) error {
	var req paymentLinkRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	nl, err := paymentLinkOf(c.Param("slug"), req)
	if err != nil {
		return err
	}
	l, err := s.payments.CreatePaymentLink(c.Request().Context(), nl)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{
		"success": true,
		"payment_link": map[string]any{
			"id":   l.ID,
			"slug": l.Slug,
			"url":  s.deps.PayURL + "/l/" + l.Slug,
		},
	})
}

// paymentLinkOf reads a new payment link of project projectSlug from the
// body of POST /v1/projects/{slug}/payment-links (the dashboard's form
// builds the same body, for the same checks and messages).
func paymentLinkOf(projectSlug string, req paymentLinkRequest) (payments.NewPaymentLink, error) {
	nl := payments.NewPaymentLink{ProjectSlug: projectSlug}
	slug, err := optString(req.Slug)
	if err != nil {
		return nl, err
	}
	if slug == nil {
		return nl, paywatch.ValidateSlug("")
	}
	nl.Slug = *slug
	title, err := optString(req.Title)
	if err != nil {
		return nl, err
	}
	if title == nil {
		return nl, paywatch.Errorf(paywatch.EINVALID, paywatch.MsgLinkTitle)
	}
	nl.Title = *title
	if n, err := optString(req.Network); err != nil {
		return nl, err
	} else if n != nil && *n != "" {
		if nl.Network, err = paywatch.ParseNetwork(*n); err != nil {
			return nl, err
		}
	}
	if t, err := optString(req.Token); err != nil {
		return nl, err
	} else if t != nil && *t != "" {
		if nl.Token, err = paywatch.ParseToken(*t); err != nil {
			return nl, err
		}
	}
	if nl.Locale, err = optLocale(req.Locale); err != nil {
		return nl, err
	}
	amount, err := optNumber(req.Amount)
	if err != nil {
		return nl, err
	}
	if amount != nil {
		a, err := payments.LinkAmount(nl.Network, nl.Token, amount.String())
		if err != nil {
			return nl, err
		}
		nl.Amount = &a
	}
	return nl, nil
}

// linkForm is what the buyer typed, shown back with the errors.
type linkForm struct {
	Amount string
	Email  string
	Name   string
	Note   string
}

// linkPageData is the data of the link template.
type linkPageData struct {
	Assets pageAssets
	// Shop is the project's display name, the one the buyer pays; Title
	// is the link's, what they pay for.
	Shop        string
	Slug        string
	Title       string
	Amount      string // "" when the buyer enters it
	TokenLabel  string
	NetworkName string
	Accepting   bool
	Error       string
	Form        linkForm
	Errors      map[string]string
}

// linkData builds the link page of l.
func (s *Server) linkData(c echo.Context, l *payments.PaymentLink) (linkPageData, error) {
	merchantLang(c, l.Locale)
	d := linkPageData{Assets: assetURLs, Slug: l.Slug, Title: l.Title, Accepting: l.Accepting(), Errors: map[string]string{}}
	if l.Project != nil {
		d.Shop = l.Project.Name
	}
	if l.Amount != nil {
		d.Amount = l.Amount.String()
	}
	if info, ok := paywatch.LookupNetwork(l.Network); ok {
		d.NetworkName = info.Name
	}
	d.TokenLabel = string(l.Token)
	if d.TokenLabel == "" && d.Accepting {
		w, err := s.payments.WalletOf(c.Request().Context(), l.ProjectID)
		if err != nil {
			return d, err
		}
		d.TokenLabel = tokensLabel(s.payments.AvailableNetworks(l.Project.AddressMode, w))
	}
	if !d.Accepting {
		d.Error = paywatch.MsgNotAccepting
	}
	return d, nil
}

// linkPage is GET {pay_url}/l/{slug}.
func (s *Server) linkPage(c echo.Context) error {
	l, err := s.payments.PaymentLinkBySlug(c.Request().Context(), c.Param("slug"))
	if err != nil {
		return err
	}
	d, err := s.linkData(c, l)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, "link", d)
}

// buyerAmount matches an amount typed by a buyer: digits and an optional
// fraction, read exactly (never through a float).
var buyerAmount = regexp.MustCompile(`^[0-9]{1,15}(\.[0-9]{1,18})?$`)

// LinkPaymentsPerIPPerHour bounds the payments one client makes through
// payment links in any hour (a sliding window): one IPv4 address, or one
// IPv6 /64, which a single host can rotate through. Behind a reverse
// proxy, PAYWATCH_TRUSTED_PROXIES must name it, or every buyer shares the
// proxy's address.
const LinkPaymentsPerIPPerHour = 20

// clientNet is the key of a client's address for per-client limits: an
// IPv4 address, or the /64 of an IPv6 one.
func clientNet(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || a.Unmap().Is4() {
		return ip
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// linkSubmit is POST {pay_url}/l/{slug}: it checks the buyer's fields,
// creates the payment through the API's creation path and redirects (303)
// to its page, where the buyer picks the network unless the link fixes it.
// A refusal shows the form again with the message.
func (s *Server) linkSubmit(c echo.Context) error {
	ctx := c.Request().Context()
	l, err := s.payments.PaymentLinkBySlug(ctx, c.Param("slug"))
	if err != nil {
		return err
	}
	d, err := s.linkData(c, l)
	if err != nil {
		return err
	}
	d.Form = linkForm{
		Amount: strings.TrimSpace(c.FormValue("amount")),
		Email:  strings.TrimSpace(c.FormValue("email")),
		Name:   strings.TrimSpace(c.FormValue("name")),
		Note:   strings.TrimSpace(c.FormValue("note")),
	}
	if !d.Accepting {
		return render(c, http.StatusBadRequest, "link", d)
	}
	token := l.Token
	if token == "" {
		token = paywatch.LinkToken(l.Network)
	}
	decimals := networkLessDecimals
	if l.Network != "" {
		decimals = paywatch.Decimals(l.Network, token)
	}
	np := payments.NewPayment{ProjectID: l.ProjectID, Network: l.Network, Token: token}
	if l.Amount != nil {
		np.Amount = *l.Amount
	} else if a, msg := parseBuyerAmount(pageLang(c), d.Form.Amount, decimals, paywatch.DustMinimum(l.Project.MinAmount)); msg != "" {
		d.Errors["amount"] = msg
	} else {
		np.Amount = a
	}
	var b payments.Buyer
	if d.Form.Email != "" {
		if e, err := paywatch.NormalizeEmail(d.Form.Email); err != nil || utf8.RuneCountInString(e) > paywatch.MaxBuyerEmailLength {
			d.Errors["email"] = paywatch.MsgBuyerEmail
		} else {
			b.Email = e
		}
	}
	if utf8.RuneCountInString(d.Form.Name) > paywatch.MaxBuyerNameLength || paywatch.HasControlChars(d.Form.Name, false) {
		d.Errors["name"] = paywatch.MsgBuyerName
	} else {
		b.Name = d.Form.Name
	}
	if utf8.RuneCountInString(d.Form.Note) > paywatch.MaxBuyerNoteLength || paywatch.HasControlChars(d.Form.Note, true) {
		d.Errors["note"] = paywatch.MsgBuyerNote
	} else {
		b.Note = d.Form.Note
	}
	if len(d.Errors) > 0 {
		return render(c, http.StatusBadRequest, "link", d)
	}
	// Per client IP, apart from the merchant's API calls: a buyer makes a
	// payment or two, and one client cannot take a link's hour alone.
	w, err := s.payments.HitSliding(ctx, "link-payments-ip:"+clientNet(c.RealIP()), time.Hour)
	if err != nil {
		return err
	}
	if w.Count > LinkPaymentsPerIPPerHour {
		setRetryAfter(c, w)
		d.Error = paywatch.MsgTooManyRequests
		return render(c, http.StatusTooManyRequests, "link", d)
	}
	np.ExternalRef = linkExternalRef(l.Slug, b.Email)
	p, err := s.payments.CreateFromLink(ctx, l, np, b)
	if err != nil {
		status, body, ok := clientError(err)
		if !ok {
			return failed(paywatch.MsgFailedCreate, err)
		}
		d.Error, _ = body["error"].(string)
		return render(c, status, "link", d)
	}
	return c.Redirect(http.StatusSeeOther, "/"+p.ID)
}

// ambiguousThousands is an amount such as "1.000" or "12.500": a dot before
// exactly three digits, which a decimal-comma reader means as thousands.
var ambiguousThousands = regexp.MustCompile(`^\s*\d+\.\d{3}\s*$`)

// parseBuyerAmount reads a typed amount exactly at the given decimals; a
// non-empty message says, in l, what is wrong with it. In a language that
// writes a decimal comma, "25,50" is read as 25.50.
func parseBuyerAmount(l locale.Lang, text string, decimals int, minimum paywatch.Amount) (paywatch.Amount, string) {
	if l.Decimal() == "," {
		// "1.000" is a thousand to a reader of a decimal-comma language
		// and one to the parser: a dot before exactly three digits is
		// refused rather than guessed.
		if ambiguousThousands.MatchString(text) {
			return paywatch.Amount{}, l.T("msg.buyer_amount")
		}
		if strings.Count(text, ",") == 1 && !strings.Contains(text, ".") {
			text = strings.Replace(text, ",", ".", 1)
		}
	}
	if !buyerAmount.MatchString(text) {
		return paywatch.Amount{}, l.T("msg.buyer_amount")
	}
	if strings.Trim(text, "0.") == "" {
		return paywatch.Amount{}, l.T("msg.buyer_amount_zero")
	}
	a, err := paywatch.ParseAmountNumber(json.Number(text), decimals)
	if err != nil {
		return paywatch.Amount{}, l.N("msg.buyer_amount_digits", decimals)
	}
	if a.Cmp(minimum) < 0 {
		return paywatch.Amount{}, l.T("msg.buyer_amount_min", "Minimum", l.Amount(minimum.String()))
	}
	return a, ""
}

// linkExternalRef is the external_ref of a link payment:
// "link:<slug>:<buyer email>", or a random suffix without an email. An
// address too long for external_ref is replaced by its hash.
func linkExternalRef(slug, email string) string {
	if email == "" {
		return "link:" + slug + ":" + strings.ToLower(rand.Text()[:16])
	}
	ref := "link:" + slug + ":" + email
	if utf8.RuneCountInString(ref) > paywatch.MaxExternalRefLength {
		sum := sha256.Sum256([]byte(email))
		ref = "link:" + slug + ":" + hex.EncodeToString(sum[:16])
	}
	return ref
}
