package api

import (
	"bytes"
	"html/template"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
)

// GuidePath is where the API listener serves the getting-started guide that
// GET /v1/config's setup_url points to. It is part of the binary, so it
// reads the same offline and always matches the running version.
const GuidePath = "/docs/getting-started"

// guideCSP allows the guide's one inline stylesheet and nothing else: the
// page has no script, image, form or frame.
const guideCSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

var guidePage = template.Must(template.ParseFS(webFS, "web/guide/getting-started.html"))

// guideData is what the guide shows: this instance's base URL in its
// examples, and the networks and tokens of the table (network.go), so that
// a new network or token reaches the guide with nothing to edit.
type guideData struct {
	BaseURL string
	// Networks and Tokens name them all: "TRC20, BEP20 and ERC20".
	Networks, Tokens string
	// Rows are the networks, each with the tokens it serves.
	Rows []guideRow
}

// guideRow is one network of the guide's table.
type guideRow struct {
	Network, Name, Tokens, Confirmations string
}

// guideTable is the guide's part of guideData, built once from the table.
var guideTable = func() guideData {
	var d guideData
	for _, info := range paywatch.Networks() {
		var ts []string
		for _, t := range info.Tokens {
			ts = append(ts, string(t))
		}
		d.Rows = append(d.Rows, guideRow{
			Network: string(info.Network), Name: info.Name,
			Tokens: strings.Join(ts, ", "), Confirmations: strconv.Itoa(info.Confirmations),
		})
	}
	d.Networks, d.Tokens = paywatch.NetworkList("and"), paywatch.TokenList("and")
	return d
}()

// guide serves the getting-started guide, with this instance's base URL in
// its examples.
func (s *Server) guide(c echo.Context) error {
	d := guideTable
	d.BaseURL = s.deps.BaseURL
	var buf bytes.Buffer
	if err := guidePage.Execute(&buf, d); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Content-Security-Policy", guideCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	return c.HTMLBlob(http.StatusOK, buf.Bytes())
}
