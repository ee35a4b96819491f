package chains_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
)

func TestSetOffersItsNetworks(t *testing.T) {
	ctx := context.Background()
	s, err := chains.DialSet(ctx,
		chains.Config{Network: paywatch.ERC20, URLs: []string{"http://127.0.0.1:1"}},
		chains.Config{Network: paywatch.TRC20, URLs: []string{"127.0.0.1:1"}},
	)
	require.NoError(t, err, "dialling does no I/O: a dead endpoint does not stop the start")
	defer s.Close()

	assert.Equal(t, []paywatch.Network{paywatch.TRC20, paywatch.ERC20}, s.Networks(), "API order")
	c, err := s.Client(paywatch.ERC20)
	require.NoError(t, err)
	assert.Equal(t, paywatch.ERC20, c.Network())
	assert.True(t, s.Offers(paywatch.TRC20))
	assert.False(t, s.Offers(paywatch.POLYGON))
	_, err = s.Client(paywatch.POLYGON)
	require.ErrorIs(t, err, chains.ErrNotOffered)
	assert.Contains(t, err.Error(), "POLYGON")

	_, err = chains.DialSet(ctx,
		chains.Config{Network: paywatch.ERC20, URLs: []string{"http://127.0.0.1:1"}},
		chains.Config{Network: paywatch.ERC20, URLs: []string{"http://127.0.0.1:2"}},
	)
	assert.ErrorContains(t, err, "two clients for network ERC20")
	_, err = chains.DialSet(ctx, chains.Config{Network: paywatch.ERC20, URLs: []string{"ftp://x"}})
	assert.Error(t, err)

	var empty *chains.Set
	assert.Empty(t, empty.Networks())
	_, err = empty.Client(paywatch.TRC20)
	assert.ErrorIs(t, err, chains.ErrNotOffered)
	empty.Close()
}
