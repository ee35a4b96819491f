package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/payments"
)

// uuidText is a payment link id as a query may carry it.
var uuidText = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// deliveriesShown is how many webhook deliveries a payment's page lists.
const deliveriesShown = 100

// paymentsPage is the data of a project's payment list.
type paymentsPage struct {
	dashPage
	Payments []paymentRow
	Statuses []paywatch.Status
	// Networks and Tokens are the filters' choices, from the table.
	Networks []paywatch.NetworkInfo
	Tokens   []tokenOption
	// The filters as typed, and the pages before and after.
	Status, CreatedAfter, UpdatedAfter, Network, Token string
	// Filters names the filters in force, for the folded form's summary.
	Filters string
	// Link is the payment link whose payments are listed; "" for all.
	Link                 string
	Limit, Offset, Total int
	Prev, Next           string
	// LiveURL is what dash.js polls for this page of the list (the same
	// query), "" when the filters are refused.
	LiveURL string
	// List is the rendered count, rows and pages (payments-list), and
	// ETag its validator, which the first poll sends: the poll answers
	// 304 while nothing changed.
	List template.HTML
	ETag string
}

// paymentRow is a payment as the dashboard shows it: the API's view and,
// for a payment made through a payment link, the link and the buyer.
type paymentRow struct {
	statusView
	Link *payments.LinkPurchase
}

// paymentRowOf renders a payment for the dashboard.
func (s *Server) paymentRowOf(p *payments.Payment) (paymentRow, error) {
	v, err := s.status(p, false)
	return paymentRow{statusView: v, Link: p.Link}, err
}

// paymentsShow lists a project's payments with the filters and pagination
// of GET /v1/payments; a filter left empty in the form is no filter, and
// link=<id> keeps the payments of one payment link (the links page links
// there).
func (s *Server) paymentsShow(c echo.Context) error {
	pg, status, err := s.paymentsList(c)
	if err != nil {
		return err
	}
	refused := pg.Error
	pg.dashPage = s.page(c, "Payments")
	pg.Tab = "payments"
	if refused != "" {
		pg.Error = refused
	}
	list, err := renderList(pg)
	if err != nil {
		return err
	}
	// The list was rendered, and escaped, by html/template.
	pg.List, pg.ETag = template.HTML(list), listETag(list)
	return renderDash(c, status, "payments", pg)
}

