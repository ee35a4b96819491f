package api

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// OpenAPIPath is where the API listener serves its OpenAPI 3.1 document
// (operations.md §8), without authentication.
const OpenAPIPath = "/openapi.json"

// openAPIDocument is the OpenAPI 3.1 description of the API listener's
// endpoints, the hosted page's JSON and the webhooks. It is written by hand
// and is the one source: api/openapi_test.go validates it, and checks
// every request and response the API tests exchange against it.
//
//go:embed openapi.json
var openAPIDocument []byte

// Server URLs of the document: paywatch dev's defaults, replaced by the
// instance's own addresses when it is served.
const (
	openAPIBaseURL = "http://127.0.0.1:8080"
	openAPIPayURL  = "http://127.0.0.1:8081"
)

// openAPIFor returns the document with this instance's base and pay URLs
// as its servers, so that a client generated from it calls this instance.
// Only the servers' "url" values are exactly the default addresses; the
// examples' longer URLs stay as written.
func openAPIFor(baseURL, payURL string) []byte {
	var pairs []string
	for from, to := range map[string]string{openAPIBaseURL: baseURL, openAPIPayURL: payURL} {
		if to != "" {
			pairs = append(pairs, jsonString(from), jsonString(to))
		}
	}
	// One pass, so that a base URL equal to the other default is not
	// replaced twice.
	return []byte(strings.NewReplacer(pairs...).Replace(string(openAPIDocument)))
}

// jsonString is s as a JSON string, quotes included.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// openAPI is GET /openapi.json: the document, with this instance's
// addresses. It is some 130 KB of text rewritten per request,
// under the per-IP limit of unauthenticated endpoints.
func (s *Server) openAPI(c echo.Context) error {
	return c.JSONBlob(http.StatusOK, openAPIFor(s.deps.BaseURL, s.deps.PayURL))
}
