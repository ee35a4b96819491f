package api_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/api"
)

// The API reference at {base_url}/docs (issue 30): a page that loads the
// embedded Swagger UI and points it at /openapi.json, under the pages'
// strict policy. cmd/paywatch's TestBrowserAPIReference opens it in
// Chromium; this test holds what the server sends.

// refAssetRef is a file the page loads or links to.
var refAssetRef = regexp.MustCompile(`(?:src|href)="(/docs/assets/[^"]+)"`)

func TestAPIReference(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})

	for _, p := range []string{"/docs", "/docs/"} {
		r := e.do(request{method: "GET", path: p})
		requireHTML(t, r, http.StatusOK)
		h := r.Header
		assert.Equal(t, api.ContentSecurityPolicy, h.Get("Content-Security-Policy"), p)
		assert.Equal(t, "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
			h.Get("Content-Security-Policy"), "the pages' policy, not relaxed for the reference")
		assert.Equal(t, "DENY", h.Get("X-Frame-Options"), p)
		assert.Equal(t, "no-referrer", h.Get("Referrer-Policy"), p)
		assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), p)
	}

	page := e.do(request{method: "GET", path: "/docs"}).Raw
	assert.Contains(t, page, `<main id="swagger-ui" data-spec="/openapi.json">`, "Swagger UI reads the document of this origin")
	assert.Contains(t, page, `<a href="/docs/getting-started">Getting started</a>`)
	version, err := os.ReadFile("web/apiref/swagger-ui/VERSION")
	require.NoError(t, err)
	assert.Contains(t, page, "Swagger UI "+strings.TrimSpace(string(version))+",", "the page names the vendored release")
	tags := scriptTag.FindAllString(page, -1)
	require.Len(t, tags, 2, "the bundle and the init script")
	for _, tag := range tags {
		assert.Regexp(t, `^<script src="/docs/assets/[^"]+\.js\?v=[0-9a-f]{12}" defer>$`, tag, "only script files of the API listener")
	}
	assert.NotContains(t, page, "<style")
	assert.False(t, styleAttr.MatchString(page), "inline style")
	assert.False(t, handlerAttr.MatchString(page), "inline handler")
	assert.False(t, externalRefs.MatchString(page), "external resource")

	// Every file the page names is served, cached for good under its hash.
	seen := map[string]bool{}
	for _, m := range refAssetRef.FindAllStringSubmatch(page, -1) {
		ref := strings.ReplaceAll(m[1], "&amp;", "&")
		name, _, _ := strings.Cut(strings.TrimPrefix(ref, "/docs/assets/"), "?")
		seen[name] = true
		r := e.do(request{method: "GET", path: ref})
		require.Equal(t, http.StatusOK, r.Code, ref)
		assert.Equal(t, "public, max-age=31536000, immutable", r.Header.Get("Cache-Control"), ref)
		assert.Empty(t, r.Header.Get("Content-Encoding"), "not gzipped unless asked: %s", ref)
		vendored, err := os.ReadFile("web/apiref/" + name)
		require.NoError(t, err, ref)
		assert.True(t, r.Raw == string(vendored), "%s is the embedded file", ref)
		want := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}[path.Ext(name)]
		if want == "" {
			want = "text/plain; charset=utf-8"
		}
		assert.Equal(t, want, r.Header.Get("Content-Type"), ref)
		if strings.HasSuffix(name, ".css") {
			for _, u := range regexp.MustCompile(`url\(\s*["']?([^"')]*)`).FindAllStringSubmatch(r.Raw, -1) {
				assert.True(t, strings.HasPrefix(u[1], "data:"), "%s loads %s", ref, u[1])
			}
		}
	}
	assert.Equal(t, map[string]bool{
		"swagger-ui/swagger-ui-bundle.js": true, "swagger-ui/swagger-ui.css": true, "apiref.js": true, "apiref.css": true,
		"swagger-ui/LICENSE": true, "swagger-ui/NOTICE": true, "swagger-ui/swagger-ui-bundle.js.LICENSE.txt": true,
	}, seen)

	var bundle []byte
	// The bundle goes gzipped to a browser, which gets the same bytes back.
	bundle, err = os.ReadFile("web/apiref/swagger-ui/swagger-ui-bundle.js")
	require.NoError(t, err)
	r := e.do(request{method: "GET", path: "/docs/assets/swagger-ui/swagger-ui-bundle.js", header: map[string]string{"Accept-Encoding": "gzip, deflate, br, zstd"}})
	require.Equal(t, http.StatusOK, r.Code)
	assert.Equal(t, "gzip", r.Header.Get("Content-Encoding"))
	assert.Equal(t, "Accept-Encoding", r.Header.Get("Vary"))
	assert.Equal(t, "text/javascript; charset=utf-8", r.Header.Get("Content-Type"))
	assert.Equal(t, "public, max-age=300", r.Header.Get("Cache-Control"), "unversioned: short cache")
	assert.Less(t, len(r.Raw), len(bundle)/3)
	zr, err := gzip.NewReader(strings.NewReader(r.Raw))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(bundle, plain), "gunzipped, the bundle")
	r = e.do(request{method: "GET", path: "/docs/assets/swagger-ui/swagger-ui-bundle.js", header: map[string]string{"Accept-Encoding": "gzip;q=0, identity"}})
	assert.Empty(t, r.Header.Get("Content-Encoding"), "gzip;q=0 refuses gzip")
	assert.Len(t, r.Raw, len(bundle))

	for _, p := range []string{"/docs/assets/nope.js", "/docs/assets/index.html", "/docs/assets/../openapi.json", "/docs/nope"} {
		requireError(t, e.do(request{method: "GET", path: p}), http.StatusNotFound, "Not found")
	}
	// The pay listener does not serve it.
	for _, p := range []string{"/docs", "/docs/assets/apiref.js"} {
		assert.Equal(t, http.StatusNotFound, e.payGet(p).Code, p)
	}

	// The dashboard links to it, signed in or not.
	login := e.do(request{method: "GET", path: "/dashboard/login"})
	require.Equal(t, http.StatusOK, login.Code)
	assert.Contains(t, login.Raw, `<a href="/docs" id="api-reference">API reference</a>`)
}