// paymentsLive is GET .../payments/status: the count, rows and pages of
// the list for the same query, which the list's script polls to show new
// payments and changed ones without a reload. Its ETag is a hash of the
// answer, and a poll whose If-None-Match names it gets 304 and no body:
// most polls find nothing new, and a page of 100 rows is not small.
func (s *Server) paymentsLive(c echo.Context) error {
	pg, status, err := s.paymentsList(c)
	if err != nil {
		return err
	}
	pg.Project = dashProject(c)
	list, err := renderList(pg)
	if err != nil {
		return err
	}
	etag := listETag(list)
	c.Response().Header().Set("ETag", etag)
	if status == http.StatusOK && etagMatches(c.Request().Header.Get("If-None-Match"), etag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.HTMLBlob(status, list)
}

// renderList renders the part of the list that updates itself, the same
// bytes for the page and for its poll.
func renderList(pg paymentsPage) ([]byte, error) {
	var buf bytes.Buffer
	if err := dashPages["payments"].ExecuteTemplate(&buf, "payments-list", pg); err != nil {
		return nil, fmt.Errorf("render the payment list: %w", err)
	}
	return buf.Bytes(), nil
}

// listETag is the strong validator of a rendering of the list: a hash of
// its bytes.
func listETag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// etagMatches reports whether an If-None-Match header names etag, weakly
// compared (RFC 9110 §13.1.2), or is "*".
func etagMatches(header, etag string) bool {
	for t := range strings.SplitSeq(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// paymentsList reads the list's query and loads its page of payments. A
// refused filter is a status and the message in the page's Error, not an
// error.
func (s *Server) paymentsList(c echo.Context) (paymentsPage, int, error) {
	q := c.QueryParams()
	for k, v := range q {
		if len(v) == 0 || v[0] == "" {
			q.Del(k)
		}
	}
	pg := paymentsPage{Statuses: paywatch.Statuses(), Networks: paywatch.Networks(), Tokens: tokenOptions(nil),
		Status: q.Get("status"), CreatedAfter: q.Get("created_after"), UpdatedAfter: q.Get("updated_after"),
		Network: q.Get("network"), Token: q.Get("token")}
	status := http.StatusOK
	link := q.Get("link")
	q.Del("link")
	f, err := listFilter(c)
	if err == nil {
		f.Network, f.Token, err = pairFilter(pg.Network, pg.Token)
	}
	if !uuidText.MatchString(link) {
		link = ""
	}
	if link != "" {
		q.Set("link", link)
		f.PaymentLinkID, pg.Link = link, link
	}
	if err == nil {
		var ps []*payments.Payment
		ps, pg.Total, err = s.payments.List(c.Request().Context(), dashProject(c).ID, f)
		for _, p := range ps {
			v, verr := s.paymentRowOf(p)
			if verr != nil {
				return pg, 0, verr
			}
			pg.Payments = append(pg.Payments, v)
		}
	}
	if err != nil {
		st, msg, ok := formError(err)
		if !ok {
			return pg, 0, err
		}
		status, pg.Error = st, msg
	} else {
		pg.LiveURL = DashboardPath + "/p/" + dashProject(c).Slug + "/payments/status?" + q.Encode()
	}
	pg.Filters = filterSummary(pg.Status, pg.Network, pg.Token, pg.CreatedAfter, pg.UpdatedAfter)
	pg.Limit, pg.Offset = f.Limit, f.Offset
	page := func(offset int) string {
		v := url.Values{}
		for k := range q {
			v.Set(k, q.Get(k))
		}
		v.Set("offset", strconv.Itoa(offset))
		return "?" + v.Encode()
	}
	if f.Offset > 0 {
		pg.Prev = page(max(f.Offset-f.Limit, 0))
	}
	if f.Offset+len(pg.Payments) < pg.Total {
		pg.Next = page(f.Offset + f.Limit)
	}
	return pg, status, nil
}

// pairFilter reads the list's network and token filters (the
// dashboard's own: GET /v1/payments has neither), "" for any. An unknown
// name, or a pair the table does not serve, is refused with the API's
// message ("PYUSD is not supported on BASE"), since no payment can match.
func pairFilter(network, token string) (paywatch.Network, paywatch.Token, error) {
	var n paywatch.Network
	var t paywatch.Token
	var err error
	if network != "" {
		if n, err = paywatch.ParseNetwork(network); err != nil {
			return "", "", err
		}
	}
	if token != "" {
		if t, err = paywatch.ParseToken(token); err != nil {
			return "", "", err
		}
	}
	if n != "" && t != "" {
		if err = paywatch.ValidatePair(n, t); err != nil {
			return "", "", err
		}
	}
	return n, t, nil
}

// filterSummary names the list's filters in force: "none", or for example
// "paid · DAI on BASE · created after 1 Nov 2026 (UTC)". A typed date
// reads as the dashboard writes dates, marked UTC since the filters count
// UTC days while the rows show the viewer's time; anything else as it was
// typed.
func filterSummary(status, network, token, createdAfter, updatedAfter string) string {
	date := func(s string) string {
		if t, err := time.Parse("2006-01-02", s); err == nil {
			return t.Format("2 Jan 2006")
		}
		return s
	}
	var parts []string
	if status != "" {
		parts = append(parts, status)
	}
	switch {
	case network != "" && token != "":
		parts = append(parts, token+" on "+network)
	case network != "":
		parts = append(parts, "any token on "+network)
	case token != "":
		parts = append(parts, token+" on any network")
	}
	if createdAfter != "" {
		parts = append(parts, "created after "+date(createdAfter)+" (UTC)")
	}
	if updatedAfter != "" {
		parts = append(parts, "updated after "+date(updatedAfter)+" (UTC)")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " · ")
}

// txRow is a counted transfer with its explorer link.
type txRow struct {
	txView
	URL string
}

// paymentPage is the data of a payment's page.
type paymentPage struct {
	dashPage
	Payment      paymentRow
	Transactions []txRow
	Timeline     []payments.StatusChange
	Deliveries   []payments.Delivery
	// Chats are the payment's Telegram messages.
	Chats []payments.ChatMessage
	// Later are the transfers to the payment's address that it does not
	// hold (laterTransfers), with how each stands.
	Later []transferRow
	// CanRecheck: a transfer found now could still count for the payment
	// (in progress, or expired inside the late window of a mode with one),
	// so "Re-check chain" is offered; otherwise it could only answer 409.
	CanRecheck bool
}

// paymentShow shows a payment: its status over time, its transactions,
// the later transfers to its address, and its webhook deliveries.
func (s *Server) paymentShow(c echo.Context) error {
	return s.paymentRender(c, nil)
}

// paymentRender renders a payment's page, with err's message.
func (s *Server) paymentRender(c echo.Context, err error) error {
	ctx := c.Request().Context()
	prj := dashProject(c)
	p, gerr := s.payments.Get(ctx, prj.ID, c.Param("id"))
	if gerr != nil {
		return gerr
	}
	v, verr := s.paymentRowOf(p)
	if verr != nil {
		return verr
	}
	pg := paymentPage{Payment: v}
	for _, t := range v.Transactions {
		pg.Transactions = append(pg.Transactions, txRow{txView: t, URL: s.explorerTxURL(p.Network, t.TxHash)})
	}
	if pg.Timeline, gerr = s.payments.PaymentTimeline(ctx, prj.ID, p.ID); gerr != nil {
		return gerr
	}
	if pg.Deliveries, gerr = s.payments.Deliveries(ctx, prj.ID, payments.DeliveryFilter{PaymentID: p.ID, Limit: deliveriesShown}); gerr != nil {
		return gerr
	}
	if pg.Chats, gerr = s.payments.ChatMessages(ctx, prj.ID, p.ID); gerr != nil {
		return gerr
	}
	if pg.Later, gerr = s.laterTransfers(c, prj.ID, p.ID); gerr != nil {
		return gerr
	}
	switch p.Status {
	case paywatch.StatusPending, paywatch.StatusConfirming, paywatch.StatusPartial:
		pg.CanRecheck = true
	case paywatch.StatusExpired:
		pg.CanRecheck = paywatch.PolicyOf(p.Mode, p.PoolMatching).LateFunds && s.clock().Before(p.ExpiresAt.Add(paywatch.LateWindow))
	}
	pg.dashPage = s.page(c, "Payment "+shortID(p.ID))
	pg.Tab = "payments"
	status := http.StatusOK
	if err != nil {
		st, msg, ok := formError(err)
		if !ok {
			return err
		}
		status, pg.Error, pg.Flash = st, msg, ""
	}
	return renderDash(c, status, "payment", pg)
}

// paymentStatusJSON is what the payment page's script polls to show the
// status without a reload.
func (s *Server) paymentStatusJSON(c echo.Context) error {
	p, err := s.payments.Get(c.Request().Context(), dashProject(c).ID, c.Param("id"))
	if err != nil {
		return err
	}
	v, err := s.status(p, false)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{
		"status": v.Status, "paid_amount": v.PaidAmount, "updated_at": v.UpdatedAt,
		"transactions": len(v.Transactions),
	})
}

// paymentRecheck asks the payment's workflow to check the chain now.
func (s *Server) paymentRecheck(c echo.Context) error {
	prj := dashProject(c)
	if _, err := s.payments.RecheckChain(c.Request().Context(), prj.ID, c.Param("id")); err != nil {
		return s.paymentRender(c, err)
	}
	return s.redirect(c, DashboardPath+"/p/"+prj.Slug+"/payments/"+c.Param("id"), flashRechecked)
}

// eventRedeliver sends a webhook event again, as POST
// /v1/projects/{slug}/webhook-events/{event_id}/redeliver does.
func (s *Server) eventRedeliver(c echo.Context) error {
	prj := dashProject(c)
	back := DashboardPath + "/p/" + prj.Slug + "/payments/" + c.FormValue("payment_id")
	if err := s.payments.Redeliver(c.Request().Context(), prj.ID, c.Param("event")); err != nil {
		if _, _, ok := formError(err); !ok {
			return err
		}
		c.SetParamNames("slug", "id")
		c.SetParamValues(prj.Slug, c.FormValue("payment_id"))
		return s.paymentRender(c, err)
	}
	return s.redirect(c, back, flashRedelivered)
}

// explorerTxURL is a transaction's page on its network's public explorer,
// or "" for a network a devnet chain serves, whose transactions no
// explorer knows.
func (s *Server) explorerTxURL(n paywatch.Network, hash string) string {
	if slices.Contains(s.deps.DevnetNetworks, n) {
		return ""
	}
	return paywatch.ExplorerTxURL(n, hash)
}
