package paywatch_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// Every message of the catalogue is written once: no other non-test Go
// file of the repository spells one of its texts as a string literal, so a
// message changes in one place.
func TestEachMessageWrittenOnce(t *testing.T) {
	fset := token.NewFileSet()
	catalogue, err := parser.ParseFile(fset, "messages.go", nil, 0)
	require.NoError(t, err)
	texts := map[string]bool{}
	ast.Inspect(catalogue, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && len(s) > 12 {
				texts[s] = true
			}
		}
		return true
	})
	require.Greater(t, len(texts), 50)

	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == "messages.go" {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && texts[s] {
					t.Errorf("%s: %q is written again; use the catalogue in messages.go", fset.Position(lit.Pos()), s)
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
}

func TestMessagesWithValues(t *testing.T) {
	assert.Equal(t, "Plan limit exceeded: the owner's plan allows 1 payment link", paywatch.MsgPlanLimit(1, "payment link"))
	assert.Equal(t, "Plan limit exceeded: the owner's plan allows 3 projects", paywatch.MsgPlanLimit(3, "project"))
	assert.Equal(t, `Cannot cancel payment with status "expired". Only pending payments can be cancelled.`, paywatch.MsgCancelRefused(paywatch.StatusExpired))
	assert.Equal(t, "USDC on TRC20 is not available for this merchant", paywatch.MsgNotAvailable(paywatch.Pair{Network: paywatch.TRC20, Token: paywatch.USDC}))
}
