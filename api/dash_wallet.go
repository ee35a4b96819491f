package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/payments"
)

// previewCount is how many derived addresses the wallet page shows, from
// index 1 (index 0 is reserved for gas), to compare with the wallet app.
const previewCount = 3

// walletFamily is one address family's xPub on the wallet page.
type walletFamily struct {
	Family  string
	Name    string
	XPub    string
	Typed   string
	Preview []string
}

// walletNetwork is one network's static addresses on the wallet page.
type walletNetwork struct {
	Network   string
	Name      string
	Addresses []payments.StaticAddress
	Typed     string
}

// walletPage is the data of the wallet page.
type walletPage struct {
	dashPage
	Exists   bool
	Name     string
	Families []walletFamily
	Networks []walletNetwork
	// Previewing marks a preview of typed xPubs that is not saved yet.
	Previewing bool
	// ProtectionKeySet is false for an account without a protection key:
	// the form then asks for one to set along with the wallet.
	ProtectionKeySet bool
	// KeyJustSet says the protection key was set by this very form, whose
	// wallet was then refused.
	KeyJustSet bool
}

// walletRender renders the wallet page from the stored wallet and what
// the form typed, with err's message.
func (s *Server) walletRender(c echo.Context, typed bool, previewing bool, err error) error {
	ctx := c.Request().Context()
	p := dashProject(c)
	w, werr := s.payments.WalletOf(ctx, p.ID)
	if werr != nil && paywatch.ErrorCode(werr) != paywatch.EINVALID && paywatch.ErrorCode(werr) != paywatch.ENOTFOUND {
		return werr
	}
	statics, serr := s.payments.StaticAddresses(ctx, p.ID)
	if serr != nil {
		return serr
	}
	pg := walletPage{dashPage: s.page(c, "Wallet"), Exists: w != nil, Previewing: previewing, ProtectionKeySet: s.protectionKeySet(c)}
	pg.KeyJustSet, _ = c.Get(ctxProtectionSet).(bool)
	pg.Tab = "wallet"
	if w != nil {
		pg.Name = w.Name
	}
	if typed {
		pg.Name = c.FormValue("name")
	}
	for _, f := range paywatch.DerivedFamilies() {
		wf := walletFamily{Family: string(f), Name: familyName(f)}
		if w != nil {
			wf.XPub = w.XPubs[f]
		}
		if typed {
			wf.Typed = strings.TrimSpace(c.FormValue("xpub_" + string(f)))
		}
		show := wf.XPub
		if wf.Typed != "" {
			show = wf.Typed
		}
		if show != "" {
			if addrs, perr := payments.PreviewAddresses(show, f, previewCount); perr == nil {
				wf.Preview = addrs
			} else if err == nil && previewing {
				err = perr
			}
		}
		pg.Families = append(pg.Families, wf)
	}
	for _, n := range paywatch.Networks() {
		if !s.payments.Offered(n.Network) {
			continue
		}
		wn := walletNetwork{Network: string(n.Network), Name: n.Name}
		for _, a := range statics {
			if a.Network == n.Network {
				wn.Addresses = append(wn.Addresses, a)
			}
		}
		if typed {
			wn.Typed = c.FormValue("addresses_" + string(n.Network))
		}
		pg.Networks = append(pg.Networks, wn)
	}
	status := http.StatusOK
	if err != nil {
		st, msg, ok := formError(err)
		if !ok {
			return err
		}
		status, pg.Error, pg.Flash = st, msg, ""
	}
	return renderDash(c, status, "wallet", pg)
}

// protectionKeySet reports whether the signed-in account has a protection
// key, as it is now: one set earlier in this request counts.
func (s *Server) protectionKeySet(c echo.Context) bool {
	if set, ok := c.Get(ctxProtectionSet).(bool); ok {
		return set
	}
	return session(c).ProtectionKeySet
}

