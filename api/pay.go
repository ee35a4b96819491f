package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/workflows"
)

// The hosted pages on the pay listener ({pay_url}):
//
//	GET  /{payment_id}                          payment page (HTML)
//	POST /{payment_id}/select-network           network choice without JavaScript (form post, 303 back)
//	GET  /api/pay/{payment_id}                  what the page shows, polled every 10 s (JSON)
//	POST /api/pay/{payment_id}/select-network   network choice (JSON, interface.md)
//	GET  /l/{slug}, POST /l/{slug}              payment link page and its form
//	GET  /assets/{name}                         the pages' CSS and JavaScript, embedded
//
// Everything is served from the binary (no CDN, no external fonts) under a
// strict Content-Security-Policy: no inline script or style, so the pages'
// script and style are files of their own.

// ContentSecurityPolicy is sent with every answer of the pay listener.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// Hosted select-network limits (interface.md "Limits"), counted in
// PostgreSQL so that every replica shares them.
const (
	// SelectNetworkPerIP is the number of selections per minute per client IP.
	SelectNetworkPerIP = 5
	// SelectNetworkPerPayment is the number of selections per minute per payment.
	SelectNetworkPerPayment = 3
)

// contextHTML marks a request whose errors are answered with an HTML page
// instead of JSON.
const contextHTML = "paywatch.html"

//go:embed web
var webFS embed.FS

// asset is an embedded file served under /assets/.
type asset struct {
	body  []byte
	ctype string
	hash  string
}

// pageAssets are the URLs of the pages' stylesheet and script; the content
// hash in the query lets browsers cache them for good.
type pageAssets struct {
	CSS string
	JS  string
}

var (
	assetFiles = map[string]asset{}
	assetURLs  pageAssets
	pages      = map[string]*template.Template{}
)

func init() {
	entries, err := fs.ReadDir(webFS, "web/assets")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		body, err := webFS.ReadFile("web/assets/" + e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(e.Name()))
		switch path.Ext(e.Name()) {
		case ".js":
			ctype = "text/javascript; charset=utf-8"
		case ".css":
			ctype = "text/css; charset=utf-8"
		}
		assetFiles[e.Name()] = asset{body: body, ctype: ctype, hash: hex.EncodeToString(sum[:6])}
	}
	assetURLs = pageAssets{
		CSS: "/assets/pay.css?v=" + assetFiles["pay.css"].hash,
		JS:  "/assets/pay.js?v=" + assetFiles["pay.js"].hash,
	}
	for _, name := range []string{"payment", "link", "error"} {
		pages[name] = template.Must(template.New(name).ParseFS(webFS, "web/templates/base.html", "web/templates/"+name+".html"))
	}
}

// payRoutes registers the hosted pages on the pay listener.
func (s *Server) payRoutes() {
	p := s.pay
	p.GET("/assets/:name", s.serveAsset)
	p.GET("/api/pay/:id", s.payStatus, s.limitPerIP("pay-status"))
	p.POST("/api/pay/:id/select-network", s.selectNetworkJSON)
	p.Any("/api/*", func(echo.Context) error { return echo.ErrNotFound })
	p.GET("/l/:slug", s.linkPage, htmlPage, s.limitPerIP("pay-link"))
	p.POST("/l/:slug", s.linkSubmit, htmlPage, s.limitPerIP("pay-link"))
	p.GET("/:id", s.paymentPage, htmlPage, s.limitPerIP("pay-page"))
	p.POST("/:id/select-network", s.selectNetworkForm, htmlPage)
	p.Any("/*", func(echo.Context) error { return echo.ErrNotFound }, htmlPage)
}

// payHeaders sets the security headers of every pay-listener answer. Pages
// and JSON carry deposit addresses and states that must not be cached by
// anything in between; the assets override Cache-Control.
func payHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		return next(c)
	}
}

// htmlPage makes the error handler answer with an HTML page.
func htmlPage(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(contextHTML, true)
		return next(c)
	}
}

// serveAsset serves an embedded stylesheet or script.
func (s *Server) serveAsset(c echo.Context) error {
	a, ok := assetFiles[c.Param("name")]
	if !ok {
		return echo.ErrNotFound
	}
	cache := "public, max-age=300"
	if c.QueryParam("v") == a.hash {
		cache = "public, max-age=31536000, immutable"
	}
	c.Response().Header().Set("Cache-Control", cache)
	return c.Blob(http.StatusOK, a.ctype, a.body)
}

