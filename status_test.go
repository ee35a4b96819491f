package paywatch_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

func amt(s string, decimals int) paywatch.Amount { return paywatch.MustParseAmount(s, decimals) }

func TestClassify(t *testing.T) {
	tests := []struct {
		name     string
		paid     paywatch.Amount
		expected paywatch.Amount
		want     paywatch.Status
	}{
		{"exactly expected", amt("100", 6), amt("100", 6), paywatch.StatusPaid},
		{"one base unit below", amt("99.999999", 6), amt("100", 6), paywatch.StatusPartial},
		{"one base unit above", amt("100.000001", 6), amt("100", 6), paywatch.StatusPaid},
		{"expected × 1.01 exactly", amt("101", 6), amt("100", 6), paywatch.StatusPaid},
		{"one base unit above expected × 1.01", amt("101.000001", 6), amt("100", 6), paywatch.StatusOverpaid},
		{"far above", amt("200", 6), amt("100", 6), paywatch.StatusOverpaid},
		{"half", amt("50", 6), amt("100", 6), paywatch.StatusPartial},
		{"nothing", paywatch.Amount{}, amt("100", 6), paywatch.StatusPartial},
		// Odd amounts, where 1% is not a whole number of base units.
		{"1% of 10.123457 is 0.10123457", amt("10.224691", 6), amt("10.123457", 6), paywatch.StatusPaid},
		{"just above 1.01 × 10.123457", amt("10.224692", 6), amt("10.123457", 6), paywatch.StatusOverpaid},
		// 18-decimal BSC amounts.
		{"bsc exactly 1.01", amt("25.25", 18), amt("25", 18), paywatch.StatusPaid},
		{"bsc 1 wei over 1.01", amt("25.250000000000000001", 18), amt("25", 18), paywatch.StatusOverpaid},
		{"bsc 1 wei short", amt("24.999999999999999999", 18), amt("25", 18), paywatch.StatusPartial},
		// Mixed scales compare by value.
		{"expected at 2 decimals, paid at 18", amt("10.1", 18), amt("10", 2), paywatch.StatusPaid},
		{"expected at 6, paid at 18 just over", amt("10.100000000000000001", 18), amt("10", 6), paywatch.StatusOverpaid},
		// Micro-amount pools: overpaid applies to the adjusted amount.
		{"micro adjusted exact", amt("100.123", 6), amt("100.123", 3), paywatch.StatusPaid},
		// Beyond uint64.
		{"huge paid", amt("184467440737095516150", 6), amt("184467440737095516150", 6), paywatch.StatusPaid},
		{"huge over", amt("186312115144466471312", 6), amt("184467440737095516150", 6), paywatch.StatusOverpaid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, paywatch.Classify(tt.paid, tt.expected))
		})
	}
}

func TestClassifyExhaustiveSmall(t *testing.T) {
	// Against the rule written with rationals, for every paid amount around a
	// few expected amounts with awkward 1% values.
	for _, e := range []int64{1, 7, 99, 100, 101, 1234567} {
		expected := paywatch.NewAmount(big.NewInt(e), 6)
		limit := new(big.Rat).Mul(big.NewRat(e, 1), big.NewRat(101, 100))
		for p := e - 3; p <= e+e/50+3; p++ {
			paid := paywatch.NewAmount(big.NewInt(p), 6)
			want := paywatch.StatusPaid
			switch {
			case p < e:
				want = paywatch.StatusPartial
			case big.NewRat(p, 1).Cmp(limit) > 0:
				want = paywatch.StatusOverpaid
			}
			require.Equal(t, want, paywatch.Classify(paid, expected), "paid %d expected %d", p, e)
		}
	}
}

func TestMicroMatch(t *testing.T) {
	tests := []struct {
		tx, expected paywatch.Amount
		want         bool
	}{
		{amt("10.123", 6), amt("10.123", 3), true},
		{amt("10.12309", 6), amt("10.123", 3), true},
		{amt("10.123099", 6), amt("10.123", 3), true},
		{amt("10.1231", 6), amt("10.123", 3), false}, // exactly 0.0001 away
		{amt("10.1229", 6), amt("10.123", 3), false}, // exactly 0.0001 below
		{amt("10.122901", 6), amt("10.123", 3), true},
		{amt("10.124", 6), amt("10.123", 3), false},
		{amt("10.1235", 4), amt("10.1234", 4), false},
		{amt("10.1234", 4), amt("10.1234", 4), true},
		// 18 decimals: 0.0001 minus one wei still matches.
		{amt("10.123099999999999999", 18), amt("10.123", 3), true},
		{amt("10.1231", 18), amt("10.123", 3), false},
		{amt("10.122900000000000001", 18), amt("10.123", 3), true},
		// Few decimals on both sides.
		{amt("10", 0), amt("10", 0), true},
		{amt("11", 0), amt("10", 0), false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, paywatch.MicroMatch(tt.tx, tt.expected), "%s vs %s", tt.tx, tt.expected)
		assert.Equal(t, tt.want, paywatch.MicroMatch(tt.expected, tt.tx), "symmetric: %s vs %s", tt.tx, tt.expected)
	}
}

