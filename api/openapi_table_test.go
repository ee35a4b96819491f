package api_test

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// tableNames are the network and token names of the table (network.go), in
// API order, and the tokens each network serves.
func tableNames() (networks, tokens []string, tokensOf map[string][]any) {
	tokensOf = map[string][]any{}
	for _, info := range paywatch.Networks() {
		networks = append(networks, string(info.Network))
		tokensOf[string(info.Network)] = []any{}
		for _, t := range info.Tokens {
			tokensOf[string(info.Network)] = append(tokensOf[string(info.Network)], string(t))
		}
	}
	for _, p := range paywatch.Pairs() {
		if !slices.Contains(tokens, string(p.Token)) {
			tokens = append(tokens, string(p.Token))
		}
	}
	return networks, tokens, tokensOf
}

// wordsOf is a pattern matching any of names as a whole word.
func wordsOf(names []string) *regexp.Regexp {
	return regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)
}

// The document names the networks and tokens of the table, all of them and
// in its order, wherever it lists them: the Network and Token enums (which
// every request and answer is checked against, so a pair the document
// lacked would fail the tests that use it, not the client that reads the
// document), any other enum, the examples' tokens per network and maps by
// network, and the descriptions that list several. A row added to the
// table without the document fails here.
func TestOpenAPINamesTheTablesNetworksAndTokens(t *testing.T) {
	t.Parallel()
	networks, tokens, tokensOf := tableNames()
	raw, err := os.ReadFile(openAPIFile)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	require.NoError(t, dec.Decode(&doc))

	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	enumOf := func(name string) []string {
		var out []string
		for _, v := range schemas[name].(map[string]any)["enum"].([]any) {
			out = append(out, v.(string))
		}
		return out
	}
	assert.Equal(t, networks, enumOf("Network"), "components.schemas.Network is paywatch.Networks()")
	assert.Equal(t, tokens, enumOf("Token"), "components.schemas.Token is the tokens of paywatch.Pairs()")
	assert.Contains(t, networks, "BASE")
	assert.Equal(t, []string{"USDT", "USDC", "DAI", "PYUSD"}, tokens)

	networkWord, tokenWord := wordsOf(networks), wordsOf(tokens)
	named := func(re *regexp.Regexp, s string) []string {
		var out []string
		for _, m := range re.FindAllString(s, -1) {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
		return out
	}
	checked := map[string]int{}
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if enum, ok := v["enum"].([]any); ok {
				var names []string
				for _, e := range enum {
					if s, ok := e.(string); ok {
						names = append(names, s)
					}
				}
				switch {
				case slices.ContainsFunc(names, func(s string) bool { return slices.Contains(networks, s) }):
					assert.Equal(t, networks, names, "%s: every network, in the table's order", where)
					checked["network enums"]++
				case slices.ContainsFunc(names, func(s string) bool { return slices.Contains(tokens, s) }):
					assert.Equal(t, tokens, names, "%s: every token, in the table's order", where)
					checked["token enums"]++
				}
			}
			if list, ok := v["tokens"].([]any); ok {
				network, _ := v["network"].(string)
				if network == "" {
					network, _ = v["chain"].(string)
				}
				if want, known := tokensOf[network]; known {
					assert.Equal(t, want, list, "%s: the tokens %s serves", where, network)
					checked["tokens per network"]++
				}
			}
			var keys []string
			for k := range v {
				if slices.Contains(networks, k) {
					keys = append(keys, k)
				}
			}
			if len(keys) > 0 {
				assert.ElementsMatch(t, networks, keys, "%s: a map by network has every network", where)
				checked["maps by network"]++
			}
			for k, child := range v {
				walk(where+"/"+k, child)
			}
		case []any:
			for _, child := range v {
				walk(where+"[]", child)
			}
		case string:
			if n := named(networkWord, v); len(n) > 1 {
				assert.ElementsMatch(t, networks, n, "%s lists networks: all of them (%q)", where, v)
				checked["texts listing networks"]++
			}
			if n := named(tokenWord, v); len(n) > 1 {
				assert.ElementsMatch(t, tokens, n, "%s lists tokens: all of them (%q)", where, v)
				checked["texts listing tokens"]++
			}
		}
	}
	walk("", doc)
	// The walk reached each kind of place it checks.
	for _, kind := range []string{"network enums", "token enums", "tokens per network", "maps by network", "texts listing networks", "texts listing tokens"} {
		assert.NotZero(t, checked[kind], kind)
	}
}
