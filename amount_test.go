package paywatch_test

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

func bigInt(t testing.TB, s string) *big.Int {
	t.Helper()
	n, ok := new(big.Int).SetString(s, 10)
	require.True(t, ok, s)
	return n
}

func TestParseAmount(t *testing.T) {
	tests := []struct {
		in       string
		decimals int
		units    string // base units, when valid
		display  string // String()
		text     string // MarshalText
		err      string
	}{
		// Plain forms.
		{in: "10", decimals: 6, units: "10000000", display: "10.00", text: "10.000000"},
		{in: "10.5", decimals: 6, units: "10500000", display: "10.50", text: "10.500000"},
		{in: "10.50", decimals: 6, units: "10500000", display: "10.50", text: "10.500000"},
		{in: "10.123456", decimals: 6, units: "10123456", display: "10.123456", text: "10.123456"},
		{in: "0.1", decimals: 6, units: "100000", display: "0.10", text: "0.100000"},
		{in: "0.000001", decimals: 6, units: "1", display: "0.000001", text: "0.000001"},
		{in: "0.01", decimals: 2, units: "1", display: "0.01", text: "0.01"},
		{in: "7", decimals: 0, units: "7", display: "7.00", text: "7"},
		{in: "0010.5", decimals: 2, units: "1050", display: "10.50", text: "10.50"},
		// Trailing zeros do not count as decimal places.
		{in: "10.500", decimals: 2, units: "1050", display: "10.50", text: "10.50"},
		{in: "10.000000000", decimals: 0, units: "10", display: "10.00", text: "10"},
		// 18-decimal BSC values.
		{in: "25", decimals: 18, units: "25000000000000000000", display: "25.00", text: "25.000000000000000000"},
		{in: "0.000000000000000001", decimals: 18, units: "1", display: "0.000000000000000001", text: "0.000000000000000001"},
		{in: "123.456789012345678", decimals: 18, units: "123456789012345678000", display: "123.456789012345678", text: "123.456789012345678000"},
		// Beyond uint64 (1.8e19 units).
		{in: "100000000000000000000", decimals: 6, units: "100000000000000000000000000", display: "100000000000000000000.00", text: "100000000000000000000.000000"},
		{in: "99999999999999999999.999999999999999999", decimals: 18, units: "99999999999999999999999999999999999999", display: "99999999999999999999.999999999999999999", text: "99999999999999999999.999999999999999999"},
		// Exact exponent forms, as JSON allows.
		{in: "1e1", decimals: 6, units: "10000000", display: "10.00", text: "10.000000"},
		{in: "1E+2", decimals: 2, units: "10000", display: "100.00", text: "100.00"},
		{in: "2.5e-1", decimals: 6, units: "250000", display: "0.25", text: "0.250000"},
		{in: "125e-2", decimals: 2, units: "125", display: "1.25", text: "1.25"},
		{in: "1.5e-6", decimals: 6, err: "amount has more than 6 decimal places"},
		{in: "1e-6", decimals: 6, units: "1", display: "0.000001", text: "0.000001"},
		{in: "1000e-3", decimals: 0, units: "1", display: "1.00", text: "1"},
		{in: "0.00001e5", decimals: 0, units: "1", display: "1.00", text: "1"},
		{in: "1e0000000000000000001", decimals: 2, units: "1000", display: "10.00", text: "10.00"},
		// Refusals.
		{in: "0", decimals: 6, err: "amount must be positive"},
		{in: "0.000000", decimals: 6, err: "amount must be positive"},
		{in: "0e5", decimals: 6, err: "amount must be positive"},
		{in: "-1", decimals: 6, err: "amount must be positive"},
		{in: "-0", decimals: 6, err: "amount must be positive"},
		{in: "10.1234567", decimals: 6, err: "amount has more than 6 decimal places"},
		{in: "0.0000000000000000001", decimals: 18, err: "amount has more than 18 decimal places"},
		{in: "10.5", decimals: 0, err: "amount has more than 0 decimal places"},
		{in: "1e-7", decimals: 6, err: "amount has more than 6 decimal places"},
		{in: "1e-99999999999", decimals: 6, err: "amount has more than 6 decimal places"},
		{in: "1e99999999999", decimals: 6, err: "amount is too large"},
		{in: "1e72", decimals: 6, err: "amount is too large"},
		{in: "1e71", decimals: 6, units: "1" + strings.Repeat("0", 77), display: "1" + strings.Repeat("0", 71) + ".00", text: "1" + strings.Repeat("0", 71) + ".000000"},
		{in: strings.Repeat("9", 79), decimals: 0, err: "amount is too large"},
		{in: "", decimals: 6, err: "amount is not a valid number"},
		{in: "abc", decimals: 6, err: "amount is not a valid number"},
		{in: "1.", decimals: 6, err: "amount is not a valid number"},
		{in: ".5", decimals: 6, err: "amount is not a valid number"},
		{in: "+1", decimals: 6, err: "amount is not a valid number"},
		{in: " 1", decimals: 6, err: "amount is not a valid number"},
		{in: "1 ", decimals: 6, err: "amount is not a valid number"},
		{in: "1,5", decimals: 6, err: "amount is not a valid number"},
		{in: "1e", decimals: 6, err: "amount is not a valid number"},
		{in: "1e+", decimals: 6, err: "amount is not a valid number"},
		{in: "1.5.1", decimals: 6, err: "amount is not a valid number"},
		{in: "0x10", decimals: 6, err: "amount is not a valid number"},
		{in: "NaN", decimals: 6, err: "amount is not a valid number"},
		{in: "Infinity", decimals: 6, err: "amount is not a valid number"},
		{in: "-Infinity", decimals: 6, err: "amount is not a valid number"},
		{in: "١٠", decimals: 6, err: "amount is not a valid number"},
		{in: "1", decimals: -1, err: "amount decimals -1 outside 0..36"},
		{in: "1", decimals: 37, err: "amount decimals 37 outside 0..36"},
	}
	for _, tt := range tests {
		t.Run(tt.in+"/"+string(rune('0'+tt.decimals%10)), func(t *testing.T) {
			a, err := paywatch.ParseAmount(tt.in, tt.decimals)
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, bigInt(t, tt.units), a.Units())
			assert.Equal(t, tt.decimals, a.Decimals())
			assert.Equal(t, tt.display, a.String())
			text, err := a.MarshalText()
			require.NoError(t, err)
			assert.Equal(t, tt.text, string(text))
			assert.Equal(t, 1, a.Sign())

			n, err := paywatch.ParseAmountNumber(json.Number(tt.in), tt.decimals)
			require.NoError(t, err)
			assert.Equal(t, a, n)
		})
	}
}

