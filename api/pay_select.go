package api

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
)

// Hosted select-network limits (interface.md "Limits"), counted in
// PostgreSQL so that every replica shares them.
const (
	// SelectNetworkPerIP is the number of selections per minute per client IP.
	SelectNetworkPerIP = 5
	// SelectNetworkPerPayment is the number of selections per minute per payment.
	SelectNetworkPerPayment = 3
)

// selectNetworkRequest is the body of POST /api/pay/{id}/select-network.
type selectNetworkRequest struct {
	Network *string `json:"network"`
	Token   *string `json:"token"`
}

// selectNetworkJSON is POST {pay_url}/api/pay/{id}/select-network: 200
// {success, address, network, token, amount, qr_code}, or one of the
// errors of interface.md's table.
func (s *Server) selectNetworkJSON(c echo.Context) error {
	id := c.Param("id")
	if err := s.limitSelection(c, id); err != nil {
		return err
	}
	var req selectNetworkRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	a, err := s.selectNetwork(c.Request().Context(), id, req.Network, req.Token)
	if err != nil {
		return err
	}
	target := a.Address
	if a.Memo != "" {
		// A memo payment's code carries its memo, with the project's
		// name: read back as its page shows it.
		p, err := s.payments.PaymentByID(c.Request().Context(), id)
		if err != nil {
			return err
		}
		target = s.qrTarget(p)
	}
	qr, err := s.qr.get(target)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{
		"success": true,
		"address": a.Address,
		"network": a.Network,
		"token":   a.Token,
		"amount":  a.Amount.String(),
		"qr_code": qr,
	})
}

// selectNetworkForm is the page's network choice without JavaScript: a
// form post whose success redirects (303) back to the page, and whose
// refusal shows the page with the message.
func (s *Server) selectNetworkForm(c echo.Context) error {
	id := c.Param("id")
	if !paywatch.ValidPaymentID(id) {
		return paywatch.Errorf(paywatch.ENOTFOUND, paywatch.MsgPaymentNotFound)
	}
	err := s.limitSelection(c, id)
	if err == nil {
		network, token := c.FormValue("network"), c.FormValue("token")
		if pair := c.FormValue("pair"); pair != "" {
			network, token, _ = strings.Cut(pair, ":")
		}
		_, err = s.selectNetwork(c.Request().Context(), id, &network, &token)
	}
	if err != nil {
		status, b, ok := clientError(err)
		if !ok || status == http.StatusNotFound {
			return err
		}
		p, perr := s.payments.PaymentByID(c.Request().Context(), id)
		if perr != nil {
			return perr
		}
		msg, _ := b["error"].(string)
		return s.renderPayment(c, status, p, msg)
	}
	return c.Redirect(http.StatusSeeOther, "/"+id)
}

// limitSelection applies the select-network limits: 5 per minute per client
// IP, then 3 per minute per payment (429 "Too many requests" with
// Retry-After). Every attempt counts, valid or not.
func (s *Server) limitSelection(c echo.Context, id string) error {
	over, err := s.hitPerIP(c, "select-network-ip", SelectNetworkPerIP)
	if err != nil {
		return err
	}
	if over {
		return tooMany(paywatch.MsgTooManyRequests)
	}
	if !paywatch.ValidPaymentID(id) {
		return nil // paywatch.MsgPaymentNotFound comes next
	}
	w, err := s.payments.HitRate(c.Request().Context(), "select-network-payment:"+strings.ToLower(id), time.Minute)
	if err != nil {
		return err
	}
	if w.Count > SelectNetworkPerPayment {
		setRetryAfter(c, w)
		return tooMany(paywatch.MsgTooManyRequests)
	}
	return nil
}

// pairName matches what may be echoed back in "X on Y is not available".
var pairName = regexp.MustCompile(`^[A-Z0-9]{1,16}$`)

// notAvailable is the 400 for a pair the merchant does not take.
func notAvailable(n paywatch.Network, t paywatch.Token) error {
	return paywatch.Errorf(paywatch.EINVALID, "%s", paywatch.MsgNotAvailable(paywatch.Pair{Network: n, Token: t}))
}

// selectPair reads the requested network and token. Names are exact and
// uppercase, as in POST /v1/payments: "erc20" is refused in both places.
func selectPair(network, token *string) (paywatch.Network, paywatch.Token, error) {
	if network == nil || token == nil || strings.TrimSpace(*network) == "" || strings.TrimSpace(*token) == "" {
		return "", "", paywatch.Errorf(paywatch.EINVALID, paywatch.MsgNetworkTokenRequired)
	}
	n, t := paywatch.Network(*network), paywatch.Token(*token)
	if !n.Valid() || !t.Valid() {
		if !pairName.MatchString(string(n)) || !pairName.MatchString(string(t)) {
			return "", "", errInvalidBody
		}
		return "", "", notAvailable(n, t)
	}
	if err := paywatch.ValidatePair(n, t); err != nil {
		return "", "", err // "USDC is not supported on TRC20"
	}
	return n, t, nil
}

// selectNetwork reads the requested pair and picks the payment's network
// (payments.Service.SelectNetwork gives the verdict).
func (s *Server) selectNetwork(ctx context.Context, id string, network, token *string) (paywatch.Assignment, error) {
	n, t, err := selectPair(network, token)
	if err != nil {
		return paywatch.Assignment{}, err
	}
	return s.payments.SelectNetwork(ctx, id, n, t)
}