func TestDust(t *testing.T) {
	assert.Equal(t, "0.10", paywatch.GlobalDustMinimum.String())
	assert.Equal(t, 0, paywatch.DustMinimum(nil).Cmp(amt("0.1", 6)))
	projectMin := amt("5", 2)
	assert.Equal(t, projectMin, paywatch.DustMinimum(&projectMin))

	tests := []struct {
		a          paywatch.Amount
		projectMin *paywatch.Amount
		want       bool
	}{
		{amt("0.1", 6), nil, false}, // exactly the minimum is not dust
		{amt("0.099999", 6), nil, true},
		{amt("0.099999999999999999", 18), nil, true},
		{amt("0.100000000000000000", 18), nil, false},
		{amt("0.000001", 6), nil, true},
		{amt("4.99", 6), &projectMin, true},
		{amt("5", 6), &projectMin, false},
		{amt("0.05", 6), ptr(amt("0.01", 2)), false}, // a lower project minimum wins
		{paywatch.Amount{}, nil, true},
		{paywatch.Amount{}, ptr(paywatch.Amount{}), true}, // zero transfers are always dust
		{paywatch.NewAmount(big.NewInt(1), 18), ptr(paywatch.Amount{}), false},
		{paywatch.NewAmount(big.NewInt(-1), 6), nil, true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, paywatch.IsDust(tt.a, tt.projectMin), "%s min %v", tt.a, tt.projectMin)
	}
}

func ptr[T any](v T) *T { return &v }

func TestMicroOffsets(t *testing.T) {
	for d, want := range map[int]int{0: 0, 1: 9, 2: 99, 3: 999, 4: 9999, 5: 0, -1: 0} {
		assert.Equal(t, want, paywatch.MicroOffsetCount(d), "d=%d", d)
	}
	tests := []struct {
		base   paywatch.Amount
		offset int
		d      int
		want   string // MarshalText
	}{
		{amt("100", 0), 1, 3, "100.001"},
		{amt("100", 6), 1, 3, "100.001000"},
		{amt("100", 6), 999, 3, "100.999000"},
		{amt("100.5", 6), 5, 1, "101.000000"},
		{amt("100", 18), 9999, 4, "100.999900000000000000"},
		{amt("12.3", 1), 42, 2, "12.72"},
	}
	for _, tt := range tests {
		got := paywatch.WithMicroOffset(tt.base, tt.offset, tt.d)
		assert.Equal(t, tt.want, marshal(t, got))
	}

	// Every offset at every precision gives a distinct amount that matches
	// itself and none of its neighbours.
	base := amt("50", 6)
	for d := paywatch.MinMicroDecimals; d <= paywatch.MaxMicroDecimals; d++ {
		prev := base
		for o := 1; o <= paywatch.MicroOffsetCount(d); o++ {
			got := paywatch.WithMicroOffset(base, o, d)
			require.Equal(t, 1, got.Cmp(prev))
			require.True(t, paywatch.MicroMatch(got, got))
			require.False(t, paywatch.MicroMatch(got, prev), "d=%d offset %d matches offset %d", d, o, o-1)
			prev = got
		}
	}

	assert.PanicsWithValue(t, "paywatch: micro offset 0 outside 1..999", func() { paywatch.WithMicroOffset(base, 0, 3) })
	assert.PanicsWithValue(t, "paywatch: micro offset 1000 outside 1..999", func() { paywatch.WithMicroOffset(base, 1000, 3) })
	assert.PanicsWithValue(t, "paywatch: micro_amount_decimals 5 outside 1..4", func() { paywatch.WithMicroOffset(base, 1, 5) })
}

