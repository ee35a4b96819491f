package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/workflows"
)

// List pagination (operations.md §3).
const (
	defaultListLimit = 20
	maxListLimit     = 100
)

// createPaymentRequest is the body of POST /v1/payments; every field is
// read raw and type-checked, so a wrong type is "Invalid request body".
type createPaymentRequest struct {
	Amount          json.RawMessage `json:"amount"`
	ExternalRef     json.RawMessage `json:"external_ref"`
	Network         json.RawMessage `json:"network"`
	Token           json.RawMessage `json:"token"`
	ExternalOrderID json.RawMessage `json:"external_order_id"`
	ExpiresIn       json.RawMessage `json:"expires_in"`
	Address         json.RawMessage `json:"address"`
	Metadata        json.RawMessage `json:"metadata"`
}

// networkLessDecimals is the precision of an amount whose network is not
// chosen yet: the fewest decimals of any token, so that every network the
// customer may pick can represent it exactly.
var networkLessDecimals = func() int {
	d := paywatch.MaxDecimals
	for _, p := range paywatch.Pairs() {
		d = min(d, paywatch.Decimals(p.Network, p.Token))
	}
	return d
}()

// parseCreatePayment validates a creation request. Schema failures give
// "Invalid request body"; an unsupported network+token pair gives its own
// message ("USDC is not supported on TRC20").
func parseCreatePayment(c echo.Context, projectID int64) (store.NewPayment, error) {
	var req createPaymentRequest
	if err := decodeBody(c, &req); err != nil {
		return store.NewPayment{}, err
	}
	np := store.NewPayment{ProjectID: projectID, Token: paywatch.USDT}
	amount, err := optNumber(req.Amount)
	if err != nil || amount == nil {
		return np, errInvalidBody
	}
	ref, err := optString(req.ExternalRef)
	if err != nil || ref == nil || *ref == "" || utf8.RuneCountInString(*ref) > store.MaxExternalRefLength {
		return np, errInvalidBody
	}
	np.ExternalRef = *ref
	network, err := optString(req.Network)
	if err != nil {
		return np, err
	}
	if network != nil {
		if !paywatch.Network(*network).Valid() {
			return np, errInvalidBody
		}
		np.Network = paywatch.Network(*network)
	}
	token, err := optString(req.Token)
	if err != nil {
		return np, err
	}
	if token != nil {
		if !paywatch.Token(*token).Valid() {
			return np, errInvalidBody
		}
		np.Token = paywatch.Token(*token)
	}
	orderID, err := optString(req.ExternalOrderID)
	if err != nil {
		return np, err
	}
	if orderID != nil && *orderID != "" {
		if utf8.RuneCountInString(*orderID) > store.MaxExternalOrderIDLength {
			return np, errInvalidBody
		}
		np.ExternalOrderID = orderID
	}
	expiresIn, err := optInt(req.ExpiresIn)
	if err != nil {
		return np, err
	}
	if expiresIn != nil {
		d := time.Duration(*expiresIn) * time.Second
		if d < store.MinExpiresIn || d > store.MaxExpiresIn {
			return np, errInvalidBody
		}
		np.ExpiresIn = d
	}
	address, err := optString(req.Address)
	if err != nil {
		return np, err
	}
	if address != nil {
		np.Address = strings.TrimSpace(*address)
	}
	np.Metadata, err = optObject(req.Metadata)
	if err != nil || len(np.Metadata) > store.MaxMetadataBytes {
		return np, errInvalidBody
	}
	decimals := networkLessDecimals
	if np.Network != "" {
		if err := paywatch.ValidatePair(np.Network, np.Token); err != nil {
			return np, err
		}
		decimals = paywatch.Decimals(np.Network, np.Token)
	}
	np.Amount, err = paywatch.ParseAmountNumber(*amount, decimals)
	if err != nil {
		return np, errInvalidBody
	}
	return np, nil
}

