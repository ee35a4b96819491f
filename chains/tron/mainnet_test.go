package tron

import (
	"encoding/hex"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/fbsobreira/gotron-sdk/pkg/proto/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// Recorded Tron mainnet answers of the FullNode HTTP API
// (testdata/mainnet/SOURCE.md names where each comes from), read as the
// client reads them: the HTTP form directly, and the gRPC form as the
// same data in gotron-sdk's protobufs (no recorded gRPC answer was found,
// so it is built field for field from the recorded JSON).

// expectedTransfer is one entry of testdata/mainnet/expected.json.
type expectedTransfer struct {
	Block    uint64 `json:"block"`
	BlockID  string `json:"block_id"`
	TxID     string `json:"txid"`
	From     string `json:"from"`
	To       string `json:"to"`
	Contract string `json:"contract"`
	Amount   string `json:"amount"`
}

func loadExpected(t *testing.T) map[string]expectedTransfer {
	t.Helper()
	var doc struct {
		Transfers []expectedTransfer `json:"transfers"`
	}
	raw, err := os.ReadFile("testdata/mainnet/expected.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &doc))
	out := map[string]expectedTransfer{}
	for _, e := range doc.Transfers {
		out[e.TxID] = e
	}
	return out
}

// mainnetNode serves the recorded answers as a FullNode HTTP API would,
// {} and [] for anything else, and returns a client of it.
func mainnetNode(t *testing.T) *Client {
	t.Helper()
	block, err := os.ReadFile("testdata/mainnet/getblockbynum-43811922.json")
	require.NoError(t, err)
	infos, err := os.ReadFile("testdata/mainnet/gettransactioninfobyblocknum-30864600.json")
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Num uint64 `json:"num"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch {
		case r.URL.Path == "/wallet/getblockbynum" && req.Num == 43811922:
			_, _ = w.Write(block)
		case r.URL.Path == "/wallet/gettransactioninfobyblocknum" && req.Num == 30864600:
			_, _ = w.Write(infos)
		case r.URL.Path == "/wallet/gettransactioninfobyblocknum":
			_, _ = w.Write([]byte("[]"))
		default:
			_, _ = w.Write([]byte("{}"))
		}
	}))
	t.Cleanup(srv.Close)
	c, err := Dial(t.Context(), chainapi.Config{Network: paywatch.TRC20, URLs: []string{srv.URL}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// The recorded block 43811922 reads as the client needs it: its number
// and id, and its transaction ids in block order.
func TestMainnetBlockHTTPForm(t *testing.T) {
	c := mainnetNode(t)
	h, ok, err := c.eps.All()[0].blockByNum(t.Context(), 43811922)
	require.NoError(t, err)
	require.True(t, ok)
	id, err := c.BlockHash(t.Context(), 43811922)
	require.NoError(t, err, "the client's own read checks the id against the number")
	assert.Equal(t, hex.EncodeToString(h.id), id)
	_, err = c.BlockHash(t.Context(), 43811923)
	assert.ErrorIs(t, err, chainapi.ErrBlockNotFound, "{} is an unknown block")
	assert.Equal(t, uint64(43811922), h.num)
	require.NoError(t, checkBlockID(h.id, h.num), "the id starts with the block's number")
	assert.Positive(t, h.time)
	exp := loadExpected(t)
	var ids []string
	for _, id := range h.txids {
		ids = append(ids, hex.EncodeToString(id))
	}
	require.Len(t, ids, 6, "the fixture keeps the block's first six transactions")
	for _, want := range exp {
		if want.Block != h.num {
			continue
		}
		assert.Equal(t, want.BlockID, hex.EncodeToString(h.id))
		assert.Contains(t, ids, want.TxID)
	}
	assert.Equal(t, "d057c8aa75c5267a6d723be4c28bf8e2b486d363d70713508a50c57c829313de", ids[1])
}

// The recorded transaction infos of block 30864600 give the USDT transfer
// the explorer would show (decoded by hand, see expected.json): in the
// HTTP form and in the gRPC form alike. The first info (a TRX transfer,
// whose receipt has no contract result) yields nothing.
func TestMainnetTransactionInfos(t *testing.T) {
	c := mainnetNode(t)
	fromHTTP, err := c.eps.All()[0].blockInfos(t.Context(), 30864600)
	require.NoError(t, err)
	require.Len(t, fromHTTP, 2)
	empty, err := c.eps.All()[0].blockInfos(t.Context(), 30864601)
	require.NoError(t, err)
	assert.Empty(t, empty, "[] is a block without transactions")

	// The gRPC form: no recorded gRPC answer was found, so this is the
	// recorded JSON decoded straight into the wire structs and carried
	// over field for field into gotron-sdk's protobuf. It checks
	// infoOfProto on real values, not the recording of a gRPC answer.
	raw, err := os.ReadFile("testdata/mainnet/gettransactioninfobyblocknum-30864600.json")
	require.NoError(t, err)
	var infos []httpInfo
	require.NoError(t, json.Unmarshal(raw, &infos))
	fromGRPC := make([]txInfo, len(infos))
	for i, info := range infos {
		fromGRPC[i] = infoOfProto(protoOf(info))
	}
	assert.False(t, fromHTTP[0].ok, "a TRX transfer's receipt has no SUCCESS contract result")
	assert.True(t, fromHTTP[1].ok)

	want := loadExpected(t)["0af79242191c6728b79e858a36a4b5c65e4e52b9fcee4dc5af30eac57b6d0953"]
	amount, ok := new(big.Int).SetString(want.Amount, 10)
	require.True(t, ok)
	b := block{num: 30864600, id: "recorded-without-its-block"}
	for form, parsed := range map[string][]txInfo{"http": fromHTTP, "grpc": fromGRPC} {
		got := c.decodeBlock(b, parsed, "")
		require.Len(t, got, 1, form)
		assert.Equal(t, chainapi.Transfer{
			Network: paywatch.TRC20, Token: paywatch.USDT, Contract: want.Contract,
			TxHash: want.TxID, LogIndex: 0, BlockNumber: want.Block, BlockHash: b.id,
			From: want.From, To: want.To, Amount: amount,
		}, got[0], form)
	}
}

// protoOf is a recorded HTTP-form info as the gRPC API carries it.
func protoOf(i httpInfo) *core.TransactionInfo {
	out := &core.TransactionInfo{Id: i.ID, BlockNumber: i.BlockNumber, Receipt: &core.ResourceReceipt{}}
	if i.Result == "FAILED" {
		out.Result = core.TransactionInfo_FAILED
	}
	if v, ok := core.Transaction_ResultContractResult_value[i.Receipt.Result]; ok {
		out.Receipt.Result = core.Transaction_ResultContractResult(v)
	}
	for _, l := range i.Log {
		pl := &core.TransactionInfo_Log{Address: l.Address, Data: l.Data}
		for _, tp := range l.Topics {
			pl.Topics = append(pl.Topics, tp)
		}
		out.Log = append(out.Log, pl)
	}
	return out
}