func TestValidateMicroPrecision(t *testing.T) {
	assert.NoError(t, paywatch.ValidateMicroPrecision(amt("10.12", 6), 3))
	assert.NoError(t, paywatch.ValidateMicroPrecision(amt("10.120", 6), 2))
	assert.NoError(t, paywatch.ValidateMicroPrecision(amt("10", 6), 1))
	err := paywatch.ValidateMicroPrecision(amt("10.1234", 6), 3)
	require.EqualError(t, err, "Amount has more decimal places than this project's micro-amount precision allows")
	assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))
}

func TestShownStatus(t *testing.T) {
	exp := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		s    paywatch.Status
		now  time.Time
		want paywatch.Status
	}{
		{paywatch.StatusPending, exp.Add(-time.Second), paywatch.StatusPending},
		{paywatch.StatusPending, exp, paywatch.StatusPending},
		{paywatch.StatusPending, exp.Add(3*time.Minute - time.Nanosecond), paywatch.StatusPending},
		{paywatch.StatusPending, exp.Add(3 * time.Minute), paywatch.StatusExpired},
		{paywatch.StatusPending, exp.Add(time.Hour), paywatch.StatusExpired},
		{paywatch.StatusConfirming, exp.Add(time.Hour), paywatch.StatusConfirming},
		{paywatch.StatusPartial, exp.Add(time.Hour), paywatch.StatusPartial},
		{paywatch.StatusPaid, exp.Add(time.Hour), paywatch.StatusPaid},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, paywatch.ShownStatus(tt.s, exp, tt.now), "%s at %s", tt.s, tt.now)
	}
	// Time zones do not matter, only instants.
	assert.Equal(t, paywatch.StatusExpired, paywatch.ShownStatus(paywatch.StatusPending, exp, exp.Add(3*time.Minute).In(time.FixedZone("X", 5*3600))))
}

func TestStatuses(t *testing.T) {
	want := []paywatch.Status{"pending", "confirming", "partial", "paid", "overpaid", "expired", "cancelled"}
	assert.Equal(t, want, paywatch.Statuses())
	final := map[paywatch.Status]bool{"paid": true, "overpaid": true, "expired": true, "cancelled": true}
	for _, s := range want {
		got, err := paywatch.ParseStatus(string(s))
		require.NoError(t, err)
		assert.Equal(t, s, got)
		assert.True(t, s.Valid())
		assert.Equal(t, final[s], s.Final(), s)
	}
	for _, bad := range []string{"", "Paid", "PENDING", "completed", "refunded"} {
		_, err := paywatch.ParseStatus(bad)
		require.Error(t, err, bad)
		assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))
		assert.False(t, paywatch.Status(bad).Valid())
	}
	s := paywatch.Statuses()
	s[0] = "mutated"
	assert.Equal(t, paywatch.StatusPending, paywatch.Statuses()[0])
}

func TestConstants(t *testing.T) {
	assert.Equal(t, 1, paywatch.OverpaidTolerancePercent)
	assert.Equal(t, 30*time.Minute, paywatch.ConfirmingGrace)
	assert.Equal(t, 24*time.Hour, paywatch.LateWindow)
	assert.Equal(t, 3*time.Minute, paywatch.PendingShownExpiredAfter)
	assert.Equal(t, 6*time.Hour, paywatch.MicroOffsetQuarantine)
	assert.Equal(t, 3, paywatch.DefaultMicroDecimals)
	assert.Equal(t, 1, paywatch.FirstPaymentIndex)
}

func TestEvents(t *testing.T) {
	tests := []struct {
		e      paywatch.Event
		status paywatch.Status
		exempt bool
	}{
		{paywatch.EventCompleted, paywatch.StatusPaid, true},
		{paywatch.EventOverpaid, paywatch.StatusOverpaid, true},
		{paywatch.EventPartial, paywatch.StatusPartial, false},
		{paywatch.EventExpired, paywatch.StatusExpired, false},
		{paywatch.EventCancelled, paywatch.StatusCancelled, false},
	}
	var names []paywatch.Event
	for _, tt := range tests {
		names = append(names, tt.e)
		assert.Equal(t, tt.exempt, tt.e.QuotaExempt(), tt.e)
		e, ok := paywatch.EventFor(tt.status)
		require.True(t, ok)
		assert.Equal(t, tt.e, e)
		got, err := paywatch.ParseEvent(string(tt.e))
		require.NoError(t, err)
		assert.Equal(t, tt.e, got)
	}
	assert.Equal(t, names, paywatch.Events())
	assert.Equal(t, []paywatch.Event{"payment.completed", "payment.overpaid", "payment.partial", "payment.expired", "payment.cancelled"}, names)
	for _, s := range []paywatch.Status{paywatch.StatusPending, paywatch.StatusConfirming, "bogus"} {
		_, ok := paywatch.EventFor(s)
		assert.False(t, ok, "no event for %s", s)
	}
	_, err := paywatch.ParseEvent("payment.confirming")
	assert.EqualError(t, err, `unknown event "payment.confirming"`)
}

