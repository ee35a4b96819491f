package paywatch

import (
	"net/mail"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// The input rules every edge and the store apply alike: the bounds of
// interface.md and of the schema's checks, and the forms of slugs, e-mail
// addresses and ids. The edges check a request with them before any use
// case runs; the store checks them again before it writes.

// Payment request bounds of interface.md.
const (
	MaxExternalRefLength     = 255
	MaxExternalOrderIDLength = 255
	MinExpiresIn             = 300 * time.Second
	MaxExpiresIn             = 86400 * time.Second
	MaxMetadataBytes         = 4096
)

// Payment link and buyer field bounds (the schema's checks).
const (
	MaxLinkTitleLength  = 200
	MaxBuyerEmailLength = 254
	MaxBuyerNameLength  = 100
	MaxBuyerNoteLength  = 500
)

// Project settings bounds (interface.md "Project", the schema's checks).
const (
	// MinPaymentExpiryMinutes and MaxPaymentExpiryMinutes bound the
	// project's expiry setting like expires_in bounds a payment's.
	MinPaymentExpiryMinutes = 5
	MaxPaymentExpiryMinutes = 1440
	// MaxSlugLength keeps slugs usable in URLs and listings.
	MaxSlugLength = 63
	// MaxProjectNameLength bounds display names.
	MaxProjectNameLength = 255
)

var slugPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ValidateSlug checks the slug rule: lowercase letters, digits and single
// hyphens between them.
func ValidateSlug(slug string) error {
	if slug == "" {
		return invalidf("%s", "slug is required")
	}
	if len(slug) > MaxSlugLength || !slugPattern.MatchString(slug) {
		return invalidf("%s", "slug must be lowercase letters, digits and hyphens (for example my-shop), at most 63 characters")
	}
	return nil
}

// uuidPattern matches the text form of a UUID; anything else cannot be a
// payment id and is "not found" without asking the database.
var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// ValidPaymentID reports whether id has the form of a payment id: the text
// form of a UUID, which event and payment link ids share.
func ValidPaymentID(id string) bool { return uuidPattern.MatchString(id) }

// NormalizeEmail validates an e-mail address and returns its stored form
// (lower case, trimmed).
func NormalizeEmail(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || len(s) > 254 {
		return "", invalidf("%s", "email must be a valid e-mail address")
	}
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Address != s || !strings.Contains(s, "@") {
		return "", invalidf("%s", "email must be a valid e-mail address")
	}
	return s, nil
}

// HasControlChars reports whether s holds control characters or bytes that
// are not UTF-8 (which PostgreSQL refuses); newlines and tabs count only
// when multiline is false. Link titles, project names and buyer fields are
// shown on pages and in webhooks, so both the store and the forms use it.
func HasControlChars(s string, multiline bool) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if multiline && (r == '\n' || r == '\r' || r == '\t') {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}
