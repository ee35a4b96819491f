package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

func TestPerPaymentDerivesFromIndexOne(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())

	first, existing, err := s.CreatePayment(ctx, newPayment(p, "u1", "10"))
	require.NoError(t, err)
	assert.False(t, existing)
	assert.Equal(t, testTronIndex1, first.Address, "index 0 is reserved for gas")
	assert.Equal(t, paywatch.StatusPending, first.Status)
	assert.False(t, first.WorkflowStarted)

	np := newPayment(p, "u1", "10")
	np.Network = paywatch.ERC20
	second, _, err := s.CreatePayment(ctx, np)
	require.NoError(t, err)
	assert.Equal(t, testEVMIndex1, second.Address, "the counter is per (wallet, family)")

	third, _, err := s.CreatePayment(ctx, newPayment(p, "u1", "10"))
	require.NoError(t, err)
	assert.NotEqual(t, first.Address, third.Address, "a fresh address per payment")
}

func TestDerivationCounterUnderConcurrency(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())

	const n = 24
	addrs := make([]string, n)
	parallel(n, func(i int) {
		np := newPayment(p, "u", "10")
		np.Network = paywatch.BEP20
		pay, _, err := s.CreatePayment(ctx, np)
		require.NoError(t, err)
		addrs[i] = pay.Address
	})
	seen := map[string]bool{}
	for _, a := range addrs {
		assert.False(t, seen[a], "address %s given twice", a)
		seen[a] = true
	}
	var maxIndex, count int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT max(derivation_index), count(*) FROM derived_addresses`).Scan(&maxIndex, &count))
	assert.Equal(t, n, count)
	assert.Equal(t, n, maxIndex, "indices 1..n, none skipped or shared")
}

func TestIdempotencyRules(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	np := newPayment(p, "alice", "25.5")
	np.ExternalOrderID = ptr("order-1")

	first, existing, err := s.CreatePayment(ctx, np)
	require.NoError(t, err)
	require.False(t, existing)

	again, existing, err := s.CreatePayment(ctx, np)
	require.NoError(t, err)
	assert.True(t, existing)
	assert.Equal(t, first.ID, again.ID)

	same := np
	same.Amount = paywatch.MustParseAmount("25.50", 2) // same value, other precision
	_, existing, err = s.CreatePayment(ctx, same)
	require.NoError(t, err)
	assert.True(t, existing)

	other := np
	other.Amount = amount("30", paywatch.TRC20, paywatch.USDT)
	_, _, err = s.CreatePayment(ctx, other)
	requireCode(t, err, paywatch.ECONFLICT, "Payment already exists with different amount")
	assert.Equal(t, "25.50", err.(*paywatch.Error).Fields["existing_amount"])

	otherRef := np
	otherRef.ExternalRef = "bob"
	_, _, err = s.CreatePayment(ctx, otherRef)
	requireCode(t, err, paywatch.ECONFLICT, "external_order_id is already in use with a different external_ref")

	otherNet := np
	otherNet.Network = paywatch.ERC20
	_, _, err = s.CreatePayment(ctx, otherNet)
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgOrderOtherPair)
}

func TestConcurrentIdenticalCreatesMakeOnePayment(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	np := newPayment(p, "alice", "10")
	np.ExternalOrderID = ptr("order-42")

	const n = 16
	var created atomic.Int32
	ids := make([]string, n)
	parallel(n, func(i int) {
		pay, existing, err := s.CreatePayment(ctx, np)
		require.NoError(t, err)
		if !existing {
			created.Add(1)
		}
		ids[i] = pay.ID
	})
	assert.Equal(t, int32(1), created.Load())
	for _, id := range ids {
		assert.Equal(t, ids[0], id)
	}
	var count int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM payments`).Scan(&count))
	assert.Equal(t, 1, count)
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM derived_addresses`).Scan(&count))
	assert.Equal(t, 1, count, "losers roll back their derivation")
}

func TestPerUserAddressAndInProgressRule(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", mode(paywatch.ModePerUser), hdWallet())

	first, _, err := s.CreatePayment(ctx, newPayment(p, "alice", "10"))
	require.NoError(t, err)

	// Same order while in progress: the same payment.
	again, existing, err := s.CreatePayment(ctx, newPayment(p, "alice", "10"))
	require.NoError(t, err)
	assert.True(t, existing)
	assert.Equal(t, first.ID, again.ID)

	// A different order: 409 with the existing payment.
	_, _, err = s.CreatePayment(ctx, newPayment(p, "alice", "12"))
	requireCode(t, err, paywatch.ECONFLICT, "This customer already has a payment in progress on this network. Cancel it or wait for it to complete.")
	fields := err.(*paywatch.Error).Fields
	assert.Equal(t, first.ID, fields["existing_payment_id"])
	assert.Equal(t, "10.00", fields["existing_amount"])
	withOrder := newPayment(p, "alice", "10")
	withOrder.ExternalOrderID = ptr("another-order")
	_, _, err = s.CreatePayment(ctx, withOrder)
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgInProgress)

	// Another token is another slot, on its own address.
	usdc := newPayment(p, "alice", "12")
	usdc.Network, usdc.Token, usdc.Amount = paywatch.ERC20, paywatch.USDC, amount("12", paywatch.ERC20, paywatch.USDC)
	_, _, err = s.CreatePayment(ctx, usdc)
	require.NoError(t, err)

	// Once the payment is over, the next one reuses the customer's address.
	_, err = s.Pool().Exec(ctx, `UPDATE payments SET status = 'paid' WHERE id = $1`, first.ID)
	require.NoError(t, err)
	next, existing, err := s.CreatePayment(ctx, newPayment(p, "alice", "12"))
	require.NoError(t, err)
	assert.False(t, existing)
	assert.Equal(t, first.Address, next.Address)

	bob, _, err := s.CreatePayment(ctx, newPayment(p, "bob", "12"))
	require.NoError(t, err)
	assert.NotEqual(t, first.Address, bob.Address)
}

func TestPerUserInProgressUnderConcurrency(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", mode(paywatch.ModePerUser), hdWallet())

	const n = 12
	var created, conflicts atomic.Int32
	parallel(n, func(i int) {
		// Different amounts: different orders, so one wins and the rest get 409.
		np := newPayment(p, "alice", "10")
		np.Amount = amount([]string{"10", "11", "12", "13", "14", "15", "16", "17", "18", "19", "20", "21"}[i], paywatch.TRC20, paywatch.USDT)
		_, _, err := s.CreatePayment(ctx, np)
		switch paywatch.ErrorCode(err) {
		case "":
			created.Add(1)
		case paywatch.ECONFLICT:
			conflicts.Add(1)
		default:
			t.Errorf("unexpected error %v", err)
		}
	})
	assert.Equal(t, int32(1), created.Load())
	assert.Equal(t, int32(n-1), conflicts.Load())
	var addrs int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM derived_addresses`).Scan(&addrs))
	assert.Equal(t, 1, addrs)
}