func TestAddressModes(t *testing.T) {
	tests := []struct {
		in   string
		want paywatch.AddressMode
		xpub bool
	}{
		{"per_payment", paywatch.ModePerPayment, true},
		{"per_user", paywatch.ModePerUser, true},
		{"dedicated", paywatch.ModeDedicated, false},
		{"pool", paywatch.ModePool, false},
	}
	for _, tt := range tests {
		m, err := paywatch.ParseAddressMode(tt.in)
		require.NoError(t, err)
		assert.Equal(t, tt.want, m)
		assert.Equal(t, tt.xpub, m.UsesXPub(), tt.in)
	}
	assert.Equal(t, []paywatch.AddressMode{paywatch.ModePerPayment, paywatch.ModePerUser, paywatch.ModeDedicated, paywatch.ModePool}, paywatch.AddressModes())
	assert.Equal(t, paywatch.ModePerPayment, paywatch.DefaultAddressMode)
	_, err := paywatch.ParseAddressMode("PER_PAYMENT")
	assert.EqualError(t, err, `unknown address mode "PER_PAYMENT"`)

	for _, in := range []string{"micro_amount", "txid"} {
		m, err := paywatch.ParsePoolMatching(in)
		require.NoError(t, err)
		assert.Equal(t, paywatch.PoolMatching(in), m)
	}
	assert.Equal(t, paywatch.MatchMicroAmount, paywatch.PoolMatching("micro_amount"))
	assert.Equal(t, paywatch.MatchTxID, paywatch.PoolMatching("txid"))
	_, err = paywatch.ParsePoolMatching("amount")
	assert.EqualError(t, err, `unknown pool matching "amount"`)
}

// The policy table of the address modes, and the same rule as SQL.
func TestPolicyOf(t *testing.T) {
	for _, c := range []struct {
		mode     paywatch.AddressMode
		matching paywatch.PoolMatching
		want     paywatch.Policy
	}{
		{paywatch.ModePerPayment, "", paywatch.Policy{LateFunds: true}},
		{paywatch.ModePerUser, "", paywatch.Policy{OneInProgress: true}},
		{paywatch.ModeDedicated, "", paywatch.Policy{OneInProgress: true}},
		{paywatch.ModePool, paywatch.MatchMicroAmount, paywatch.Policy{ExactMatch: true}},
		{paywatch.ModePool, paywatch.MatchTxID, paywatch.Policy{LateFunds: true, TxIDOnly: true}},
	} {
		assert.Equal(t, c.want, paywatch.PolicyOf(c.mode, c.matching), "%s %s", c.mode, c.matching)
	}
	assert.Equal(t, "(false OR p.address_mode = 'per_payment' OR (p.address_mode = 'pool' AND p.pool_matching = 'txid'))",
		paywatch.PolicySQL("p", func(p paywatch.Policy) bool { return p.LateFunds }))
	assert.Equal(t, "(false OR (p.address_mode = 'pool' AND p.pool_matching = 'txid'))",
		paywatch.PolicySQL("p", func(p paywatch.Policy) bool { return p.TxIDOnly }))
}

