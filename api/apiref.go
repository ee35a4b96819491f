package api

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
)

// The API reference: GET {base_url}/docs renders the OpenAPI document
// (GET /openapi.json, same origin) in the browser with Swagger UI. Swagger
// UI is npm's swagger-ui-dist, vendored unchanged into web/apiref/swagger-ui
// by `make apiref-update` (which also records its version in VERSION) and
// embedded in the binary with the page, its init script and stylesheet.
//
// The page runs under the pages' strict policy, ContentSecurityPolicy, as
// it is: Swagger UI ships its styles as a stylesheet file, sets element
// styles through the DOM (which style-src does not govern, unlike style
// attributes in markup), needs no eval, and its icons are data: images,
// which img-src allows. Redoc 3 and Scalar did not render without
// 'unsafe-inline' styles, 'unsafe-eval' or a CDN. The Chromium test
// TestBrowserAPIReference holds the page to it: every path of the document
// shown, no policy violation, no request to another origin. After an update
// run it and TestAPIReference.

// APIReferencePath is where the API listener serves the API reference.
const APIReferencePath = "/docs"

// apiRefAssets prefixes the reference's scripts, stylesheets and the
// texts of Swagger UI's licenses, by their path under web/apiref.
const apiRefAssets = APIReferencePath + "/assets/"

// refAsset is a file of the reference, with its gzip form made on first
// use: the Swagger UI bundle is 1.7 MB, under 0.5 MB gzipped.
type refAsset struct {
	asset
	gzipOnce sync.Once
	gzipped  []byte
}

// gzip returns the file gzipped, or nil when that does not make it smaller.
func (a *refAsset) gzip() []byte {
	a.gzipOnce.Do(func() {
		var buf bytes.Buffer
		w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = w.Write(a.body)
		if w.Close() == nil && buf.Len() < len(a.body) {
			a.gzipped = buf.Bytes()
		}
	})
	return a.gzipped
}

var (
	refAssets = map[string]*refAsset{}
	// refPage is the page, the same for every request.
	refPage []byte
)

func init() {
	err := fs.WalkDir(webFS, "web/apiref", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "web/apiref/index.html" {
			return err
		}
		body, err := webFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		refAssets[strings.TrimPrefix(p, "web/apiref/")] = &refAsset{asset: asset{body: body, ctype: assetType(p), hash: hex.EncodeToString(sum[:6])}}
		return nil
	})
	if err != nil {
		panic(err)
	}
	url := func(name string) string {
		a, ok := refAssets[name]
		if !ok {
			panic("web/apiref/" + name + " is missing: make apiref-update")
		}
		return apiRefAssets + name + "?v=" + a.hash
	}
	var buf bytes.Buffer
	err = template.Must(template.ParseFS(webFS, "web/apiref/index.html")).Execute(&buf, map[string]string{
		"Path":       APIReferencePath,
		"Spec":       OpenAPIPath,
		"Guide":      GuidePath,
		"Version":    strings.TrimSpace(string(refAssets["swagger-ui/VERSION"].body)),
		"SwaggerCSS": url("swagger-ui/swagger-ui.css"),
		"SwaggerJS":  url("swagger-ui/swagger-ui-bundle.js"),
		"CSS":        url("apiref.css"),
		"JS":         url("apiref.js"),
		"License":    url("swagger-ui/LICENSE"),
		"Notice":     url("swagger-ui/NOTICE"),
		"ThirdParty": url("swagger-ui/swagger-ui-bundle.js.LICENSE.txt"),
	})
	if err != nil {
		panic(err)
	}
	refPage = buf.Bytes()
}

// apiRefRoutes registers the reference on the API listener.
func (s *Server) apiRefRoutes() {
	s.api.GET(APIReferencePath, s.apiReference, refHeaders)
	s.api.GET(APIReferencePath+"/", s.apiReference, refHeaders)
	s.api.GET(apiRefAssets+"*", s.apiRefAsset, refHeaders)
}

// refHeaders are the headers of the reference's answers: the pages'
// strict policy, unchanged, and no framing or referrer.
func refHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		return next(c)
	}
}

// apiReference is GET /docs.
func (s *Server) apiReference(c echo.Context) error {
	return c.HTMLBlob(http.StatusOK, refPage)
}

// apiRefAsset serves a file of the reference: cached for good under its
// content hash, gzipped for clients that take it.
func (s *Server) apiRefAsset(c echo.Context) error {
	a, ok := refAssets[c.Param("*")]
	if !ok {
		return echo.ErrNotFound
	}
	h := c.Response().Header()
	cache := "public, max-age=300"
	if c.QueryParam("v") == a.hash {
		cache = "public, max-age=31536000, immutable"
	}
	h.Set("Cache-Control", cache)
	h.Add("Vary", "Accept-Encoding")
	if acceptsGzip(c.Request().Header.Get("Accept-Encoding")) {
		if gz := a.gzip(); gz != nil {
			h.Set("Content-Encoding", "gzip")
			return c.Blob(http.StatusOK, a.ctype, gz)
		}
	}
	return c.Blob(http.StatusOK, a.ctype, a.body)
}

// acceptsGzip reports whether an Accept-Encoding header takes gzip: named,
// and not with q=0.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q, ok := strings.CutPrefix(strings.TrimSpace(params), "q=")
		if !ok {
			return true
		}
		v, err := strconv.ParseFloat(q, 64)
		return err == nil && v > 0
	}
	return false
}
