package paywatch_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// The USDT jetton master on TON, as Tether and TON's explorers name it:
// raw and bounceable forms of one address (docs.ton.org/ecosystem/appkit/jettons;
// the raw form is its base64 decoded).
const (
	tonUSDTRaw        = "0:b113a994b5024a16719f69139328eb759596c38a25f59028b146fecdc3621dfe"
	tonUSDTBounceable = "EQCxE6mUtQJKFnGfaROTKOt1lZbDiiX1kCixRv7Nw2Id_sDs"
)

// A TON address in any of its mainnet forms is one canonical address: the
// non-bounceable user-friendly form wallets show.
func TestNormalizeTONWallet(t *testing.T) {
	canon, err := paywatch.NormalizeTONWallet(tonUSDTBounceable)
	require.NoError(t, err)
	assert.Equal(t, "UQ", canon[:2], "non-bounceable, mainnet")
	for _, form := range []string{tonUSDTRaw, " " + tonUSDTBounceable + "\n", canon, "0:B113A994B5024A16719F69139328EB759596C38A25F59028B146FECDC3621DFE"} {
		got, err := paywatch.NormalizeTONWallet(form)
		require.NoError(t, err, form)
		assert.Equal(t, canon, got, form)
	}
	// The library's own vectors: one key, bounceable and not.
	a, err := paywatch.NormalizeTONWallet("EQC6KV4zs8TJtSZapOrRFmqSkxzpq-oSCoxekQRKElf4nC1I")
	require.NoError(t, err)
	assert.Equal(t, "UQC6KV4zs8TJtSZapOrRFmqSkxzpq-oSCoxekQRKElf4nHCN", a)

	for in, msg := range map[string]string{
		"": "invalid TON address: want a wallet's address, raw (0:<hex>) or user-friendly (UQ… or EQ…)",
		"EQCxE6mUtQJKFnGfaRORKOt1lZbDiiX1kCixRv7Nw2Id_sDt":                    "invalid TON address: bad checksum or encoding (a mistyped address?)",
		"kQC6KV4zs8TJtSZapOrRFmqSkxzpq-oSCoxekQRKElf4nJbC":                    "invalid TON address: a testnet address; give the wallet's mainnet address",
		"-1:b113a994b5024a16719f69139328eb759596c38a25f59028b146fecdc3621dfe": `invalid TON address: workchain "-1"; give a basechain (0) wallet`,
		"0:b113a994":                         "invalid TON address: a raw address is <workchain>:<64 hex digits>",
		"0:" + "zz" + tonUSDTRaw[4:]:         "invalid TON address: not hexadecimal",
		"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t": "invalid TON address: a user-friendly address has 48 characters",
	} {
		_, err := paywatch.NormalizeTONWallet(in)
		assert.EqualError(t, err, msg, in)
	}
}