func TestParseAmountFromJSONRequest(t *testing.T) {
	// The API decodes with UseNumber so that no amount passes through float64.
	var req struct {
		Amount json.Number `json:"amount"`
	}
	dec := json.NewDecoder(strings.NewReader(`{"amount": 0.1000000000000000055511151231257827}`))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&req))
	_, err := paywatch.ParseAmountNumber(req.Amount, 18)
	require.EqualError(t, err, "amount has more than 18 decimal places")

	dec = json.NewDecoder(strings.NewReader(`{"amount": 12345678901234567890.123456789012345678}`))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&req))
	a, err := paywatch.ParseAmountNumber(req.Amount, 18)
	require.NoError(t, err)
	assert.Equal(t, "12345678901234567890.123456789012345678", a.String())

	_, err = paywatch.ParseAmountNumber("", 6)
	require.EqualError(t, err, "amount is not a valid number")
}

func TestMustParseAmount(t *testing.T) {
	assert.Equal(t, "1.50", paywatch.MustParseAmount("1.5", 6).String())
	assert.PanicsWithValue(t, `paywatch: MustParseAmount("x", 6): amount is not a valid number`, func() {
		paywatch.MustParseAmount("x", 6)
	})
}

func TestAmountZeroValue(t *testing.T) {
	var z paywatch.Amount
	assert.True(t, z.IsZero())
	assert.Equal(t, 0, z.Sign())
	assert.Equal(t, 0, z.Decimals())
	assert.Equal(t, "0.00", z.String())
	assert.Equal(t, 0, z.FractionDigits())
	assert.Equal(t, big.NewInt(0), z.Units())
	text, err := z.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "0", string(text))
	var back paywatch.Amount
	require.NoError(t, back.UnmarshalText(text))
	assert.Equal(t, z, back)
	assert.True(t, z.Equal(back))

	one := paywatch.MustParseAmount("1", 6)
	assert.Equal(t, "1.00", z.Add(one).String())
	assert.Equal(t, "-1.00", z.Sub(one).String())
	assert.Equal(t, -1, z.Cmp(one))
	assert.Equal(t, 0, z.Cmp(paywatch.NewAmount(nil, 18)))
	r, err := z.Rescale(6)
	require.NoError(t, err)
	assert.Equal(t, "0.000000", marshal(t, r))
	assert.Equal(t, paywatch.StatusPartial, paywatch.Classify(z, one))
	assert.True(t, paywatch.IsDust(z, nil))

	// A zero made any other way is indistinguishable from the zero value.
	assert.Equal(t, z, paywatch.NewAmount(big.NewInt(0), 0))
	zero, err := one.Sub(one).Rescale(0)
	require.NoError(t, err)
	assert.Equal(t, z, zero)
}

