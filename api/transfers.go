package api

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/payments"
)

// transferView is a transfer of GET /v1/transfers and its neighbours.
type transferView struct {
	Network       string `json:"network"`
	TxHash        string `json:"tx_hash"`
	LogIndex      uint32 `json:"log_index"`
	BlockNumber   uint64 `json:"block_number"`
	Token         string `json:"token"`
	From          string `json:"from"`
	To            string `json:"to"`
	Amount        string `json:"amount"`
	Confirmations int    `json:"confirmations"`
	// State: matched, pending, unmatched or below_minimum.
	State string `json:"state"`
	// PaymentID is the payment that holds the transfer (matched); null
	// otherwise.
	PaymentID *string `json:"payment_id"`
	// RelatedPaymentID is, for a transfer no payment holds, the payment
	// the address served last before it (or that claimed it); null when
	// none did.
	RelatedPaymentID *string `json:"related_payment_id"`
	// Reason says why an unmatched (or below-minimum) transfer is.
	Reason  *string      `json:"reason"`
	SeenAt  string       `json:"seen_at"`
	Handled *handledView `json:"handled"`
}

// handledView is an owner's mark on an unmatched transfer.
type handledView struct {
	At   string `json:"at"`
	By   string `json:"by"`
	Note string `json:"note"`
}

// transferDetailView is a transfer of GET /v1/transfers/{network}/{tx_hash}:
// as the list shows it, with its timeline, which the list leaves out to
// stay one read per page.
type transferDetailView struct {
	transferView
	Timeline []transferEventView `json:"timeline"`
	// TimelineTotal is how many steps the whole timeline has; Timeline is
	// the page of them asked for (timeline_limit, timeline_offset).
	TimelineTotal int `json:"timeline_total"`
}

// transferEventView is a step of a transfer's timeline: seen, told (with
// the transfer.unmatched event's id) or handled (with who and the note).
type transferEventView struct {
	At      string  `json:"at"`
	Event   string  `json:"event"`
	EventID *string `json:"event_id,omitempty"`
	By      *string `json:"by,omitempty"`
	Note    *string `json:"note,omitempty"`
}

func viewTransferEvents(es []payments.TransferEvent) []transferEventView {
	out := make([]transferEventView, 0, len(es))
	for _, e := range es {
		v := transferEventView{At: ts(e.At), Event: string(e.Event)}
		switch e.Event {
		case payments.TransferEventTold:
			v.EventID = &e.EventID
		case payments.TransferEventHandled:
			v.By, v.Note = &e.By, &e.Note
		}
		out = append(out, v)
	}
	return out
}

func viewTransfer(t payments.ProjectTransfer) transferView {
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	v := transferView{
		Network: string(t.Network), TxHash: t.TxHash, LogIndex: t.LogIndex, BlockNumber: t.BlockNumber,
		Token: string(t.Token), From: t.From, To: t.To, Amount: t.Amount.String(), Confirmations: t.Confirmations,
		State: string(t.State), PaymentID: opt(t.PaymentID), RelatedPaymentID: opt(t.RelatedPaymentID),
		Reason: opt(t.Reason), SeenAt: ts(t.SeenAt),
	}
	if t.Handled != nil {
		v.Handled = &handledView{At: ts(t.Handled.At), By: t.Handled.By, Note: t.Handled.Note}
	}
	return v
}

// transferFilter parses the query of GET /v1/transfers: limit, offset and
// created_after as GET /v1/payments takes them; created_before; unmatched
// and handled (true or false); network, token and address (a recipient,
// in any spelling its family takes). A bad value of the others is
// "Invalid transfer filter".
func transferFilter(c echo.Context) (payments.TransferFilter, error) {
	var f payments.TransferFilter
	q := c.QueryParams()
	bad := paywatch.Errorf(paywatch.EINVALID, paywatch.MsgInvalidTransferFilter)
	var err error
	if f.Limit, f.Offset, err = pageQuery(q); err != nil {
		return f, err
	}
	if f.CreatedAfter, err = timeQuery(q, "created_after", paywatch.MsgInvalidCreated); err != nil {
		return f, err
	}
	if f.CreatedBefore, err = timeQuery(q, "created_before", paywatch.MsgInvalidCreatedBefore); err != nil {
		return f, err
	}
	for name, dst := range map[string]**bool{"unmatched": &f.Unmatched, "handled": &f.Handled} {
		if _, ok := q[name]; ok {
			b, err := strconv.ParseBool(q.Get(name))
			if err != nil {
				return f, bad
			}
			*dst = &b
		}
	}
	if _, ok := q["network"]; ok {
		if f.Network, err = paywatch.ParseNetwork(q.Get("network")); err != nil {
			return f, bad
		}
	}
	if _, ok := q["token"]; ok {
		if f.Token, err = paywatch.ParseToken(q.Get("token")); err != nil {
			return f, bad
		}
	}
	if _, ok := q["address"]; ok {
		families := paywatch.Families()
		if f.Network != "" {
			families = []paywatch.Family{f.Network.Family()}
		}
		for _, fam := range families {
			if a, err := paywatch.NormalizeAddress(fam, q.Get("address")); err == nil {
				f.Addresses = append(f.Addresses, a)
			}
		}
		if len(f.Addresses) == 0 {
			return f, bad
		}
	}
	return f, nil
}

