package api

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch/payments"
)

// reasonTexts say in plain words why a transfer is unmatched (or below
// the minimum): payments.ProjectTransfer.Reason.
var reasonTexts = map[string]string{
	payments.ReasonNoPayment:      "No payment had used this address",
	payments.ReasonOtherToken:     "Sent in another token than the payment's",
	payments.ReasonOtherNetwork:   "Sent on another network than the payment's",
	payments.ReasonAfterPaid:      "Arrived after the payment was paid",
	payments.ReasonAfterCancelled: "Arrived after the payment was cancelled",
	payments.ReasonAfterExpired:   "Arrived after the payment expired and its late window closed",
	payments.ReasonNotTaken:       "The open payment did not take it: the amount matched no payment",
	payments.ReasonNoMemo:         "Sent without the reference (memo) of any payment on this shared address",
}

// stateTexts say how a transfer stands, for the payment page's list of
// later transfers; an unmatched one says why instead (reasonTexts).
var stateTexts = map[payments.TransferState]string{
	payments.TransferMatched:      "Counted by a payment",
	payments.TransferPending:      "Waiting for confirmations, or a payment may still count it",
	payments.TransferUnmatched:    "No payment counted it",
	payments.TransferBelowMinimum: "Below the project's minimum amount: ignored",
}

// transferRow is a recorded transfer as the dashboard shows it: with its
// explorer link, why it stands as it does, and the payment to link.
type transferRow struct {
	payments.ProjectTransfer
	URL string
	// Why is the reason in words, or what the state means.
	Why string
	// Payment is the payment that holds it, or else the related one.
	Payment string
	// Earlier are the marks before the current one (Handled), oldest
	// first: what a later mark replaced in the list but not in the history.
	Earlier []payments.TransferMark
}

// Key names the transfer in a form: network, hash and log index.
func (t transferRow) Key() string {
	return string(t.Network) + "/" + t.TxHash + "/" + strconv.FormatUint(uint64(t.LogIndex), 10)
}

func (s *Server) rowOf(t payments.ProjectTransfer) transferRow {
	r := transferRow{ProjectTransfer: t, URL: s.explorerTxURL(t.Network, t.TxHash), Payment: t.PaymentID}
	if r.Payment == "" {
		r.Payment = t.RelatedPaymentID
	}
	if r.Why = reasonTexts[t.Reason]; r.Why == "" {
		r.Why = stateTexts[t.State]
	}
	return r
}

// unmatchedPage is the data of a project's unmatched funds.
type unmatchedPage struct {
	dashPage
	Transfers []transferRow
	// All shows the transfers marked handled too.
	All                  bool
	Limit, Offset, Total int
	Prev, Next           string
	// NoteFor and Note keep a refused note in the form of the transfer
	// (transferRow.Key) it was typed for.
	NoteFor, Note string
	// MaxNote is the longest note, in characters.
	MaxNote int
}

// unmatchedShow lists the project's unmatched funds: confirmed transfers
// to its addresses that no payment counted or can, newest first; those
// marked handled only with show=all.
func (s *Server) unmatchedShow(c echo.Context) error {
	return s.unmatchedRender(c, nil, "", "")
}

// unmatchedRender renders the unmatched funds page with err's message and
// the note typed for the transfer of key. The view (show, limit, offset)
// comes from the query, or from the fields of the form that was posted.
func (s *Server) unmatchedRender(c echo.Context, err error, key, note string) error {
	q := url.Values{}
	for _, k := range []string{"show", "limit", "offset"} {
		if v := c.FormValue(k); v != "" {
			q.Set(k, v)
		}
	}
	pg := unmatchedPage{All: q.Get("show") == "all", NoteFor: key, Note: note, MaxNote: payments.MaxTransferNote}
	if !pg.All {
		q.Del("show")
	}
	yes, no := true, false
	f := payments.TransferFilter{Unmatched: &yes}
	if !pg.All {
		f.Handled = &no
	}
	var lerr error
	if f.Limit, f.Offset, lerr = pageQuery(q); lerr != nil {
		q.Del("limit")
		q.Del("offset")
		f.Limit, f.Offset = defaultListLimit, 0
	} else {
		var ts []payments.ProjectTransfer
		ts, pg.Total, lerr = s.payments.Transfers(c.Request().Context(), dashProject(c).ID, f)
		for _, t := range ts {
			pg.Transfers = append(pg.Transfers, s.rowOf(t))
		}
		if err := s.withEarlierMarks(c, pg.Transfers); err != nil {
			return err
		}
	}
	if err == nil {
		err = lerr
	}
	pg.dashPage = s.page(c, "Unmatched funds")
	pg.Tab = "unmatched"
	status := http.StatusOK
	if err != nil {
		st, msg, ok := formError(err)
		if !ok {
			return err
		}
		status, pg.Error, pg.Flash = st, msg, ""
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
	if f.Offset+len(pg.Transfers) < pg.Total {
		pg.Next = page(f.Offset + f.Limit)
	}
	return renderDash(c, status, "unmatched", pg)
}

// withEarlierMarks gives each row marked more than once its earlier marks,
// read for the whole page at once.
func (s *Server) withEarlierMarks(c echo.Context, rows []transferRow) error {
	var ids []payments.TransferID
	for _, r := range rows {
		if r.Handled != nil {
			ids = append(ids, r.ID())
		}
	}
	if len(ids) == 0 {
		return nil
	}
	marks, err := s.payments.TransferMarks(c.Request().Context(), dashProject(c).ID, ids)
	if err != nil {
		return err
	}
	for i := range rows {
		if ms := marks[rows[i].ID()]; len(ms) > 1 {
			rows[i].Earlier = ms[:len(ms)-1]
		}
	}
	return nil
}

// transferHandledSubmit marks an unmatched transfer handled (refunded, or
// credited to an order) with a note, as POST
// /v1/transfers/{network}/{tx_hash}/handled does, recorded as done by the
// signed-in owner's e-mail. A refusal (a note too long, a transfer a
// payment holds or may still take) shows on the page with the note kept.
func (s *Server) transferHandledSubmit(c echo.Context) error {
	prj := dashProject(c)
	network, hash, index, note := c.FormValue("network"), c.FormValue("tx_hash"), c.FormValue("log_index"), c.FormValue("note")
	n, idx, err := parseTransferKey(network, index)
	if err == nil {
		_, err = s.payments.MarkTransferHandled(c.Request().Context(), prj.ID, n, hash, idx, session(c).Account.Email, note)
	}
	if err != nil {
		return s.unmatchedRender(c, err, network+"/"+hash+"/"+index, note)
	}
	return s.redirect(c, DashboardPath+"/p/"+prj.Slug+"/unmatched?show=all", flashHandled)
}

// laterTransfers are the transfers to a payment's address that it does
// not hold: those that came after it, and any it claimed but did not
// count. The ones it holds are its transactions already.
func (s *Server) laterTransfers(c echo.Context, projectID int64, paymentID string) ([]transferRow, error) {
	ts, _, err := s.payments.Transfers(c.Request().Context(), projectID, payments.TransferFilter{PaymentID: paymentID, Limit: maxListLimit})
	if err != nil {
		return nil, err
	}
	var out []transferRow
	for _, t := range ts {
		if t.PaymentID != paymentID {
			out = append(out, s.rowOf(t))
		}
	}
	return out, nil
}