// createPayment is POST /v1/payments: 201 with a new payment, 200 with
// existing: true for an idempotent repeat.
func (s *Server) createPayment(c echo.Context) error {
	ctx := c.Request().Context()
	prj := project(c)
	np, err := parseCreatePayment(c, prj.ID)
	if err != nil {
		return err
	}
	p, existing, err := s.deps.Store.CreatePayment(ctx, np)
	if err != nil {
		return failed(paywatch.MsgFailedCreate, err)
	}
	// The payment is committed: from here on nothing may turn the answer
	// into an error, or a client retrying without external_order_id would
	// create a duplicate. A failing optional part is logged and left out.
	s.startWorkflow(ctx, p)
	var available []paywatch.NetworkInfo
	if p.AwaitingNetwork() {
		w, err := s.deps.Store.WalletOf(ctx, prj.ID)
		if err != nil {
			// No networks makes created leave available_networks out.
			s.deps.Logger.Error("payment created without available_networks", "paymentId", p.ID, "error", err)
		} else {
			available = s.deps.Store.AvailableNetworks(p.Mode, w)
		}
	}
	v, err := s.created(p, existing, available)
	if err != nil {
		// created fails only on the QR code of an assigned address, and
		// then has every other field filled in (available_networks belongs
		// to payments without an address); qr_code stays null.
		s.deps.Logger.Error("payment created without qr_code", "paymentId", p.ID, "error", err)
	}
	status := http.StatusCreated
	if existing {
		status = http.StatusOK
	}
	return c.JSON(status, map[string]any{"success": true, "payment": v})
}

// startWorkflow starts the payment's workflow and records it. A failure is
// only logged: the row is the truth, and the reconciler starts any workflow
// whose row says it has none.
func (s *Server) startWorkflow(ctx context.Context, p *store.Payment) {
	if err := s.ensureStarted(ctx, p); err != nil {
		s.deps.Logger.Warn("payment workflow not started; the reconciler will retry", "paymentId", p.ID, "error", err)
	}
}

// ensureStarted starts the payment's workflow unless its row says it runs.
func (s *Server) ensureStarted(ctx context.Context, p *store.Payment) error {
	if s.deps.Workflows == nil {
		return fmt.Errorf("no workflow client")
	}
	if p.WorkflowStarted {
		return nil
	}
	if err := s.deps.Workflows.Start(ctx, p.WorkflowInput()); err != nil {
		return err
	}
	if err := s.deps.Store.MarkWorkflowStarted(ctx, p.ID); err != nil {
		return err
	}
	p.WorkflowStarted = true
	return nil
}

// getPayment is GET /v1/payments/:id, read from PostgreSQL, where the
// workflow persists every change.
func (s *Server) getPayment(c echo.Context) error {
	p, err := s.deps.Store.GetPayment(c.Request().Context(), project(c).ID, c.Param("id"))
	if err != nil {
		return err
	}
	v, err := s.status(p, true)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "payment": v})
}

// listFilter parses the query of GET /v1/payments.
func listFilter(c echo.Context) (store.ListFilter, error) {
	f := store.ListFilter{Limit: defaultListLimit}
	q := c.QueryParams()
	if _, ok := q["limit"]; ok {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > maxListLimit {
			return f, paywatch.Errorf(paywatch.EINVALID, paywatch.MsgInvalidLimit)
		}
		f.Limit = n
	}
	if _, ok := q["offset"]; ok {
		n, err := strconv.Atoi(q.Get("offset"))
		if err != nil || n < 0 {
			return f, paywatch.Errorf(paywatch.EINVALID, paywatch.MsgInvalidLimit)
		}
		f.Offset = n
	}
	if _, ok := q["status"]; ok {
		st, err := paywatch.ParseStatus(q.Get("status"))
		if err != nil {
			return f, paywatch.Errorf(paywatch.EINVALID, paywatch.MsgInvalidStatus)
		}
		f.Status = &st
	}
	if _, ok := q["created_after"]; ok {
		t, ok := parseTimestamp(q.Get("created_after"))
		if !ok {
			return f, paywatch.Errorf(paywatch.EINVALID, paywatch.MsgInvalidCreated)
		}
		f.CreatedAfter = &t
	}
	if _, ok := q["updated_after"]; ok {
		t, ok := parseTimestamp(q.Get("updated_after"))
		if !ok {
			return f, paywatch.Errorf(paywatch.EINVALID, paywatch.MsgInvalidUpdated)
		}
		f.UpdatedAfter = &t
	}
	return f, nil
}

// listPayments is GET /v1/payments: newest first, with pagination.
func (s *Server) listPayments(c echo.Context) error {
	f, err := listFilter(c)
	if err != nil {
		return err
	}
	ps, total, err := s.deps.Store.ListPayments(c.Request().Context(), project(c).ID, f)
	if err != nil {
		return err
	}
	items := make([]statusView, 0, len(ps))
	for _, p := range ps {
		v, err := s.status(p, false)
		if err != nil {
			return err
		}
		items = append(items, v)
	}
	return c.JSON(http.StatusOK, map[string]any{
		"success":  true,
		"payments": items,
		"pagination": map[string]any{
			"limit":    f.Limit,
			"offset":   f.Offset,
			"total":    total,
			"has_more": f.Offset+len(items) < total,
		},
	})
}

