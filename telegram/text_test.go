package telegram_test

import (
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/paywatch/paywatch/telegram"
)

func TestText(t *testing.T) {
	base := telegram.Notification{
		Project: "My shop", Amount: "25.00", PaidAmount: "25.00", Token: "USDT", Network: "TRC20",
		ExternalOrderID: "ORDER-1", PaymentID: "pay_1",
		TxHash:        "3f2a0000000000000000000000000000000000000000000000000000000c9c1d",
		ExplorerTxURL: "https://tronscan.org/#/transaction/3f2a0000000000000000000000000000000000000000000000000000000c9c1d",
	}
	with := func(f func(*telegram.Notification)) telegram.Notification {
		n := base
		f(&n)
		return n
	}
	tests := []struct {
		name string
		n    telegram.Notification
		want string
	}{
		{
			name: "completed",
			n:    with(func(n *telegram.Notification) { n.Event = "payment.completed" }),
			want: "✅ Paid: 25.00 USDT on TRC20\nShop: My shop\nOrder: ORDER-1\nPayment: pay_1\nTx: 3f2a…9c1d\n" + base.ExplorerTxURL,
		},
		{
			name: "completed late",
			n:    with(func(n *telegram.Notification) { n.Event = "payment.completed"; n.Late = true }),
			want: "✅ Paid: 25.00 USDT on TRC20 (late payment)\nShop: My shop\nOrder: ORDER-1\nPayment: pay_1\nTx: 3f2a…9c1d\n" + base.ExplorerTxURL,
		},
		{
			name: "overpaid shows paid and expected",
			n:    with(func(n *telegram.Notification) { n.Event = "payment.overpaid"; n.PaidAmount = "30.00" }),
			want: "✅ Overpaid: 30.00 USDT on TRC20 (expected 25.00)\nShop: My shop\nOrder: ORDER-1\nPayment: pay_1\nTx: 3f2a…9c1d\n" + base.ExplorerTxURL,
		},
		{
			name: "partial shows paid of expected",
			n: with(func(n *telegram.Notification) {
				n.Event = "payment.partial"
				n.PaidAmount = "10.00"
				n.Token, n.Network = "USDC", "POLYGON"
				n.TxHash = "0xabcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
				n.ExplorerTxURL = "https://polygonscan.com/tx/" + n.TxHash
			}),
			want: "🟡 Partially paid: 10.00 of 25.00 USDC on POLYGON\nShop: My shop\nOrder: ORDER-1\nPayment: pay_1\nTx: 0xabcd…6789\nhttps://polygonscan.com/tx/0xabcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
		},
		{
			name: "DAI on BASE keeps all 18 decimals",
			n: with(func(n *telegram.Notification) {
				n.Event = "payment.overpaid"
				n.Amount, n.PaidAmount = "1000000000000.00", "1010000000000.000000000000000001"
				n.Token, n.Network = "DAI", "BASE"
				n.TxHash = "0xabcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
				n.ExplorerTxURL = "https://basescan.org/tx/" + n.TxHash
			}),
			want: "✅ Overpaid: 1010000000000.000000000000000001 DAI on BASE (expected 1000000000000.00)\nShop: My shop\nOrder: ORDER-1\nPayment: pay_1\nTx: 0xabcd…6789\nhttps://basescan.org/tx/0xabcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
		},
		{
			name: "PYUSD on ARBITRUM",
			n: with(func(n *telegram.Notification) {
				n.Event = "payment.partial"
				n.Amount, n.PaidAmount = "25.50", "0.000001"
				n.Token, n.Network = "PYUSD", "ARBITRUM"
				n.TxHash, n.ExplorerTxURL = "", ""
			}),
			want: "🟡 Partially paid: 0.000001 of 25.50 PYUSD on ARBITRUM\nShop: My shop\nOrder: ORDER-1\nPayment: pay_1",
		},
		{
			name: "expired without network or transfer",
			n: with(func(n *telegram.Notification) {
				n.Event = "payment.expired"
				n.PaidAmount, n.Token, n.Network, n.TxHash, n.ExplorerTxURL = "0", "", "", "", ""
			}),
			want: "⌛ Expired: 25.00\nShop: My shop\nOrder: ORDER-1\nPayment: pay_1",
		},
		{
			name: "cancelled names the customer when there is no order id",
			n: with(func(n *telegram.Notification) {
				n.Event = "payment.cancelled"
				n.ExternalOrderID, n.ExternalRef = "", "user-77"
				n.TxHash, n.ExplorerTxURL, n.Network = "", "", ""
			}),
			want: "✖ Cancelled: 25.00 USDT\nShop: My shop\nCustomer: user-77\nPayment: pay_1",
		},
		{
			name: "hash without explorer link is shown in full",
			n: with(func(n *telegram.Notification) {
				n.Event = "payment.completed"
				n.ExplorerTxURL = ""
			}),
			want: "✅ Paid: 25.00 USDT on TRC20\nShop: My shop\nOrder: ORDER-1\nPayment: pay_1\nTx: " + base.TxHash,
		},
		{
			name: "merchant fields cannot forge lines or reorder text",
			n: with(func(n *telegram.Notification) {
				n.Event = "payment.completed"
				n.Project = "Evil\nOrder: FAKE\x00\u202e"
				n.ExternalOrderID = "\tA-1\r\n"
				n.TxHash, n.ExplorerTxURL = "", ""
			}),
			want: "✅ Paid: 25.00 USDT on TRC20\nShop: Evil Order: FAKE\nOrder: A-1\nPayment: pay_1",
		},
		{
			name: "unknown event still names the payment",
			n: with(func(n *telegram.Notification) {
				n.Event = "payment.refunded"
				n.TxHash, n.ExplorerTxURL = "", ""
			}),
			want: "🔔 payment.refunded: 25.00 USDT on TRC20\nShop: My shop\nOrder: ORDER-1\nPayment: pay_1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, telegram.Text(tt.n))
		})
	}
}

func TestTextFitsTelegramLimit(t *testing.T) {
	huge := strings.Repeat("😀", 5000) // two UTF-16 units each
	text := telegram.Text(telegram.Notification{
		Event: "payment.completed", Amount: "1.00", Token: "USDT", Network: "TRC20",
		Project: huge, ExternalOrderID: huge, PaymentID: huge, TxHash: huge, ExplorerTxURL: "https://x/" + huge,
	})
	assert.True(t, utf8.ValidString(text))
	assert.LessOrEqual(t, len(utf16.Encode([]rune(text))), telegram.MaxTextLength)
	assert.True(t, strings.HasPrefix(text, "✅ Paid: 1.00 USDT on TRC20\n"))

	text = telegram.Text(telegram.Notification{Event: "payment.completed", Amount: "1", Project: "bad \xff utf8"})
	assert.True(t, utf8.ValidString(text))
	assert.Contains(t, text, "Shop: bad \uFFFD utf8")
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		limit int
		want  string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"cut ascii", "abcdef", 5, "abcd…"},
		{"cut before a cyrillic rune", "приветы", 4, "при…"},
		{"emoji counts twice", "a😀😀", 4, "a😀…"},
		{"never splits an emoji", "ab😀c", 3, "ab…"},
		{"emoji fits", "a😀b", 4, "a😀b"},
		{"zero", "abc", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := telegram.Truncate(tt.in, tt.limit)
			assert.Equal(t, tt.want, got)
			assert.True(t, utf8.ValidString(got))
			assert.LessOrEqual(t, len(utf16.Encode([]rune(got))), max(tt.limit, 0))
		})
	}
}
