package store

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"strings"
)

// Credential prefixes. The API key's is fixed by interface.md; the others
// make a leaked value recognisable in logs and secret scanners.
const (
	APIKeyPrefix        = "pk_live_"
	APISecretPrefix     = "sk_live_"
	WebhookSecretPrefix = "whsec_"
)

// apiKeyPrefixLen is how much of an API key lists show: the fixed prefix and
// four random characters, enough to tell keys apart and useless to guess.
const apiKeyPrefixLen = len(APIKeyPrefix) + 4

// Credentials are a project's three secrets, created and replaced together
// and shown only once.
type Credentials struct {
	// APIKey authenticates API calls (x-api-key).
	APIKey string
	// APISecret is issued for the dashboard's protected actions; the API
	// never uses it.
	APISecret string
	// WebhookSecret keys the HMAC signatures of webhooks.
	WebhookSecret string
}

// newCredentials returns fresh credentials with 130 bits of randomness each.
func newCredentials() Credentials {
	return Credentials{
		APIKey:        APIKeyPrefix + strings.ToLower(rand.Text()),
		APISecret:     APISecretPrefix + strings.ToLower(rand.Text()),
		WebhookSecret: WebhookSecretPrefix + strings.ToLower(rand.Text()),
	}
}

// hashSecret is how API keys and secrets are stored. A plain SHA-256 is
// enough because the secrets are random and high-entropy: there is nothing
// for a slow hash to protect against.
func hashSecret(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// keyPrefix returns what lists show of an API key.
func keyPrefix(key string) string {
	if len(key) <= apiKeyPrefixLen {
		return key
	}
	return key[:apiKeyPrefixLen]
}

// equalHash compares two hashes in constant time.
func equalHash(a, b []byte) bool {
	return len(a) == len(b) && subtle.ConstantTimeCompare(a, b) == 1
}
