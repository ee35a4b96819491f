package devnet

import (
	"context"
	"encoding/json"
	"math/big"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/solana"
)

// A wallet of the recorded mainnet answers: the devnet only needs a key.
const solanaWallet = "GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK"

func startSolanaT(t *testing.T) (*solanaChain, *solana.Client) {
	t.Helper()
	c, err := startSolana("SOLANA", DefaultSolanaMints(), 5)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.close() })
	client, err := solana.Dial([]string{c.url}, nil, nil)
	require.NoError(t, err)
	return c, client
}

// A memo payment's transfer on the devnet reads back through the client
// the scanner uses: seen at confirmed at once, at finalized 32 slots
// later, credited to the wallet's associated token account with the
// reference a Solana Pay wallet adds.
func TestSolanaDevnetTransferReadsBack(t *testing.T) {
	c, client := startSolanaT(t)
	ctx := context.Background()
	genesis, cluster, err := client.Cluster(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, solana.MainnetGenesis, genesis, "a devnet is never taken for mainnet")
	assert.Empty(t, cluster)

	usdc, _ := c.mintOf(paywatch.USDC)
	ata, err := solana.AssociatedTokenAccount(solanaWallet, usdc.Mint, usdc.Program)
	require.NoError(t, err)
	ref := paywatch.NewSolanaReference()
	sent, err := c.send(solanaWallet, paywatch.USDC, big.NewInt(25_500_000), ref, false)
	require.NoError(t, err)

	// Confirmed at once, not yet finalized.
	sigs, err := client.Signatures(ctx, ata, solana.SignatureQuery{}, rpc.CommitmentConfirmed)
	require.NoError(t, err)
	require.Len(t, sigs, 1)
	_, found, err := client.Credits(ctx, sent.sig, rpc.CommitmentFinalized)
	require.NoError(t, err)
	assert.False(t, found, "not finalized yet")
	head, err := client.Slot(ctx, rpc.CommitmentFinalized)
	require.NoError(t, err)
	assert.Less(t, head, sent.slot)

	_, err = c.mine(ctx, solanaFinality)
	require.NoError(t, err)
	head, err = client.Slot(ctx, rpc.CommitmentFinalized)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, head, sent.slot, "finalized 32 slots behind")
	sigs, err = client.Signatures(ctx, ata, solana.SignatureQuery{}, rpc.CommitmentFinalized)
	require.NoError(t, err)
	require.Len(t, sigs, 1)
	assert.Equal(t, sent.sig, sigs[0].Signature.String())
	assert.Equal(t, rpc.ConfirmationStatusFinalized, sigs[0].ConfirmationStatus)
	credits, found, err := client.Credits(ctx, sent.sig, rpc.CommitmentFinalized)
	require.NoError(t, err)
	require.True(t, found)
	require.Len(t, credits, 1)
	assert.Equal(t, ata, credits[0].Account)
	assert.Equal(t, solanaWallet, credits[0].Owner)
	assert.Equal(t, usdc.Mint, credits[0].Mint)
	assert.Equal(t, "25500000", credits[0].Amount.String())
	assert.Equal(t, []string{ref}, credits[0].References)
	assert.Equal(t, big.NewInt(25_500_000), c.balanceOf(ata))

	// The reference's own history lists the payment, as Solana Pay finds it.
	sigs, err = client.Signatures(ctx, ref, solana.SignatureQuery{}, rpc.CommitmentFinalized)
	require.NoError(t, err)
	require.Len(t, sigs, 1)

	// PYUSD is a Token-2022 mint: another account of the same wallet.
	pyusd, _ := c.mintOf(paywatch.PYUSD)
	sent, err = c.send(solanaWallet, paywatch.PYUSD, big.NewInt(1), "", false)
	require.NoError(t, err)
	credits, found, err = client.Credits(ctx, sent.sig, rpc.CommitmentConfirmed)
	require.NoError(t, err)
	require.True(t, found)
	require.Len(t, credits, 1)
	assert.Equal(t, pyusd.Program, credits[0].Program)
	assert.NotEqual(t, ata, credits[0].Account)
	assert.Empty(t, credits[0].References)
}

