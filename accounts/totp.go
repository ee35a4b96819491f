package accounts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"net/url"
	"strconv"
	"strings"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	"github.com/pquerna/otp/totp"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// TOTP parameters (RFC 6238): what every authenticator app supports.
const (
	totpIssuer = "paywatch"
	totpPeriod = 30 // seconds per step
	totpSkew   = 1  // steps accepted either side of now, for clock drift
)

// Recovery codes: ten of twelve characters from an alphabet without look-
// alikes (no i, l, o, 0, 1), shown as abcd-efgh-jkmn: about 59 bits each.
const (
	recoveryCodes    = 10
	recoveryLength   = 12
	recoveryAlphabet = "abcdefghjkmnpqrstuvwxyz23456789"
)

// invalidCode is the answer for a wrong or used two-factor code.
func invalidCode() error {
	return paywatch.Errorf(paywatch.EUNAUTHORIZED, "%s", paywatch.MsgInvalidCode)
}

// BeginTOTP makes a new TOTP secret for an account, kept aside until
// EnableTOTP confirms it; it returns the secret and its otpauth:// URL for
// the QR code.
//
// The secret is stored readable, unlike passwords: it is a shared secret
// the server needs to compute the codes the app shows.
func (s *Service) BeginTOTP(ctx context.Context, accountID int64) (secret, url string, err error) {
	auth, err := s.deps.Store.AccountAuthByID(ctx, accountID)
	if err != nil {
		return "", "", err
	}
	if auth.TOTPSecret != "" {
		return "", "", paywatch.Errorf(paywatch.ECONFLICT, "%s", paywatch.MsgTwoFactorOn)
	}
	key, err := totp.Generate(totp.GenerateOpts{
		Issuer: totpIssuer, AccountName: auth.Account.Email,
		Period: totpPeriod, SecretSize: 20, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1,
	})
	if err != nil {
		return "", "", err
	}
	if err := s.deps.Store.SetPendingTOTP(ctx, accountID, key.Secret()); err != nil {
		return "", "", err
	}
	return key.Secret(), key.URL(), nil
}

// EnableTOTP turns two factors on once code matches the pending secret, and
// returns ten one-time recovery codes, shown once.
func (s *Service) EnableTOTP(ctx context.Context, accountID int64, code, ip string) ([]string, error) {
	if _, err := s.hit(ctx, limitTwoFactor, idKey(accountID)); err != nil {
		return nil, err
	}
	auth, err := s.deps.Store.AccountAuthByID(ctx, accountID)
	if err != nil {
		return nil, err
	}
	if auth.TOTPSecret != "" {
		return nil, paywatch.Errorf(paywatch.ECONFLICT, "%s", paywatch.MsgTwoFactorOn)
	}
	if auth.TOTPPendingSecret == "" {
		return nil, paywatch.Errorf(paywatch.ECONFLICT, "%s", paywatch.MsgTwoFactorNotStarted)
	}
	step, ok := s.matchStep(auth.TOTPPendingSecret, normalizeCode(code))
	if !ok {
		s.deps.Logger.Warn("two-factor set-up failed: wrong code", "email", auth.Account.Email, "ip", ip)
		return nil, invalidCode()
	}
	codes, hashes := newRecoveryCodes(accountID)
	ok, err = s.deps.Store.EnableTOTP(ctx, accountID, auth.TOTPPendingSecret, step, hashes)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, paywatch.Errorf(paywatch.ECONFLICT, "%s", paywatch.MsgTwoFactorNotStarted)
	}
	return codes, nil
}

// DisableTOTP turns two factors off after a valid code.
//
// A recovery code does too, for an owner who lost the app. Two factors
// that are off already stay off without a code.
func (s *Service) DisableTOTP(ctx context.Context, accountID int64, code, ip string) error {
	if _, err := s.hit(ctx, limitTwoFactor, idKey(accountID)); err != nil {
		return err
	}
	auth, err := s.deps.Store.AccountAuthByID(ctx, accountID)
	if err != nil {
		return err
	}
	if auth.TOTPSecret == "" {
		return nil
	}
	proof, ok := s.proof(auth, code)
	if ok {
		ok, err = s.deps.Store.DisableTOTP(ctx, accountID, proof)
		if err != nil {
			return err
		}
	}
	if !ok {
		s.deps.Logger.Warn("two-factor removal failed: wrong code", "email", auth.Account.Email, "ip", ip)
		return invalidCode()
	}
	return nil
}

