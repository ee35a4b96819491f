package accounts_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// Each burst limit (interface.md "Limits" rule 5, and paywatch's own per-IP
// limit of the e-mail forms) answers 429 "Too many requests" at the first
// attempt past it, right credentials or not, and lets attempts through
// again in the next window.
func TestBurstLimits(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		max    int
		window time.Duration
		// setup prepares the env; attempt makes the i-th attempt.
		setup   func(e *env) any
		attempt func(e *env, state any, i int) error
	}{
		"sign-in per address": {10, time.Minute,
			func(e *env) any { return e.signUp("a@example.com") },
			func(e *env, _ any, i int) error {
				_, err := e.svc.SignIn(e.ctx, "a@example.com", password, fmt.Sprintf("10.0.0.%d", i), testUA)
				return err
			}},
		"sign-in per IP": {20, 15 * time.Minute,
			func(e *env) any { return nil },
			func(e *env, _ any, i int) error {
				_, err := e.svc.SignIn(e.ctx, fmt.Sprintf("u%d@example.com", i), password, testIP, testUA)
				return err
			}},
		"registration per address": {3, time.Hour,
			func(e *env) any { return nil },
			func(e *env, _ any, i int) error {
				return e.svc.Register(e.ctx, "b@example.com", password, fmt.Sprintf("10.0.0.%d", i))
			}},
		"confirmation resend per address": {3, 15 * time.Minute,
			func(e *env) any {
				require.NoError(e.t, e.svc.Register(e.ctx, "c@example.com", password, "10.9.9.9"))
				return nil
			},
			func(e *env, _ any, i int) error {
				return e.svc.ResendConfirmation(e.ctx, "c@example.com", fmt.Sprintf("10.0.0.%d", i))
			}},
		"password reset per address": {3, time.Hour,
			func(e *env) any { return e.signUp("d@example.com") },
			func(e *env, _ any, i int) error {
				return e.svc.RequestPasswordReset(e.ctx, "d@example.com", fmt.Sprintf("10.0.0.%d", i))
			}},
		"e-mail forms per IP": {20, time.Hour,
			func(e *env) any { return nil },
			func(e *env, _ any, i int) error {
				email := fmt.Sprintf("u%d@example.com", i)
				switch i % 3 {
				case 0:
					return e.svc.Register(e.ctx, email, password, testIP)
				case 1:
					return e.svc.ResendConfirmation(e.ctx, email, testIP)
				}
				return e.svc.RequestPasswordReset(e.ctx, email, testIP)
			}},
		"two-factor checks per account": {10, 15 * time.Minute,
			func(e *env) any {
				a := e.signUp("e@example.com")
				secret, _, err := e.svc.BeginTOTP(e.ctx, a.ID)
				require.NoError(e.t, err)
				return [2]any{a.ID, secret}
			},
			func(e *env, state any, i int) error {
				s := state.([2]any)
				id, secret := s[0].(int64), s[1].(string)
				if i < 9 {
					_, err := e.svc.EnableTOTP(e.ctx, id, "000000", testIP)
					return err
				}
				if i == 9 { // the tenth check enables, with the right code
					_, err := e.svc.EnableTOTP(e.ctx, id, code(e, secret, 0), testIP)
					return err
				}
				// Past the limit, the second step of sign-in and disabling
				// are refused too.
				res, err := e.svc.SignIn(e.ctx, "e@example.com", password, testIP, testUA)
				require.NoError(e.t, err)
				if _, err := e.svc.SecondFactor(e.ctx, res.Pending, code(e, secret, 0), testIP, testUA); paywatch.ErrorCode(err) != paywatch.ERATELIMIT {
					return err
				}
				return e.svc.DisableTOTP(e.ctx, id, code(e, secret, 0), testIP)
			}},
		"wrong protection keys per account": {5, 15 * time.Minute,
			func(e *env) any {
				a := e.signUp("f@example.com")
				require.NoError(e.t, e.svc.SetProtectionKey(e.ctx, a.ID, password, "protect me"))
				return a.ID
			},
			func(e *env, state any, i int) error {
				err := e.svc.CheckProtectionKey(e.ctx, state.(int64), fmt.Sprintf("wrong key %d", i))
				if paywatch.ErrorCode(err) == paywatch.ERATELIMIT {
					// Right keys are refused too once the limit is hit.
					return e.svc.CheckProtectionKey(e.ctx, state.(int64), "protect me")
				}
				return err
			}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			state := tc.setup(e)
			for i := range tc.max {
				err := tc.attempt(e, state, i)
				require.NotEqual(t, paywatch.ERATELIMIT, paywatch.ErrorCode(err), "attempt %d: %v", i+1, err)
			}
			requireCode(t, tc.attempt(e, state, tc.max), paywatch.ERATELIMIT, paywatch.MsgTooManyRequests)
			// A sliding window: the hits weigh on the next fixed window as
			// much as it still overlaps theirs, and are gone a window later.
			e.clk.Add(2 * tc.window)
			err := tc.attempt(e, state, tc.max+1)
			require.NotEqual(t, paywatch.ERATELIMIT, paywatch.ErrorCode(err), "next window: %v", err)
		})
	}
}