// listTransfers is GET /v1/transfers: the token transfers to the
// project's addresses that paywatch recorded, newest first, each with the
// payment that holds it or why none does.
func (s *Server) listTransfers(c echo.Context) error {
	f, err := transferFilter(c)
	if err != nil {
		return err
	}
	ts, total, err := s.payments.Transfers(c.Request().Context(), project(c).ID, f)
	if err != nil {
		return err
	}
	items := make([]transferView, 0, len(ts))
	for _, t := range ts {
		items = append(items, viewTransfer(t))
	}
	return c.JSON(http.StatusOK, map[string]any{
		"success":    true,
		"transfers":  items,
		"pagination": pagination(f.Limit, f.Offset, len(items), total),
	})
}

// transferKey parses the path's network and the log_index (query or body);
// an unknown network or a bad index is "Transfer not found".
func transferKey(c echo.Context, logIndex string) (paywatch.Network, *uint32, error) {
	return parseTransferKey(c.Param("network"), logIndex)
}

// parseTransferKey parses a transfer's network and log index (empty for
// the transaction's first); either malformed is "Transfer not found".
func parseTransferKey(network, logIndex string) (paywatch.Network, *uint32, error) {
	notFound := paywatch.Errorf(paywatch.ENOTFOUND, paywatch.MsgTransferNotFound)
	n, err := paywatch.ParseNetwork(network)
	if err != nil {
		return "", nil, notFound
	}
	if logIndex == "" {
		return n, nil, nil
	}
	i, err := strconv.ParseUint(logIndex, 10, 32)
	if err != nil {
		return "", nil, notFound
	}
	idx := uint32(i)
	return n, &idx, nil
}

// getTransfer is GET /v1/transfers/{network}/{tx_hash}: one transfer, the
// transaction's first to the project's addresses, or the one at
// ?log_index=, with its timeline.
func (s *Server) getTransfer(c echo.Context) error {
	n, idx, err := transferKey(c, c.QueryParam("log_index"))
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "timeline_limit", payments.DefaultTimelineLimit, 1, payments.MaxTimelineLimit)
	if err != nil {
		return err
	}
	offset, err := queryInt(c, "timeline_offset", 0, 0, math.MaxInt32)
	if err != nil {
		return err
	}
	ctx, prj := c.Request().Context(), project(c).ID
	t, err := s.payments.Transfer(ctx, prj, n, c.Param("tx_hash"), idx)
	if err != nil {
		return err
	}
	tl, total, err := s.payments.TransferTimeline(ctx, prj, t.ID(), limit, offset)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true,
		"transfer": transferDetailView{transferView: viewTransfer(t), Timeline: viewTransferEvents(tl), TimelineTotal: total}})
}

// queryInt reads the whole-number query parameter name, def when absent:
// from lo to hi, else 400 Invalid request body.
func queryInt(c echo.Context, name string, def, lo, hi int) (int, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return def, nil
	}
	v, err := strconv.Atoi(raw)
	if err != nil || v < lo || v > hi {
		return 0, errInvalidBody
	}
	return v, nil
}

// handledRequest is the body of POST /v1/transfers/{network}/{tx_hash}/handled.
type handledRequest struct {
	Note     json.RawMessage `json:"note"`
	LogIndex json.RawMessage `json:"log_index"`
}

// markTransferHandled is POST /v1/transfers/{network}/{tx_hash}/handled:
// the merchant settled an unmatched transfer (refunded it, credited it to
// an order) and says so, with a note. Recorded as done by "api".
func (s *Server) markTransferHandled(c echo.Context) error {
	var req handledRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	note, err := optString(req.Note)
	if err != nil {
		return errInvalidBody
	}
	if note == nil {
		note = new(string)
	}
	idx := ""
	if len(req.LogIndex) > 0 && string(req.LogIndex) != "null" {
		// A JSON number that is a whole number from 0 up; anything else
		// (a string, a fraction, a negative) is a bad body, not a missing
		// transfer.
		if _, err := strconv.ParseUint(string(req.LogIndex), 10, 32); err != nil {
			return errInvalidBody
		}
		idx = string(req.LogIndex)
	}
	n, logIndex, err := transferKey(c, idx)
	if err != nil {
		return err
	}
	t, err := s.payments.MarkTransferHandled(c.Request().Context(), project(c).ID, n, c.Param("tx_hash"), logIndex, "api", *note)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "transfer": viewTransfer(t)})
}
