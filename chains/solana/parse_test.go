package solana_test

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gagliardetto/solana-go/rpc"
	"github.com/mr-tron/base58"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/chains/solana"
)

// recorded reads a recorded mainnet getTransaction answer
// (testdata/mainnet, SOURCE.md names each one's source).
func recorded(t *testing.T, name string) *rpc.GetTransactionResult {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "mainnet", name))
	require.NoError(t, err)
	var answer struct {
		Result *rpc.GetTransactionResult `json:"result"`
	}
	require.NoError(t, json.Unmarshal(raw, &answer), name)
	return answer.Result
}

// want is a credit as SOURCE.md's tables give it, decoded by hand.
type want struct {
	position       uint32
	mint, program  string
	account, owner string
	from, amount   string
	references     []string
}

const (
	usdc    = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
	usdt    = "Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB"
	spl     = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
	token22 = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
	wsol    = "So11111111111111111111111111111111111111112"
)

func at(outerIx, innerIx uint32) uint32 { return outerIx<<16 | innerIx }

// The parser reads recorded mainnet transactions as their explorers and
// balances show them: the credit of each token account, outer or inner,
// SPL Token or Token-2022, never a failed transaction's, and never more
// than the account's balance says it received.
func TestParseRecordedMainnetTransactions(t *testing.T) {
	for _, tc := range []struct {
		file      string
		signature string
		slot      uint64
		want      []want
	}{
		{
			file:      "getTransaction_usdc_transferChecked_json.json",
			signature: "28f8jFzCX3D1dJ5sZSABgVmrziAQu3hPeERjRoKMJwvQGrahxDfSRARpgX4rBeGcYvGSMu77QPoEqYdyYTzx9TY7",
			slot:      311668936,
			// The fifth account is the owner repeated, a signer: no reference.
			want: []want{{at(2, 0), usdc, spl, "BKHLvZxmSGUJRMX9WPPLFTQvRTktctpL6At2yWnxbLtV", "GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK", "54r6W445JsjDf5UGzmVtcczsPpgg3B3J16USuNcu1EY", "29697870", nil}},
		},
		{
			file:      "getTransaction_token2022_transferChecked_transferfee_json.json",
			signature: "3oR9ryME5VTS2qWZ25AhAwKWYLsYMLigCcFKRh6DiyFGtC7m7e17mBihB84XzL1EptM6mCjjyRp6uovHfHgcZrMA",
			slot:      371573609,
			// 384000000 named, 4% withheld as a transfer fee: the balance's
			// 368640000 is what arrived.
			want: []want{{at(2, 0), "7atgF8KQo4wJrD5ATGX7t1V2zVvykPJbFfNeVf1icFv1", token22, "4RCuNxRhspEdRLyk66WTTj68aoQGoLiDTYJWTwoUuH9q", "5Sp1e78jLb9b4B8FMFEGobzQCc9kW23tydFNaeGsNJSt", "6HbSn7QQraiNXW5p4M7Sp48qdcxvCSsqwuJvrNNTMayF", "368640000", nil}},
		},
		{
			// USDG, Paxos's Token-2022 stablecoin (PYUSD's issuer, 6
			// decimals): the closest recorded stand-in for a PYUSD credit,
			// none of which was found. An inner TransferChecked at stack
			// height 3, after a Token-2022 Burn of another mint.
			file:      "getTransaction_token2022_usdg_inner_transferChecked_v0_json.json",
			signature: "4Tnpv3ZgMcUTcYdq6tPkR1y9kHqMtXtscR5S22A5hb7diKxUH81fit2FRQZ2iaYfocMj7PJP5XysnwXmTDSt84pG",
			slot:      402879272,
			want:      []want{{at(0, 3), "2u1tszSeqZ3qBWF3uNGPFc8TzMk2tdiwknnRMWGWjGWH", token22, "AbDvHxFXPoi7SEdaKNXAEPokNZ3wxSXhKHr8i2rb5EkC", "5P8QZdPo2pipnpPQ6njUqjLH9kRnRgweDJptdDTu9iZT", "7s1da8DduuBFqGra5bJBjpnvL5E9mGzCuMk1Qkh4or2Z", "2252307824539", nil}},
		},
		{
			// A Token-2022 mint with a permanent delegate, as PYUSD's: its
			// account made in the same transaction (no pre balance), both
			// token programs loaded from a lookup table.
			file:      "getTransaction_token2022_xstock_swap_new_ata_permanent_delegate_v0_json.json",
			signature: "4XaCfTLNno3rAETUgRC5tfPwzvvkJzARQYcyjas4nEyzkM7iFgZtHC2rY85JxJsb7baJqcnLSdqHdrhjgffQXuyo",
			slot:      378401816,
			want: []want{
				{at(0, 7), usdc, spl, "3h7wgb4hzxjM2F7fmLgwuzZxzuztUvUMdThnrmy9bTdF", "HHQUnUbmWLrYzkscDY1C3deEFbGtiGBGoHjpANogmvum", "7T8ckKtdc5DH7ACS5AnCny7rVXYJPEsaAbdBri1FhPxY", "20000000", nil},
				{at(0, 8), "XsDoVfqeBukxuZHWhdvWHBhgEHjGNst4MLodqsJHzoB", token22, "HPKu5fq5nB5t54r6HeRgtLLTQ1Euh6E3PdDktT9zGdmK", "7T8ckKtdc5DH7ACS5AnCny7rVXYJPEsaAbdBri1FhPxY", "HHQUnUbmWLrYzkscDY1C3deEFbGtiGBGoHjpANogmvum", "4466643", nil},
			},
		},
		{
			file:      "getTransaction_failed_jupiter_swap_v0_json.json",
			signature: "5DmrWBydDod85swXUp3sRVmuQW1VUwBFdVyKRybeKduaUEbwEJGFY6CwZo9xni2jsBcyrHjAA7N6W9Mz93KCneQc",
			slot:      259696492,
			want:      nil, // failed: its inner transfers were rolled back
		},
		{
			file:      "getTransaction_jupiter_swap_inner_transfers_v0_json.json",
			signature: "4G1gvudg2PyQV17v8agjHKYJQA9bxxJtMWEvKzk1Lb9k5yHTj3dnrvDGEiaDT7qSYePvswBrUq1bC5j4iPbk5gzQ",
			slot:      372472641,
			// Inner transfers, to accounts loaded from a lookup table too.
			want: []want{
				{at(1, 2), usdc, spl, "81zFSjrz9tDu9ixkKToGDGhiX7Q18T8jG6DiwZVXrt3u", "FeLULW5RCKDT2NuThu4vrAQ8BjH5YbU2Y7GbiZXYohm8", "FvTqiyvB52rmV82jj9Wc5efLyuWht9vprr8bivDBzGnV", "500000000", nil},
				{at(1, 3), "9BB6NFEcjBCtnNLFko2FqVQBq8HHM13kCyYcdQbgpump", spl, "HSKvqbVudMBieH41iPfekYPXB1tc8zanBQ3VHidwZ37d", "FvTqiyvB52rmV82jj9Wc5efLyuWht9vprr8bivDBzGnV", "FeLULW5RCKDT2NuThu4vrAQ8BjH5YbU2Y7GbiZXYohm8", "812420478", nil},
			},
		},
		{
			file:      "getTransaction_jupiter_usdt_usdc_multihop_v0_json.json",
			signature: "5XYf7V6rNjRuStgG1ELmug5K5ErGWtfZBa4msAdqw1PeYWAYEg6qcJyFqoHJ5uNmNp3B6YdnQgdyQrpg2XZUDE3q",
			slot:      377931869,
			// 98proJ… receives 27859855 USDT and forwards it in the same
			// transaction: it ends no richer (0 → 0), so it is credited
			// nothing. CUNH3E… has no token balance (a wrapped-SOL account
			// made and closed on the way), so the hop into it is no credit,
			// and the one out of it names its authority as the sender.
			want: []want{
				{at(4, 2), usdc, spl, "6nMF76wKdFZaE78eRRDcNikVw1jMKMC4zoj7ibq1N25f", "23XoPQqGw9WMsLoqTu8HMzJLD6RnXsufbKyWPLJywsCT", "AS25zph72ZmhtLAz2LjEF9qT8vv5x29GJsXVj1DBNKrw", "27853252", nil},
				{at(4, 5), usdt, spl, "2n6fxuD6PA5NYgEnXXYMh2iWD1JBJ1LGf76kFJAayZmX", "3nMFwZXwY1s1M5s8vYAHqd4wGs4iSxXE4LRoUMMYqEgF", "AS25zph72ZmhtLAz2LjEF9qT8vv5x29GJsXVj1DBNKrw", "27859855", nil},
				{at(4, 8), wsol, spl, "45rtFPXv59ofFGy2yHrqmMAt1Ae1pwiYMWtzwfqYUa7t", "BdYa48bZuSCzdPkkGRyNHCeMQ61e4JAfG5i8k5jWZQ3P", "AS25zph72ZmhtLAz2LjEF9qT8vv5x29GJsXVj1DBNKrw", "179601400", nil},
				{at(4, 9), "5TfqNKZbn9AnNtzq8bbkyhKgcPGTfNDc9wNzFrTBpump", spl, "4JPttyVdinEb7fxmSi4vGvDXeSMWBavnGopiQuvdVnVA", "AS25zph72ZmhtLAz2LjEF9qT8vv5x29GJsXVj1DBNKrw", "BdYa48bZuSCzdPkkGRyNHCeMQ61e4JAfG5i8k5jWZQ3P", "10000000000", nil},
			},
		},
		{
			file:      "getTransaction_swap_then_usdc_inner_deposit_v0_json.json",
			signature: "58F9fNP78FiBCbVc2Gdy6on2d6pZiJcTbqib4MsTfNcgAXqS7UGp3a3eeEy7fRWnLiXaJjncUHdqtpCnEFuVsVEM",
			slot:      344394079,
			// F54yh… receives 34957210 USDC and sends 34852339 on: it is
			// credited what stayed, its balance's +104871.
			want: []want{
				{at(5, 2), wsol, spl, "7ixaquirw9k3VNkxJ5zpbx9GTAbAvUrrNeZovw7TBqyu", "81MPQqJY58rgT83sy99MkRHs2g3dyy6uWKHD24twV62F", "9rJ4QzDLYm5VARnuWcMFMzB4Nr1hKprGQWb8LTfsU6Q2", "218145145", nil},
				{at(5, 3), usdc, spl, "F54yhxDkhsprqQoRV5L1dCQKKFSY1WBzFQ6YaVRuW42T", "9rJ4QzDLYm5VARnuWcMFMzB4Nr1hKprGQWb8LTfsU6Q2", "81MPQqJY58rgT83sy99MkRHs2g3dyy6uWKHD24twV62F", "104871", nil},
				{at(7, 6), usdc, spl, "9PzW3acuWjfCb74AKRK7BsZq9tjBxvwqPoTLSeXonGLu", "EEne7rPNgqPXLEK3Hv74KwkxJKPgaMHUd39LNx9yXbiK", "9rJ4QzDLYm5VARnuWcMFMzB4Nr1hKprGQWb8LTfsU6Q2", "34852339", nil},
			},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := solana.ParseTransaction(recorded(t, tc.file))
			require.NoError(t, err)
			require.Len(t, got, len(tc.want))
			for i, w := range tc.want {
				g := got[i]
				assert.Equal(t, tc.signature, g.Signature)
				assert.Equal(t, tc.slot, g.Slot)
				assert.Equal(t, w.position, g.Position, "credit %d", i)
				assert.Equal(t, w.mint, g.Mint, "credit %d", i)
				assert.Equal(t, w.program, g.Program, "credit %d", i)
				assert.Equal(t, w.account, g.Account, "credit %d", i)
				assert.Equal(t, w.owner, g.Owner, "credit %d", i)
				assert.Equal(t, w.from, g.From, "credit %d", i)
				assert.Equal(t, w.amount, g.Amount.String(), "credit %d", i)
				assert.Equal(t, w.references, g.References, "credit %d", i)
			}
		})
	}
}