// A failed transfer is listed with its error and credits nothing; a reorg
// drops the newest unfinalized slots with their transfers and refuses to
// touch a finalized one; skipped slots leave gaps in the slot numbers.
func TestSolanaDevnetFailureReorgAndSkippedSlots(t *testing.T) {
	c, client := startSolanaT(t)
	ctx := context.Background()
	usdc, _ := c.mintOf(paywatch.USDC)
	ata, err := solana.AssociatedTokenAccount(solanaWallet, usdc.Mint, usdc.Program)
	require.NoError(t, err)

	failed, err := c.send(solanaWallet, paywatch.USDC, big.NewInt(7), "", true)
	require.NoError(t, err)
	credits, found, err := client.Credits(ctx, failed.sig, rpc.CommitmentConfirmed)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Empty(t, credits, "a failed transaction moves nothing")
	sigs, err := client.Signatures(ctx, ata, solana.SignatureQuery{}, rpc.CommitmentConfirmed)
	require.NoError(t, err)
	require.Len(t, sigs, 1)
	assert.NotNil(t, sigs[0].Err, "a failed signature is listed with its error")
	_, made := c.accounts[ata]
	assert.False(t, made, "a failed transfer makes no account")

	sent, err := c.send(solanaWallet, paywatch.USDC, big.NewInt(9), "", false)
	require.NoError(t, err)
	_, dropped, err := c.reorg(ctx, 1, false)
	require.NoError(t, err)
	assert.Equal(t, []string{sent.sig}, dropped)
	assert.Greater(t, c.made[len(c.made)-2], sent.slot, "the new fork's blocks come above the abandoned slot")
	_, made = c.accounts[ata]
	assert.False(t, made, "the account the dropped transfer made is gone with it")
	_, found, err = client.Credits(ctx, sent.sig, rpc.CommitmentConfirmed)
	require.NoError(t, err)
	assert.False(t, found, "gone with its slot")
	assert.Zero(t, c.balanceOf(ata).Sign(), "its balance given back")

	_, err = c.mine(ctx, solanaFinality+2)
	require.NoError(t, err)
	_, _, err = c.reorg(ctx, solanaFinality+1, false)
	assert.ErrorContains(t, err, "is finalized")

	// As nodes answer them: no "processed", a limit within 1..1000.
	for body, msg := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"getTransaction","params":["x",{"commitment":"processed"}]}`:                    "commitment below `confirmed`",
		`{"jsonrpc":"2.0","id":1,"method":"getSignaturesForAddress","params":["` + ata + `",{"commitment":"processed"}]}`: "commitment below `confirmed`",
		`{"jsonrpc":"2.0","id":1,"method":"getSignaturesForAddress","params":["` + ata + `",{"limit":0}]}`:                "Invalid limit; max 1000",
		`{"jsonrpc":"2.0","id":1,"method":"getSignaturesForAddress","params":["` + ata + `",{"limit":1001}]}`:             "Invalid limit; max 1000",
	} {
		resp, err := http.Post(c.url, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		var answer struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
		resp.Body.Close()
		assert.Equal(t, -32602, answer.Error.Code, body)
		assert.Contains(t, answer.Error.Message, msg, body)
	}
	_, err = c.send(c.faucet.PublicKey().String(), paywatch.USDC, big.NewInt(1), "", false)
	assert.ErrorContains(t, err, "cannot pay itself")

	for i := 1; i < len(c.made); i++ {
		assert.Greater(t, c.made[i], c.made[i-1])
	}
	assert.Greater(t, c.slot, uint64(len(c.made)), "some slots were skipped")
}

// The devnet's getTransaction answer has the keys of mainnet-beta's, at
// every level (chains/solana/testdata/mainnet, a recorded USDC
// transferChecked of 2026).
func TestSolanaDevnetSpeaksMainnetsWireFormat(t *testing.T) {
	c, _ := startSolanaT(t)
	sent, err := c.send(solanaWallet, paywatch.USDC, big.NewInt(1), "", false)
	require.NoError(t, err)
	resp, err := http.Post(c.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"getTransaction","params":["`+sent.sig+`",{"commitment":"confirmed","maxSupportedTransactionVersion":0}]}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	var devnet, mainnet map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&devnet))
	raw, err := os.ReadFile("../solana/testdata/mainnet/getTransaction_usdc_transferChecked_json.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &mainnet))
	assertSameKeys(t, "", mainnet, devnet)
}

// assertSameKeys holds two JSON values to the same keys in every object,
// following the first element of arrays.
func assertSameKeys(t *testing.T, where string, want, got any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		require.True(t, ok, "%s: an object", where)
		var wk, gk []string
		for k := range w {
			wk = append(wk, k)
		}
		for k := range g {
			gk = append(gk, k)
		}
		slices.Sort(wk)
		slices.Sort(gk)
		assert.Equal(t, wk, gk, "%s: the keys", where)
		for k, v := range w {
			if gv, ok := g[k]; ok && v != nil && gv != nil {
				assertSameKeys(t, where+"."+k, v, gv)
			}
		}
	case []any:
		g, ok := got.([]any)
		require.True(t, ok, "%s: an array", where)
		if len(w) > 0 && len(g) > 0 {
			assertSameKeys(t, where+"[]", w[0], g[0])
		}
	}
}

// Through the devnet's chain interface, as POST /devnet/transfers and
// /devnet/reorg reach it: a batch goes into one slot with each transfer's
// memo as its reference, all or nothing; only the faucet sends; a reorg
// with reinclude mines the same signed transactions again.
func TestSolanaDevnetAsAChain(t *testing.T) {
	c, client := startSolanaT(t)
	ctx := context.Background()
	ref := paywatch.NewSolanaReference()
	res, err := c.transfer(ctx, []TransferRequest{
		{Network: "SOLANA", Token: paywatch.USDC, To: solanaWallet, Amount: "25.5", Memo: ref},
		{Network: "SOLANA", Token: paywatch.PYUSD, To: solanaWallet, Amount: "0.000001"},
	}, false)
	require.NoError(t, err)
	require.Len(t, res, 2)
	assert.Equal(t, res[0].BlockNumber, res[1].BlockNumber, "one slot")
	assert.Equal(t, "25.50", res[0].Amount)
	assert.Equal(t, solanaWallet, res[0].To)
	credits, found, err := client.Credits(ctx, res[0].TxHash, rpc.CommitmentConfirmed)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, []string{ref}, credits[0].References)
	assert.Equal(t, "25500000", credits[0].Amount.String())

	st := c.status()
	assert.Equal(t, paywatch.Network("SOLANA"), st.Network)
	assert.Equal(t, res[0].BlockNumber, st.Head)
	assert.Len(t, st.Tokens, 3)

	_, err = c.transfer(ctx, []TransferRequest{{Network: "SOLANA", Token: paywatch.USDC, To: solanaWallet, Amount: "1", From: solanaWallet}}, false)
	assert.ErrorContains(t, err, "faucet only")
	_, err = c.transfer(ctx, []TransferRequest{{Network: "SOLANA", Token: paywatch.USDC, To: "BKHLvZxmSGUJRMX9WPPLFTQvRTktctpL6At2yWnxbLtV", Amount: "1"}}, false)
	assert.ErrorContains(t, err, "not a wallet's key", "a token account is no recipient")
	_, err = c.transfer(ctx, []TransferRequest{{Network: "SOLANA", Token: paywatch.USDC, To: solanaWallet, Amount: "0.0000001"}}, false)
	assert.Error(t, err, "7 decimals on a 6-decimal mint")
	head := st.Head
	_, err = c.transfer(ctx, []TransferRequest{
		{Network: "SOLANA", Token: paywatch.USDC, To: solanaWallet, Amount: "1"},
		{Network: "SOLANA", Token: paywatch.USDC, To: solanaWallet, Amount: "1000000000"},
	}, false)
	assert.ErrorContains(t, err, "transfer 2: insufficient balance")
	assert.Equal(t, head, c.status().Head, "all or nothing: no slot made")

	usdc, _ := c.mintOf(paywatch.USDC)
	ata, err := solana.AssociatedTokenAccount(solanaWallet, usdc.Mint, usdc.Program)
	require.NoError(t, err)
	_, dropped, err := c.reorg(ctx, 1, true)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{res[0].TxHash, res[1].TxHash}, dropped)
	credits, found, err = client.Credits(ctx, res[0].TxHash, rpc.CommitmentConfirmed)
	require.NoError(t, err)
	require.True(t, found, "mined again, the same signature")
	assert.Equal(t, "25500000", credits[0].Amount.String())
	assert.Equal(t, big.NewInt(25_500_000), c.balanceOf(ata))
}
