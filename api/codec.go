package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
)

// The payload codec endpoint (issue 42). Payloads reach Temporal sealed
// (workflows.PayloadCodec); the Temporal Web UI, and the temporal CLI with
// --codec-endpoint, show them decoded by posting them to
// {base_url}/temporal/codec/decode, as Temporal's remote codec protocol
// has it. Only operators may: a request carries the master key as a bearer
// token (the CLI's --codec-auth), or comes from a browser that signed in
// at {base_url}/temporal/codec with the master key. A browser UI on
// another origin (the embedded UI's, Temporal Cloud's) is let in by CORS
// only when listed in Deps.CodecOrigins.

// CodecPath is the codec endpoint's base path: the UI calls
// CodecPath+"/decode" and CodecPath+"/encode", and operators sign in at
// CodecPath itself.
const CodecPath = "/temporal/codec"

// codecCookie holds a signed-in browser's codec session.
const codecCookie = "paywatch_codec"

// codecSessionTTL is how long a codec sign-in lasts.
const codecSessionTTL = 12 * time.Hour

// maxCodecBody bounds a codec request: a UI asks for one history page of
// payloads at a time, and a payload is at most 2 MB (Temporal's limit).
const maxCodecBody = 8 << 20

func (s *Server) codecRoutes() {
	if s.deps.PayloadCodec == nil {
		return
	}
	s.api.GET(CodecPath, s.codecSignInPage)
	s.api.POST(CodecPath, s.codecSignIn)
	for _, op := range []string{"/decode", "/encode"} {
		s.api.OPTIONS(CodecPath+op, s.codecPreflight)
		s.api.POST(CodecPath+op, s.codec)
	}
}

