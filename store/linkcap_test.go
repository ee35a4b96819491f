package store_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// linkShop is a per_payment project with a fixed-amount TRC20 link.
func linkShop(t *testing.T, s *store.Store, slug string) (*store.Project, *store.PaymentLink) {
	t.Helper()
	ctx := context.Background()
	p := project(t, s, slug, store.ProjectSettings{}, hdWallet())
	fixed := amount("25", paywatch.TRC20, paywatch.USDT)
	_, err := s.CreatePaymentLink(ctx, store.NewPaymentLink{ProjectSlug: slug, Slug: slug + "-link", Title: "Hoodie", Amount: &fixed, Network: paywatch.TRC20})
	require.NoError(t, err)
	l, err := s.PaymentLinkBySlug(ctx, slug+"-link")
	require.NoError(t, err)
	return p, l
}

// linkPayment submits the link for buyer i.
func linkPayment(s *store.Store, p *store.Project, l *store.PaymentLink, i int) (*store.Payment, error) {
	pay, _, err := s.CreateLinkPayment(context.Background(), l, newPayment(p, "link:"+l.Slug+":b"+strconv.Itoa(i), "25"), store.Buyer{})
	return pay, err
}

// rowCount runs a count query.
func rowCount(t *testing.T, s *store.Store, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, s.Pool().QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// dailyCalls is the owner's api_calls count of the store's day.
func dailyCalls(t *testing.T, s *store.Store, email string, day time.Time) int {
	t.Helper()
	return rowCount(t, s, `
		SELECT COALESCE(sum(u.count), 0)::int FROM daily_usage u JOIN accounts a ON a.id = u.account_id
		WHERE a.email = $1 AND u.kind = 'api_calls' AND u.day = $2::date`, email, day.Format(time.DateOnly))
}

// finish saves a terminal state for a payment, as its workflow does.
func finish(t *testing.T, s *store.Store, p *store.Payment, status paywatch.Status) {
	t.Helper()
	applied, err := s.SavePaymentState(context.Background(), paywatch.PaymentState{
		PaymentID: p.ID, Status: status, Network: p.Network, Token: p.Token, Address: p.Address,
		Amount: p.Amount, PaidAmount: paywatch.NewAmount(nil, p.Amount.Decimals()), Version: 1,
	})
	require.NoError(t, err)
	require.True(t, applied)
}

func TestLinkOpenPaymentCap(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t)
	ctx := context.Background()
	p, l := linkShop(t, s, "shop")

	var made []*store.Payment
	for i := range store.MaxOpenLinkPayments {
		pay, err := linkPayment(s, p, l, i)
		require.NoError(t, err)
		made = append(made, pay)
	}
	counter := rowCount(t, s, `SELECT next_index FROM wallet_counters WHERE family = 'tron'`)

	// One more would hold a 21st address for the link: refused, and
	// nothing is taken (no payment, no derivation index, no API call).
	_, err := linkPayment(s, p, l, 100)
	requireCode(t, err, paywatch.ERATELIMIT, "Payment capacity exceeded. Please try again later.")
	assert.Equal(t, store.MaxOpenLinkPayments, rowCount(t, s, `SELECT count(*) FROM payments`))
	assert.Equal(t, counter, rowCount(t, s, `SELECT next_index FROM wallet_counters WHERE family = 'tron'`))
	assert.Zero(t, dailyCalls(t, s, "shop@example.com", clk.Now()), "link payments are not the owner's API calls")

	// The cap is the link's: the API and the project's other links still
	// create payments.
	_, _, err = s.CreatePayment(ctx, newPayment(p, "api", "25"))
	require.NoError(t, err)
	fixed := amount("5", paywatch.TRC20, paywatch.USDT)
	_, err = s.CreatePaymentLink(ctx, store.NewPaymentLink{ProjectSlug: "shop", Slug: "tip", Title: "Tip", Amount: &fixed, Network: paywatch.TRC20})
	require.NoError(t, err)
	tip, err := s.PaymentLinkBySlug(ctx, "tip")
	require.NoError(t, err)
	_, _, err = s.CreateLinkPayment(ctx, tip, newPayment(p, "link:tip:x", "5"), store.Buyer{})
	require.NoError(t, err)

	// A payment that resolves (here: expires) frees a slot, for one more.
	finish(t, s, made[3], paywatch.StatusExpired)
	_, err = linkPayment(s, p, l, 101)
	require.NoError(t, err)
	_, err = linkPayment(s, p, l, 102)
	requireCode(t, err, paywatch.ERATELIMIT, "Payment capacity exceeded. Please try again later.")
	// Confirming and partial payments still hold their slot; paid frees it.
	finish(t, s, made[4], paywatch.StatusConfirming)
	_, err = linkPayment(s, p, l, 103)
	requireCode(t, err, paywatch.ERATELIMIT, "Payment capacity exceeded. Please try again later.")
	finish(t, s, made[5], paywatch.StatusPaid)
	_, err = linkPayment(s, p, l, 104)
	require.NoError(t, err)
}