// render writes a page template.
func render(c echo.Context, status int, name string, data any) error {
	var buf bytes.Buffer
	if err := pages[name].ExecuteTemplate(&buf, "base", data); err != nil {
		return fmt.Errorf("render %s page: %w", name, err)
	}
	return c.HTMLBlob(status, buf.Bytes())
}

// errorPage is the data of the error template.
type errorPage struct {
	Assets  pageAssets
	Code    int
	Heading string
	Message string
}

// renderHTMLError is the HTML form of an error answer (the error handler's
// choice for the pages): the status and a message for people, never
// internals.
func renderHTMLError(c echo.Context, status int, msg string) {
	p := errorPage{Assets: assetURLs, Code: status}
	switch {
	case status == http.StatusNotFound:
		p.Heading = "Not found"
		p.Message = "This page does not exist. Check the link you were given."
		if msg == paywatch.MsgPaymentNotFound {
			p.Message = "This payment does not exist. Check the link you were given."
		}
	case status == http.StatusTooManyRequests:
		p.Heading = paywatch.MsgTooManyRequests
		p.Message = "Please wait a minute, then try again."
	case status >= 500:
		p.Heading = "Something went wrong"
		p.Message = "Please try again in a moment."
	default:
		p.Heading = "Cannot continue"
		p.Message = msg
	}
	if err := render(c, status, "error", p); err != nil {
		_ = c.String(status, p.Heading)
	}
}

// payView is GET {pay_url}/api/pay/{id}: what the page shows and nothing
// of the merchant's (no webhook URL, metadata, references or keys).
type payView struct {
	Status      paywatch.Status `json:"status"`
	Amount      string          `json:"amount"`
	Address     *string         `json:"address"`
	Network     *string         `json:"network"`
	NetworkName string          `json:"network_name,omitempty"`
	Token       *string         `json:"token"`
	QRCode      *string         `json:"qr_code"`
	ExpiresAt   string          `json:"expires_at"`
	Notice      string          `json:"notice,omitempty"`
	// AvailableNetworks is present while the customer has to choose.
	AvailableNetworks *[]networkView `json:"available_networks,omitempty"`
	// PaidAmount is the confirmed amount received.
	PaidAmount string `json:"paid_amount"`
	// MissingAmount is what a partial payment still lacks.
	MissingAmount string `json:"missing_amount,omitempty"`
	// Confirmations and RequiredConfirmations follow a transfer that is
	// still confirming.
	Confirmations         *int `json:"confirmations,omitempty"`
	RequiredConfirmations *int `json:"required_confirmations,omitempty"`

	// available backs AvailableNetworks for the page.
	available []paywatch.NetworkInfo
}

// payView builds what the hosted page shows of p.
func (s *Server) payView(ctx context.Context, p *store.Payment) (payView, error) {
	now := s.clock()
	v := payView{
		Status:     paywatch.ShownStatus(p.Status, p.ExpiresAt, now),
		Amount:     p.Amount.String(),
		Address:    nullable(p.Address),
		Network:    nullable(string(p.Network)),
		Token:      nullable(string(p.Token)),
		ExpiresAt:  ts(p.ExpiresAt),
		PaidAmount: p.PaidAmount.String(),
	}
	if info, ok := paywatch.LookupNetwork(p.Network); ok {
		v.NetworkName = info.Name
	}
	if microApplied(p) {
		v.Notice = notice(p)
	}
	if p.Address != "" {
		qr, err := s.qr.get(p.Address)
		if err != nil {
			return v, err
		}
		v.QRCode = &qr
	}
	if p.AwaitingNetwork() {
		avail, err := s.choices(ctx, p)
		if err != nil {
			return v, err
		}
		views := networkViews(avail, false)
		for i := range views {
			views[i].Explorer = ""
		}
		v.available, v.AvailableNetworks = avail, &views
	}
	if v.Status == paywatch.StatusPartial {
		v.MissingAmount = p.Amount.Sub(p.PaidAmount).String()
	}
	if info, ok := paywatch.LookupNetwork(p.Network); ok {
		best, unconfirmed := 0, false
		for _, tx := range transactions(p.Transactions) {
			if !tx.Confirmed {
				unconfirmed = true
				best = max(best, tx.Confirmations)
			}
		}
		if unconfirmed {
			required := info.Confirmations
			v.Confirmations, v.RequiredConfirmations = &best, &required
		}
	}
	return v, nil
}

