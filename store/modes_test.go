package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// modeSwitchFixture is a pool project on one TRC20 address with a pool +
// txid payment that expired an hour ago (its late window open), and then
// a pool + micro_amount payment on the same address: the state a switch
// from txid to micro_amount left before switches were refused (issue 24).
type modeSwitchFixture struct {
	s     *store.Store
	clk   *testClock
	addr  string
	txid  *store.Payment // expired, late window open
	micro *store.Payment // pending, same address
}

func newModeSwitchFixture(t *testing.T) modeSwitchFixture {
	t.Helper()
	ctx := context.Background()
	s, clk := newStore(t)
	addr := tronAddrs[2]
	prj := project(t, s, "pool", pool(paywatch.MatchTxID, 3), staticWallet("TRC20", addr))
	txid, _, err := s.CreatePayment(ctx, newPayment(prj, "old", "10"))
	require.NoError(t, err)
	setStatus(t, s, txid.ID, paywatch.StatusExpired, ptr(clk.Now().Add(-time.Hour)))
	// The switch as the old rule let it happen (only pending refused it).
	_, err = s.Pool().Exec(ctx, `UPDATE projects SET pool_matching = 'micro_amount' WHERE id = $1`, prj.ID)
	require.NoError(t, err)
	micro, _, err := s.CreatePayment(ctx, newPayment(prj, "new", "10"))
	require.NoError(t, err)
	require.Equal(t, addr, txid.Address)
	require.Equal(t, addr, micro.Address)
	return modeSwitchFixture{s: s, clk: clk, addr: addr, txid: txid, micro: micro}
}

// transferTo is transfer number i of units base units to address to.
func transferTo(to string, i int, units paywatch.Amount) paywatch.Transfer {
	return paywatch.Transfer{
		Network: paywatch.TRC20, Token: paywatch.USDT, TxHash: fmt.Sprintf("%064x", 0xa000+i), LogIndex: 3,
		BlockNumber: 100, BlockHash: "0xb", From: tronAddrs[0], To: to, Amount: units.Units(),
	}
}

// The reproduction at the store: a transfer the scanner credited to
// a micro_amount payment cannot be claimed by hash for the expired txid
// payment on the same pool address, which would then turn paid with the
// same money.
func TestTxHashClaimRespectsScannerClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newModeSwitchFixture(t)
	x := transferTo(f.addr, 1, f.micro.Amount)
	owners, err := f.s.ClaimTransfers(ctx, paywatch.TRC20, []paywatch.Transfer{x})
	require.NoError(t, err)
	require.Len(t, owners, 1)
	require.Equal(t, f.micro.ID, owners[0].PaymentID, "the scanner credits the micro payment")

	err = f.s.ClaimTxHash(ctx, paywatch.TRC20, x.TxHash, f.txid.ID, []paywatch.Transfer{x})
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgTxHashClaimed)
	// A claim without the transfers (an activity scheduled by an older
	// worker) is refused too: the address's transfer in that transaction
	// counts for another payment.
	err = f.s.ClaimTxHash(ctx, paywatch.TRC20, x.TxHash, f.txid.ID, nil)
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgTxHashClaimed)

	// The other way round: a hash claimed for the txid payment first makes
	// its transfer the txid payment's for the scanner too.
	y := transferTo(f.addr, 2, f.micro.Amount)
	require.NoError(t, f.s.ClaimTxHash(ctx, paywatch.TRC20, y.TxHash, f.txid.ID, []paywatch.Transfer{y}))
	owners, err = f.s.ClaimTransfers(ctx, paywatch.TRC20, []paywatch.Transfer{y})
	require.NoError(t, err)
	assert.Equal(t, f.txid.ID, ownerOf(owners, y))
	require.NoError(t, f.s.ClaimTxHash(ctx, paywatch.TRC20, y.TxHash, f.txid.ID, []paywatch.Transfer{y}), "a retried claim is idempotent")
}

// A hash claim and a scan racing for one transfer: exactly one payment
// ends with it, and the hash claim succeeds only when it is that payment.
func TestTxHashClaimRacesScannerClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newModeSwitchFixture(t)
	for i := range 20 {
		x := transferTo(f.addr, 100+i, f.micro.Amount)
		var claimErr, scanErr error
		var owners []store.ClaimedTransfer
		parallel(2, func(j int) {
			if j == 0 {
				claimErr = f.s.ClaimTxHash(ctx, paywatch.TRC20, x.TxHash, f.txid.ID, []paywatch.Transfer{x})
			} else {
				owners, scanErr = f.s.ClaimTransfers(ctx, paywatch.TRC20, []paywatch.Transfer{x})
			}
		})
		require.NoError(t, scanErr)
		if claimErr == nil {
			assert.Equal(t, f.txid.ID, ownerOf(owners, x), "round %d: the hash claim won, so the scan must agree", i)
		} else {
			requireCode(t, claimErr, paywatch.ECONFLICT, paywatch.MsgTxHashClaimed)
			assert.Equal(t, f.micro.ID, ownerOf(owners, x), "round %d", i)
		}
	}
}

