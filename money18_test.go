package paywatch_test

import (
	"encoding/json"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// The money rules hold at every pair's own decimals (issue 39 added DAI,
// 18 everywhere, and PYUSD and BASE's USDC, 6). Amounts come from the
// table's decimals, as the API, the scanners and the workflow take them.
func TestMoneyRulesAtEveryPairsDecimals(t *testing.T) {
	for _, p := range paywatch.Pairs() {
		t.Run(p.String(), func(t *testing.T) {
			d := paywatch.Decimals(p.Network, p.Token)
			wei := paywatch.NewAmount(big.NewInt(1), d)
			assert.True(t, paywatch.IsDust(wei, nil), "one base unit is below the 0.10 dust minimum")
			justBelow := paywatch.MustParseAmount("0.10", 2).Sub(wei)
			assert.True(t, paywatch.IsDust(justBelow, nil), "0.10 less one base unit is dust")
			assert.False(t, paywatch.IsDust(paywatch.MustParseAmount("0.10", d), nil), "0.10 itself counts")

			expected, err := paywatch.ParseAmountNumber(json.Number("100"), d)
			require.NoError(t, err)
			atTolerance := paywatch.MustParseAmount("101", d)
			assert.Equal(t, paywatch.StatusPaid, paywatch.Classify(atTolerance, expected), "1% over is paid")
			assert.Equal(t, paywatch.StatusOverpaid, paywatch.Classify(atTolerance.Add(wei), expected), "one base unit past 1% is overpaid")
			assert.Equal(t, paywatch.StatusPartial, paywatch.Classify(expected.Sub(wei), expected), "one base unit short is partial")

			// Micro amounts: a transfer within 0.0001 of the offset amount
			// matches, one a full 0.0001 away does not, at any decimals.
			micro := paywatch.WithMicroOffset(expected, 7, 3) // 100.007
			step := paywatch.MustParseAmount("0.0001", 4)
			assert.True(t, paywatch.MicroMatch(micro.Add(step).Sub(wei), micro))
			assert.False(t, paywatch.MicroMatch(micro.Add(step), micro))
		})
	}

	// DAI amounts parse exactly: 10^12 DAI is 10^30 base units; a 19th
	// decimal is refused rather than rounded.
	big30 := new(big.Int).Exp(big.NewInt(10), big.NewInt(30), nil)
	a, err := paywatch.ParseAmountNumber(json.Number("1000000000000"), paywatch.Decimals(paywatch.BASE, paywatch.DAI))
	require.NoError(t, err)
	r, err := a.Rescale(18)
	require.NoError(t, err)
	assert.Zero(t, big30.Cmp(r.Units()), "10^30 base units, got %s", r.Units())
	a, err = paywatch.ParseAmountNumber(json.Number("0.000000000000000001"), 18)
	require.NoError(t, err)
	r, _ = a.Rescale(18)
	assert.Equal(t, "1", r.Units().String())
	_, err = paywatch.ParseAmountNumber(json.Number("0.0000000000000000001"), 18)
	assert.Error(t, err, "19 decimals on an 18-decimal token")
	_, err = paywatch.ParseAmountNumber(json.Number("1e-19"), 18)
	assert.Error(t, err)
	// A NUMERIC(78,0) holds it with room: 10^30 has 31 digits.
	assert.LessOrEqual(t, len(big30.String()), paywatch.MaxUnitsDigits)
}
