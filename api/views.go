package api

import (
	"encoding/json"
	"sync"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/payments"
)

// networkView is an element of available_networks (and, with chain for
// network, of GET /v1/config's chains).
type networkView struct {
	Network       string   `json:"network,omitempty"`
	Chain         string   `json:"chain,omitempty"`
	Name          string   `json:"name"`
	Tokens        []string `json:"tokens"`
	Confirmations int      `json:"confirmations"`
	Explorer      string   `json:"explorer,omitempty"`
}

// networkViews lists networks as available_networks elements; asChain
// names the key chain instead of network (GET /v1/config).
func networkViews(infos []paywatch.NetworkInfo, asChain bool) []networkView {
	out := make([]networkView, 0, len(infos))
	for _, info := range infos {
		v := networkView{Name: info.Name, Confirmations: info.Confirmations, Explorer: info.Explorer}
		for _, t := range info.Tokens {
			v.Tokens = append(v.Tokens, string(t))
		}
		if asChain {
			v.Chain = string(info.Network)
		} else {
			v.Network = string(info.Network)
		}
		out = append(out, v)
	}
	return out
}

// createdView is the payment of POST /v1/payments.
type createdView struct {
	ID                string          `json:"id"`
	Address           *string         `json:"address"`
	Amount            string          `json:"amount"`
	Network           *string         `json:"network"`
	Token             *string         `json:"token"`
	Memo              *string         `json:"memo"`
	Status            paywatch.Status `json:"status"`
	ExternalRef       string          `json:"external_ref"`
	ExternalOrderID   *string         `json:"external_order_id"`
	ExpiresAt         string          `json:"expires_at"`
	PaymentURL        string          `json:"payment_url"`
	QRCode            *string         `json:"qr_code"`
	Existing          bool            `json:"existing,omitempty"`
	OriginalAmount    string          `json:"original_amount,omitempty"`
	Notice            string          `json:"notice,omitempty"`
	RequiresTxID      bool            `json:"requires_txid,omitempty"`
	AvailableNetworks []networkView   `json:"available_networks,omitempty"`
}

// statusView is the payment of GET /v1/payments/:id, of list items and of
// the cancel response: the status response of interface.md with the fields
// operations.md §3 adds.
type statusView struct {
	ID              string          `json:"id"`
	Status          paywatch.Status `json:"status"`
	Amount          string          `json:"amount"`
	ExpectedAmount  string          `json:"expected_amount"`
	PaidAmount      string          `json:"paid_amount"`
	OriginalAmount  string          `json:"original_amount,omitempty"`
	Notice          string          `json:"notice,omitempty"`
	RequiresTxID    bool            `json:"requires_txid,omitempty"`
	Address         *string         `json:"address"`
	Network         *string         `json:"network"`
	Token           *string         `json:"token"`
	Memo            *string         `json:"memo"`
	TxHash          *string         `json:"tx_hash"`
	ExpiresAt       string          `json:"expires_at"`
	PaidAt          *string         `json:"paid_at"`
	Transactions    []txView        `json:"transactions"`
	LatePayment     bool            `json:"late_payment"`
	ExternalRef     string          `json:"external_ref"`
	ExternalOrderID *string         `json:"external_order_id"`
	Metadata        json.RawMessage `json:"metadata"`
	CreatedAt       string          `json:"created_at"`
	UpdatedAt       string          `json:"updated_at"`
	QRCode          *string         `json:"qr_code,omitempty"`
	PaymentURL      string          `json:"payment_url"`
	AwaitingNetwork bool            `json:"awaiting_network,omitempty"`
}

// txView is a Transaction of the status response.
type txView struct {
	TxHash        string `json:"tx_hash"`
	Amount        string `json:"amount"`
	From          string `json:"from"`
	Confirmed     bool   `json:"confirmed"`
	Confirmations int    `json:"confirmations"`
}

// nullable returns nil for "" so the field reads null.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// paymentURL is the hosted page of a payment.
func (s *Server) paymentURL(id string) string {
	return s.deps.PayURL + "/" + id
}

// notice tells a pool + micro_amount customer the exact amount to send.
func notice(p *payments.Payment) string {
	return "Send exactly " + p.Amount.String() + " " + string(p.Token) +
		". The amount includes a small unique adjustment that identifies your payment; a different amount may not be matched."
}

