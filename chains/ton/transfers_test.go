package ton_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xssnick/tonutils-go/tvm/cell"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/ton"
)

// USDT's jetton master on TON (docs.ton.org/ecosystem/appkit/jettons).
const usdt = "EQCxE6mUtQJKFnGfaROTKOt1lZbDiiX1kCixRv7Nw2Id_sDs"

func fixture(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", path))
	require.NoError(t, err)
	return raw
}

// A recorded mainnet answer of /api/v3/jetton/transfers for USDT: two
// credits to one owner, in base units, the owners in paywatch's form.
func TestCreditsOfARecordedMainnetAnswer(t *testing.T) {
	raw := fixture(t, "mainnet/jetton_transfers_usdt_2024-05.json")
	cs, err := ton.Credits(raw, usdt)
	require.NoError(t, err)
	require.Len(t, cs, 2)
	to, err := paywatch.NormalizeTONWallet("0:169C9367C01C8B4E1471962DB32E99E3E4473AAFB47E1A6A643A4177A6758F16")
	require.NoError(t, err)
	from, err := paywatch.NormalizeTONWallet("0:1F5806C73D03BBC96EB7EEBF16067F1F2E8E270CFA16D57001AA9EAF7456F008")
	require.NoError(t, err)
	assert.Equal(t, ton.Credit{To: to, From: from, Amount: cs[0].Amount, TxHash: "exkKjJjzWuZCh8zER2b8dVcSJRGR/LBQeG+YeyMfeOM=",
		LT: 46760680000003, Time: 1716867695}, cs[0])
	assert.Equal(t, "17000000", cs[0].Amount.String())
	assert.Equal(t, "10000000", cs[1].Amount.String())
	assert.Equal(t, uint64(46760679000001), cs[1].LT)
	assert.Empty(t, cs[0].Comment, "no forward payload")

	// A look-alike jetton names another master: none of its rows count,
	// whatever it calls itself; nor does an aborted transfer.
	fake := strings.ReplaceAll(string(raw), "0:B113A994B5024A16719F69139328EB759596C38A25F59028B146FECDC3621DFE",
		"0:B113A994B5024A16719F69139328EB759596C38A25F59028B146FECDC3621DFF")
	cs, err = ton.Credits([]byte(fake), usdt)
	require.NoError(t, err)
	assert.Empty(t, cs)
	aborted := strings.Replace(string(raw), `"forward_payload": null`, `"forward_payload": null, "transaction_aborted": true`, 1)
	cs, err = ton.Credits([]byte(aborted), usdt)
	require.NoError(t, err)
	assert.Len(t, cs, 1)

	_, err = ton.Credits([]byte(`{"ok":false,"result":"Ratelimit exceed","code":429}`), usdt)
	assert.ErrorIs(t, err, ton.ErrBadAnswer)
}

// Text comments as TON Center's answers carry them (base64 BOCs of the
// payload cell): one from a mainnet jetton transfer in toncenter/ton-indexer's
// test cases ("11"), and the one a recorded testnet answer carries in its
// custom payload ("hii"). Another op is no comment.
func TestComment(t *testing.T) {
	for boc, want := range map[string]string{
		"te6cckEBAQEACAAADAAAAAAxMb6Vqnw=": "11",
		"te6cckEBAQEACQAADgAAAABoaWne1AAn": "hii",
	} {
		text, ok, err := ton.Comment(boc)
		require.NoError(t, err, boc)
		assert.True(t, ok, boc)
		assert.Equal(t, want, text)
	}
	raw := fixture(t, "testnet/jetton_transfers_custom_payload_comment_2024-07.json")
	assert.Contains(t, string(raw), "te6cckEBAQEACQAADgAAAABoaWne1AAn", "the testnet vector is the recorded one")

	// Another op (a transfer_notification's), text that is not UTF-8,
	// and a cell too short for an op are no comment.
	for name, c := range map[string]*cell.Cell{
		"another op": cell.BeginCell().MustStoreUInt(0x7362d09c, 32).MustStoreStringSnake("11").EndCell(),
		"binary":     cell.BeginCell().MustStoreUInt(0, 32).MustStoreSlice([]byte{0xff, 0xfe}, 16).EndCell(),
		"short":      cell.BeginCell().MustStoreUInt(0, 8).EndCell(),
	} {
		_, ok, err := ton.Comment(base64.StdEncoding.EncodeToString(c.ToBOC()))
		require.NoError(t, err, name)
		assert.False(t, ok, name)
	}
	// And one made here reads back, over several cells.
	long := strings.Repeat("paywatch ", 40)
	c := cell.BeginCell().MustStoreUInt(0, 32).MustStoreStringSnake(long).EndCell()
	text, ok, err := ton.Comment(base64.StdEncoding.EncodeToString(c.ToBOC()))
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, long, text)
	_, _, err = ton.Comment("not base64!")
	assert.Error(t, err)
}
