package store_test

import (
	"context"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// twoPayments creates per_payment payments PX and PY on network n (USDT)
// and returns them.
func twoPayments(t *testing.T, s *store.Store, n paywatch.Network) (px, py *store.Payment) {
	t.Helper()
	ctx := context.Background()
	prj := project(t, s, "ident"+strings.ToLower(string(n)), store.ProjectSettings{}, hdWallet())
	mk := func(ref string) *store.Payment {
		np := newPayment(prj, ref, "10")
		np.Network, np.Amount = n, amount("10", n, paywatch.USDT)
		p, _, err := s.CreatePayment(ctx, np)
		require.NoError(t, err)
		return p
	}
	return mk("x"), mk("y")
}

// One transaction pays two watched addresses X and Y; a reorg drops it and
// it is mined again one log later, so X's transfer now has the log index Y's
// had. X's money must still count for X's payment, never Y's, on every
// network family.
func TestTransactionMinedAgainOneLogLaterKeepsEachTransfersPayment(t *testing.T) {
	t.Parallel()
	for _, n := range []paywatch.Network{paywatch.TRC20, paywatch.ERC20} {
		t.Run(string(n), func(t *testing.T) {
			t.Parallel()
			s, _ := newStore(t)
			ctx := context.Background()
			px, py := twoPayments(t, s, n)
			hash, err := paywatch.NormalizeTxHash(n, strings.Repeat("ab", 32))
			require.NoError(t, err)
			units := func(v int64) *big.Int { return new(big.Int).Mul(big.NewInt(v), big.NewInt(1_000_000)) }
			pay := func(to string, logIndex uint32, block uint64, blockHash string, v int64) paywatch.Transfer {
				return paywatch.Transfer{Network: n, Token: paywatch.USDT, TxHash: hash, LogIndex: logIndex,
					BlockNumber: block, BlockHash: blockHash, From: px.Address, To: to, Amount: units(v)}
			}
			owner := func(to string) string {
				if to == py.Address {
					return py.ID
				}
				return px.ID
			}
			record := func(height uint64, blockHash string, ts ...paywatch.Transfer) []store.ClaimedTransfer {
				b := store.ScanBatch{Network: n, Height: height, BlockHash: blockHash, Head: height, Transfers: ts}
				for _, tr := range ts {
					b.Claims = append(b.Claims, store.TransferClaim{Transfer: tr, PaymentID: owner(tr.To)})
				}
				var got []store.ClaimedTransfer
				_, err := s.RecordScan(ctx, b, func(_ context.Context, c []store.ClaimedTransfer) error {
					got = c
					return nil
				})
				require.NoError(t, err)
				return got
			}
			// check asserts that each claimed transfer (what the scanner
			// signals) counts for the payment of its recipient, and that the
			// record under its key is that transfer.
			check := func(claimed []store.ClaimedTransfer) map[string]uint32 {
				require.Len(t, claimed, 2)
				keys := map[string]uint32{}
				for _, c := range claimed {
					assert.Equal(t, owner(c.Transfer.To), c.PaymentID, "the transfer of %s to %s counts for that address's payment", c.Transfer.Amount, c.Transfer.To)
					got, ok, err := s.ChainTransferByKey(ctx, n, c.Transfer.Key())
					require.NoError(t, err)
					require.True(t, ok)
					assert.Equal(t, c.Transfer.To, got.To, "the record under the key names the transfer's recipient")
					assert.Equal(t, c.Transfer.Amount, got.Amount, "the record under the key has the transfer's amount")
					assert.Equal(t, c.Transfer.BlockHash, got.BlockHash)
					keys[c.Transfer.To] = c.Transfer.LogIndex
				}
				owners, err := s.TransferOwners(ctx, n, []paywatch.TransferKey{
					{TxHash: hash, LogIndex: keys[px.Address]}, {TxHash: hash, LogIndex: keys[py.Address]}})
				require.NoError(t, err)
				assert.Equal(t, px.ID, owners[paywatch.TransferKey{TxHash: hash, LogIndex: keys[px.Address]}])
				assert.Equal(t, py.ID, owners[paywatch.TransferKey{TxHash: hash, LogIndex: keys[py.Address]}])
				return keys
			}

			x1, y1 := pay(px.Address, 5, 100, "0x100a", 10), pay(py.Address, 6, 100, "0x100a", 3)
			first := check(record(100, "0x100a", x1, y1))

			// The reorg drops block 100; the transaction is mined again in
			// block 101 behind one more log.
			require.NoError(t, s.MarkTransfersRemoved(ctx, n, []paywatch.TransferKey{x1.Key(), y1.Key()}))
			x2, y2 := pay(px.Address, 6, 101, "0x101b", 10), pay(py.Address, 7, 101, "0x101b", 3)
			again := check(record(101, "0x101b", x2, y2))
			assert.Equal(t, first, again, "each transfer keeps the key the payments know it by")

			// The final check, reading the chain, finds X's transfer at its
			// new index: it is the same transfer, still X's payment's alone.
			found, err := s.ClaimTransfers(ctx, n, []paywatch.Transfer{x2})
			require.NoError(t, err)
			require.Len(t, found, 1)
			assert.Equal(t, px.ID, found[0].PaymentID)
			assert.Equal(t, first[px.Address], found[0].Transfer.LogIndex)
			var rows int
			require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM chain_transfers`).Scan(&rows))
			assert.Equal(t, 2, rows, "two transfers, recorded once each")
		})
	}
}

// Two transfers of one transaction that move the same amount to the same
// address are both money: mined again at other indexes, they keep two keys
// between them, and neither the scanner nor a final check reading the new
// indexes makes a third.
func TestEqualTransfersOfOneTransactionKeepTwoKeys(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	n := paywatch.TRC20
	px, _ := twoPayments(t, s, n)
	hash := strings.Repeat("cd", 32)
	pay := func(logIndex uint32, block uint64, blockHash string) paywatch.Transfer {
		return paywatch.Transfer{Network: n, Token: paywatch.USDT, TxHash: hash, LogIndex: logIndex,
			BlockNumber: block, BlockHash: blockHash, From: tronAddrs[0], To: px.Address, Amount: big.NewInt(5_000_000)}
	}
	batch := func(height uint64, ts ...paywatch.Transfer) store.ScanBatch {
		b := store.ScanBatch{Network: n, Height: height, BlockHash: ts[0].BlockHash, Head: height, Transfers: ts}
		for _, tr := range ts {
			b.Claims = append(b.Claims, store.TransferClaim{Transfer: tr, PaymentID: px.ID})
		}
		return b
	}
	keys := func(cs []store.ClaimedTransfer) []uint32 {
		var out []uint32
		for _, c := range cs {
			assert.Equal(t, px.ID, c.PaymentID)
			out = append(out, c.Transfer.LogIndex)
		}
		slices.Sort(out)
		return out
	}
	var got []store.ClaimedTransfer
	grab := func(_ context.Context, c []store.ClaimedTransfer) error { got = c; return nil }
	_, err := s.RecordScan(ctx, batch(100, pay(5, 100, "0xa"), pay(6, 100, "0xa")), grab)
	require.NoError(t, err)
	assert.Equal(t, []uint32{5, 6}, keys(got))

	_, err = s.RecordScan(ctx, batch(101, pay(6, 101, "0xb"), pay(7, 101, "0xb")), grab)
	require.NoError(t, err)
	assert.Equal(t, []uint32{5, 6}, keys(got), "mined again one log later")

	claimed, err := s.ClaimTransfers(ctx, n, []paywatch.Transfer{pay(7, 101, "0xb"), pay(6, 101, "0xb")})
	require.NoError(t, err)
	assert.Equal(t, []uint32{5, 6}, keys(claimed), "the final check's chain indexes")
	var rows, claims int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM chain_transfers), (SELECT count(*) FROM transfer_claims)`).Scan(&rows, &claims))
	assert.Equal(t, 2, rows)
	assert.Equal(t, 2, claims)
}

// Transfers never seen before whose chain index a recorded transfer of
// their transaction already holds get new keys, one each, even when the
// scanner, final checks and verifications see them at the same moment: a
// key never stands for two transfers.
func TestConcurrentSightingsGiveEachNewTransferItsOwnKey(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	n := paywatch.TRC20
	hash := strings.Repeat("ef", 32)
	held := paywatch.Transfer{Network: n, Token: paywatch.USDT, TxHash: hash, LogIndex: 5, BlockNumber: 100,
		BlockHash: "0xa", From: tronAddrs[0], To: tronAddrs[1], Amount: big.NewInt(1)}
	_, err := s.RecordScan(ctx, store.ScanBatch{Network: n, Height: 100, BlockHash: "0xa", Head: 100,
		Transfers: []paywatch.Transfer{held}}, nil)
	require.NoError(t, err)

	const sightings = 8
	got := make([]paywatch.Transfer, sightings)
	errs := make([]error, sightings)
	parallel(sightings, func(i int) {
		// Each sees a different transfer at index 5 of the transaction
		// mined again in block 101.
		tr := held
		tr.BlockNumber, tr.BlockHash, tr.To, tr.Amount = 101, "0xb", tronAddrs[2], big.NewInt(int64(100+i))
		ids, err := s.IdentifyTransfers(ctx, n, []paywatch.Transfer{tr})
		if err == nil {
			got[i] = ids[0]
		}
		errs[i] = err
	})
	seen := map[uint32]bool{}
	for i, tr := range got {
		require.NoError(t, errs[i])
		assert.NotEqual(t, uint32(5), tr.LogIndex, "the key of the transfer recorded first")
		assert.False(t, seen[tr.LogIndex], "key %d given twice", tr.LogIndex)
		seen[tr.LogIndex] = true
		rec, ok, err := s.ChainTransferByKey(ctx, n, tr.Key())
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, tr.Amount, rec.Amount, "the record under key %d is the transfer given it", tr.LogIndex)
	}
	rec, _, err := s.ChainTransferByKey(ctx, n, held.Key())
	require.NoError(t, err)
	assert.Equal(t, held.To, rec.To, "the first transfer keeps its key")
	assert.Equal(t, held.Amount, rec.Amount)
}
