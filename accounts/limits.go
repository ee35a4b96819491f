package accounts

import (
	"context"
	"time"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// limit is a burst limit: at most max hits in any window of its length,
// per key (store.HitSliding's sliding-window counter, so that no burst
// fits twice the limit across a window's edge). The counters are in
// PostgreSQL, so every replica shares them. A hit is counted before the
// credentials are checked.
type limit struct {
	prefix string
	max    int64
	window time.Duration
}

// The dashboard's burst limits (interface.md "Limits" rule 5), each with
// its own key prefix.
var (
	limitSignInEmail   = limit{"dashboard:signin:email:", 10, time.Minute}
	limitSignInIP      = limit{"dashboard:signin:ip:", 20, 15 * time.Minute}
	limitRegisterEmail = limit{"dashboard:register:email:", 3, time.Hour}
	limitResendEmail   = limit{"dashboard:resend:email:", 3, 15 * time.Minute}
	limitResetEmail    = limit{"dashboard:reset:email:", 3, time.Hour}
	// limitMailIP is paywatch's own: the three forms that send an e-mail
	// to an address typed in (register, resend, reset) share 20 per hour
	// per client IP, so one client cannot mail many addresses.
	limitMailIP = limit{"dashboard:mail:ip:", 20, time.Hour}
	// limitTwoFactor counts every code check of an account: sign-in's
	// second step, enabling and disabling two factors.
	limitTwoFactor = limit{"dashboard:2fa:account:", 10, 15 * time.Minute}
	// limitProtectionKey counts only wrong protection keys: every attempt
	// is counted first and a right one taken back (store.ForgiveRate).
	limitProtectionKey = limit{"dashboard:protection:account:", 5, 15 * time.Minute}
	// limitInvite is paywatch's own: 20 invitations per hour per project,
	// so a taken-over owner account cannot send mail in bulk.
	limitInvite = limit{"dashboard:invite:project:", 20, time.Hour}
	// limitConfirm is paywatch's own: 10 password tries per confirmation
	// link per 15 minutes, counted before the link's transaction.
	limitConfirm = limit{"dashboard:confirm:link:", 10, 15 * time.Minute}
)

// hit counts one attempt under l for id and answers ERATELIMIT "Too many
// requests" once the window's count passes the limit.
func (s *Service) hit(ctx context.Context, l limit, id string) (store.RateWindow, error) {
	w, err := s.deps.Store.HitSliding(ctx, l.prefix+id, l.window)
	if err != nil {
		return w, err
	}
	if w.Count > l.max {
		return w, paywatch.Errorf(paywatch.ERATELIMIT, "%s", paywatch.MsgTooManyRequests)
	}
	return w, nil
}
