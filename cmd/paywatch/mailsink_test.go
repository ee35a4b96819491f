package main

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"
)

// mailSink is a real SMTP server (go-smtp) on loopback: `paywatch dev`
// sends the dashboard's e-mails to it through PAYWATCH_SMTP_URL, and tests
// read them as a mailbox would.
type mailSink struct {
	addr string
	mu   sync.Mutex
	msgs []sunkMail
}

// sunkMail is a received message, its text part decoded.
type sunkMail struct {
	To      string
	Subject string
	Text    string
}

func newMailSink(t *testing.T) *mailSink {
	t.Helper()
	s := &mailSink{}
	srv := smtp.NewServer(s)
	srv.Domain = "sink.test"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.addr = l.Addr().String()
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *mailSink) NewSession(*smtp.Conn) (smtp.Session, error) { return &sinkSession{sink: s}, nil }

type sinkSession struct {
	sink *mailSink
	to   string
}

func (ss *sinkSession) Mail(string, *smtp.MailOptions) error { return nil }
func (ss *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.to = to
	return nil
}
func (ss *sinkSession) Reset()        {}
func (ss *sinkSession) Logout() error { return nil }

func (ss *sinkSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	dec := new(mime.WordDecoder)
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		subject = msg.Header.Get("Subject")
	}
	text, err := plainText(msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body)
	if err != nil {
		return err
	}
	ss.sink.mu.Lock()
	ss.sink.msgs = append(ss.sink.msgs, sunkMail{To: ss.to, Subject: subject, Text: text})
	ss.sink.mu.Unlock()
	return nil
}

// plainText finds and decodes the text/plain part of a message body.
func plainText(ctype, encoding string, body io.Reader) (string, error) {
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		mt = "text/plain"
	}
	if strings.HasPrefix(mt, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			part, err := mr.NextRawPart()
			if err != nil {
				return "", err
			}
			if t, err := plainText(part.Header.Get("Content-Type"), part.Header.Get("Content-Transfer-Encoding"), part); err == nil && t != "" {
				return t, nil
			}
		}
	}
	if mt != "text/plain" {
		return "", nil
	}
	if strings.EqualFold(encoding, "quoted-printable") {
		body = quotedprintable.NewReader(body)
	}
	b, err := io.ReadAll(body)
	return string(b), err
}

// wait returns the first message to addr whose subject contains subject.
func (s *mailSink) wait(t *testing.T, to, subject string) sunkMail {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		for _, m := range s.msgs {
			if m.To == to && strings.Contains(m.Subject, subject) {
				s.mu.Unlock()
				return m
			}
		}
		s.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no e-mail to %s about %q arrived", to, subject)
	return sunkMail{}
}
