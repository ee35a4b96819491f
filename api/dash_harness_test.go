package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/store"
)

// browser is a dashboard visitor: it keeps the cookies the dashboard sets
// (Secure ones too: the requests never leave the process) and the form
// token of the last page, as a browser would.
type browser struct {
	e       *env
	t       *testing.T
	ip      string
	cookies map[string]*http.Cookie
	csrf    string
}

func (e *env) browser(t *testing.T) *browser {
	return &browser{e: e, t: t, ip: "203.0.113.9", cookies: map[string]*http.Cookie{}}
}

// page is a dashboard answer.
type page struct {
	Code     int
	Header   http.Header
	Body     string
	Location string
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) send(method, path string, form url.Values) page {
	b.t.Helper()
	return b.sendHeader(method, path, form, nil)
}

// sendHeader sends a request with extra headers, as a page's script does.
func (b *browser) sendHeader(method, path string, form url.Values, header http.Header) page {
	b.t.Helper()
	var req *http.Request
	if form != nil {
		req = httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req = httptest.NewRequest(method, path, nil)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Host = apiHost
	req.RemoteAddr = b.ip + ":5555"
	for _, c := range b.cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	rec := serve(b.t, b.e.server.API(), apiListener, req)
	for _, c := range rec.Result().Cookies() {
		if c.MaxAge < 0 || c.Value == "" {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c
		}
	}
	p := page{Code: rec.Code, Header: rec.Header(), Body: rec.Body.String(), Location: rec.Header().Get("Location")}
	if m := csrfField.FindStringSubmatch(p.Body); m != nil {
		b.csrf = m[1]
	}
	return p
}

// get loads a page, following redirects.
func (b *browser) get(path string) page {
	b.t.Helper()
	p := b.send(http.MethodGet, path, nil)
	for i := 0; i < 5 && p.Code == http.StatusSeeOther; i++ {
		p = b.send(http.MethodGet, p.Location, nil)
	}
	return p
}

// form is a form of the last page with fields, and its CSRF token.
func (b *browser) form(fields map[string]string) url.Values {
	form := url.Values{"csrf": {b.csrf}}
	for k, v := range fields {
		form.Set(k, v)
	}
	return form
}

// post submits a form of the last page (with its CSRF token) and follows
// the redirect of a success.
func (b *browser) post(path string, fields map[string]string) page {
	b.t.Helper()
	p := b.send(http.MethodPost, path, b.form(fields))
	if p.Code == http.StatusSeeOther {
		return b.get(p.Location)
	}
	return p
}

// mailTo returns the newest e-mail to addr whose subject contains subject.
func (e *env) mailTo(t *testing.T, addr, subject string) store.Mail {
	t.Helper()
	ms, err := e.store.ListMail(context.Background(), 100)
	require.NoError(t, err)
	for _, m := range ms {
		if m.To == addr && strings.Contains(m.Subject, subject) {
			return m
		}
	}
	t.Fatalf("no e-mail to %s about %q among %d", addr, subject, len(ms))
	return store.Mail{}
}

var linkToken = regexp.MustCompile(`(/dashboard/[a-z/]+)\?token=([A-Za-z0-9_-]+)`)

// mailCount is how many e-mails addr has been sent.
func (e *env) mailCount(t *testing.T, addr string) int {
	t.Helper()
	ms, err := e.store.ListMail(context.Background(), 1000)
	require.NoError(t, err)
	n := 0
	for _, m := range ms {
		if m.To == addr {
			n++
		}
	}
	return n
}

// link returns the dashboard path and token of the link in an e-mail.
func link(t *testing.T, m store.Mail) (string, string) {
	t.Helper()
	got := linkToken.FindStringSubmatch(m.Text)
	require.NotNil(t, got, "no link in %q", m.Text)
	return got[1], got[2]
}

// register creates a dashboard account through the pages: the form, the
// e-mailed link, the confirmation.
func (b *browser) register(email, password string) {
	b.t.Helper()
	b.get("/dashboard/register")
	p := b.post("/dashboard/register", map[string]string{"email": email, "password": password})
	require.Equal(b.t, http.StatusOK, p.Code, p.Body)
	path, token := link(b.t, b.e.mailTo(b.t, email, "Confirm"))
	b.get(path + "?token=" + token)
	p = b.post("/dashboard/confirm", map[string]string{"token": token, "password": password})
	require.Equal(b.t, http.StatusOK, p.Code, p.Body)
}

// signIn signs in with a password alone.
func (b *browser) signIn(email, password string) page {
	b.t.Helper()
	b.get("/dashboard/login")
	return b.post("/dashboard/login", map[string]string{"email": email, "password": password})
}

// totpCode is the code of secret a little after the env's time: each code
// works once, so every call moves the clock to the next 30-second step.
func (b *browser) totpCode(secret string) string {
	b.t.Helper()
	b.e.clock.Add(30 * time.Second)
	code, err := totp.GenerateCode(secret, b.e.clock.Now())
	require.NoError(b.t, err)
	return code
}
