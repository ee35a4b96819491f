package ton

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xssnick/tonutils-go/address"
	"github.com/xssnick/tonutils-go/tvm/cell"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// An account destroyed and deployed again starts a new chain of
// transactions (its first names lt 0): the read takes the older life's
// transactions after it without asking for a link, rather than waiting
// for one that can never be listed. A break anywhere else is a gap.
func TestReadOwnerAcrossAnAccountsTwoLives(t *testing.T) {
	wallet := address.MustParseRawAddr("0:b7f5cd75f68a8f91a07e7e203cfc429f7a33f6e3f232282344c8a154b2f5ec7c")
	owner, err := paywatch.NormalizeTONWallet("0:1f5806c73d03bbc96eb7eebf16067f1f2e8e270cfa16d57001aa9eaf7456f008")
	require.NoError(t, err)
	row := func(lt, prev, mc uint64) map[string]any {
		h := make([]byte, 32)
		h[0] = byte(lt)
		return map[string]any{"account": wallet.StringRaw(), "hash": base64.StdEncoding.EncodeToString(h), "lt": strconv.FormatUint(lt, 10),
			"prev_trans_lt": strconv.FormatUint(prev, 10), "mc_block_seqno": mc, "now": 1, "description": map[string]any{"aborted": false}}
	}
	var rows []map[string]any
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/runGetMethod":
			boc := base64.StdEncoding.EncodeToString(cell.BeginCell().MustStoreAddr(wallet).EndCell().ToBOC())
			_ = json.NewEncoder(w).Encode(map[string]any{"gas_used": 1, "exit_code": 0, "stack": []any{map[string]any{"type": "cell", "value": boc}}})
		case "/transactions":
			_ = json.NewEncoder(w).Encode(map[string]any{"transactions": rows, "address_book": map[string]any{}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer api.Close()
	client, err := Dial([]string{api.URL}, nil, nil)
	require.NoError(t, err)
	ch, err := NewChain(paywatch.TON, client, paywatch.USDT, paywatch.DefaultContract(paywatch.TON, paywatch.USDT))
	require.NoError(t, err)
	a := chainapi.AccountCursor{Account: owner, Owner: owner}

	rows = []map[string]any{row(500, 400, 20), row(400, 0, 19), row(300, 200, 12), row(200, 100, 11), row(100, 0, 10)}
	r, err := ch.readOwner(t.Context(), a, 15, 20)
	require.NoError(t, err, "the newer life ends at lt 0; the older one follows unlinked")
	assert.Equal(t, "500:"+hashOf(t, rows[0]), r.cursor.Signature)

	rows = []map[string]any{row(500, 400, 20), row(300, 200, 12), row(200, 100, 11)}
	_, err = ch.readOwner(t.Context(), a, 15, 20)
	assert.ErrorIs(t, err, chainapi.ErrIncompleteRead, "lt 400 named and not listed")
}

func hashOf(t *testing.T, row map[string]any) string {
	h, err := hashHex(row["hash"].(string))
	require.NoError(t, err)
	return h
}
