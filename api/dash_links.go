package api

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/payments"
)

// linkRow is a payment link on the links page.
type linkRow struct {
	payments.LinkSummary
	URL string
}

// linksPage is the data of the payment-links page.
type linksPage struct {
	dashPage
	Links    []linkRow
	Networks []paywatch.NetworkInfo
	// Tokens are the tokens served on the networks offered, in the order
	// of paywatch.Pairs.
	Tokens []tokenOption
	// The new-link form as typed.
	Slug, LinkTitle, Amount, Token, Network string
	// Refused says the new-link form was refused: the message is about it.
	Refused bool
}

// decimalText is an amount as a form may type it.
var decimalText = regexp.MustCompile(`^[0-9]{1,30}(\.[0-9]{1,36})?$`)

// linksRender renders the links page, with err's message.
func (s *Server) linksRender(c echo.Context, pg linksPage, err error) error {
	ctx := c.Request().Context()
	p := dashProject(c)
	links, lerr := s.payments.ListPaymentLinks(ctx, p.ID)
	if lerr != nil {
		return lerr
	}
	pg.dashPage = s.page(c, "Payment links")
	pg.Tab = "links"
	for _, l := range links {
		pg.Links = append(pg.Links, linkRow{LinkSummary: l, URL: s.deps.PayURL + "/l/" + l.Link.Slug})
	}
	for _, n := range paywatch.Networks() {
		if s.payments.Offered(n.Network) {
			pg.Networks = append(pg.Networks, n)
		}
	}
	pg.Tokens = tokenOptions(s.payments.Offered)
	status := http.StatusOK
	if err != nil {
		st, msg, ok := formError(err)
		if !ok {
			return err
		}
		status, pg.Error, pg.Flash = st, msg, ""
	}
	return renderDash(c, status, "links", pg)
}

func (s *Server) linksShow(c echo.Context) error {
	return s.linksRender(c, linksPage{}, nil)
}

// linkCreate creates a payment link from the form, with the checks and
// messages of POST /v1/projects/{slug}/payment-links.
func (s *Server) linkCreate(c echo.Context) error {
	v := func(k string) string { return strings.TrimSpace(c.FormValue(k)) }
	pg := linksPage{Slug: v("slug"), LinkTitle: v("title"), Amount: v("amount"), Token: v("token"), Network: v("network")}
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	req := paymentLinkRequest{Slug: str(pg.Slug), Title: str(pg.LinkTitle), Token: str(pg.Token), Network: str(pg.Network)}
	if pg.LinkTitle == "" {
		req.Title = nil
	}
	var err error
	switch {
	case pg.Amount == "":
	case decimalText.MatchString(pg.Amount):
		req.Amount = json.RawMessage(pg.Amount)
	default:
		err = paywatch.Errorf(paywatch.EINVALID, paywatch.MsgBuyerAmount)
	}
	if err == nil {
		var nl payments.NewPaymentLink
		if nl, err = paymentLinkOf(dashProject(c).Slug, req); err == nil {
			_, err = s.payments.CreatePaymentLink(c.Request().Context(), nl)
		}
	}
	if err != nil {
		pg.Refused = true
		return s.linksRender(c, pg, err)
	}
	return s.redirect(c, DashboardPath+"/p/"+dashProject(c).Slug+"/links", flashLinkCreated)
}

// linkDeactivate stops a link from taking payments; its payments stay.
func (s *Server) linkDeactivate(c echo.Context) error {
	if _, err := s.payments.DeactivatePaymentLink(c.Request().Context(), dashProject(c).ID, c.Param("id")); err != nil {
		return s.linksRender(c, linksPage{}, err)
	}
	return s.redirect(c, DashboardPath+"/p/"+dashProject(c).Slug+"/links", flashLinkOff)
}