// proof checks a code typed in against auth's active secret or recovery
// codes. A TOTP code proves its step (the store refuses a step used
// already); a recovery code is only hashed here, and the store consumes it
// if it exists.
func (s *Service) proof(auth *store.AccountAuth, code string) (store.SecondFactorProof, bool) {
	c := normalizeCode(code)
	if isDigits(c, 6) {
		step, ok := s.matchStep(auth.TOTPSecret, c)
		return store.SecondFactorProof{Secret: auth.TOTPSecret, Step: step}, ok
	}
	if len(c) == recoveryLength && strings.Trim(c, recoveryAlphabet) == "" {
		return store.SecondFactorProof{RecoveryHash: recoveryHash(auth.Account.ID, c)}, true
	}
	return store.SecondFactorProof{}, false
}

// matchStep returns the 30-second step, within the skew of now, whose code
// is code (compared in constant time).
func (s *Service) matchStep(secret, code string) (int64, bool) {
	if secret == "" || !isDigits(code, 6) {
		return 0, false
	}
	now := s.deps.Now().Unix() / totpPeriod
	opts := hotp.ValidateOpts{Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}
	for step := now - totpSkew; step <= now+totpSkew; step++ {
		if ok, err := hotp.ValidateCustom(code, uint64(step), secret, opts); err == nil && ok {
			return step, true
		}
	}
	return 0, false
}

// normalizeCode drops the spaces and hyphens people type or paste, and
// lowers the case of recovery codes.
func normalizeCode(code string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '-', '\t':
			return -1
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, code)
}

func isDigits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// newRecoveryCodes returns fresh recovery codes, as shown, and the hashes
// stored in their place.
func newRecoveryCodes(accountID int64) (codes []string, hashes [][]byte) {
	for range recoveryCodes {
		b := make([]byte, recoveryLength)
		for i := range b {
			b[i] = recoveryAlphabet[randomIndex(len(recoveryAlphabet))]
		}
		c := string(b)
		codes = append(codes, c[:4]+"-"+c[4:8]+"-"+c[8:])
		hashes = append(hashes, recoveryHash(accountID, c))
	}
	return codes, hashes
}

// randomIndex returns a uniform random number in [0, n), n < 256.
func randomIndex(n int) int {
	limit := 256 - 256%n
	var b [1]byte
	for {
		_, _ = rand.Read(b[:])
		if int(b[0]) < limit {
			return int(b[0]) % n
		}
	}
}

// recoveryHash is how a recovery code (normalised) is stored: a SHA-256
// over the account id and the code. The codes are random, so a fast hash
// is enough, and the account id keeps equal codes of two accounts apart.
func recoveryHash(accountID int64, code string) []byte {
	h := sha256.Sum256([]byte(idKey(accountID) + ":" + code))
	return h[:]
}

// PendingTOTP returns the secret BeginTOTP set aside and its otpauth://
// URL, so a page can show the same secret again after a mistyped code;
// ok is false when none is pending.
func (s *Service) PendingTOTP(ctx context.Context, accountID int64) (secret, otpauth string, ok bool, err error) {
	auth, err := s.deps.Store.AccountAuthByID(ctx, accountID)
	if err != nil || auth.TOTPPendingSecret == "" {
		return "", "", false, err
	}
	q := url.Values{}
	q.Set("secret", auth.TOTPPendingSecret)
	q.Set("issuer", totpIssuer)
	q.Set("period", strconv.Itoa(totpPeriod))
	q.Set("digits", "6")
	q.Set("algorithm", "SHA1")
	u := url.URL{Scheme: "otpauth", Host: "totp", Path: "/" + totpIssuer + ":" + auth.Account.Email, RawQuery: q.Encode()}
	return auth.TOTPPendingSecret, u.String(), true, nil
}