// choices lists the network+token combinations the customer may choose for
// a network-less payment: the wallet's available networks, narrowed to the
// token of the payment link it came from, if any.
func (s *Server) choices(ctx context.Context, p *store.Payment) ([]paywatch.NetworkInfo, error) {
	w, err := s.deps.Store.WalletOf(ctx, p.ProjectID)
	if err != nil {
		return nil, err
	}
	avail := s.deps.Store.AvailableNetworks(p.Mode, w)
	only, err := s.deps.Store.PaymentLinkToken(ctx, p.ID)
	if err != nil || only == "" {
		return avail, err
	}
	var out []paywatch.NetworkInfo
	for _, info := range avail {
		for _, t := range info.Tokens {
			if t == only {
				info.Tokens = []paywatch.Token{only}
				out = append(out, info)
				break
			}
		}
	}
	return out, nil
}

// tokensLabel names the tokens of a list of networks: "USDT", or "USDT or
// USDC".
func tokensLabel(infos []paywatch.NetworkInfo) string {
	var tokens []string
	seen := map[paywatch.Token]bool{}
	for _, info := range infos {
		for _, t := range info.Tokens {
			if !seen[t] {
				seen[t] = true
				tokens = append(tokens, string(t))
			}
		}
	}
	return strings.Join(tokens, " or ")
}

