package activities_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
	"github.com/paywatch/paywatch/workflows"
)

// mailSink is a real SMTP server (go-smtp) on loopback that keeps what it
// receives, or refuses every message while refuse is set.
type mailSink struct {
	addr   string
	mu     sync.Mutex
	got    []sunkMail
	refuse bool
	// code is the refusal's SMTP reply code; 0 means 451.
	code int
}

type sunkMail struct {
	from string
	to   []string
	data string
}

func newMailSink(t *testing.T) *mailSink {
	sink := &mailSink{}
	srv := smtp.NewServer(sink)
	srv.Domain = "localhost"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sink.addr = l.Addr().String()
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return sink
}

func (s *mailSink) NewSession(*smtp.Conn) (smtp.Session, error) { return &sinkSession{sink: s}, nil }

func (s *mailSink) messages() []sunkMail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sunkMail(nil), s.got...)
}

type sinkSession struct {
	sink *mailSink
	cur  sunkMail
}

func (s *sinkSession) Reset()        { s.cur = sunkMail{} }
func (s *sinkSession) Logout() error { return nil }
func (s *sinkSession) Mail(from string, _ *smtp.MailOptions) error {
	s.cur.from = from
	return nil
}
func (s *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.to = append(s.cur.to, to)
	return nil
}
func (s *sinkSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.sink.mu.Lock()
	defer s.sink.mu.Unlock()
	if s.sink.refuse {
		if s.sink.code != 0 {
			return &smtp.SMTPError{Code: s.sink.code, Message: "refused for good"}
		}
		return &smtp.SMTPError{Code: 451, Message: "try again later"}
	}
	s.cur.data = string(b)
	s.sink.got = append(s.sink.got, s.cur)
	return nil
}

// An e-mail goes through real SMTP with its stable Message-ID, once: a
// retried activity finds it sent. A server that refuses it leaves it
// pending, with the failure counted, and the activity fails so Temporal
// retries it.
func TestSendMailThroughSMTP(t *testing.T) {
	ctx := context.Background()
	sink := newMailSink(t)
	st := store.New(storetest.NewPool(t))
	mailer, err := activities.NewSMTPMailer("smtp://"+sink.addr, "paywatch <noreply@paywatch.test>")
	require.NoError(t, err)
	acts := activities.New(activities.Deps{Store: st, Mailer: mailer})
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(acts.SendMail, activity.RegisterOptions{Name: workflows.ActivitySendMail})

	m, err := st.QueueMail(ctx, store.Mail{To: "owner@merchant.test", Subject: "Security alert", Text: "Your keys were regenerated."})
	require.NoError(t, err)
	_, err = env.ExecuteActivity(workflows.ActivitySendMail, workflows.SendMailInput{MailID: m.ID})
	require.NoError(t, err)
	_, err = env.ExecuteActivity(workflows.ActivitySendMail, workflows.SendMailInput{MailID: m.ID})
	require.NoError(t, err, "already sent: a no-op")

	got := sink.messages()
	require.Len(t, got, 1, "sent once")
	assert.Equal(t, "noreply@paywatch.test", got[0].from)
	assert.Equal(t, []string{"owner@merchant.test"}, got[0].to)
	assert.Contains(t, got[0].data, "Subject: Security alert")
	assert.Contains(t, got[0].data, "Message-ID: <"+m.ID+"@paywatch.test>")
	assert.Contains(t, got[0].data, "Your keys were regenerated.")
	sent, ok, err := st.MailByID(ctx, m.ID)
	require.NoError(t, err)
	require.True(t, ok)
	assert.True(t, sent.Sent)
	assert.Equal(t, store.SentBodyRemoved, sent.Text, "a sent message keeps no link that signs in")

	sink.mu.Lock()
	sink.refuse = true
	sink.mu.Unlock()
	m2, err := st.QueueMail(ctx, store.Mail{To: "owner@merchant.test", Subject: "Second", Text: "x"})
	require.NoError(t, err)
	_, err = env.ExecuteActivity(workflows.ActivitySendMail, workflows.SendMailInput{MailID: m2.ID})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "451"), "the server's refusal: %v", err)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, workflows.ErrTypeMailDeferred, app.Type(), "a 4xx is the expected retry")
	assert.False(t, app.NonRetryable())
	again, _, err := st.MailByID(ctx, m2.ID)
	require.NoError(t, err)
	assert.False(t, again.Sent, "kept for the retry")
	var attempts int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT attempts FROM mail_messages WHERE id = $1`, m2.ID).Scan(&attempts))
	assert.Equal(t, 1, attempts)

	// A permanent refusal (5xx) is a real fault: retried, but not marked
	// expected.
	sink.mu.Lock()
	sink.code = 554
	sink.mu.Unlock()
	_, err = env.ExecuteActivity(workflows.ActivitySendMail, workflows.SendMailInput{MailID: m2.ID})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "554")
	assert.NotContains(t, err.Error(), workflows.ErrTypeMailDeferred)
}