// The creation rules that need only the project's settings.
func TestCreationRefusal(t *testing.T) {
	amount := func(s string) paywatch.Amount { return paywatch.MustParseAmount(s, 6) }
	min := amount("5")
	for _, c := range []struct {
		name    string
		mode    paywatch.AddressMode
		pm      paywatch.PoolMatching
		min     *paywatch.Amount
		amount  string
		network paywatch.Network
		address string
		msg     string
	}{
		{"ok", paywatch.ModePerPayment, "", nil, "10", paywatch.TRC20, "", ""},
		{"global minimum", paywatch.ModePerPayment, "", nil, "0.09", paywatch.TRC20, "", "Amount must be at least $0.10 (project minimum)"},
		{"project minimum", paywatch.ModePerPayment, "", &min, "4.99", paywatch.TRC20, "", "Amount must be at least $5.00 (project minimum)"},
		{"micro precision", paywatch.ModePool, paywatch.MatchMicroAmount, nil, "10.123", paywatch.TRC20, "", "x"},
		{"txid takes any precision", paywatch.ModePool, paywatch.MatchTxID, nil, "10.123", paywatch.TRC20, "", ""},
		{"address outside dedicated", paywatch.ModePerUser, "", nil, "10", paywatch.TRC20, "T...", paywatch.MsgInvalidRequestBody},
		{"address without network", paywatch.ModeDedicated, "", nil, "10", "", "T...", paywatch.MsgInvalidRequestBody},
		{"address in dedicated", paywatch.ModeDedicated, "", nil, "10", paywatch.TRC20, "T...", ""},
	} {
		err := paywatch.CreationRefusal(c.mode, c.pm, c.min, 2, amount(c.amount), c.network, c.address)
		switch c.msg {
		case "":
			assert.NoError(t, err, c.name)
		case "x":
			assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err), c.name)
		default:
			assert.Equal(t, c.msg, paywatch.ErrorMessage(err), c.name)
		}
	}
}

// The select-network verdicts, in the table's order.
func TestSelectNetworkRefusal(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	later, earlier := now.Add(time.Minute), now.Add(-time.Minute)
	for _, c := range []struct {
		name       string
		hasNetwork bool
		st         paywatch.Status
		expiresAt  time.Time
		code, msg  string
	}{
		{"open", false, paywatch.StatusPending, later, "", ""},
		{"network selected, even when expired", true, paywatch.StatusExpired, earlier, paywatch.ECONFLICT, paywatch.MsgNetworkSelected},
		{"window ended", false, paywatch.StatusPending, now, paywatch.EGONE, paywatch.MsgPaymentExpired},
		{"expired early", false, paywatch.StatusExpired, later, paywatch.EGONE, paywatch.MsgPaymentExpired},
		{"cancelled", false, paywatch.StatusCancelled, later, paywatch.ECONFLICT, paywatch.MsgNotPending},
	} {
		err := paywatch.SelectNetworkRefusal(c.hasNetwork, c.st, c.expiresAt, now)
		if c.code == "" {
			assert.NoError(t, err, c.name)
			continue
		}
		assert.Equal(t, c.code, paywatch.ErrorCode(err), c.name)
		assert.Equal(t, c.msg, paywatch.ErrorMessage(err), c.name)
	}
}

// The idempotency verdicts on a creation that repeats an order.
func TestOrderRepeatAndInProgressRefusals(t *testing.T) {
	ten, eleven := paywatch.MustParseAmount("10", 6), paywatch.MustParseAmount("11", 6)
	trc := paywatch.Pair{Network: paywatch.TRC20, Token: paywatch.USDT}
	id := "A-1"
	base := paywatch.Order{ExternalRef: "bob", ExternalOrderID: &id, Pair: trc, Amount: ten}
	with := func(f func(*paywatch.Order)) paywatch.Order { o := base; f(&o); return o }

	assert.NoError(t, paywatch.OrderRepeatRefusal(base, base, ten))
	assert.Equal(t, paywatch.MsgOrderOtherRef, paywatch.ErrorMessage(paywatch.OrderRepeatRefusal(base, with(func(o *paywatch.Order) { o.ExternalRef = "eve" }), ten)))
	assert.Equal(t, paywatch.MsgOrderOtherPair, paywatch.ErrorMessage(paywatch.OrderRepeatRefusal(base, with(func(o *paywatch.Order) { o.Networkless, o.Pair = true, paywatch.Pair{} }), ten)))
	err := paywatch.OrderRepeatRefusal(base, with(func(o *paywatch.Order) { o.Amount = eleven }), ten)
	assert.Equal(t, paywatch.MsgDifferentAmount, paywatch.ErrorMessage(err))
	var pe *paywatch.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "10.00", pe.Fields["existing_amount"])

	assert.NoError(t, paywatch.InProgressRefusal(base, with(func(o *paywatch.Order) { o.ExternalOrderID = nil }), "p1", ten))
	err = paywatch.InProgressRefusal(base, with(func(o *paywatch.Order) { o.Amount = eleven }), "p1", ten)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, paywatch.MsgInProgress, pe.Message)
	assert.Equal(t, "p1", pe.Fields["existing_payment_id"])
}