// The rotation threshold is exclusive: an address that received exactly
// rotation_threshold is kept, one that received a base unit more gives way
// to a fresh one. The received total comes from the states the payment
// workflows save, as in production: 100 on a paid payment, then 0.000001
// on a payment that expired short.
func TestPerUserRotationThreshold(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	ps := mode(paywatch.ModePerUser)
	ps.RotationThreshold = ptr(paywatch.MustParseAmount("100", 0))
	p := project(t, s, "shop", ps, hdWallet())

	first, _, err := s.CreatePayment(ctx, newPayment(p, "alice", "100"))
	require.NoError(t, err)
	_, err = s.SavePaymentState(ctx, paidState(first, 1, "aa"+zeros(62), "100"))
	require.NoError(t, err)
	require.Equal(t, "100000000", received(t, s, first.Address))

	second, _, err := s.CreatePayment(ctx, newPayment(p, "alice", "60"))
	require.NoError(t, err)
	assert.Equal(t, first.Address, second.Address, "100 received is not above the threshold of 100")

	short := paidState(second, 1, "bb"+zeros(62), "0.000001")
	short.Status = paywatch.StatusExpired
	_, err = s.SavePaymentState(ctx, short)
	require.NoError(t, err)
	require.Equal(t, "100000001", received(t, s, first.Address))

	third, _, err := s.CreatePayment(ctx, newPayment(p, "alice", "60"))
	require.NoError(t, err)
	assert.NotEqual(t, first.Address, third.Address, "100.000001 received is above: rotated to a fresh address")
}