func marshal(t testing.TB, a paywatch.Amount) string {
	t.Helper()
	b, err := a.MarshalText()
	require.NoError(t, err)
	return string(b)
}

func TestNewAmountCopiesAndIsImmutable(t *testing.T) {
	units := big.NewInt(10_500_000)
	a := paywatch.NewAmount(units, 6)
	units.SetInt64(1) // the caller's later changes do not leak in
	assert.Equal(t, "10.50", a.String())

	u := a.Units()
	u.SetInt64(2) // nor do changes to what Units returned
	assert.Equal(t, "10.50", a.String())

	b := paywatch.MustParseAmount("1", 6)
	sum := a.Add(b)
	_ = sum.Sub(a)
	assert.Equal(t, "10.50", a.String())
	assert.Equal(t, "1.00", b.String())
	assert.Equal(t, "11.50", sum.String())

	assert.PanicsWithValue(t, "paywatch: NewAmount decimals -1 outside 0..36", func() { paywatch.NewAmount(big.NewInt(1), -1) })
	assert.Panics(t, func() { paywatch.NewAmount(big.NewInt(1), 37) })
	// Negative base units are representable, for differences.
	assert.Equal(t, "-0.000001", paywatch.NewAmount(big.NewInt(-1), 6).String())
}

func TestAmountDisplay(t *testing.T) {
	tests := []struct {
		units    int64
		decimals int
		want     string
		digits   int
	}{
		{0, 6, "0.00", 0},
		{1, 0, "1.00", 0},
		{10, 1, "1.00", 0},
		{15, 1, "1.50", 1},
		{100000, 6, "0.10", 1},
		{10000000, 6, "10.00", 0},
		{10500000, 6, "10.50", 1},
		{10120000, 6, "10.12", 2},
		{10123000, 6, "10.123", 3},
		{10123456, 6, "10.123456", 6},
		{1, 6, "0.000001", 6},
		{-10500000, 6, "-10.50", 1},
		{-1, 2, "-0.01", 2},
		{1_000_000_000_000_000_000, 18, "1.00", 0},
	}
	for _, tt := range tests {
		a := paywatch.NewAmount(big.NewInt(tt.units), tt.decimals)
		assert.Equal(t, tt.want, a.String(), "%d e-%d", tt.units, tt.decimals)
		assert.Equal(t, tt.digits, a.FractionDigits(), "%d e-%d", tt.units, tt.decimals)
	}
}

func TestAmountTextRoundTrip(t *testing.T) {
	values := []paywatch.Amount{
		{},
		paywatch.NewAmount(big.NewInt(0), 6),
		paywatch.NewAmount(big.NewInt(10_500_000), 6),
		paywatch.NewAmount(big.NewInt(-10_500_000), 6),
		paywatch.NewAmount(big.NewInt(7), 0),
		paywatch.NewAmount(bigInt(t, "123456789012345678901234567890"), 18),
		paywatch.NewAmount(big.NewInt(1), 36),
		paywatch.MustParseAmount("0.10", 2),
	}
	for _, a := range values {
		text := marshal(t, a)
		var back paywatch.Amount
		require.NoError(t, back.UnmarshalText([]byte(text)), text)
		assert.Equal(t, a, back, text)
		assert.True(t, a.Equal(back), text)
		assert.Equal(t, a.Decimals(), back.Decimals(), text)

		// Through encoding/json too, as Temporal payloads travel.
		type payload struct {
			Expected paywatch.Amount  `json:"expected"`
			Paid     *paywatch.Amount `json:"paid"`
		}
		js, err := json.Marshal(payload{Expected: a, Paid: &a})
		require.NoError(t, err)
		assert.Equal(t, `{"expected":"`+text+`","paid":"`+text+`"}`, string(js))
		var p payload
		require.NoError(t, json.Unmarshal(js, &p))
		assert.Equal(t, a, p.Expected)
		assert.Equal(t, a, *p.Paid)
	}
}

