package evm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// jsonRPCError is a JSON-RPC error as go-ethereum's rpc client returns one.
type jsonRPCError struct {
	code int
	msg  string
}

func (e jsonRPCError) Error() string  { return e.msg }
func (e jsonRPCError) ErrorCode() int { return e.code }

var _ rpc.Error = jsonRPCError{}

func TestNormalizeAndClassify(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		is    error
		class chainapi.Failure
	}{
		{"geth range limit", jsonRPCError{-32602, "exceed maximum block range 5000"}, chainapi.ErrRangeTooLarge, chainapi.Final},
		{"infura too many results", jsonRPCError{-32005, "query returned more than 10000 results"}, chainapi.ErrRangeTooLarge, chainapi.Final},
		{"alchemy response size", jsonRPCError{-32602, "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range"}, chainapi.ErrRangeTooLarge, chainapi.Final},
		{"ankr too wide", jsonRPCError{-32062, "block range is too wide"}, chainapi.ErrRangeTooLarge, chainapi.Final},
		{"quicknode", jsonRPCError{-32614, "eth_getLogs is limited to a 10,000 range"}, chainapi.ErrRangeTooLarge, chainapi.Final},
		{"past the head is not a range limit", jsonRPCError{-32602, "invalid block range params: block range extends beyond current head block"}, nil, chainapi.Final},
		{"rate limit message", jsonRPCError{-32005, "daily request count exceeded, request rate limited"}, chainapi.ErrRateLimited, chainapi.Limited},
		{"http 429", rpc.HTTPError{StatusCode: http.StatusTooManyRequests, Status: "429 Too Many Requests"}, chainapi.ErrRateLimited, chainapi.Limited},
		{"http 503", rpc.HTTPError{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable"}, nil, chainapi.Failover},
		{"http 401", rpc.HTTPError{StatusCode: http.StatusUnauthorized, Status: "401 Unauthorized"}, nil, chainapi.Failover},
		{"transport", fmt.Errorf("Post \"http://x\": %w", errors.New("connection refused")), nil, chainapi.Failover},
		{"not found", ethereum.NotFound, ethereum.NotFound, chainapi.Final},
		{"other node error", jsonRPCError{-32000, "header not found"}, nil, chainapi.Final},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := normalize(tc.err)
			assert.ErrorContains(t, err, tc.err.Error(), "the cause is kept")
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			} else {
				assert.NotErrorIs(t, err, chainapi.ErrRangeTooLarge)
				assert.NotErrorIs(t, err, chainapi.ErrRateLimited)
			}
			assert.Equal(t, tc.class, classify(err))
		})
	}
}

func TestRedact(t *testing.T) {
	name := func(raw string) string { return chainapi.NewRedactor(raw, nil).Name() }
	assert.Equal(t, "https://mainnet.infura.io/…", name("https://mainnet.infura.io/v3/secretkey"))
	assert.Equal(t, "https://rpc.example/…", name("https://user:pass@rpc.example?apikey=secret"))
	assert.Equal(t, "http://127.0.0.1:8545", name("http://127.0.0.1:8545/"))
}

// A provider's API key sits in its URL's path or query; an unreachable
// endpoint's error names the endpoint without it.
func TestTransportErrorsDoNotShowTheURLsKey(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c, err := Dial(context.Background(), chainapi.Config{
		Network: paywatch.ERC20,
		URLs:    []string{"http://user:pw-secret@" + addr + "/v3/key-in-path?apikey=key-in-query"},
	})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Head(context.Background())
	require.ErrorIs(t, err, chainapi.ErrUnavailable)
	assert.Contains(t, err.Error(), addr, "the endpoint is named")
	for _, secret := range []string{"pw-secret", "key-in-path", "key-in-query"} {
		assert.NotContains(t, err.Error(), secret)
	}
}
