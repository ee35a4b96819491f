package ton

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// `paywatch check` on TON Center without a key is a problem (1 request a
// second cannot keep up with a waiting payment's polls); with a key in
// the header or the URL, or on a self-hosted indexer, it is a note.
func TestKeyCheck(t *testing.T) {
	for _, tt := range []struct {
		url    string
		header http.Header
		ok     bool
	}{
		{"https://toncenter.com/api/v3", nil, false},
		{"https://toncenter.com/api/v3", http.Header{"X-Api-Key": {"k"}}, true},
		{"https://toncenter.com/api/v3?api_key=k", nil, true},
		{"http://10.0.0.5:8081/api/v3", nil, true},
	} {
		c, err := Dial([]string{tt.url}, []http.Header{tt.header}, nil)
		require.NoError(t, err)
		ch, err := NewChain(paywatch.TON, c, paywatch.USDT, paywatch.DefaultContract(paywatch.TON, paywatch.USDT))
		require.NoError(t, err)
		f := ch.keyCheck()
		assert.Equal(t, tt.ok, f.OK, tt.url)
		assert.Equal(t, !tt.ok, f.Required, tt.url)
	}
}