func TestAmountUnmarshalTextErrors(t *testing.T) {
	bad := []string{"", "-", "1.", ".1", "1e6", "+1", "1.2.3", " 1", "0x1", "1,0", "--1",
		"1." + strings.Repeat("0", 37), strings.Repeat("9", 79)}
	for _, s := range bad {
		var a paywatch.Amount
		err := a.UnmarshalText([]byte(s))
		require.Error(t, err, s)
		assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err), s)
	}
	var a paywatch.Amount
	require.NoError(t, a.UnmarshalText([]byte("-0.00")))
	assert.Equal(t, paywatch.NewAmount(nil, 2), a)
	require.NoError(t, a.UnmarshalText([]byte("007.50")))
	assert.Equal(t, "7.50", marshal(t, a))
}

func TestRescale(t *testing.T) {
	tests := []struct {
		in       string
		from, to int
		want     string // MarshalText of the result
		err      string
	}{
		{"10.5", 6, 18, "10.500000000000000000", ""},
		{"10.5", 6, 2, "10.50", ""},
		{"10.5", 6, 1, "10.5", ""},
		{"10.5", 6, 0, "", "amount 10.50 cannot be expressed with 0 decimals"},
		{"10.123456", 6, 5, "", "amount 10.123456 cannot be expressed with 5 decimals"},
		{"25", 18, 6, "25.000000", ""},
		{"0.000000000000000001", 18, 6, "", "amount 0.000000000000000001 cannot be expressed with 6 decimals"},
		{"7", 0, 0, "7", ""},
		{"7", 0, 36, "7." + strings.Repeat("0", 36), ""},
		{"7", 0, 37, "", "amount decimals 37 outside 0..36"},
		{"7", 0, -1, "", "amount decimals -1 outside 0..36"},
	}
	for _, tt := range tests {
		a := paywatch.MustParseAmount(tt.in, tt.from)
		r, err := a.Rescale(tt.to)
		if tt.err != "" {
			require.EqualError(t, err, tt.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tt.want, marshal(t, r))
		assert.Equal(t, tt.to, r.Decimals())
		assert.Equal(t, 0, r.Cmp(a))
	}
	neg := paywatch.NewAmount(big.NewInt(-1_500_000), 6)
	r, err := neg.Rescale(1)
	require.NoError(t, err)
	assert.Equal(t, "-1.5", marshal(t, r))
}

func TestAddSubCmp(t *testing.T) {
	a6 := paywatch.MustParseAmount("25", 6)
	b18 := paywatch.MustParseAmount("25.000000000000000001", 18)
	sum := a6.Add(b18)
	assert.Equal(t, 18, sum.Decimals())
	assert.Equal(t, "50.000000000000000001", sum.String())
	diff := a6.Sub(b18)
	assert.Equal(t, "-0.000000000000000001", diff.String())
	assert.Equal(t, -1, diff.Sign())
	assert.Equal(t, -1, a6.Cmp(b18))
	assert.Equal(t, 1, b18.Cmp(a6))
	assert.Equal(t, 0, a6.Cmp(paywatch.MustParseAmount("25.000", 18)))
	assert.False(t, a6.Equal(paywatch.MustParseAmount("25", 18)), "same value, other decimals")
	assert.True(t, a6.Equal(paywatch.MustParseAmount("25.0", 6)))

	// Sums beyond uint64 stay exact.
	huge := paywatch.MustParseAmount("18446744073709551615", 18)
	assert.Equal(t, "36893488147419103230.00", huge.Add(huge).String())
	assert.Equal(t, "0.00", huge.Sub(huge).String())
	assert.True(t, huge.Sub(huge).IsZero())
	// 25 + 25 = 50, as in partial payments adding up.
	assert.Equal(t, 0, paywatch.MustParseAmount("25", 6).Add(paywatch.MustParseAmount("25", 6)).Cmp(paywatch.MustParseAmount("50", 2)))
}
