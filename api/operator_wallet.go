package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/payments"
)

// walletRequest is the body of PUT /v1/projects/{slug}/wallet.
type walletRequest struct {
	Name      json.RawMessage            `json:"name"`
	XPubs     map[string]json.RawMessage `json:"xpubs"`
	Addresses map[string][]string        `json:"addresses"`
}

// putWallet is PUT /v1/projects/{slug}/wallet: sets xPubs and adds static
// addresses; a malformed or private key is refused with a message naming
// what is wrong, and an address another project registered or derived
// with a 409. The answer includes unused_run: per family, the longest run
// of consecutive derivation indices that never received funds.
func (s *Server) putWallet(c echo.Context) error {
	var req walletRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	u := payments.WalletUpdate{Addresses: req.Addresses}
	var err error
	if u.Name, err = optString(req.Name); err != nil {
		return err
	}
	if req.XPubs != nil {
		u.XPubs = map[string]*string{}
		for k, raw := range req.XPubs {
			x, err := optString(raw)
			if err != nil {
				return err
			}
			u.XPubs[k] = x
		}
	}
	w, p, err := s.payments.PutWallet(c.Request().Context(), c.Param("slug"), u)
	if err != nil {
		return err
	}
	xpubs := map[string]bool{}
	for _, f := range paywatch.DerivedFamilies() {
		xpubs[string(f)] = w.HasXPub(f)
	}
	addresses := map[string]int{}
	for _, n := range paywatch.Networks() {
		addresses[string(n.Network)] = w.Addresses[n.Network]
	}
	runs, err := s.payments.UnusedRun(c.Request().Context(), w)
	if err != nil {
		return err
	}
	unusedRun := map[string]int{}
	for f, n := range runs {
		unusedRun[string(f)] = n
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "wallet": map[string]any{
		"name":               w.Name,
		"xpubs":              xpubs,
		"addresses":          addresses,
		"available_networks": networkViews(s.payments.AvailableNetworks(p.AddressMode, w), false),
		// The operator watches it against the wallet software's gap
		// limit: per_payment derives an address per payment, and
		// abandoned payments leave unused ones behind.
		"unused_run": unusedRun,
	}})
}