func TestDedicatedAddresses(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", mode(paywatch.ModeDedicated), staticWallet("TRC20", tronAddrs[:2]...))

	alice, _, err := s.CreatePayment(ctx, newPayment(p, "alice", "10"))
	require.NoError(t, err)
	assert.Equal(t, tronAddrs[0], alice.Address, "first free address")
	_, err = s.Pool().Exec(ctx, `UPDATE payments SET status = 'expired' WHERE id = $1`, alice.ID)
	require.NoError(t, err)
	again, _, err := s.CreatePayment(ctx, newPayment(p, "alice", "11"))
	require.NoError(t, err)
	assert.Equal(t, alice.Address, again.Address, "the same address forever")

	// Pre-assignment: another customer's address is refused.
	bob := newPayment(p, "bob", "10")
	bob.Address = tronAddrs[0]
	_, _, err = s.CreatePayment(ctx, bob)
	requireCode(t, err, paywatch.ECONFLICT, "This address is already assigned to a different customer")
	bob.Address = "TNotInTheWalletxxxxxxxxxxxxxxxxxxx"
	_, _, err = s.CreatePayment(ctx, bob)
	requireCode(t, err, paywatch.EINVALID, "Specified address does not belong to this project's wallet")
	bob.Address = tronAddrs[2] // valid, but not registered
	_, _, err = s.CreatePayment(ctx, bob)
	requireCode(t, err, paywatch.EINVALID, "Specified address does not belong to this project's wallet")
	bob.Address = tronAddrs[1]
	got, _, err := s.CreatePayment(ctx, bob)
	require.NoError(t, err)
	assert.Equal(t, tronAddrs[1], got.Address)

	_, _, err = s.CreatePayment(ctx, newPayment(p, "carol", "10"))
	requireCode(t, err, paywatch.EINVALID, "No addresses available for this network. Contact merchant.")

	// A customer keeps one address per network: asking for another one is refused.
	_, _, err = s.PutWallet(ctx, "shop", staticWallet("TRC20", tronAddrs[2]))
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `UPDATE payments SET status = 'expired'`)
	require.NoError(t, err)
	alice2 := newPayment(p, "alice", "10")
	alice2.Address = tronAddrs[2]
	_, _, err = s.CreatePayment(ctx, alice2)
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgCustomerHasAddress)
}

func TestDedicatedAssignmentUnderConcurrency(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", mode(paywatch.ModeDedicated), staticWallet("ERC20", evmAddrs...))

	// Five customers race for three addresses.
	var ok, none atomic.Int32
	got := sync.Map{}
	parallel(5, func(i int) {
		np := newPayment(p, []string{"a", "b", "c", "d", "e"}[i], "10")
		np.Network = paywatch.ERC20
		pay, _, err := s.CreatePayment(ctx, np)
		switch {
		case err == nil:
			ok.Add(1)
			_, dup := got.LoadOrStore(pay.Address, true)
			assert.False(t, dup, "address %s given twice", pay.Address)
		case paywatch.ErrorMessage(err) == paywatch.MsgNoAddressesCreate:
			none.Add(1)
		default:
			t.Errorf("unexpected error %v", err)
		}
	})
	assert.Equal(t, int32(3), ok.Load())
	assert.Equal(t, int32(2), none.Load())

	// One customer, two tokens at once: one address. (Other addresses: an
	// EVM address belongs to one project on every EVM network.)
	q := project(t, s, "shop2", mode(paywatch.ModeDedicated), staticWallet("POLYGON",
		derivedAt(t, testXPubEVM2, paywatch.FamilyEVM, 1), derivedAt(t, testXPubEVM2, paywatch.FamilyEVM, 2)))
	addrs := make([]string, 2)
	parallel(2, func(i int) {
		np := newPayment(q, "zed", "10")
		np.Network, np.Token = paywatch.POLYGON, []paywatch.Token{paywatch.USDT, paywatch.USDC}[i]
		pay, _, err := s.CreatePayment(ctx, np)
		require.NoError(t, err)
		addrs[i] = pay.Address
	})
	assert.Equal(t, addrs[0], addrs[1])
}

func TestDedicatedInProgressUnderConcurrency(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", mode(paywatch.ModeDedicated), staticWallet("TRC20", tronAddrs...))
	var created, existing atomic.Int32
	parallel(8, func(int) {
		_, ex, err := s.CreatePayment(ctx, newPayment(p, "alice", "10"))
		require.NoError(t, err)
		if ex {
			existing.Add(1)
		} else {
			created.Add(1)
		}
	})
	assert.Equal(t, int32(1), created.Load())
	assert.Equal(t, int32(7), existing.Load())
}

