package accounts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/alexedwards/argon2id"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// Lengths of passwords and protection keys, in characters.
const (
	MinPasswordLength      = 10
	MaxPasswordLength      = 200
	MinProtectionKeyLength = 8
	MaxProtectionKeyLength = 200
)

// argonParams are OWASP's recommended argon2id parameters (19 MiB, two
// passes, one lane), a little lighter than the library's defaults (64 MiB):
// every sign-in in flight holds that memory, and a fixed lane count keeps a
// hash's cost the same on every machine. The parameters are part of each
// stored hash, so raising them later keeps old hashes working.
var argonParams = &argon2id.Params{Memory: 19 * 1024, Iterations: 2, Parallelism: 1, SaltLength: 16, KeyLength: 32}

// dummyHash is compared against when there is no hash to compare, so that
// an unknown address takes as long as a wrong password.
var dummyHash = sync.OnceValue(func() string {
	h, err := argon2id.CreateHash("paywatch timing equaliser", argonParams)
	if err != nil {
		panic(err)
	}
	return h
})

// hashSecret hashes a password or protection key for storing.
func hashSecret(secret string) (string, error) {
	return argon2id.CreateHash(secret, argonParams)
}

// matchSecret compares a password or protection key with its stored hash
// in constant time; with no hash ("") it spends the same time and fails.
func matchSecret(secret, hash string) bool {
	if hash == "" {
		_, _ = argon2id.ComparePasswordAndHash(secret, dummyHash())
		return false
	}
	ok, err := argon2id.ComparePasswordAndHash(secret, hash)
	return err == nil && ok
}

// validatePassword checks a new password's length.
func validatePassword(p string) error {
	if n := utf8.RuneCountInString(p); n < MinPasswordLength || n > MaxPasswordLength {
		return paywatch.Errorf(paywatch.EINVALID, "%s", paywatch.MsgPasswordLength)
	}
	return nil
}

// newToken returns a link or cookie token (32 random bytes, base64url) and
// the SHA-256 that is stored in its place.
func newToken() (token string, hash []byte) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	token = base64.RawURLEncoding.EncodeToString(b[:])
	return token, hashToken(token)
}

// hashToken is how link and cookie tokens are looked up. A plain SHA-256
// is enough: the tokens are random, so there is nothing to guess.
func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// randomString returns 32 random bytes, base64url, for CSRF tokens.
func randomString() string {
	t, _ := newToken()
	return t
}

// normalEmail is the address a limit or lookup uses for input that may not
// be a valid address: trimmed, lower case, and cut to a sane length.
func normalEmail(s string) string {
	return storable(strings.ToLower(strings.TrimSpace(s)), 320)
}

// storable makes text typed or sent by a client safe for a PostgreSQL text
// column and a log line: valid UTF-8, no control characters, at most max
// bytes. An address with such characters matches no account anyway.
func storable(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	for len(s) > max {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// linkGone is the answer for a link that is unknown, used or expired.
func linkGone() error {
	return paywatch.Errorf(paywatch.EGONE, "%s", paywatch.MsgLinkGone)
}

// link returns the dashboard URL of path with a token.
func (s *Service) link(path, token string) string {
	return s.dashboardURL() + path + "?token=" + token
}

// startMail starts the delivery of a queued e-mail; the reconciler starts
// it if this does not.
func (s *Service) startMail(ctx context.Context, m *store.Mail) {
	if m != nil && s.deps.StartMail != nil {
		// The start takes a Temporal call that an unknown address does not
		// make, so the forms that answer alike (register, reset) differ in
		// time by a few milliseconds; their limits (3 an hour per address,
		// 20 an hour per client) keep that from listing accounts at scale.
		s.deps.StartMail(context.WithoutCancel(ctx), m.ID)
	}
}
