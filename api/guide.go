package api

import (
	"bytes"
	"html/template"
	"net/http"

	"github.com/labstack/echo/v4"
)

// GuidePath is where the API listener serves the getting-started guide that
// GET /v1/config's setup_url points to. It is part of the binary, so it
// reads the same offline and always matches the running version.
const GuidePath = "/docs/getting-started"

// guideCSP allows the guide's one inline stylesheet and nothing else: the
// page has no script, image, form or frame.
const guideCSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

var guidePage = template.Must(template.ParseFS(webFS, "web/guide/getting-started.html"))

// guide serves the getting-started guide, with this instance's base URL in
// its examples.
func (s *Server) guide(c echo.Context) error {
	var buf bytes.Buffer
	if err := guidePage.Execute(&buf, struct{ BaseURL string }{s.deps.BaseURL}); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Content-Security-Policy", guideCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	return c.HTMLBlob(http.StatusOK, buf.Bytes())
}
