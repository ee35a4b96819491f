package api

import (
	"context"
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/locale"
	"github.com/paywatch/paywatch/payments"
)

// payView is GET {pay_url}/api/pay/{id}: what the page shows and nothing
// of the merchant's (no webhook URL, metadata, references or keys).
type payView struct {
	Status      paywatch.Status `json:"status"`
	Amount      string          `json:"amount"`
	Address     *string         `json:"address"`
	Network     *string         `json:"network"`
	NetworkName string          `json:"network_name,omitempty"`
	Token       *string         `json:"token"`
	Memo        *string         `json:"memo"`
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
	// WalletURI and WalletQRCode are the EIP-681 payment request of an EVM
	// payment with an address, pending or partial, open and with nothing
	// confirming (pay_wallet.go), and its QR code.
	WalletURI    string `json:"wallet_uri,omitempty"`
	WalletQRCode string `json:"wallet_qr_code,omitempty"`

	// available backs AvailableNetworks for the page.
	available []paywatch.NetworkInfo
}

// payView builds what the hosted page shows of p.
func (s *Server) payView(ctx context.Context, p *payments.Payment) (payView, error) {
	now := s.clock()
	v := payView{
		Status:     paywatch.ShownStatus(p.Status, p.ExpiresAt, now),
		Amount:     p.Amount.String(),
		Address:    nullable(p.Address),
		Network:    nullable(string(p.Network)),
		Token:      nullable(string(p.Token)),
		Memo:       nullable(p.Memo),
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
		qr, err := s.qr.get(s.qrTarget(p))
		if err != nil {
			return v, err
		}
		v.QRCode = &qr
		if uri := s.walletURI(p, v.Status, now); uri != "" {
			if v.WalletQRCode, err = s.qr.get(uri); err != nil {
				return v, err
			}
			v.WalletURI = uri
		}
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
func (s *Server) choices(ctx context.Context, p *payments.Payment) ([]paywatch.NetworkInfo, error) {
	w, err := s.payments.WalletOf(ctx, p.ProjectID)
	if err != nil {
		return nil, err
	}
	avail := s.payments.AvailableNetworks(p.Mode, w)
	only, err := s.payments.PaymentLinkToken(ctx, p.ID)
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

// tokensLabel names the tokens of a list of networks, in the table's
// order: "USDT", "USDT / USDC", "USDT / USDC / DAI / PYUSD". The slash
// reads alike in every language of the page, where a word ("or") would
// need a catalogue entry and a grammar of lists for each.
func tokensLabel(infos []paywatch.NetworkInfo) string {
	seen := map[paywatch.Token]bool{}
	for _, info := range infos {
		for _, t := range info.Tokens {
			seen[t] = true
		}
	}
	var tokens []string
	for _, t := range paywatch.Tokens() {
		if seen[t] {
			tokens = append(tokens, string(t))
		}
	}
	return strings.Join(tokens, " / ")
}

// pageState is the state the page shows: the status, refined by whether a
// network was chosen, whether a transfer is still confirming and whether
// the window is still open (pay.js's stateOf does the same in the
// browser). A partial payment stays partial while its follow-up transfer
// confirms, and may read partial past expires_at (the confirming grace, a
// deadline check waiting out an outage): the page then says a transfer is
// confirming, or that time is up, rather than asking for the rest.
func pageState(status paywatch.Status, awaitingNetwork, unconfirmed bool, expiresAt, now time.Time) string {
	open := now.Before(expiresAt)
	switch {
	case status == paywatch.StatusPartial && unconfirmed:
		return "confirming"
	case status == paywatch.StatusPartial && !open:
		return "pending-late"
	case status != paywatch.StatusPending:
		return string(status)
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

	// Shop is the project's display name; Item the title of the payment
	// link the payment came from ("" for an API payment, whose request has
	// no description of what is bought); Reference what the buyer keeps
	// to ask the merchant about the payment: its id, which the merchant
	// finds in the dashboard, the API and every webhook. The merchant's
	// external_ref and external_order_id stay off the page, as all
	// merchant data does.
	Shop      string
	Item      string
	Reference string
	// WalletURI and WalletQR are the EIP-681 wallet link and its QR code
	// (EVM payments with an address; a memo payment's is its Solana Pay
	// transfer request, which the page shows whenever it is offered);
	// ShowWalletQR shows that QR code instead of the address one
	// (?qr=wallet, the toggle without JavaScript).
	WalletURI    template.URL
	WalletQR     template.URL
	ShowWalletQR bool
	// Memo is a memo payment's memo (operations.md §9: on SOLANA its
	// Solana Pay reference, on TON the transfer's comment), which the page
	// shows with its own copy button; "" for any other payment.
	Memo string
	// MemoKind is what the memo is to the buyer, MemoTexts the words the
	// page says it with: the payment's, or, while the buyer chooses, the
	// first offered kind's.
	MemoKind  memoKind
	MemoTexts memoTexts
	// MemoChoices are, while the buyer chooses, the memo kinds of the
	// memo networks offered, with the words of each: the page's script
	// puts the chosen network's into the memo row.
	MemoChoices []memoChoice
}

// memoKind is what a memo is to the buyer, which decides how the page
// speaks of it: a reference that a wallet adds from the payment request
// (SOLANA's Solana Pay reference), or a comment that the buyer may have
// to type and must never leave out (TON's).
type memoKind string

// The memo kinds.
const (
	memoReference memoKind = "reference"
	memoComment   memoKind = "comment"
)

// memoKinds are the memo kinds of the families with memo payments.
var memoKinds = map[paywatch.Family]memoKind{
	paywatch.FamilySolana: memoReference,
	paywatch.FamilyTON:    memoComment,
}

// memoKindOf returns the memo kind of network n's memo payments, "" for
// a network without any.
func memoKindOf(n paywatch.Network) memoKind { return memoKinds[n.Family()] }

// memoTexts are the catalogue messages the page says a kind of memo
// with: the memo row's label and warning, the QR code's alt text and
// hint, and the wallet help.
type memoTexts struct {
	Label, Warning, QRAlt, QRHint, WalletHelp string
}

// memoTextsOf are the messages of each memo kind.
var memoTextsOf = map[memoKind]memoTexts{
	memoReference: {Label: "pay.memo", Warning: "pay.memo_warning", QRAlt: "pay.qr_memo_alt",
		QRHint: "pay.qr_memo_hint", WalletHelp: "pay.memo_wallet_help"},
	memoComment: {Label: "pay.comment", Warning: "pay.comment_warning", QRAlt: "pay.qr_comment_alt",
		QRHint: "pay.qr_comment_hint", WalletHelp: "pay.comment_wallet_help"},
}

// memoChoice is one memo kind of the networks offered to a buyer still
// choosing: Networks names them, space-separated, for the page's script.
type memoChoice struct {
	memoTexts
	Kind     memoKind
	Networks string
}

// memoChoices lists the memo kinds of the networks a buyer may choose, in
// the table's order, with the networks of each; none when the project's
// mode has no memo payments.
func memoChoices(mode paywatch.AddressMode, avail []paywatch.NetworkInfo) []memoChoice {
	if !mode.UsesXPub() {
		return nil
	}
	var out []memoChoice
	for _, info := range avail {
		kind := memoKindOf(info.Network)
		if kind == "" {
			continue
		}
		i := slices.IndexFunc(out, func(c memoChoice) bool { return c.Kind == kind })
		if i < 0 {
			out = append(out, memoChoice{memoTexts: memoTextsOf[kind], Kind: kind, Networks: string(info.Network)})
			continue
		}
		out[i].Networks += " " + string(info.Network)
	}
	return out
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

// expiresText is the expiry as the page shows it before its script writes
// it in the buyer's time zone: in English "2 Jan 2006, 15:04 UTC", in the
// other languages the numeric form that needs no month names.
func expiresText(l locale.Lang, at time.Time) string {
	if l == locale.English {
		return at.UTC().Format("2 Jan 2006, 15:04 UTC")
	}
	return at.UTC().Format("2006-01-02 15:04 UTC")
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
func (s *Server) renderPayment(c echo.Context, status int, p *payments.Payment, errMsg string) error {
	merchantLang(c, p.Locale)
	ctx := c.Request().Context()
	v, err := s.payView(ctx, p)
	if err != nil {
		return err
	}
	info, err := s.payments.PaymentPageInfo(ctx, p.ID)
	if err != nil {
		return err
	}
	now := s.clock()
	d := paymentPageData{
		Assets:      assetURLs,
		ID:          p.ID,
		Status:      v.Status,
		State:       pageState(v.Status, p.AwaitingNetwork(), hasUnconfirmed(p.Transactions), p.ExpiresAt, now),
		Network:     string(p.Network),
		NetworkName: v.NetworkName,
		Amount:      v.Amount,
		TokenLabel:  string(p.Token),
		Address:     p.Address,
		Notice:      v.Notice,
		NowMs:       now.UnixMilli(),
		ExpiresMs:   p.ExpiresAt.UnixMilli(),
		ExpiresAt:   v.ExpiresAt,
		ExpiresText: expiresText(pageLang(c), p.ExpiresAt),
		Countdown:   countdown(p.ExpiresAt.Sub(now)),
		PaidAmount:  v.PaidAmount,
		Error:       errMsg,
		Shop:        info.Shop,
		Item:        info.LinkTitle,
		Reference:   p.ID,
	}
	if v.Memo != nil {
		d.Memo = *v.Memo
		d.MemoKind = memoKindOf(p.Network)
	}
	if v.QRCode != nil {
		d.QR = template.URL(*v.QRCode) // our own data:image/png URI
	}
	if v.WalletURI != "" {
		// Our own ethereum: URI and data:image/png URI, which html/template
		// would otherwise replace as unsafe schemes.
		d.WalletURI, d.WalletQR = template.URL(v.WalletURI), template.URL(v.WalletQRCode)
		d.ShowWalletQR = c.QueryParam("qr") == "wallet"
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
		d.MemoChoices = memoChoices(p.Mode, v.available)
		if d.MemoKind == "" && len(d.MemoChoices) > 0 {
			d.MemoKind = d.MemoChoices[0].Kind
		}
	}
	d.MemoTexts = memoTextsOf[d.MemoKind]
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
