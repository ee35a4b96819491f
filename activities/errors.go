package activities

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/workflows"
)

// rateLimitBackoff is how long an activity waits after every RPC endpoint
// refused it for rate limiting.
const rateLimitBackoff = 30 * time.Second

// temporalError is the one place where errors of the store and the chains
// become Temporal errors. A *paywatch.Error is a verdict, not a failure: it
// becomes a non-retryable application error whose type is its code, which
// selects the HTTP status and whose message is the exact API text,
// with the error's extra fields as its one detail. A chain rate limit stays
// retryable, after a back-off. Anything else is returned as is: Temporal
// retries it under the activity's retry policy.
func temporalError(err error) error {
	if err == nil {
		return nil
	}
	var pe *paywatch.Error
	if errors.As(err, &pe) {
		if workflows.Rejectable(pe.Code) {
			opts := temporal.ApplicationErrorOptions{NonRetryable: true}
			if len(pe.Fields) > 0 {
				opts.Details = []any{workflows.ErrorFields(pe.Fields)}
			}
			return temporal.NewApplicationErrorWithOptions(pe.Message, pe.Code, opts)
		}
	}
	if errors.Is(err, chains.ErrRateLimited) {
		return temporal.NewApplicationErrorWithOptions(err.Error(), workflows.ErrTypeRateLimited, temporal.ApplicationErrorOptions{
			NextRetryDelay: rateLimitBackoff, Cause: err,
		})
	}
	return err
}
