package paywatch_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/paywatch/paywatch"

// imports returns the imports of the non-test Go files of the package in
// dir (relative to the repository root).
func imports(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// closure returns every import of dir's package and of the packages of
// this module it reaches.
func closure(t *testing.T, dir string) map[string]bool {
	all := map[string]bool{}
	var visit func(string)
	visit = func(d string) {
		for _, p := range imports(t, d) {
			if all[p] {
				continue
			}
			all[p] = true
			if p == module || strings.HasPrefix(p, module+"/") {
				visit("." + strings.TrimPrefix(p, module))
			}
		}
	}
	visit(dir)
	return all
}

// The layers of the README's architecture section: store and webhooks
// reach no Temporal, the workflows import only the root package of this
// module, and api talks to the use cases (payments, accounts), never to
// store: its input rules are the root package's, the rows it shows are
// named by the use cases. Only non-test files count: api's tests may set
// up rows through store directly.
func TestLayering(t *testing.T) {
	for _, dir := range []string{"./store", "./webhooks"} {
		for p := range closure(t, dir) {
			assert.False(t, strings.HasPrefix(p, "go.temporal.io"), "%s reaches %s", dir, p)
		}
	}
	for _, p := range imports(t, "./workflows") {
		if strings.HasPrefix(p, module) {
			assert.Equal(t, module, p, "workflows imports %s", p)
		}
	}
	for _, p := range imports(t, "./api") {
		assert.NotEqual(t, module+"/store", p, "api imports %s: call a use case of payments or accounts", p)
	}
	// api.Deps.Store is handed to the use cases; no handler calls it.
	files, err := filepath.Glob("api/*.go")
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "Store" {
					t.Errorf("%s: Store.%s: call a use case of payments or accounts", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
}

// No non-test Go file is over 500 lines, unless its first line says why
// ("// This file is long because ...").
func TestNoLongFiles(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		lines, first := 0, ""
		for sc.Scan() {
			if lines == 0 {
				first = sc.Text()
			}
			lines++
		}
		if lines > 500 && !strings.HasPrefix(first, "// This file is long because") {
			t.Errorf("%s has %d lines: split it by concern, or say why on its first line", path, lines)
		}
		return sc.Err()
	})
	require.NoError(t, err)
}
