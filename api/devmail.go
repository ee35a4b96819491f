package api

import (
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// DevMailPath lists the dev outbox (operations.md §5).
const DevMailPath = "/dev/mail"

// devMailLimit is how many messages GET /dev/mail lists, newest first.
const devMailLimit = 200

// mailView is a message of GET /dev/mail.
type mailView struct {
	ID      string     `json:"id"`
	To      string     `json:"to"`
	Subject string     `json:"subject"`
	Text    string     `json:"text"`
	HTML    string     `json:"html"`
	SentAt  *time.Time `json:"sent_at"`
}

// devMailPage shows the outbox to a browser; html/template escapes every
// field, and the messages' HTML bodies are shown as text, never rendered.
var devMailPage = template.Must(template.New("mail").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>paywatch dev outbox</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem;color:#111}
article{border:1px solid #ccc;border-radius:.5rem;padding:.75rem 1rem;margin:1rem 0}h2{font-size:1rem;margin:0}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5rem;border-radius:.25rem}.meta{color:#444;font-size:.875rem}</style>
</head><body><h1>Dev outbox</h1>
<p>E-mail that <code>paywatch dev</code> would have sent; set <code>PAYWATCH_SMTP_URL</code> to send it.</p>
{{range .}}<article><h2>{{.Subject}}</h2><p class="meta">To {{.To}}{{if .SentAt}} · {{.SentAt.Format "2006-01-02 15:04:05"}} UTC{{end}}</p><pre>{{.Text}}</pre></article>
{{else}}<p>No e-mail yet.</p>{{end}}
</body></html>
`))

// devMail is GET /dev/mail: the dev outbox, newest first, as JSON, or as a
// page for a browser (Accept: text/html).
func (s *Server) devMail(c echo.Context) error {
	ms, err := s.payments.Outbox(c.Request().Context(), devMailLimit)
	if err != nil {
		return err
	}
	out := make([]mailView, 0, len(ms))
	for _, m := range ms {
		out = append(out, mailView{ID: m.ID, To: m.To, Subject: m.Subject, Text: m.Text, HTML: m.HTML, SentAt: m.SentAt})
	}
	if strings.Contains(c.Request().Header.Get("Accept"), "text/html") {
		h := c.Response().Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		c.Response().WriteHeader(http.StatusOK)
		return devMailPage.Execute(c.Response(), out)
	}
	return c.JSON(http.StatusOK, map[string]any{"messages": out})
}
