package ton

import (
	"encoding/base64"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xssnick/tonutils-go/address"
	"github.com/xssnick/tonutils-go/tvm/cell"

	"github.com/paywatch/paywatch"
)

// transactionsOf reads a recorded /api/v3/transactions answer.
func transactionsOf(t *testing.T, path string) []Transaction {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", path))
	require.NoError(t, err)
	var page struct {
		Transactions []Transaction `json:"transactions"`
	}
	require.NoError(t, json.Unmarshal(raw, &page))
	require.NotEmpty(t, page.Transactions)
	return page.Transactions
}

// internalTransfer builds an internal_transfer body as a jetton wallet
// receives it (TEP-74), its comment inline or in a reference.
func internalTransfer(amount int64, from *address.Address, comment string, inRef bool) string {
	b := cell.BeginCell().MustStoreUInt(OpInternalTransfer, 32).MustStoreUInt(7, 64).
		MustStoreBigCoins(big.NewInt(amount)).MustStoreAddr(from).MustStoreAddr(from)
	if comment == "" {
		b.MustStoreBigCoins(big.NewInt(0)).MustStoreBoolBit(false)
	} else {
		payload := cell.BeginCell().MustStoreUInt(0, 32).MustStoreStringSnake(comment).EndCell()
		b.MustStoreBigCoins(big.NewInt(1)).MustStoreBoolBit(inRef)
		if inRef {
			b.MustStoreRef(payload)
		} else {
			b.MustStoreBuilder(payload.ToBuilder())
		}
	}
	return base64.StdEncoding.EncodeToString(b.EndCell().ToBOC())
}

// The transactions of recorded answers read with their keys' types
// (logical times as strings, masterchain blocks as numbers, hashes in
// base64), and none of them is a credit: a transfer_notification to an
// owner (which anyone can send, and which aborted here on an uninit
// account) and a contract call.
func TestRecordedTransactionsAreNoCredits(t *testing.T) {
	notify := transactionsOf(t, "testnet/transactions_owner_transfer_notification_uninit_2024-05.json")[0]
	assert.EqualValues(t, 22164816000001, notify.LT)
	require.NotNil(t, notify.McBlockSeqno)
	assert.EqualValues(t, 19705707, *notify.McBlockSeqno)
	assert.True(t, notify.Description.Aborted)
	_, err := creditOf(notify)
	assert.ErrorIs(t, err, errNotCredit)
	// The same notification had it not aborted: still no credit, its op
	// is not internal_transfer.
	notify.Description.Aborted = false
	_, err = creditOf(notify)
	assert.ErrorIs(t, err, errNotCredit, "a transfer_notification is never a credit")

	for _, tx := range transactionsOf(t, "testnet/transactions_contract_call_axelar_gateway_2025-07.json") {
		_, err := creditOf(tx)
		assert.ErrorIs(t, err, errNotCredit, tx.Hash)
	}
}

// A jetton wallet's transaction that processed an internal_transfer is a
// credit of its amount from its sender, with the comment whether it sits
// in the body's cell or in a reference; an aborted one, a bounce and an
// external message are none.
func TestCreditOfAnInternalTransfer(t *testing.T) {
	base := notifyLike(t)
	sender := address.MustParseRawAddr("0:1f5806c73d03bbc96eb7eebf16067f1f2e8e270cfa16d57001aa9eaf7456f008")
	for _, inRef := range []bool{false, true} {
		tx := base
		body := internalTransfer(25_500_000, sender, " k7qx4mnb ", inRef)
		tx.InMsg = &Message{Source: ptr("0:B7F5CD75F68A8F91A07E7E203CFC429F7A33F6E3F232282344C8A154B2F5EC7C")}
		tx.InMsg.Content = &struct {
			Body *string `json:"body"`
		}{Body: &body}
		cr, err := creditOf(tx)
		require.NoError(t, err)
		assert.Equal(t, "25500000", cr.Amount.String())
		want, err := paywatch.NormalizeTONWallet(sender.StringRaw())
		require.NoError(t, err)
		assert.Equal(t, want, cr.From, "the sending owner, in paywatch's form")
		assert.Equal(t, " k7qx4mnb ", cr.Comment, "in ref: %v", inRef)
		assert.Equal(t, "K7QX4MNB", MemoOf(cr.Comment), "a memo typed in lower case, with spaces")
		assert.Len(t, cr.TxHash, 64)
		assert.Equal(t, strings.ToLower(cr.TxHash), cr.TxHash)

		aborted := tx
		aborted.Description.Aborted = true
		_, err = creditOf(aborted)
		assert.ErrorIs(t, err, errNotCredit, "the wallet refused it")
		bounced := tx
		bounced.InMsg = &Message{Source: tx.InMsg.Source, Bounced: true, Content: tx.InMsg.Content}
		_, err = creditOf(bounced)
		assert.ErrorIs(t, err, errNotCredit, "a bounce returns the wallet's own jettons")
	}
	plain := base
	body := internalTransfer(1_000_000, sender, "", false)
	plain.InMsg = &Message{Source: ptr("0:B7F5CD75F68A8F91A07E7E203CFC429F7A33F6E3F232282344C8A154B2F5EC7C")}
	plain.InMsg.Content = &struct {
		Body *string `json:"body"`
	}{Body: &body}
	cr, err := creditOf(plain)
	require.NoError(t, err)
	assert.Equal(t, "1000000", cr.Amount.String())
	assert.Empty(t, cr.Comment, "no forward payload: no comment")

	zero := base
	body = internalTransfer(0, sender, "K7QX4MNB", false)
	zero.InMsg = &Message{Source: plain.InMsg.Source}
	zero.InMsg.Content = &struct {
		Body *string `json:"body"`
	}{Body: &body}
	_, err = creditOf(zero)
	assert.ErrorIs(t, err, errNotCredit, "0 USDT with a payment's comment moves nothing")
}