func TestPoolTxidPicksLeastBusyAddress(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", pool(paywatch.MatchTxID, 3), staticWallet("TRC20", tronAddrs[:2]...))
	a, _, err := s.CreatePayment(ctx, newPayment(p, "u1", "10"))
	require.NoError(t, err)
	b, _, err := s.CreatePayment(ctx, newPayment(p, "u2", "10"))
	require.NoError(t, err)
	assert.NotEqual(t, a.Address, b.Address)
	assert.Equal(t, paywatch.MatchTxID, a.PoolMatching)
	assert.Nil(t, a.OriginalAmount)
	assert.Equal(t, "10.00", a.Amount.String(), "no offset in txid mode")
}

func TestMicroOffsets(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", pool(paywatch.MatchMicroAmount, 1), staticWallet("TRC20", tronAddrs[0]))

	_, _, err := s.CreatePayment(ctx, newPayment(p, "u", "10.05"))
	requireCode(t, err, paywatch.EINVALID, "Amount has more decimal places than this project's micro-amount precision allows")

	// 1 decimal: 9 offsets, taken concurrently, all distinct.
	const n = 12
	var capacity atomic.Int32
	amounts := sync.Map{}
	ids := make([]string, n)
	parallel(n, func(i int) {
		pay, _, err := s.CreatePayment(ctx, newPayment(p, "u", "10"))
		if paywatch.ErrorCode(err) == paywatch.ERATELIMIT {
			assert.Equal(t, "Payment capacity exceeded. Please try again later.", paywatch.ErrorMessage(err))
			capacity.Add(1)
			return
		}
		require.NoError(t, err)
		ids[i] = pay.ID
		require.NotNil(t, pay.OriginalAmount)
		assert.Equal(t, "10.00", pay.OriginalAmount.String())
		assert.Equal(t, 1, pay.Amount.Cmp(*pay.OriginalAmount), "the offset is always added")
		_, dup := amounts.LoadOrStore(pay.Amount.String(), true)
		assert.False(t, dup, "amount %s given twice", pay.Amount)
	})
	assert.Equal(t, int32(n-9), capacity.Load())

	// Another base amount still has room: 10.1 + 0.1 collides only with
	// taken amounts, so it gets one of the 9 free ones above 10.9.
	other, _, err := s.CreatePayment(ctx, newPayment(p, "u", "10.1"))
	require.NoError(t, err)
	_, dup := amounts.Load(other.Amount.String())
	assert.False(t, dup)

	var cancelled, paid string
	for _, id := range ids {
		if id == "" {
			continue
		}
		if cancelled == "" {
			cancelled = id
		} else if paid == "" {
			paid = id
		}
	}
	// Cancelled: quarantined for 6 hours.
	require.NoError(t, s.ReleaseAddress(ctx, cancelled, paywatch.StatusCancelled))
	require.NoError(t, s.ReleaseAddress(ctx, cancelled, paywatch.StatusCancelled), "idempotent")
	_, _, err = s.CreatePayment(ctx, newPayment(p, "u", "10"))
	requireCode(t, err, paywatch.ERATELIMIT, paywatch.MsgCapacity)
	clk.Add(paywatch.MicroOffsetQuarantine - time.Second)
	_, _, err = s.CreatePayment(ctx, newPayment(p, "u", "10"))
	requireCode(t, err, paywatch.ERATELIMIT, paywatch.MsgCapacity)
	clk.Add(time.Second)
	_, _, err = s.CreatePayment(ctx, newPayment(p, "u", "10"))
	require.NoError(t, err, "reusable after 6 hours")

	// Paid: reusable at once.
	require.NoError(t, s.ReleaseAddress(ctx, paid, paywatch.StatusPaid))
	_, _, err = s.CreatePayment(ctx, newPayment(p, "u", "10"))
	require.NoError(t, err)
}

func TestMicroOffsetOnBSCKeepsEighteenDecimals(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", pool(paywatch.MatchMicroAmount, 4), staticWallet("BEP20", evmAddrs[0]))
	np := newPayment(p, "u", "5")
	np.Network, np.Amount = paywatch.BEP20, amount("5", paywatch.BEP20, paywatch.USDT)
	pay, _, err := s.CreatePayment(ctx, np)
	require.NoError(t, err)
	assert.Equal(t, 18, pay.Amount.Decimals())
	diff := pay.Amount.Sub(*pay.OriginalAmount)
	assert.LessOrEqual(t, diff.FractionDigits(), 4)
	assert.Equal(t, 1, diff.Sign())
}