// mutate decodes a recorded answer, lets edit change its JSON, and
// decodes it again: the cases below start from a real transaction and
// change only what they name.
func mutate(t *testing.T, name string, edit func(tx map[string]any)) *rpc.GetTransactionResult {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "mainnet", name))
	require.NoError(t, err)
	var answer map[string]any
	require.NoError(t, json.Unmarshal(raw, &answer))
	edit(answer["result"].(map[string]any))
	b, err := json.Marshal(answer["result"])
	require.NoError(t, err)
	var res rpc.GetTransactionResult
	require.NoError(t, json.Unmarshal(b, &res))
	return &res
}

// A Solana Pay reference is a read-only account past the authority that
// does not sign; the owner repeated there (a signer) is not one. Built
// from the recorded USDC transferChecked, whose fifth account is the
// owner: here a sixth, a key that does not sign, is added.
func TestParseReferences(t *testing.T) {
	const ref = "9NWvPxNVqsc7bvk5LRKKjVb3V9xQffwqsXtg3yaJTAkx"
	res := mutate(t, "getTransaction_usdc_transferChecked_json.json", func(tx map[string]any) {
		msg := tx["transaction"].(map[string]any)["message"].(map[string]any)
		keys := msg["accountKeys"].([]any)
		msg["accountKeys"] = append(keys, ref)
		header := msg["header"].(map[string]any)
		header["numReadonlyUnsignedAccounts"] = header["numReadonlyUnsignedAccounts"].(float64) + 1
		ix := msg["instructions"].([]any)[2].(map[string]any)
		ix["accounts"] = append(ix["accounts"].([]any), float64(len(keys)))
	})
	got, err := solana.ParseTransaction(res)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, []string{ref}, got[0].References)
	assert.Equal(t, "29697870", got[0].Amount.String())
}

