package paywatch_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 30: the README is a page of links into docs/, so a link that leads
// nowhere (a file moved, a heading renamed) loses what it pointed at. Every
// link from one page to a file of the repository, with or without an
// #anchor, and every in-page #anchor must land: the file exists and the
// anchor is a heading of the target, by GitHub's rules.

// docPages are the pages whose links are checked.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	return append([]string{"README.md", "CONTRIBUTING.md", "SECURITY.md"}, pages...)
}

var (
	// mdLink is an inline link or image: [text](target) or ![alt](target),
	// the target ending at the first space or parenthesis.
	mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)[^)]*\)`)
	// htmlSrc is an <img src="..."> of the pages' screenshots.
	htmlSrc = regexp.MustCompile(`<img [^>]*src="([^"]+)"`)
	// codeSpan is inline code, whose brackets are no links.
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	// heading is an ATX heading; its text is the first group.
	heading = regexp.MustCompile(`^#{1,6}[ \t]+(.*?)[ \t#]*$`)
	// linkText keeps a link's text, as a heading's rendered text has it.
	linkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// proseLines returns the lines of a Markdown page outside fenced code
// blocks, by line number from 1; the lines of code blocks are blank.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	fence := ""
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
		}
	}
	return lines
}

// headingSlug is GitHub's anchor of a heading's text, before duplicates
// are numbered: lowercase, every character but letters, digits, '-' and
// '_' and spaces dropped, and each space a '-'.
func headingSlug(text string) string {
	text = linkText.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsNumber(r) || unicode.Is(unicode.M, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a page's headings, the second of two
// equal ones numbered -1, the third -2, as GitHub numbers them.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(text) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := headingSlug(m[1])
		if n := seen[s]; n > 0 {
			seen[s] = n + 1
			s = fmt.Sprintf("%s-%d", s, n)
		} else {
			seen[s] = 1
		}
		out[s] = true
	}
	return out
}

// brokenLinks returns a line for every link of page that leads nowhere.
// read reads a file of the repository by its path from the root.
func brokenLinks(page string, read func(string) (string, bool)) []string {
	text, _ := read(page)
	var broken []string
	for n, l := range proseLines(text) {
		l = codeSpan.ReplaceAllString(l, "")
		var targets []string
		for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
			targets = append(targets, m[1])
		}
		for _, m := range htmlSrc.FindAllStringSubmatch(l, -1) {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.ToSlash(filepath.Join(filepath.Dir(page), file))
			}
			where := fmt.Sprintf("%s:%d: %s", page, n+1, target)
			body, ok := read(path)
			switch {
			case !ok:
				broken = append(broken, where+": no file "+path)
			case anchor != "" && strings.HasSuffix(path, ".md") && !anchors(body)[anchor]:
				broken = append(broken, where+": no heading #"+anchor+" in "+path)
			}
		}
	}
	return broken
}

// readRepoFile reads a file (a directory reads as "") of this repository.
func readRepoFile(path string) (string, bool) {
	if strings.HasPrefix(path, "../") {
		return "", false // outside the repository: not there on GitHub
	}
	info, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	if info.IsDir() {
		return "", true
	}
	b, err := os.ReadFile(path)
	return string(b), err == nil
}

func TestDocLinks(t *testing.T) {
	for _, page := range docPages(t) {
		for _, b := range brokenLinks(page, readRepoFile) {
			t.Error(b)
		}
	}
}

// A reporter finds where to send a vulnerability privately from the
// README and from docs/security.md (issue 38).
func TestSecurityContactIsNamed(t *testing.T) {
	const private = "https://github.com/paywatch/paywatch/security/advisories/new"
	for _, page := range []string{"SECURITY.md", "docs/security.md"} {
		text, ok := readRepoFile(page)
		require.True(t, ok, page)
		assert.Contains(t, text, private, page)
	}
	readme, _ := readRepoFile("README.md")
	assert.Contains(t, readme, "(SECURITY.md)", "the README links SECURITY.md")
}

func TestHeadingSlugs(t *testing.T) {
	for text, want := range map[string]string{
		"Operator endpoints (x-master-key)":          "operator-endpoints-x-master-key",
		"The buyer's language":                       "the-buyers-language",
		"`paywatch check`":                           "paywatch-check",
		"Quorum: when no single provider is trusted": "quorum-when-no-single-provider-is-trusted",
		"Networks, tokens and money":                 "networks-tokens-and-money",
		"RPC cost and idle networks":                 "rpc-cost-and-idle-networks",
		"PAYWATCH_DATA_DIR and `make run`":           "paywatch_data_dir-and-make-run",
		"See [the API](api.md) — twice":              "see-the-api--twice",
	} {
		assert.Equal(t, want, headingSlug(text), text)
	}
	got := anchors("# Webhooks\n\n## Delivery\n\n```sh\n# Delivery\n```\n\n## Delivery\n\n### Delivery\n")
	assert.Equal(t, map[string]bool{"webhooks": true, "delivery": true, "delivery-1": true, "delivery-2": true}, got,
		"a heading in a code block is none; equal headings are numbered")
}

// A broken link is found: a missing file, a missing heading, a heading of
// another page, an image that is not there.
func TestDocLinksFindsBrokenLinks(t *testing.T) {
	files := map[string]string{
		"README.md":              "# paywatch\n\n## Quick start\n\nSee [it](#quick-start), [the guide](docs/guide.md#first-payment) and `[code](gone.md)`.\n",
		"docs/guide.md":          "# Guide\n\n## First payment\n\n![shot](screenshots/a.png) [back](../README.md#quick-start)\n",
		"docs/screenshots/a.png": "",
	}
	read := func(p string) (string, bool) { s, ok := files[p]; return s, ok }
	require.Empty(t, brokenLinks("README.md", read))
	require.Empty(t, brokenLinks("docs/guide.md", read))

	files["README.md"] += "\n[a](#first-payment) [b](docs/guide.md#quick-start) [c](docs/gone.md) <img src=\"docs/screenshots/b.png\">\n"
	files["docs/guide.md"] += "\n[d](../README.md#first-payment)\n"
	assert.Equal(t, []string{
		"README.md:7: #first-payment: no heading #first-payment in README.md",
		"README.md:7: docs/guide.md#quick-start: no heading #quick-start in docs/guide.md",
		"README.md:7: docs/gone.md: no file docs/gone.md",
		"README.md:7: docs/screenshots/b.png: no file docs/screenshots/b.png",
	}, brokenLinks("README.md", read))
	assert.Equal(t, []string{"docs/guide.md:7: ../README.md#first-payment: no heading #first-payment in README.md"},
		brokenLinks("docs/guide.md", read))
}
