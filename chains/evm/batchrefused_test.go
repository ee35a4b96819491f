package evm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/assert"
)

// Only an answer that says "no batches" turns batching off: a rate limit,
// a server error or a lost connection is a failure for the retries.
func TestBatchRefused(t *testing.T) {
	var list []int
	unmarshal := json.Unmarshal([]byte(`{"jsonrpc":"2.0","error":{}}`), &list)
	for _, c := range []struct {
		err  error
		want bool
	}{
		{rpc.HTTPError{StatusCode: http.StatusBadRequest}, true},
		{fmt.Errorf("post: %w", rpc.HTTPError{StatusCode: http.StatusMethodNotAllowed}), true},
		{unmarshal, true},
		{rpc.HTTPError{StatusCode: http.StatusTooManyRequests}, false},
		{rpc.HTTPError{StatusCode: http.StatusBadGateway}, false},
		{errors.New("connection reset by peer"), false},
	} {
		assert.Equal(t, c.want, batchRefused(c.err), "%v", c.err)
	}
}