// microApplied reports whether p carries a micro offset.
func microApplied(p *payments.Payment) bool {
	return paywatch.PolicyOf(p.Mode, p.PoolMatching).ExactMatch && p.OriginalAmount != nil
}

// created renders a payment for POST /v1/payments.
func (s *Server) created(p *payments.Payment, existing bool, available []paywatch.NetworkInfo) (createdView, error) {
	v := createdView{
		ID:              p.ID,
		Address:         nullable(p.Address),
		Amount:          p.Amount.String(),
		Network:         nullable(string(p.Network)),
		Token:           nullable(string(p.Token)),
		Memo:            nullable(p.Memo),
		Status:          paywatch.ShownStatus(p.Status, p.ExpiresAt, s.clock()),
		ExternalRef:     p.ExternalRef,
		ExternalOrderID: p.ExternalOrderID,
		ExpiresAt:       ts(p.ExpiresAt),
		PaymentURL:      s.paymentURL(p.ID),
		Existing:        existing,
		RequiresTxID:    paywatch.PolicyOf(p.Mode, p.PoolMatching).TxIDOnly,
	}
	if microApplied(p) {
		v.OriginalAmount = p.OriginalAmount.String()
		v.Notice = notice(p)
	}
	if p.Address != "" {
		qr, err := s.qr.get(s.qrTarget(p))
		if err != nil {
			return v, err
		}
		v.QRCode = &qr
	}
	if p.CreatedWithoutNetwork && p.AwaitingNetwork() {
		v.AvailableNetworks = networkViews(available, false)
	}
	return v, nil
}

// status renders a payment's status response; withQR adds the QR code of a
// selected address (GET one), which lists leave out.
func (s *Server) status(p *payments.Payment, withQR bool) (statusView, error) {
	v := statusView{
		ID:              p.ID,
		Status:          paywatch.ShownStatus(p.Status, p.ExpiresAt, s.clock()),
		Amount:          p.Amount.String(),
		ExpectedAmount:  p.Amount.String(),
		PaidAmount:      p.PaidAmount.String(),
		RequiresTxID:    paywatch.PolicyOf(p.Mode, p.PoolMatching).TxIDOnly,
		Address:         nullable(p.Address),
		Network:         nullable(string(p.Network)),
		Token:           nullable(string(p.Token)),
		Memo:            nullable(p.Memo),
		TxHash:          nullable(p.TxHash),
		ExpiresAt:       ts(p.ExpiresAt),
		PaidAt:          optTS(p.PaidAt),
		Transactions:    transactions(p.Transactions),
		LatePayment:     p.LatePayment,
		ExternalRef:     p.ExternalRef,
		ExternalOrderID: p.ExternalOrderID,
		Metadata:        p.Metadata,
		CreatedAt:       ts(p.CreatedAt),
		UpdatedAt:       ts(p.UpdatedAt),
		PaymentURL:      s.paymentURL(p.ID),
		AwaitingNetwork: p.AwaitingNetwork(),
	}
	if microApplied(p) {
		v.OriginalAmount = p.OriginalAmount.String()
		v.Notice = notice(p)
	}
	if withQR && p.Address != "" {
		qr, err := s.qr.get(s.qrTarget(p))
		if err != nil {
			return v, err
		}
		v.QRCode = &qr
	}
	return v, nil
}

// transactions renders a payment's counted transfers for its status
// response.
func transactions(txs []paywatch.Transaction) []txView {
	out := make([]txView, 0, len(txs))
	for _, t := range txs {
		out = append(out, txView{
			TxHash: t.TxHash, Amount: t.Amount.String(), From: t.From, Confirmed: t.Confirmed, Confirmations: t.Confirmations,
		})
	}
	return out
}

// maxQRCacheEntries bounds the QR code cache; it is emptied when full.
const maxQRCacheEntries = 4096

// qrCache keeps QR codes by address: an address's code never changes, and
// GET requests repeat much more often than addresses do.
type qrCache struct {
	mu sync.Mutex
	m  map[string]string
}

func (q *qrCache) get(address string) (string, error) {
	q.mu.Lock()
	uri, ok := q.m[address]
	q.mu.Unlock()
	if ok {
		return uri, nil
	}
	uri, err := paywatch.QRCodeDataURI(address)
	if err != nil {
		return "", err
	}
	q.mu.Lock()
	if q.m == nil || len(q.m) >= maxQRCacheEntries {
		q.m = map[string]string{}
	}
	q.m[address] = uri
	q.mu.Unlock()
	return uri, nil
}