func TestConcurrentLinkPaymentsKeepTheCap(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	p, l := linkShop(t, s, "shop")
	const before = store.MaxOpenLinkPayments - 5
	for i := range before {
		_, err := linkPayment(s, p, l, i)
		require.NoError(t, err)
	}
	var mu sync.Mutex
	won := 0
	parallel(20, func(i int) {
		_, err := linkPayment(s, p, l, 1000+i)
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			won++
			return
		}
		assert.Equal(t, paywatch.ERATELIMIT, paywatch.ErrorCode(err), "error %v", err)
	})
	assert.Equal(t, 5, won)
	assert.Equal(t, store.MaxOpenLinkPayments, rowCount(t, s, `
		SELECT count(*) FROM payments WHERE payment_link_id = $1 AND status IN ('pending', 'confirming', 'partial')`, l.ID))
}

// Link payments do not count toward the owner's daily API calls (anyone
// may open a link and must not use up the merchant's API for the day);
// each link makes at most MaxLinkPaymentsPerHour in any hour, whatever
// resolves meanwhile, and a refusal takes nothing (issue 28, item 14).
func TestLinkPaymentsCountApartFromAPICalls(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t)
	ctx := context.Background()
	p, l := linkShop(t, s, "shop")
	_, err := s.UpdateAccount(ctx, "shop@example.com", store.AccountUpdate{Limits: paywatch.LimitOverrides{APICallsPerDay: ptr[int64](5)}})
	require.NoError(t, err)
	for i := range store.MaxLinkPaymentsPerHour {
		pay, err := linkPayment(s, p, l, i)
		require.NoError(t, err, "payment %d", i)
		finish(t, s, pay, paywatch.StatusExpired) // frees its open slot at once
	}
	assert.Zero(t, dailyCalls(t, s, "shop@example.com", clk.Now()))
	counter := rowCount(t, s, `SELECT next_index FROM wallet_counters WHERE family = 'tron'`)
	_, err = linkPayment(s, p, l, 1000)
	requireCode(t, err, paywatch.ERATELIMIT, "Payment capacity exceeded. Please try again later.")
	assert.Equal(t, counter, rowCount(t, s, `SELECT next_index FROM wallet_counters WHERE family = 'tron'`), "no index taken")
	w, err := s.HitDaily(ctx, p.Owner.ID, store.DailyAPICalls)
	require.NoError(t, err)
	assert.Equal(t, int64(1), w.Count, "the merchant's own calls are untouched")

	// Two hours on, the link's window is clear.
	clk.Add(2 * time.Hour)
	_, err = linkPayment(s, p, l, 1001)
	require.NoError(t, err)
}

// The wallet answer reports, per family, the longest run of unused
// derivation indices: a run before a funded address counts (that is where
// wallet software stops looking), and so do the indices a replaced xPub
// took, which the new xPub never used.
func TestUnusedRun(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	w, err := s.WalletOf(ctx, p.ID)
	require.NoError(t, err)
	run, err := s.UnusedRun(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, map[paywatch.Family]int{paywatch.FamilyEVM: 0, paywatch.FamilyTron: 0}, run)

	tronPayment := func(ref string) *store.Payment {
		pay, _, err := s.CreatePayment(ctx, newPayment(p, ref, "10"))
		require.NoError(t, err)
		return pay
	}
	fund := func(pay *store.Payment) {
		_, err := s.Pool().Exec(ctx, `UPDATE derived_addresses SET received = 1000000 WHERE address = $1`, pay.Address)
		require.NoError(t, err)
	}
	var tron []*store.Payment
	for i := range 5 {
		tron = append(tron, tronPayment("t"+strconv.Itoa(i)))
	}
	for i := range 2 {
		np := newPayment(p, "e"+strconv.Itoa(i), "10")
		np.Network, np.Amount = paywatch.BEP20, amount("10", paywatch.BEP20, paywatch.USDT)
		_, _, err := s.CreatePayment(ctx, np)
		require.NoError(t, err)
	}
	run, err = s.UnusedRun(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, map[paywatch.Family]int{paywatch.FamilyEVM: 2, paywatch.FamilyTron: 5}, run, "nothing received yet")

	// Funds on index 5 only: the four before it are the run a wallet must
	// look past to find them.
	fund(tron[4])
	run, err = s.UnusedRun(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, map[paywatch.Family]int{paywatch.FamilyEVM: 2, paywatch.FamilyTron: 4}, run)
	fund(tron[1])
	run, err = s.UnusedRun(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, 2, run[paywatch.FamilyTron], "indices 3 and 4")

	// A new Tron xPub continues the counter at 6: indices 1 to 5 were
	// never its addresses, so its first funded one follows a run of five.
	_, _, err = s.PutWallet(ctx, "shop", store.WalletUpdate{XPubs: map[string]*string{"tron": ptr(perUserXPubTron)}})
	require.NoError(t, err)
	w, err = s.WalletOf(ctx, p.ID)
	require.NoError(t, err)
	fund(tronPayment("after-replace"))
	run, err = s.UnusedRun(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, 5, run[paywatch.FamilyTron])

	// Back to the first xPub: its funded indices 2 and 5 count again, and
	// index 6, the other xPub's, is unused for it.
	_, _, err = s.PutWallet(ctx, "shop", store.WalletUpdate{XPubs: map[string]*string{"tron": ptr(testXPubTron)}})
	require.NoError(t, err)
	w, err = s.WalletOf(ctx, p.ID)
	require.NoError(t, err)
	run, err = s.UnusedRun(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, 2, run[paywatch.FamilyTron], "indices 3 and 4")
}