// cancelRequest is the body of PATCH /v1/payments/:id.
type cancelRequest struct {
	Status json.RawMessage `json:"status"`
}

// cancelPayment is PATCH /v1/payments/:id with {"status": "cancelled"}.
// The workflow's cancel update gives the verdict, so a cancel racing a
// detected transfer is settled in one place.
func (s *Server) cancelPayment(c echo.Context) error {
	ctx := c.Request().Context()
	var req cancelRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	st, err := optString(req.Status)
	if err != nil || st == nil || *st != string(paywatch.StatusCancelled) {
		return errInvalidBody
	}
	p, err := s.deps.Store.GetPayment(ctx, project(c).ID, c.Param("id"))
	if err != nil {
		return err
	}
	// What GET shows is what the merchant may cancel: a pending payment
	// shown as expired (3 minutes past expires_at, its final check perhaps
	// still running) is refused here, and by the workflow's validator.
	if st := paywatch.ShownStatus(p.Status, p.ExpiresAt, s.clock()); st != paywatch.StatusPending {
		return cannotCancel(st)
	}
	if err := s.ensureStarted(ctx, p); err != nil {
		return err
	}
	state, err := s.deps.Workflows.Cancel(ctx, p.ID)
	if workflowClosed(err) {
		// The workflow has ended, so the payment is final: refuse as the
		// workflow's validator would.
		if p, err = s.deps.Store.GetPayment(ctx, p.ProjectID, p.ID); err != nil {
			return err
		}
		return cannotCancel(p.Status)
	}
	if err != nil {
		return err
	}
	if p, err = s.deps.Store.GetPayment(ctx, p.ProjectID, p.ID); err != nil {
		return err
	}
	// The workflow saved the state before answering; should the save have
	// failed, the update's own answer still shows the cancellation.
	if p.Status != state.Status && state.Status != "" {
		p.Status = state.Status
	}
	v, err := s.status(p, true)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "payment": v})
}

// cannotCancel is the 409 for a payment that is not pending.
func cannotCancel(st paywatch.Status) error {
	return paywatch.Errorf(paywatch.ECONFLICT, "%s", paywatch.MsgCancelRefused(st))
}

// confirmRequest is the body of POST /v1/payments/:id/confirm.
type confirmRequest struct {
	TxHash json.RawMessage `json:"tx_hash"`
}

// confirmPayment is POST /v1/payments/:id/confirm (pool + txid). The hash is
// normalised for the payment's network; the workflow's submit-tx-hash
// update applies every rule and verifies it on chain.
func (s *Server) confirmPayment(c echo.Context) error {
	ctx := c.Request().Context()
	var req confirmRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	raw, err := optString(req.TxHash)
	if err != nil || raw == nil || strings.TrimSpace(*raw) == "" {
		return errInvalidBody
	}
	p, err := s.deps.Store.GetPayment(ctx, project(c).ID, c.Param("id"))
	if err != nil {
		return err
	}
	hash := strings.TrimSpace(*raw)
	if p.Network != "" {
		if hash, err = paywatch.NormalizeTxHash(p.Network, hash); err != nil {
			return errInvalidBody
		}
	}
	if err := s.ensureStarted(ctx, p); err != nil {
		return err
	}
	res, err := s.deps.Workflows.SubmitTxHash(ctx, p.ID, workflows.SubmitTxHashRequest{TxHash: hash})
	if workflowClosed(err) {
		return paywatch.Errorf(paywatch.ECONFLICT, paywatch.MsgFinalized)
	}
	if err != nil {
		return err
	}
	out := map[string]any{
		"success":  true,
		"status":   res.Status,
		"verified": res.Verified,
		"message":  res.Message,
	}
	if res.Verified && res.AmountReceived != nil {
		out["amount_received"] = res.AmountReceived.String()
	}
	return c.JSON(http.StatusOK, out)
}

// config is GET /v1/config: the networks and tokens the project can take
// payments on. It does not count against the daily API call limit.
func (s *Server) config(c echo.Context) error {
	prj := project(c)
	w, err := s.deps.Store.WalletOf(c.Request().Context(), prj.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{
		"success":       true,
		"project":       map[string]any{"name": prj.Name, "slug": prj.Slug},
		"chains":        networkViews(s.deps.Store.AvailableNetworks(prj.AddressMode, w), true),
		"default_token": paywatch.USDT,
		"setup_url":     s.deps.SetupURL,
	})
}