func TestCreationErrors(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()

	ps := store.ProjectSettings{MinAmount: ptr(paywatch.MustParseAmount("5", 0))}
	p := project(t, s, "shop", ps, hdWallet())
	_, _, err := s.CreatePayment(ctx, newPayment(p, "u", "4.99"))
	requireCode(t, err, paywatch.EINVALID, "Amount must be at least $5.00 (project minimum)")

	// Without a wallet.
	email := "nowallet@example.com"
	_, err = s.CreateAccount(ctx, email, paywatch.PlanPro)
	require.NoError(t, err)
	bare, _, err := s.CreateProject(ctx, store.NewProject{Slug: "bare", Settings: store.ProjectSettings{OwnerEmail: &email}})
	require.NoError(t, err)
	_, _, err = s.CreatePayment(ctx, newPayment(bare, "u", "10"))
	requireCode(t, err, paywatch.EINVALID, "Project has no wallet assigned")

	// A wallet without the family's xpub.
	evmOnly := project(t, s, "evm-only", store.ProjectSettings{}, store.WalletUpdate{XPubs: map[string]*string{"evm": ptr(testXPubEVM2)}})
	_, _, err = s.CreatePayment(ctx, newPayment(evmOnly, "u", "10"))
	requireCode(t, err, paywatch.EINVALID, "Wallet has no xPub configured for this network")

	// A static mode without addresses on the network.
	ded := project(t, s, "ded", mode(paywatch.ModeDedicated), staticWallet("ERC20", evmAddrs[0]))
	_, _, err = s.CreatePayment(ctx, newPayment(ded, "u", "10"))
	requireCode(t, err, paywatch.EINVALID, "No addresses available for this network. Contact merchant.")

	// A network the service does not offer.
	s2, _ := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.ERC20}))
	p2 := project(t, s2, "shop", store.ProjectSettings{}, hdWallet())
	_, _, err = s2.CreatePayment(ctx, newPayment(p2, "u", "10"))
	requireCode(t, err, paywatch.EINVALID, "USDT on TRC20 is not available for this merchant")
}

func TestNetworkLessCreationAndAssignAddress(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	np := store.NewPayment{ProjectID: p.ID, ExternalRef: "u", Amount: paywatch.MustParseAmount("12.5", 6)}
	pay, _, err := s.CreatePayment(ctx, np)
	require.NoError(t, err)
	assert.True(t, pay.AwaitingNetwork())
	assert.True(t, pay.CreatedWithoutNetwork)
	require.NotNil(t, pay.ExternalOrderID)
	assert.Regexp(t, `^PAY-[A-Z0-9]{16}$`, *pay.ExternalOrderID)
	assert.Empty(t, pay.Address)

	_, err = s.Pool().Exec(ctx, `INSERT INTO chain_cursors (network, height) VALUES ('BEP20', 777)`)
	require.NoError(t, err)
	clk.Add(time.Minute)
	_, err = s.AssignAddress(ctx, pay.ID, paywatch.TRC20, paywatch.USDC)
	requireCode(t, err, paywatch.EINVALID, "USDC is not supported on TRC20")
	a, err := s.AssignAddress(ctx, pay.ID, paywatch.BEP20, paywatch.USDC)
	require.NoError(t, err)
	assert.Equal(t, testEVMIndex1, a.Address)
	assert.Equal(t, uint64(778), a.StartBlock, "after the newest block a scanner saw")
	assert.Equal(t, 18, a.Amount.Decimals(), "rescaled to the token's decimals")
	assert.Equal(t, "12.50", a.Amount.String())
	assert.Equal(t, clk.Now(), a.AssignedAt)

	again, err := s.AssignAddress(ctx, pay.ID, paywatch.BEP20, paywatch.USDC)
	require.NoError(t, err, "idempotent")
	assert.Equal(t, a, again)
	_, err = s.AssignAddress(ctx, pay.ID, paywatch.ERC20, paywatch.USDC)
	requireCode(t, err, paywatch.ECONFLICT, "Network already selected for this payment")

	got, err := s.GetPayment(ctx, p.ID, pay.ID)
	require.NoError(t, err)
	assert.Equal(t, paywatch.BEP20, got.Network)
	assert.Equal(t, a.Address, got.Address)
	assert.Equal(t, uint64(778), got.StartBlock)
	assert.True(t, got.CreatedWithoutNetwork)
}

