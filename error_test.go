package paywatch_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/paywatch/paywatch"
)

func TestErrors(t *testing.T) {
	e := paywatch.Errorf(paywatch.ECONFLICT, "Cannot cancel payment with status %q. Only pending payments can be cancelled.", "paid")
	assert.Equal(t, `Cannot cancel payment with status "paid". Only pending payments can be cancelled.`, e.Error())
	assert.Equal(t, paywatch.ECONFLICT, paywatch.ErrorCode(e))
	assert.Equal(t, e.Message, paywatch.ErrorMessage(e))

	wrapped := fmt.Errorf("creating payment: %w", e)
	assert.Equal(t, paywatch.ECONFLICT, paywatch.ErrorCode(wrapped))
	assert.Equal(t, e.Message, paywatch.ErrorMessage(wrapped))

	plain := errors.New("pq: connection refused")
	assert.Equal(t, paywatch.EINTERNAL, paywatch.ErrorCode(plain))
	assert.Equal(t, "Internal error", paywatch.ErrorMessage(plain))

	assert.Equal(t, "", paywatch.ErrorCode(nil))
	assert.Equal(t, "", paywatch.ErrorMessage(nil))

	withFields := &paywatch.Error{Code: paywatch.ECONFLICT, Message: "Payment already exists with different amount", Fields: map[string]any{"existing_amount": "10.00"}}
	var got *paywatch.Error
	assert.True(t, errors.As(fmt.Errorf("x: %w", withFields), &got))
	assert.Equal(t, "10.00", got.Fields["existing_amount"])

	codes := []string{paywatch.EINVALID, paywatch.ECONFLICT, paywatch.ENOTFOUND, paywatch.EUNAUTHORIZED,
		paywatch.EFORBIDDEN, paywatch.ERATELIMIT, paywatch.EGONE, paywatch.EINTERNAL}
	seen := map[string]bool{}
	for _, c := range codes {
		assert.NotEmpty(t, c)
		assert.False(t, seen[c], "duplicate code %s", c)
		seen[c] = true
	}

	// User input in messages is quoted and cut short.
	_, err := paywatch.ParseNetwork(string(make([]byte, 1000)))
	assert.Less(t, len(err.Error()), 400)
}