// codecCORS answers a listed browser origin with the CORS headers that let
// its script read the answer and send the session cookie; any other
// origin gets none, so its browser withholds the answer.
func (s *Server) codecCORS(c echo.Context) {
	h := c.Response().Header()
	h.Add("Vary", "Origin")
	origin := c.Request().Header.Get("Origin")
	if origin == "" || !slices.Contains(s.deps.CodecOrigins, origin) {
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
}

func (s *Server) codecPreflight(c echo.Context) error {
	s.codecCORS(c)
	h := c.Response().Header()
	h.Set("Access-Control-Allow-Methods", "POST")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Namespace")
	h.Set("Access-Control-Max-Age", "600")
	return c.NoContent(http.StatusNoContent)
}

// codec authenticates the request and hands it to the codec.
func (s *Server) codec(c echo.Context) error {
	s.codecCORS(c)
	if !s.codecAuthorized(c.Request()) {
		if err := s.countWrongMasterKey(c); err != nil {
			return err
		}
		return paywatch.Errorf(paywatch.EUNAUTHORIZED, paywatch.MsgInvalidMasterKey)
	}
	req := c.Request()
	req.Body = http.MaxBytesReader(c.Response(), req.Body, maxCodecBody)
	s.deps.PayloadCodec.ServeHTTP(c.Response(), req)
	return nil
}

// codecAuthorized reports whether r carries the master key as a bearer
// token or a live codec session cookie.
func (s *Server) codecAuthorized(r *http.Request) bool {
	if s.deps.MasterKey == "" {
		return false
	}
	// A bearer token that is not the master key may still come with a
	// session: Temporal Cloud's UI, told to pass its user's access token,
	// sends that token as well as the cookie.
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.isMasterKey(token) {
		return true
	}
	ck, err := r.Cookie(codecCookie)
	return err == nil && s.validCodecSession(ck.Value, s.clock())
}

// codecSession returns a session value that expires at exp: the expiry and
// its MAC under a key derived from the master key, so a new master key
// ends every session.
func (s *Server) codecSession(exp time.Time) string {
	unix := strconv.FormatInt(exp.Unix(), 10)
	return "v1." + unix + "." + s.codecMAC(unix)
}

func (s *Server) codecMAC(unix string) string {
	m := hmac.New(sha256.New, []byte("paywatch codec session\x00"+s.deps.MasterKey))
	m.Write([]byte(unix))
	return hex.EncodeToString(m.Sum(nil))
}

func (s *Server) validCodecSession(v string, now time.Time) bool {
	_, ok := s.codecSessionExpiry(v, now)
	return ok
}

// codecSessionExpiry returns when the session v ends, if it is genuine
// and has not ended at now.
func (s *Server) codecSessionExpiry(v string, now time.Time) (time.Time, bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 || parts[0] != "v1" {
		return time.Time{}, false
	}
	unix, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !now.Before(time.Unix(unix, 0)) || !hmac.Equal([]byte(parts[2]), []byte(s.codecMAC(parts[1]))) {
		return time.Time{}, false
	}
	return time.Unix(unix, 0), true
}

var codecPage = template.Must(template.New("codec").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>paywatch: payload codec</title></head>
<body>
<h1>Payload codec for the Temporal Web UI</h1>
{{if .SignedIn}}<p role="status">Signed in. The Temporal Web UI decodes paywatch's payloads in this browser until {{.Until}}.</p>
{{else}}{{if .Error}}<p role="alert">{{.Error}}</p>{{end}}
<p>paywatch encrypts what it hands Temporal. Sign in with the master key so that the Temporal Web UI, in this browser, can show payment histories decoded.</p>
<form method="post" action="{{.Action}}">
<label for="master_key">Master key</label>
<input id="master_key" name="master_key" type="password" autocomplete="off" required>
<button type="submit">Sign in</button>
</form>{{end}}
<p>Codec endpoint for the UI's settings: <code>{{.Endpoint}}</code></p>
</body></html>
`))

type codecPageView struct {
	SignedIn               bool
	Until, Error, Endpoint string
	Action                 string
}

func (s *Server) renderCodecPage(c echo.Context, status int, v codecPageView) error {
	v.Endpoint = s.deps.BaseURL + CodecPath
	v.Action = CodecPath
	h := c.Response().Header()
	h.Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Content-Type", "text/html; charset=utf-8")
	c.Response().WriteHeader(status)
	return codecPage.Execute(c.Response(), v)
}

func (s *Server) codecSignInPage(c echo.Context) error {
	if ck, err := c.Request().Cookie(codecCookie); err == nil {
		if exp, ok := s.codecSessionExpiry(ck.Value, s.clock()); ok {
			return s.renderCodecPage(c, http.StatusOK, codecPageView{SignedIn: true, Until: exp.UTC().Format(time.RFC1123)})
		}
	}
	return s.renderCodecPage(c, http.StatusOK, codecPageView{})
}

// codecSignIn checks the master key from the form and sets the session
// cookie. A form posted from another origin is refused, so no page can
// sign a browser in under a key of its choosing.
func (s *Server) codecSignIn(c echo.Context) error {
	if o := c.Request().Header.Get("Origin"); o != "" && o != originOf(s.deps.BaseURL) {
		return s.renderCodecPage(c, http.StatusForbidden, codecPageView{Error: "Sign in from this page."})
	}
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, 4<<10)
	if !s.isMasterKey(c.Request().PostFormValue("master_key")) {
		if err := s.countWrongMasterKey(c); err != nil {
			return err
		}
		return s.renderCodecPage(c, http.StatusUnauthorized, codecPageView{Error: paywatch.MsgInvalidMasterKey + "."})
	}
	exp := s.clock().Add(codecSessionTTL)
	ck := &http.Cookie{
		Name: codecCookie, Value: s.codecSession(exp), Path: CodecPath,
		Expires: exp, HttpOnly: true, SameSite: http.SameSiteLaxMode,
	}
	if strings.HasPrefix(s.deps.BaseURL, "https://") {
		// A UI on another site (Temporal Cloud's) sends the cookie only
		// when it is SameSite=None, which browsers take only when Secure.
		ck.Secure, ck.SameSite = true, http.SameSiteNoneMode
	}
	c.SetCookie(ck)
	return s.renderCodecPage(c, http.StatusOK, codecPageView{SignedIn: true, Until: exp.UTC().Format(time.RFC1123)})
}

// originOf is the origin of a URL, whatever its path, as a browser sends
// it (Origin).
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.Path, u.RawPath, u.RawQuery, u.Fragment = "", "", "", ""
	o, _ := Origin(u.String())
	return o
}

// Origin returns the origin of raw, an http(s) URL with no path beyond
// "/", as a browser sends it in Origin: scheme and host in lower case,
// without a default port. ok is false for anything else.
func Origin(raw string) (origin string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return "", false
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if scheme != "https" && scheme != "http" {
		return "", false
	}
	if (scheme == "https" && strings.HasSuffix(host, ":443")) || (scheme == "http" && strings.HasSuffix(host, ":80")) {
		host = host[:strings.LastIndex(host, ":")]
	}
	return scheme + "://" + host, true
}