func TestAssignAddressErrors(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, store.WithNetworks([]paywatch.Network{paywatch.TRC20, paywatch.ERC20, paywatch.BEP20}))
	ctx := context.Background()
	networkLess := func(p *store.Project, ref, amt string) string {
		t.Helper()
		pay, _, err := s.CreatePayment(ctx, store.NewPayment{ProjectID: p.ID, ExternalRef: ref, Amount: paywatch.MustParseAmount(amt, 6)})
		require.NoError(t, err)
		return pay.ID
	}

	hd := project(t, s, "hd", store.ProjectSettings{}, store.WalletUpdate{XPubs: map[string]*string{"evm": ptr(testXPubEVM)}})
	id := networkLess(hd, "u", "10")
	_, err := s.AssignAddress(ctx, id, paywatch.TRC20, paywatch.USDT)
	requireCode(t, err, paywatch.EINVALID, "USDT on TRC20 is not available for this merchant")
	_, err = s.AssignAddress(ctx, id, paywatch.POLYGON, paywatch.USDT)
	requireCode(t, err, paywatch.EINVALID, "USDT on POLYGON is not available for this merchant")

	ded := project(t, s, "ded", mode(paywatch.ModeDedicated), staticWallet("TRC20", tronAddrs[0]))
	first := networkLess(ded, "alice", "10")
	_, err = s.AssignAddress(ctx, first, paywatch.TRC20, paywatch.USDT)
	require.NoError(t, err)
	second := networkLess(ded, "bob", "10")
	_, err = s.AssignAddress(ctx, second, paywatch.TRC20, paywatch.USDT)
	requireCode(t, err, paywatch.EINVALID, "No addresses available for this network")
	// alice again while her first is in progress: the per-customer rule.
	third := networkLess(ded, "alice", "11")
	_, err = s.AssignAddress(ctx, third, paywatch.TRC20, paywatch.USDT)
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgInProgress)

	micro := project(t, s, "micro", pool(paywatch.MatchMicroAmount, 1), staticWallet("TRC20", tronAddrs[1]))
	var ids []string
	for range 10 {
		ids = append(ids, networkLess(micro, "u", "10"))
	}
	for _, id := range ids[:9] {
		a, err := s.AssignAddress(ctx, id, paywatch.TRC20, paywatch.USDT)
		require.NoError(t, err)
		require.NotNil(t, a.OriginalAmount)
		assert.Equal(t, "10.00", a.OriginalAmount.String())
	}
	_, err = s.AssignAddress(ctx, ids[9], paywatch.TRC20, paywatch.USDT)
	requireCode(t, err, paywatch.ERATELIMIT, "Payment capacity exceeded. Please try again later.")

	owner := "hd@example.com"
	suspended := store.AccountSuspended
	_, err = s.UpdateAccount(ctx, owner, store.AccountUpdate{Status: &suspended})
	require.NoError(t, err)
	_, err = s.AssignAddress(ctx, networkLessRaw(t, s, hd.ID), paywatch.ERC20, paywatch.USDT)
	requireCode(t, err, paywatch.EINVALID, "This merchant is currently not accepting payments") // 400 on select-network (interface.md)

	// Expired.
	late := networkLess(micro, "u", "20")
	clk.Add(2 * time.Hour)
	_, err = s.AssignAddress(ctx, late, paywatch.TRC20, paywatch.USDT)
	requireCode(t, err, paywatch.EGONE, "Payment has expired")

	_, err = s.AssignAddress(ctx, "00000000-0000-0000-0000-000000000000", paywatch.TRC20, paywatch.USDT)
	requireCode(t, err, paywatch.ENOTFOUND, "Payment not found")
}

// networkLessRaw inserts a network-less payment directly, for a project
// whose owner can no longer create payments through the API.
func networkLessRaw(t *testing.T, s *store.Store, projectID int64) string {
	t.Helper()
	var id string
	require.NoError(t, s.Pool().QueryRow(context.Background(), `
		INSERT INTO payments (id, project_id, address_mode, amount, decimals, external_ref, expires_at, created_without_network)
		VALUES (gen_random_uuid(), $1, 'per_payment', 10, 0, 'x', '2100-01-01', true) RETURNING id::text`, projectID).Scan(&id))
	return id
}

