package paywatch_test

import (
	"bufio"
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
// reach no Temporal, and the workflows import only the root package of
// this module.
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