// notifyLike is the recorded testnet transaction, as a base whose
// message the tests replace.
func notifyLike(t *testing.T) Transaction {
	tx := transactionsOf(t, "testnet/transactions_owner_transfer_notification_uninit_2024-05.json")[0]
	tx.Description.Aborted = false
	return tx
}

func ptr[T any](v T) *T { return &v }

// Text comments as TON Center's answers carry them (base64 BOCs of the
// payload cell): one from a mainnet jetton transfer in toncenter/ton-indexer's
// test cases ("11"), and the one a recorded testnet answer carries in its
// custom payload ("hii"). Another op is no comment.
func TestComment(t *testing.T) {
	for boc, want := range map[string]string{
		"te6cckEBAQEACAAADAAAAAAxMb6Vqnw=": "11",
		"te6cckEBAQEACQAADgAAAABoaWne1AAn": "hii",
	} {
		text, ok, err := Comment(boc)
		require.NoError(t, err, boc)
		assert.True(t, ok, boc)
		assert.Equal(t, want, text)
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "testnet/jetton_transfers_custom_payload_comment_2024-07.json"))
	require.NoError(t, err)
	assert.Contains(t, string(raw), "te6cckEBAQEACQAADgAAAABoaWne1AAn", "the testnet vector is the recorded one")

	for name, c := range map[string]*cell.Cell{
		"another op": cell.BeginCell().MustStoreUInt(OpTransferNotification, 32).MustStoreStringSnake("11").EndCell(),
		"binary":     cell.BeginCell().MustStoreUInt(0, 32).MustStoreSlice([]byte{0xff, 0xfe}, 16).EndCell(),
		"short":      cell.BeginCell().MustStoreUInt(0, 8).EndCell(),
	} {
		_, ok, err := Comment(base64.StdEncoding.EncodeToString(c.ToBOC()))
		require.NoError(t, err, name)
		assert.False(t, ok, name)
	}
	long := strings.Repeat("paywatch ", 40)
	c := cell.BeginCell().MustStoreUInt(0, 32).MustStoreStringSnake(long).EndCell()
	text, ok, err := Comment(base64.StdEncoding.EncodeToString(c.ToBOC()))
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, long, text, "over several cells")
	_, _, err = Comment("not base64!")
	assert.Error(t, err)
}

// Recorded mainnet internal_transfer bodies (testdata/SOURCE.md: mainnet
// traces of toncenter/ton-indexer's tests), read as the credits their
// recorded results name: USDT without a payload, with an empty comment,
// with a payload that is no comment inline and in a reference, minted by
// the master; another jetton's text comment in a reference, a mint whose
// body ends before the Either bit and one from addr_none.
func TestCreditOfRecordedMainnetBodies(t *testing.T) {
	for file, want := range map[string]struct {
		amount, comment string
	}{
		"internal_transfer_usdt_no_payload_coffee_claim.json":       {"17686745", ""},
		"internal_transfer_usdt_inline_empty_comment_tonco.json":    {"57085786", ""},
		"internal_transfer_usdt_ref_payload_coffee_swap.json":       {"18984362", ""},
		"internal_transfer_usdt_inline_nontext_payload_stonfi.json": {"92994", ""},
		"internal_transfer_usdt_mint_from_master.json":              {"1000000", ""},
		"internal_transfer_jvault_ref_text_comment.json":            {"7919563", "Claim staking rewards"},
		"internal_transfer_mint_no_either_bit.json":                 {"4853188593690", ""},
		"internal_transfer_mint_from_addr_none.json":                {"1000000000", ""},
	} {
		raw, err := os.ReadFile(filepath.Join("testdata", "mainnet", file))
		require.NoError(t, err)
		var rec struct {
			Body     string `json:"in_msg_body"`
			Expected struct {
				Source string `json:"source"`
			} `json:"expected"`
		}
		require.NoError(t, json.Unmarshal(raw, &rec), file)
		cr := Credit{TxHash: file}
		require.NoError(t, cr.readBody(rec.Body), file)
		assert.Equal(t, want.amount, cr.Amount.String(), file)
		assert.Equal(t, want.comment, cr.Comment, file)
		if rec.Expected.Source != "" && strings.Contains(file, "usdt") {
			// A jetton_transfer's recorded source is the sending owner
			// (a jvault claim's is the vault, not the transfer's from).
			from, err := paywatch.NormalizeTONWallet(rec.Expected.Source)
			require.NoError(t, err)
			assert.Equal(t, from, cr.From, file)
		}
	}
}

// Comment reads a payload BOC (base64, standard or URL-safe) as a text
// comment, as the credit's reading does.
func Comment(boc string) (text string, ok bool, err error) {
	raw, err := base64.StdEncoding.DecodeString(boc)
	if err != nil {
		if raw, err = base64.URLEncoding.DecodeString(boc); err != nil {
			return "", false, err
		}
	}
	c, err := cell.FromBOC(raw)
	if err != nil {
		return "", false, err
	}
	text, ok = comment(c.BeginParse())
	return text, ok, nil
}