// payStatus is GET {pay_url}/api/pay/{id}.
func (s *Server) payStatus(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.deps.Store.PaymentByID(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	v, err := s.payView(ctx, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// pageState is the state the page shows: the status, refined by whether a
// network was chosen and whether the window is still open (pay.js's
// stateOf does the same in the browser).
func pageState(status paywatch.Status, awaitingNetwork bool, expiresAt, now time.Time) string {
	if status != paywatch.StatusPending {
		return string(status)
	}
	open := now.Before(expiresAt)
	switch {
	case awaitingNetwork && open:
		return "choose"
	case awaitingNetwork:
		return "choose-closed"
	case open:
		return "pending"
	}
	return "pending-late"
}

// paymentPageData is the data of the payment template.
type paymentPageData struct {
	Assets pageAssets

	ID          string
	Status      paywatch.Status
	State       string
	Network     string
	NetworkName string
	Amount      string
	TokenLabel  string
	Address     string
	QR          template.URL
	Notice      string

	NowMs       int64
	ExpiresMs   int64
	ExpiresAt   string
	ExpiresText string
	Countdown   string

	PaidAmount            string
	MissingAmount         string
	Confirmations         int
	RequiredConfirmations int

	ShowChoose    bool
	ShowPay       bool
	ShowCountdown bool
	Networks      []networkChoice
	Error         string
}

// networkChoice is one network of the choice form with its token buttons.
type networkChoice struct {
	Name          string
	Confirmations int
	Pairs         []pairChoice
}

// pairChoice is one button of the choice form; Value is "NETWORK:TOKEN".
type pairChoice struct {
	Value string
	Token string
}

// countdown formats the time left as the page's script does: m:ss under an
// hour, h:mm:ss above.
func countdown(d time.Duration) string {
	secs := max(int64(d/time.Second), 0)
	h, m, sec := secs/3600, secs%3600/60, secs%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, sec)
	}
	return fmt.Sprintf("%02d:%02d", m, sec)
}

// renderPayment renders the payment page of p with an optional error
// (a refused network choice of the form fallback).
func (s *Server) renderPayment(c echo.Context, status int, p *store.Payment, errMsg string) error {
	v, err := s.payView(c.Request().Context(), p)
	if err != nil {
		return err
	}
	now := s.clock()
	d := paymentPageData{
		Assets:      assetURLs,
		ID:          p.ID,
		Status:      v.Status,
		State:       pageState(v.Status, p.AwaitingNetwork(), p.ExpiresAt, now),
		Network:     string(p.Network),
		NetworkName: v.NetworkName,
		Amount:      v.Amount,
		TokenLabel:  string(p.Token),
		Address:     p.Address,
		Notice:      v.Notice,
		NowMs:       now.UnixMilli(),
		ExpiresMs:   p.ExpiresAt.UnixMilli(),
		ExpiresAt:   v.ExpiresAt,
		ExpiresText: p.ExpiresAt.UTC().Format("2 Jan 2006, 15:04 UTC"),
		Countdown:   countdown(p.ExpiresAt.Sub(now)),
		PaidAmount:  v.PaidAmount,
		Error:       errMsg,
	}
	if v.QRCode != nil {
		d.QR = template.URL(*v.QRCode) // our own data:image/png URI
	}
	if v.Status == paywatch.StatusPartial {
		d.MissingAmount = v.MissingAmount
	}
	if v.Confirmations != nil {
		d.Confirmations, d.RequiredConfirmations = *v.Confirmations, *v.RequiredConfirmations
	} else if info, ok := paywatch.LookupNetwork(p.Network); ok {
		d.RequiredConfirmations = info.Confirmations
	}
	if p.AwaitingNetwork() {
		d.TokenLabel = tokensLabel(v.available)
		for _, info := range v.available {
			nc := networkChoice{Name: info.Name, Confirmations: info.Confirmations}
			for _, t := range info.Tokens {
				nc.Pairs = append(nc.Pairs, pairChoice{Value: string(info.Network) + ":" + string(t), Token: string(t)})
			}
			d.Networks = append(d.Networks, nc)
		}
	}
	switch d.State {
	case "choose":
		d.ShowChoose, d.ShowCountdown = true, true
	case "pending", "confirming", "partial":
		d.ShowPay, d.ShowCountdown = true, true
	case "pending-late":
		d.ShowPay = true
	}
	d.ShowPay = d.ShowPay && p.Address != ""
	return render(c, status, "payment", d)
}

// paymentPage is GET {pay_url}/{id}; unknown and malformed ids get the 404
// page.
func (s *Server) paymentPage(c echo.Context) error {
	p, err := s.deps.Store.PaymentByID(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return s.renderPayment(c, http.StatusOK, p, "")
}

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
	qr, err := s.qr.get(a.Address)
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
	if !store.ValidPaymentID(id) {
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
		p, perr := s.deps.Store.PaymentByID(c.Request().Context(), id)
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
	if !store.ValidPaymentID(id) {
		return nil // paywatch.MsgPaymentNotFound comes next
	}
	w, err := s.deps.Store.HitRate(c.Request().Context(), "select-network-payment:"+strings.ToLower(id), time.Minute)
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

// selectNetwork picks the network of a network-less payment through its
// workflow's select-network update, whose validator and activity give the
// verdicts of interface.md's table (409, 410, 400, 429). The window is
// never extended. A workflow that has ended answers from the row.
func (s *Server) selectNetwork(ctx context.Context, id string, network, token *string) (paywatch.Assignment, error) {
	var none paywatch.Assignment
	n, t, err := selectPair(network, token)
	if err != nil {
		return none, err
	}
	p, err := s.deps.Store.PaymentByID(ctx, id)
	if err != nil {
		return none, err
	}
	if !p.AwaitingNetwork() {
		return none, paywatch.SelectNetworkRefusal(true, p.Status, p.ExpiresAt, s.clock())
	}
	if p.Status == paywatch.StatusPending && s.clock().Before(p.ExpiresAt) {
		only, err := s.deps.Store.PaymentLinkToken(ctx, p.ID)
		if err != nil {
			return none, err
		}
		if only != "" && only != t {
			return none, notAvailable(n, t)
		}
	}
	if err := s.ensureStarted(ctx, p); err != nil {
		return none, err
	}
	a, err := s.deps.Workflows.SelectNetwork(ctx, p.ID, workflows.SelectNetworkRequest{Network: n, Token: t})
	if workflowClosed(err) {
		if p, err = s.deps.Store.PaymentByID(ctx, id); err != nil {
			return none, err
		}
		if err := paywatch.SelectNetworkRefusal(!p.AwaitingNetwork(), p.Status, p.ExpiresAt, s.clock()); err != nil {
			return none, err
		}
		return none, paywatch.Errorf(paywatch.ECONFLICT, "%s", paywatch.MsgNotPending) // the workflow ended: no longer pending
	}
	if err != nil {
		return none, err
	}
	return a, nil
}