// What the balances say wins over what an instruction names: a credit the
// balance does not show is no credit, one it shows in part is that part,
// and a balance that rose by more than named is credited what is named,
// never more, and never refused (one account's numbers must not make a
// history unreadable).
func TestParseHoldsCreditsToTheBalances(t *testing.T) {
	setPost := func(amount string) func(tx map[string]any) {
		return func(tx map[string]any) {
			meta := tx["meta"].(map[string]any)
			for _, b := range meta["postTokenBalances"].([]any) {
				tb := b.(map[string]any)
				if tb["accountIndex"].(float64) == 1 { // the credited account
					tb["uiTokenAmount"].(map[string]any)["amount"] = amount
				}
			}
		}
	}
	// Pre 101490833: unchanged after, so nothing arrived.
	got, err := solana.ParseTransaction(mutate(t, "getTransaction_usdc_transferChecked_json.json", setPost("101490833")))
	require.NoError(t, err)
	assert.Empty(t, got)
	// Less than named: the balance's increase is the credit.
	got, err = solana.ParseTransaction(mutate(t, "getTransaction_usdc_transferChecked_json.json", setPost("101490834")))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "1", got[0].Amount.String())
	// More than named: what is named.
	got, err = solana.ParseTransaction(mutate(t, "getTransaction_usdc_transferChecked_json.json", setPost("999999999999")))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "29697870", got[0].Amount.String())
	// A balance that is not an amount is the provider's error, never a 0.
	_, err = solana.ParseTransaction(mutate(t, "getTransaction_usdc_transferChecked_json.json", setPost("12e3")))
	assert.ErrorContains(t, err, "is not an amount")
	// No transaction (null): an error of its own.
	_, err = solana.ParseTransaction(&rpc.GetTransactionResult{})
	assert.ErrorIs(t, err, solana.ErrNoTransaction)
}