// A change of address mode or pool matching is refused while a payment
// still watches an address the new mode would share: confirming, partial,
// or expired inside its late window, not only pending. per_payment and
// per_user derive each address for one owner, so a switch between them
// waits for pending payments only.
func TestModeSwitchRefusedWhileAddressesAreWatched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newStore(t)

	// pool + txid to micro_amount with an expired txid payment in its late window.
	addr := tronAddrs[2]
	pl := project(t, s, "pool", pool(paywatch.MatchTxID, 3), staticWallet("TRC20", addr))
	txid, _, err := s.CreatePayment(ctx, newPayment(pl, "c", "10"))
	require.NoError(t, err)
	micro := paywatch.MatchMicroAmount
	for _, st := range []paywatch.Status{paywatch.StatusConfirming, paywatch.StatusPartial, paywatch.StatusExpired} {
		setStatus(t, s, txid.ID, st, ptr(clk.Now().Add(-time.Hour)))
		_, err = s.UpdateProject(ctx, "pool", store.ProjectSettings{PoolMatching: &micro})
		requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgModeAddressesWatched)
	}
	dedicated := paywatch.ModeDedicated
	_, err = s.UpdateProject(ctx, "pool", store.ProjectSettings{AddressMode: &dedicated})
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgModeAddressesWatched)
	got, err := s.ProjectBySlug(ctx, "pool")
	require.NoError(t, err)
	assert.Equal(t, paywatch.MatchTxID, got.PoolMatching, "a refused switch changes nothing")
	// Once the late window and its confirming grace have closed, nothing
	// watches the address.
	setStatus(t, s, txid.ID, paywatch.StatusExpired, ptr(clk.Now().Add(-paywatch.LateWindow-paywatch.ConfirmingGrace-time.Minute)))
	got, err = s.UpdateProject(ctx, "pool", store.ProjectSettings{PoolMatching: &micro})
	require.NoError(t, err)
	assert.Equal(t, paywatch.MatchMicroAmount, got.PoolMatching)

	// per_payment to pool with an expired per_payment payment in its late window.
	hd := project(t, s, "hd", store.ProjectSettings{}, hdWallet())
	pp, _, err := s.CreatePayment(ctx, newPayment(hd, "c", "10"))
	require.NoError(t, err)
	setStatus(t, s, pp.ID, paywatch.StatusExpired, ptr(clk.Now().Add(-time.Hour)))
	_, err = s.UpdateProject(ctx, "hd", pool(paywatch.MatchTxID, 3))
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgModeAddressesWatched)
	// per_user derives fresh indexes of its own: no shared address.
	perUser := paywatch.ModePerUser
	got, err = s.UpdateProject(ctx, "hd", store.ProjectSettings{AddressMode: &perUser})
	require.NoError(t, err)
	assert.Equal(t, paywatch.ModePerUser, got.AddressMode)
	// A pending payment still refuses every switch, with the old message.
	pu, _, err := s.CreatePayment(ctx, newPayment(hd, "d", "10"))
	require.NoError(t, err)
	perPayment := paywatch.ModePerPayment
	_, err = s.UpdateProject(ctx, "hd", store.ProjectSettings{AddressMode: &perPayment})
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgModePending)
	setStatus(t, s, pu.ID, paywatch.StatusPaid, nil)
	_, err = s.UpdateProject(ctx, "hd", store.ProjectSettings{AddressMode: &perPayment})
	require.NoError(t, err)
}

// Registering as a static address the derived address of a per_payment
// payment that is still watched (here expired, its late window open) is
// refused: a pool or dedicated payment on it would share its transfers.
func TestStaticAddressOfWatchedPaymentRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newStore(t)
	hd := project(t, s, "hd", store.ProjectSettings{}, hdWallet())
	pp, _, err := s.CreatePayment(ctx, newPayment(hd, "c", "10"))
	require.NoError(t, err)
	require.Equal(t, testTronIndex1, pp.Address)
	setStatus(t, s, pp.ID, paywatch.StatusExpired, ptr(clk.Now().Add(-time.Hour)))

	_, _, err = s.PutWallet(ctx, "hd", staticWallet("TRC20", pp.Address))
	requireCode(t, err, paywatch.ECONFLICT, paywatch.MsgStaticAddressWatched(paywatch.TRC20, pp.Address))
	w, err := s.WalletOf(ctx, hd.ID)
	require.NoError(t, err)
	assert.Zero(t, w.Addresses[paywatch.TRC20], "nothing of a refused request is saved")

	setStatus(t, s, pp.ID, paywatch.StatusExpired, ptr(clk.Now().Add(-paywatch.LateWindow-paywatch.ConfirmingGrace-time.Minute)))
	_, _, err = s.PutWallet(ctx, "hd", staticWallet("TRC20", pp.Address))
	require.NoError(t, err, "once the late window has closed the address may be registered")
}

// ownerOf is the payment a claim result gives transfer t (by tx hash and
// recipient), or "".
func ownerOf(claimed []store.ClaimedTransfer, t paywatch.Transfer) string {
	for _, c := range claimed {
		if c.Transfer.TxHash == t.TxHash && c.Transfer.To == t.To {
			return c.PaymentID
		}
	}
	return ""
}
