package paywatch_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/paywatch/paywatch"
)

func usdt(s string) paywatch.Amount { return paywatch.MustParseAmount(s, 6) }

func TestPickClaimant(t *testing.T) {
	micro := func(id, amount string) paywatch.ClaimCandidate {
		return paywatch.ClaimCandidate{PaymentID: id, Expected: usdt(amount), Micro: true}
	}
	tests := []struct {
		name       string
		transfer   string
		candidates []paywatch.ClaimCandidate
		want       int
	}{
		// The reproduced bug: one transfer of 10.662950 paid one payment and
		// made the other partial. It is equally near both: the oldest wins.
		{"tie goes to the oldest", "10.662950", []paywatch.ClaimCandidate{micro("a", "10.6629"), micro("b", "10.6630")}, 0},
		{"tie goes to the oldest, whatever the amounts' order", "10.662950", []paywatch.ClaimCandidate{micro("b", "10.6630"), micro("a", "10.6629")}, 0},
		{"nearest wins over older", "10.662960", []paywatch.ClaimCandidate{micro("a", "10.6629"), micro("b", "10.6630")}, 1},
		{"exact amount wins", "10.6629", []paywatch.ClaimCandidate{micro("a", "10.6630"), micro("b", "10.6629")}, 1},
		{"only one in the window", "10.662901", []paywatch.ClaimCandidate{micro("a", "10.6631"), micro("b", "10.6629")}, 1},
		{"none in the window", "10.6635", []paywatch.ClaimCandidate{micro("a", "10.6629"), micro("b", "10.6630")}, -1},
		{"0.0001 away is outside", "10.6631", []paywatch.ClaimCandidate{micro("a", "10.6630")}, -1},
		{"no candidates", "10", nil, -1},
		{"an address owner wins over micro", "10.6629", []paywatch.ClaimCandidate{micro("a", "10.6629"), {PaymentID: "b", Expected: usdt("50")}}, 1},
		{"oldest owner wins", "3", []paywatch.ClaimCandidate{{PaymentID: "a", Expected: usdt("10")}, {PaymentID: "b", Expected: usdt("3")}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, paywatch.PickClaimant(usdt(tt.transfer), tt.candidates))
		})
	}
}

func TestClassifyMicro(t *testing.T) {
	tests := []struct {
		paid, expected string
		want           paywatch.Status
	}{
		// A transfer a hair below the adjusted amount pays it: under the
		// plain rule it would be partial forever (exact-match mode never
		// adds another transfer up).
		{"10.662850", "10.6629", paywatch.StatusPaid},
		{"10.662801", "10.6629", paywatch.StatusPaid},
		{"10.6629", "10.6629", paywatch.StatusPaid},
		{"10.662999", "10.6629", paywatch.StatusPaid},
		{"10.6628", "10.6629", paywatch.StatusPartial},
		{"5", "10.6629", paywatch.StatusPartial},
		{"21.3258", "10.6629", paywatch.StatusOverpaid},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, paywatch.ClassifyMicro(usdt(tt.paid), usdt(tt.expected)), "%s for %s", tt.paid, tt.expected)
	}
}

func TestMicroDistance(t *testing.T) {
	d, ok := paywatch.MicroDistance(usdt("10.662950"), usdt("10.6629"))
	assert.True(t, ok)
	assert.Equal(t, 0, d.Cmp(usdt("0.00005")))
	d, ok = paywatch.MicroDistance(usdt("10.6628"), usdt("10.6629"))
	assert.False(t, ok)
	assert.Equal(t, 0, d.Cmp(usdt("0.0001")))
}