// Token-2022's TransferCheckedWithFee names the fee it withholds: the
// credit is the amount less the fee, which is what the balance shows. The
// recorded fee-charging transfer, sent as that instruction instead.
func TestParseTransferCheckedWithFee(t *testing.T) {
	data := make([]byte, 19)
	data[0], data[1] = 26, 1
	binary.LittleEndian.PutUint64(data[2:10], 384000000)
	data[10] = 2 // decimals
	binary.LittleEndian.PutUint64(data[11:19], 15360000)
	res := mutate(t, "getTransaction_token2022_transferChecked_transferfee_json.json", func(tx map[string]any) {
		msg := tx["transaction"].(map[string]any)["message"].(map[string]any)
		msg["instructions"].([]any)[2].(map[string]any)["data"] = base58.Encode(data)
	})
	got, err := solana.ParseTransaction(res)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "368640000", got[0].Amount.String())
	assert.Equal(t, "5Sp1e78jLb9b4B8FMFEGobzQCc9kW23tydFNaeGsNJSt", got[0].Owner)

	// A fee above the amount is an instruction the program refuses: no credit.
	binary.LittleEndian.PutUint64(data[11:19], 384000001)
	res = mutate(t, "getTransaction_token2022_transferChecked_transferfee_json.json", func(tx map[string]any) {
		msg := tx["transaction"].(map[string]any)["message"].(map[string]any)
		msg["instructions"].([]any)[2].(map[string]any)["data"] = base58.Encode(data)
	})
	got, err = solana.ParseTransaction(res)
	require.NoError(t, err)
	assert.Empty(t, got)
}