// familyName names an address family for people: the display name of
// its one network ("Tron (TRC20)"), or the family and the networks that
// share its addresses ("EVM (BEP20, ERC20, POLYGON, ARBITRUM, BASE)").
func familyName(f paywatch.Family) string {
	ns := paywatch.NetworksOf(f)
	if len(ns) == 1 {
		if info, ok := paywatch.LookupNetwork(ns[0]); ok {
			return info.Name
		}
	}
	name := strings.ToUpper(string(f))
	if len(ns) == 0 {
		return name
	}
	names := make([]string, len(ns))
	for i, n := range ns {
		names[i] = string(n)
	}
	return name + " (" + strings.Join(names, ", ") + ")"
}

func (s *Server) walletShow(c echo.Context) error {
	return s.walletRender(c, false, false, nil)
}

// walletSubmit previews (action=preview) or saves the wallet: its name,
// the xPubs typed (an empty field keeps the stored one; "remove_<family>"
// removes it) and the static addresses typed, one per line, added to the
// ones registered. A save that changes where payments go needs the
// protection key.
func (s *Server) walletSubmit(c echo.Context) error {
	if c.FormValue("action") == "preview" {
		return s.walletRender(c, true, true, nil)
	}
	if rm := c.FormValue("remove_address"); rm != "" {
		network, address, _ := strings.Cut(rm, " ")
		err := s.payments.RemoveStaticAddress(c.Request().Context(), dashProject(c).Slug, paywatch.Network(network), address, session(c).Account.Email)
		if err != nil {
			return s.walletRender(c, false, false, err)
		}
		return s.redirect(c, DashboardPath+"/p/"+dashProject(c).Slug+"/wallet", flashWalletSaved)
	}
	name := strings.TrimSpace(c.FormValue("name"))
	u := payments.WalletUpdate{Name: &name, XPubs: map[string]*string{}, Addresses: map[string][]string{}}
	for _, f := range paywatch.DerivedFamilies() {
		if c.FormValue("remove_"+string(f)) == "on" {
			u.XPubs[string(f)] = nil
		} else if x := strings.TrimSpace(c.FormValue("xpub_" + string(f))); x != "" {
			u.XPubs[string(f)] = &x
		}
	}
	for _, n := range paywatch.Networks() {
		for _, line := range strings.FieldsFunc(c.FormValue("addresses_"+string(n.Network)), func(r rune) bool { return r == '\n' || r == '\r' || r == ',' || r == ' ' }) {
			u.Addresses[string(n.Network)] = append(u.Addresses[string(n.Network)], line)
		}
	}
	if payments.WalletChangeRedirects(u) {
		// A stolen session alone must not send the customers' funds
		// elsewhere: as for deleting the wallet, the protection key. An
		// account without one sets it here, with its password, rather
		// than leave the form (issue 28, item 1).
		var err error
		if s.protectionKeySet(c) || c.FormValue("new_protection_key") == "" {
			err = s.accounts.CheckProtectionKey(c.Request().Context(), session(c).Account.ID, c.FormValue("protection_key"))
		} else {
			err = s.accounts.SetProtectionKey(c.Request().Context(), session(c).Account.ID, c.FormValue("password"), c.FormValue("new_protection_key"))
			if err == nil {
				c.Set(ctxProtectionSet, true)
			}
		}
		if err != nil {
			return s.walletRender(c, true, false, err)
		}
	}
	if _, _, err := s.payments.PutWallet(c.Request().Context(), dashProject(c).Slug, u); err != nil {
		return s.walletRender(c, true, false, err)
	}
	return s.redirect(c, DashboardPath+"/p/"+dashProject(c).Slug+"/wallet", flashWalletSaved)
}

// walletDelete deletes the project's wallet once the protection key is
// given.
func (s *Server) walletDelete(c echo.Context) error {
	ctx := c.Request().Context()
	if err := s.accounts.CheckProtectionKey(ctx, session(c).Account.ID, c.FormValue("protection_key")); err != nil {
		return s.walletRender(c, false, false, err)
	}
	if err := s.payments.DeleteWallet(ctx, dashProject(c).Slug); err != nil {
		return s.walletRender(c, false, false, err)
	}
	return s.redirect(c, DashboardPath+"/p/"+dashProject(c).Slug+"/wallet", flashWalletDeleted)
}
