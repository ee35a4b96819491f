package api

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch/locale"
)

//go:embed web
var webFS embed.FS

// asset is an embedded file served under /assets/.
type asset struct {
	body  []byte
	ctype string
	hash  string
}

// pageAssets are the URLs of the pages' stylesheet and script; the content
// hash in the query lets browsers cache them for good.
type pageAssets struct {
	CSS string
	JS  string
}

var (
	assetFiles = map[string]asset{}
	assetURLs  pageAssets
	// pages holds each page template once per language, with the
	// language's functions (pageFuncs).
	pages = map[locale.Lang]map[string]*template.Template{}
)

func init() {
	entries, err := fs.ReadDir(webFS, "web/assets")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		body, err := webFS.ReadFile("web/assets/" + e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(body)
		assetFiles[e.Name()] = asset{body: body, ctype: assetType(e.Name()), hash: hex.EncodeToString(sum[:6])}
	}
	assetURLs = pageAssets{
		CSS: "/assets/pay.css?v=" + assetFiles["pay.css"].hash,
		JS:  "/assets/pay.js?v=" + assetFiles["pay.js"].hash,
	}
	for _, l := range locale.Languages() {
		pages[l] = map[string]*template.Template{}
		for _, name := range []string{"payment", "link", "error"} {
			pages[l][name] = template.Must(template.New(name).Funcs(pageFuncs(l)).ParseFS(webFS, "web/templates/base.html", "web/templates/"+name+".html"))
		}
	}
}

// assetType is the Content-Type of an embedded file, by its name: text
// for the license files, which have no extension.
func assetType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case "", ".txt":
		return "text/plain; charset=utf-8"
	}
	return mime.TypeByExtension(path.Ext(name))
}

// serveAsset serves an embedded stylesheet or script.
func (s *Server) serveAsset(c echo.Context) error {
	a, ok := assetFiles[c.Param("name")]
	if !ok {
		return echo.ErrNotFound
	}
	cache := "public, max-age=300"
	if c.QueryParam("v") == a.hash {
		cache = "public, max-age=31536000, immutable"
	}
	c.Response().Header().Set("Cache-Control", cache)
	return c.Blob(http.StatusOK, a.ctype, a.body)
}

// render writes a page template in the page's language (pageLang).
func render(c echo.Context, status int, name string, data any) error {
	var buf bytes.Buffer
	if err := pages[pageLang(c)][name].ExecuteTemplate(&buf, "base", data); err != nil {
		return fmt.Errorf("render %s page: %w", name, err)
	}
	return c.HTMLBlob(status, buf.Bytes())
}
