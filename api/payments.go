package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/payments"
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
	Locale          json.RawMessage `json:"locale"`
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
func parseCreatePayment(c echo.Context, projectID int64) (payments.NewPayment, error) {
	var req createPaymentRequest
	if err := decodeBody(c, &req); err != nil {
		return payments.NewPayment{}, err
	}
	np := payments.NewPayment{ProjectID: projectID, Token: paywatch.USDT}
	amount, err := optNumber(req.Amount)
	if err != nil || amount == nil {
		return np, errInvalidBody
	}
	ref, err := optString(req.ExternalRef)
	if err != nil || ref == nil || *ref == "" || utf8.RuneCountInString(*ref) > paywatch.MaxExternalRefLength {
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
		if utf8.RuneCountInString(*orderID) > paywatch.MaxExternalOrderIDLength {
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
		if d < paywatch.MinExpiresIn || d > paywatch.MaxExpiresIn {
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
	if np.Locale, err = optLocale(req.Locale); err != nil {
		return np, err
	}
	np.Metadata, err = optObject(req.Metadata)
	if err != nil || len(np.Metadata) > paywatch.MaxMetadataBytes {
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
	np, err := parseCreatePayment(c, project(c).ID)
	if err != nil {
		return err
	}
	out, err := s.payments.Create(c.Request().Context(), np)
	if err != nil {
		return failed(paywatch.MsgFailedCreate, err)
	}
	v, err := s.created(out.Payment, out.Existing, out.Available)
	if err != nil {
		// created fails only on the QR code of an assigned address, and
		// then has every other field filled in (available_networks belongs
		// to payments without an address); qr_code stays null. The payment
		// is committed: the answer must not turn into an error.
		s.deps.Logger.Error("payment created without qr_code", "paymentId", out.Payment.ID, "error", err)
	}
	status := http.StatusCreated
	if out.Existing {
		status = http.StatusOK
	}
	return c.JSON(status, map[string]any{"success": true, "payment": v})
}

// getPayment is GET /v1/payments/:id, read from PostgreSQL, where the
// workflow persists every change.
func (s *Server) getPayment(c echo.Context) error {
	p, err := s.payments.Get(c.Request().Context(), project(c).ID, c.Param("id"))
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
func listFilter(c echo.Context) (payments.ListFilter, error) {
	var f payments.ListFilter
	q := c.QueryParams()
	var err error
	if f.Limit, f.Offset, err = pageQuery(q); err != nil {
		return f, err
	}
	if _, ok := q["status"]; ok {
		st, err := paywatch.ParseStatus(q.Get("status"))
		if err != nil {
			return f, paywatch.Errorf(paywatch.EINVALID, paywatch.MsgInvalidStatus)
		}
		f.Status = &st
	}
	if f.CreatedAfter, err = timeQuery(q, "created_after", paywatch.MsgInvalidCreated); err != nil {
		return f, err
	}
	if f.UpdatedAfter, err = timeQuery(q, "updated_after", paywatch.MsgInvalidUpdated); err != nil {
		return f, err
	}
	return f, nil
}

// listPayments is GET /v1/payments: newest first, with pagination.
func (s *Server) listPayments(c echo.Context) error {
	f, err := listFilter(c)
	if err != nil {
		return err
	}
	ps, total, err := s.payments.List(c.Request().Context(), project(c).ID, f)
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
		"success":    true,
		"payments":   items,
		"pagination": pagination(f.Limit, f.Offset, len(items), total),
	})
}

// cancelRequest is the body of PATCH /v1/payments/:id.
type cancelRequest struct {
	Status json.RawMessage `json:"status"`
}

// cancelPayment is PATCH /v1/payments/:id with {"status": "cancelled"}
// (payments.Service.Cancel gives the verdict).
func (s *Server) cancelPayment(c echo.Context) error {
	var req cancelRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	st, err := optString(req.Status)
	if err != nil || st == nil || *st != string(paywatch.StatusCancelled) {
		return errInvalidBody
	}
	p, err := s.payments.Cancel(c.Request().Context(), project(c).ID, c.Param("id"))
	if err != nil {
		return err
	}
	v, err := s.status(p, true)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "payment": v})
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
	res, err := s.payments.ConfirmTxHash(ctx, project(c).ID, c.Param("id"), strings.TrimSpace(*raw))
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
	w, err := s.payments.WalletOf(c.Request().Context(), prj.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{
		"success":       true,
		"project":       map[string]any{"name": prj.Name, "slug": prj.Slug},
		"chains":        networkViews(s.payments.AvailableNetworks(prj.AddressMode, w), true),
		"default_token": paywatch.USDT,
		"setup_url":     s.deps.SetupURL,
	})
}
