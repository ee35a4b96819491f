package api

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// uuidText is a payment link id as a query may carry it.
var uuidText = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// deliveriesShown is how many webhook deliveries a payment's page lists.
const deliveriesShown = 100

// paymentsPage is the data of a project's payment list.
type paymentsPage struct {
	dashPage
	Payments []statusView
	Statuses []paywatch.Status
	// The filters as typed, and the pages before and after.
	Status, CreatedAfter, UpdatedAfter string
	// Link is the payment link whose payments are listed; "" for all.
	Link                 string
	Limit, Offset, Total int
	Prev, Next           string
}

// paymentsShow lists a project's payments with the filters and pagination
// of GET /v1/payments; a filter left empty in the form is no filter, and
// link=<id> keeps the payments of one payment link (the links page links
// there).
func (s *Server) paymentsShow(c echo.Context) error {
	q := c.QueryParams()
	for k, v := range q {
		if len(v) == 0 || v[0] == "" {
			q.Del(k)
		}
	}
	pg := paymentsPage{Statuses: paywatch.Statuses(), Status: q.Get("status"), CreatedAfter: q.Get("created_after"), UpdatedAfter: q.Get("updated_after")}
	status := http.StatusOK
	link := q.Get("link")
	q.Del("link")
	f, err := listFilter(c)
	if !uuidText.MatchString(link) {
		link = ""
	}
	if link != "" {
		q.Set("link", link)
		f.PaymentLinkID, pg.Link = link, link
	}
	if err == nil {
		var ps []*store.Payment
		ps, pg.Total, err = s.payments.List(c.Request().Context(), dashProject(c).ID, f)
		for _, p := range ps {
			v, verr := s.status(p, false)
			if verr != nil {
				return verr
			}
			pg.Payments = append(pg.Payments, v)
		}
	}
	pg.dashPage = s.page(c, "Payments")
	pg.Tab = "payments"
	if err != nil {
		st, msg, ok := formError(err)
		if !ok {
			return err
		}
		status, pg.Error = st, msg
	}
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
	return renderDash(c, status, "payments", pg)
}

// txRow is a counted transfer with its explorer link.
type txRow struct {
	txView
	URL string
}

// paymentPage is the data of a payment's page.
type paymentPage struct {
	dashPage
	Payment      statusView
	Transactions []txRow
	Timeline     []store.StatusChange
	Deliveries   []store.Delivery
	// Chats are the payment's Telegram messages.
	Chats []store.ChatMessage
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
	v, verr := s.status(p, false)
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
	if pg.Deliveries, gerr = s.deps.Store.ListDeliveries(ctx, prj.ID, store.DeliveryFilter{PaymentID: p.ID, Limit: deliveriesShown}); gerr != nil {
		return gerr
	}
	if pg.Chats, gerr = s.deps.Store.ChatMessagesOf(ctx, prj.ID, p.ID); gerr != nil {
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
