package accounts_test

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/accounts"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
)

const (
	baseURL  = "https://pay.example.com"
	password = "correct horse battery"
	testIP   = "203.0.113.7"
	testUA   = "test-browser"
)

// testClock is the store's and the service's clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// syncBuffer collects log output from concurrent calls.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// env is a service on its own database.
type env struct {
	t     *testing.T
	ctx   context.Context
	store *store.Store
	svc   *accounts.Service
	clk   *testClock
	logs  *syncBuffer

	mu      sync.Mutex
	started []string
}

func newEnv(t *testing.T, edit ...func(*accounts.Deps)) *env {
	t.Helper()
	// 12:00:00 starts every window of the limits (1 min, 15 min, 1 h).
	clk := &testClock{t: time.Date(2030, 5, 17, 12, 0, 0, 0, time.UTC)}
	e := &env{t: t, ctx: context.Background(), clk: clk, logs: &syncBuffer{}}
	e.store = store.New(storetest.NewPool(t), store.WithClock(clk.Now))
	deps := accounts.Deps{
		Store:   e.store,
		BaseURL: baseURL + "/",
		Logger:  slog.New(slog.NewTextHandler(e.logs, nil)),
		Now:     clk.Now,
		StartMail: func(_ context.Context, id string) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.started = append(e.started, id)
		},
	}
	for _, f := range edit {
		f(&deps)
	}
	e.svc = accounts.New(deps)
	return e
}

// mails returns the messages to an address, newest first.
func (e *env) mails(to string) []store.Mail {
	e.t.Helper()
	all, err := e.store.ListMail(e.ctx, 1000)
	require.NoError(e.t, err)
	var out []store.Mail
	for _, m := range all {
		if m.To == to {
			out = append(out, m)
		}
	}
	return out
}

// lastMail returns the message to an address whose delivery started
// last. (The test clock stands still, so created_at cannot order them.)
func (e *env) lastMail(to string) store.Mail {
	e.t.Helper()
	e.mu.Lock()
	started := append([]string(nil), e.started...)
	e.mu.Unlock()
	for i := len(started) - 1; i >= 0; i-- {
		m, ok, err := e.store.MailByID(e.ctx, started[i])
		require.NoError(e.t, err)
		require.True(e.t, ok)
		if m.To == to {
			return m
		}
	}
	e.t.Fatalf("no mail to %s", to)
	return store.Mail{}
}

var linkPattern = regexp.MustCompile(`https://pay\.example\.com/dashboard(/[a-z/]+)\?token=([A-Za-z0-9_-]+)`)

// token returns the token of the link to path in a message.
func (e *env) token(m store.Mail, path string) string {
	e.t.Helper()
	got := linkPattern.FindStringSubmatch(m.Text)
	require.NotNil(e.t, got, "no link in %q", m.Text)
	require.Equal(e.t, path, got[1])
	require.Len(e.t, got[2], 43, "32 bytes, base64url")
	return got[2]
}

// signUp registers and confirms an account.
func (e *env) signUp(email string) *store.Account {
	e.t.Helper()
	require.NoError(e.t, e.svc.Register(e.ctx, email, password, testIP))
	_, err := e.svc.Confirm(e.ctx, e.token(e.lastMail(email), "/confirm"), password)
	require.NoError(e.t, err)
	a, err := e.store.AccountByEmail(e.ctx, email)
	require.NoError(e.t, err)
	return a
}

// signIn signs in without a second factor.
func (e *env) signIn(email string) *accounts.Session {
	e.t.Helper()
	res, err := e.svc.SignIn(e.ctx, email, password, testIP, testUA)
	require.NoError(e.t, err)
	require.NotNil(e.t, res.Session)
	require.Empty(e.t, res.Pending)
	return res.Session
}

// project makes a project owned by a new pro account.
func (e *env) project(owner, slug, name string) *store.Project {
	e.t.Helper()
	if _, err := e.store.AccountByEmail(e.ctx, owner); err != nil {
		_, err := e.store.CreateAccount(e.ctx, owner, paywatch.PlanPro)
		require.NoError(e.t, err)
	}
	p, _, err := e.store.CreateProject(e.ctx, store.NewProject{Slug: slug,
		Settings: store.ProjectSettings{Name: &name, OwnerEmail: &owner}})
	require.NoError(e.t, err)
	return p
}

// requireCode asserts an application error's code and message.
func requireCode(t *testing.T, err error, code, msg string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, paywatch.ErrorCode(err), "error %v", err)
	require.Equal(t, msg, paywatch.ErrorMessage(err))
}

// parallel runs fn n times at once and waits.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

// The 403 texts of interface.md for inactive owners.
const (
	msgSuspended = "Account suspended. Contact support."
	msgClosed    = "Account is no longer active."
)
