package tron

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/devnet"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// A batch whose HTTP answer is over the size cap (busy mainnet blocks run
// to ~1 KB of JSON per transaction) is read in halves, so that catching up
// can't stall on one batch; every transfer is still read once, in order.
func TestHTTPBatchOverTheSizeCapIsReadInHalves(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := devnet.Start(ctx, devnet.Config{Networks: []paywatch.Network{paywatch.TRC20}})
	require.NoError(t, err)
	defer d.Close()
	st, _ := d.Network(paywatch.TRC20)
	var sent []string
	for range 24 {
		res, err := d.Transfer(ctx, devnet.TransferRequest{Network: paywatch.TRC20, Token: paywatch.USDT, To: devnet.Accounts()[1].Tron, Amount: "1"})
		require.NoError(t, err)
		sent = append(sent, res.TxHash)
	}
	c, err := Dial(ctx, chainapi.Config{Network: paywatch.TRC20, URLs: []string{st.HTTPURL}, Contracts: st.Tokens})
	require.NoError(t, err)
	defer c.Close()
	head, err := c.Head(ctx)
	require.NoError(t, err)

	whole, err := c.Transfers(ctx, 1, head)
	require.NoError(t, err)
	require.Len(t, whole, len(sent))
	calls := c.Calls()

	c.eps.All()[0].(*httpNode).maxAnswer = 8 << 10 // about 5 of these blocks
	halved, err := c.Transfers(ctx, 1, head)
	require.NoError(t, err)
	assert.Equal(t, whole, halved)
	assert.Greater(t, c.Calls()-calls, calls, "the halves cost more calls than the whole")

	c.eps.All()[0].(*httpNode).maxAnswer = 100 // not even one block
	_, err = c.Transfers(ctx, 1, head)
	assert.ErrorIs(t, err, chainapi.ErrRangeTooLarge, "one block over the cap is an error, not a skipped block")
}
