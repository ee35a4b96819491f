package api

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/labstack/echo/v4"
)

// Secrets shown once (new API keys, recovery codes, a Telegram link) cross
// the redirect of post/redirect/get in a reveal cookie: the action seals
// them and redirects, and the page that shows them opens the cookie and
// clears it. Reloading that page never repeats the action, and shows the
// secrets no more. The cookie is HttpOnly, lives revealTTL, is sealed with
// AES-GCM under a key derived from the master key (every replica opens
// it), and names the session it was made for, so no other session opens it.
// Each kind of secret, of each project, has a cookie of its own: two tabs
// at work on two projects (or keys and recovery codes) lose nothing, and
// no project's page shows another's secrets.
const (
	revealCookie = "paywatch_reveal"
	revealTTL    = 5 * time.Minute
)

// What a reveal cookie holds; a page opens only its own kind.
const (
	revealProject  = "project"
	revealKeys     = "keys"
	revealCodes    = "codes"
	revealTelegram = "telegram"
)

// revealed is a reveal cookie's sealed content.
type revealed struct {
	Kind    string          `json:"k"`
	Scope   string          `json:"p"`
	Session string          `json:"s"`
	Expires int64           `json:"e"`
	Data    json.RawMessage `json:"d"`
}

// revealAEAD is the cipher of reveal cookies, keyed apart from the
// anti-forgery MAC.
func (s *Server) revealAEAD() cipher.AEAD {
	key := sha256.Sum256(append([]byte("paywatch dashboard reveal key\x00"), s.csrfKey...))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		panic(err) // a 32-byte key is always valid
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return aead
}

// revealBinding names the signed-in session without revealing anything of
// it: a digest of its anti-forgery token, which is the session's own.
func revealBinding(c echo.Context) string {
	sess := session(c)
	if sess == nil {
		return ""
	}
	sum := sha256.Sum256([]byte("paywatch reveal binding\x00" + sess.CSRF))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// revealName is the cookie of kind in scope (a project's slug, or "" for
// the account's own secrets); slugs are cookie-name safe.
func revealName(kind, scope string) string {
	if scope == "" {
		return revealCookie + "_" + kind
	}
	return revealCookie + "_" + kind + "_" + scope
}

// reveal seals v for the next page of kind in scope to show once.
func (s *Server) reveal(c echo.Context, kind, scope string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	plain, err := json.Marshal(revealed{Kind: kind, Scope: scope, Session: revealBinding(c), Expires: time.Now().Add(revealTTL).Unix(), Data: data})
	if err != nil {
		return err
	}
	aead := s.revealAEAD()
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	name := revealName(kind, scope)
	sealed := aead.Seal(nonce, nonce, plain, []byte(name))
	s.setCookie(c, name, base64.RawURLEncoding.EncodeToString(sealed), int(revealTTL/time.Second))
	return nil
}

// takeReveal opens the reveal cookie of kind in scope into v and clears it;
// false when there is none (already shown, expired, another session's).
func (s *Server) takeReveal(c echo.Context, kind, scope string, v any) bool {
	name := revealName(kind, scope)
	ck, err := s.cookie(c, name)
	if err != nil || ck.Value == "" {
		return false
	}
	sealed, err := base64.RawURLEncoding.DecodeString(ck.Value)
	aead := s.revealAEAD()
	if err != nil || len(sealed) < aead.NonceSize() {
		return false
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(name))
	if err != nil {
		return false
	}
	var r revealed
	if json.Unmarshal(plain, &r) != nil || r.Kind != kind || r.Scope != scope || r.Session != revealBinding(c) || time.Now().Unix() > r.Expires {
		return false
	}
	s.setCookie(c, name, "", -1)
	return json.Unmarshal(r.Data, v) == nil
}
