package main

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 38, item 4: every command prints its usage on stdout with -h or
// --help and exits 0, instead of refusing the flag (check: exit 2, "takes no
// arguments") or ignoring it and starting (dev: the whole service); an
// argument a command does not take still exits 2 with a message.
func TestEveryCommandHasHelp(t *testing.T) {
	// Nothing may start: a cancelled context, a database nobody listens
	// on, a private data dir.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	env := envOf(map[string]string{
		"DATABASE_URL":      "postgres://postgres@127.0.0.1:1/nothing?sslmode=disable&connect_timeout=1",
		"PAYWATCH_DATA_DIR": t.TempDir(),
	})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dev"}, "Usage: paywatch dev\n"},
		{[]string{"serve"}, "Usage: paywatch serve\n"},
		{[]string{"api"}, "Usage: paywatch api\n"},
		{[]string{"worker"}, "Usage: paywatch worker\n"},
		{[]string{"migrate"}, "Usage: paywatch migrate\n"},
		{[]string{"check"}, "Usage: paywatch check\n"},
		{[]string{"version"}, "Usage: paywatch version\n"},
		{[]string{"admin"}, "Usage: paywatch admin <command>"},
		{[]string{"admin", "accounts", "create"}, "Usage: paywatch admin <command>"},
		{[]string{"devnet"}, "Usage: paywatch devnet <command>"},
		{[]string{"devnet", "send"}, "Usage: paywatch devnet <command>"},
		{[]string{"devnet", "serve"}, "Usage: paywatch devnet serve"},
		{[]string{"temporal"}, "Usage: paywatch temporal serve"},
		{[]string{"temporal", "serve"}, "Usage: paywatch temporal serve"},
	} {
		for _, flag := range []string{"-h", "--help"} {
			args := append(append([]string{}, c.args...), flag)
			var out, errOut bytes.Buffer
			code := run(ctx, args, env, &out, &errOut)
			assert.Equal(t, 0, code, "%q: %s", args, errOut.String())
			assert.True(t, strings.HasPrefix(out.String(), c.want), "%q prints its usage on stdout, got %q", args, out.String())
			assert.Empty(t, errOut.String(), "%q", args)
		}
	}
	// "paywatch help check" is "paywatch check --help".
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run(ctx, []string{"help", "check"}, env, &out, &errOut))
	assert.Equal(t, checkUsage, out.String())
	for _, s := range []string{"PAYWATCH_<NETWORK>_RPC_URL", "exits 1 when there is"} {
		assert.Contains(t, checkUsage, s)
	}
	out.Reset()
	assert.Equal(t, 0, run(ctx, []string{"serve", "--help"}, env, &out, &errOut))
	for _, s := range []string{"It needs DATABASE_URL, TEMPORAL_ADDRESS", "PAYWATCH_LOG_LEVEL",
		"It connects to Temporal as the Temporal CLI does", "TEMPORAL_API_KEY", "TEMPORAL_PROFILE", "tcld"} {
		assert.Contains(t, out.String(), s)
	}

	// A real unknown argument is still refused, with a message.
	for _, args := range [][]string{{"check", "--bogus"}, {"dev", "extra"}, {"serve", "-x"}, {"migrate", "now"}, {"version", "x"}, {"help", "nosuch"}} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(ctx, args, env, &out, &errOut), "%q", args)
		assert.Contains(t, errOut.String(), args[1], "%q names the argument", args)
		assert.Empty(t, out.String(), "%q", args)
	}
}

// The variables `paywatch dev --help` lists are those of Config's doc
// comment, which the code keeps as the list of every variable.
func TestServiceUsageListsEveryVariable(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, parser.ParseComments)
	require.NoError(t, err)
	var doc string
	ast.Inspect(f, func(n ast.Node) bool {
		if g, ok := n.(*ast.GenDecl); ok && g.Tok == token.TYPE && len(g.Specs) == 1 && g.Specs[0].(*ast.TypeSpec).Name.Name == "Config" {
			doc = g.Doc.Text()
		}
		return doc == ""
	})
	n := 0
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "\t") {
			continue
		}
		n++
		assert.Contains(t, serviceEnvironment, "  "+strings.TrimSpace(line)+"\n")
	}
	assert.Greater(t, n, 30, "Config's doc comment lists the variables")
	assert.Equal(t, n, strings.Count(serviceEnvironment, "\n  ")-1, "and the usage lists no other")
}