func TestReleaseAddressPerPayment(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	pay, _, err := s.CreatePayment(ctx, newPayment(p, "u", "10"))
	require.NoError(t, err)
	active := func() bool {
		var a bool
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT active FROM derived_addresses WHERE address = $1`, pay.Address).Scan(&a))
		return a
	}
	assert.True(t, active())
	require.NoError(t, s.ReleaseAddress(ctx, pay.ID, paywatch.StatusExpired))
	assert.False(t, active())
	require.NoError(t, s.ReleaseAddress(ctx, pay.ID, paywatch.StatusExpired), "idempotent")
}

func TestListPaymentsFiltersAndShownStatus(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	other := project(t, s, "other", store.ProjectSettings{}, otherHDWallet())
	_, _, err := s.CreatePayment(ctx, newPayment(other, "u", "10"))
	require.NoError(t, err)

	short := newPayment(p, "u", "1")
	short.ExpiresIn = 5 * time.Minute
	old, _, err := s.CreatePayment(ctx, short)
	require.NoError(t, err)
	mark := clk.Now()
	clk.Add(time.Minute)
	var ids []string
	for i := range 4 {
		pay, _, err := s.CreatePayment(ctx, newPayment(p, "u", []string{"2", "3", "4", "5"}[i]))
		require.NoError(t, err)
		ids = append(ids, pay.ID)
		clk.Add(time.Second)
	}
	_, err = s.Pool().Exec(ctx, `UPDATE payments SET status = 'paid' WHERE id = $1`, ids[0])
	require.NoError(t, err)

	all, total, err := s.ListPayments(ctx, p.ID, store.ListFilter{Limit: 2})
	require.NoError(t, err)
	assert.Equal(t, 5, total)
	require.Len(t, all, 2)
	assert.Equal(t, ids[3], all[0].ID, "newest first")

	page, _, err := s.ListPayments(ctx, p.ID, store.ListFilter{Limit: 10, Offset: 4})
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, old.ID, page[0].ID)

	paid := paywatch.StatusPaid
	got, total, err := s.ListPayments(ctx, p.ID, store.ListFilter{Limit: 10, Status: &paid})
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	assert.Equal(t, ids[0], got[0].ID)

	after := mark
	_, total, err = s.ListPayments(ctx, p.ID, store.ListFilter{Limit: 10, CreatedAfter: &after})
	require.NoError(t, err)
	assert.Equal(t, 4, total)

	// The short payment reads as expired 3 minutes after its expiry.
	expired, pending := paywatch.StatusExpired, paywatch.StatusPending
	clk.Add(5*time.Minute + 3*time.Minute - time.Minute - 4*time.Second - time.Second)
	_, total, err = s.ListPayments(ctx, p.ID, store.ListFilter{Limit: 10, Status: &expired})
	require.NoError(t, err)
	assert.Equal(t, 0, total)
	clk.Add(time.Second)
	_, total, err = s.ListPayments(ctx, p.ID, store.ListFilter{Limit: 10, Status: &expired})
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	_, total, err = s.ListPayments(ctx, p.ID, store.ListFilter{Limit: 10, Status: &pending})
	require.NoError(t, err)
	assert.Equal(t, 3, total)
}

func TestReconcilerWorkList(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t)
	ctx := context.Background()
	p := project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	pay, _, err := s.CreatePayment(ctx, newPayment(p, "u", "10"))
	require.NoError(t, err)
	list, err := s.UnstartedPayments(ctx, 5*time.Second, 10)
	require.NoError(t, err)
	assert.Empty(t, list, "too fresh")
	clk.Add(5 * time.Second)
	list, err = s.UnstartedPayments(ctx, 5*time.Second, 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	in := list[0].WorkflowInput()
	assert.Equal(t, pay.ID, in.PaymentID)
	assert.Equal(t, "shop", in.ProjectSlug)
	assert.Equal(t, pay.Address, in.Address)
	assert.Equal(t, paywatch.ModePerPayment, in.Mode)
	require.NoError(t, s.MarkWorkflowStarted(ctx, pay.ID))
	list, err = s.UnstartedPayments(ctx, 5*time.Second, 10)
	require.NoError(t, err)
	assert.Empty(t, list)
}
