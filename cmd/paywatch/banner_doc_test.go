package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 30, item 5: the start-up block that the README and
// docs/getting-started.md show is the one `paywatch dev` prints: the same
// lines with the same labels in the same order, and the same values but
// for ports, the master key and the database's address, which change from
// run to run. Its first line carries the version as `make run` builds it
// (git describe), never the word "dev" that only a build without the
// Makefile prints.

var (
	// bannerFirstLine is the first line of the start-up block.
	bannerFirstLine = regexp.MustCompile(`^paywatch (\S+) is running \(dev\)$`)
	// bannerLike finds the samples of the block, right or wrong.
	bannerLike = regexp.MustCompile(`^paywatch .*is running`)
	// describedVersion is what `git describe --tags --always --dirty`
	// prints: a tag (with the commits since it), or a bare commit.
	describedVersion = regexp.MustCompile(`^(v?\d+\.\d+\.\d+(-[0-9A-Za-z.]+)*?(-\d+-g[0-9a-f]{7,40})?|[0-9a-f]{7,40})(-dirty)?$`)
	// bannerVariables are the values that differ from run to run, each
	// with the word it is compared as.
	bannerVariables = []struct {
		re   *regexp.Regexp
		word string
	}{
		{regexp.MustCompile(`^\S+@\S+:\d+/\S+$`), "USER@HOST:PORT/DATABASE"},
		{regexp.MustCompile(`^mk_[A-Z2-7]{26}$`), "mk_KEY"},
		{regexp.MustCompile(`^(https?://)?127\.0\.0\.1:\d+(/\S*)?$`), "${1}ADDRESS${2}"},
	}
)

// bannerWords returns a start-up line as the words compared, with the
// values that vary in their place.
func bannerWords(line string) []string {
	words := strings.Fields(line)
	for i, w := range words {
		for _, v := range bannerVariables {
			if m := v.re.FindStringSubmatchIndex(w); m != nil {
				words[i] = string(v.re.ExpandString(nil, v.word, w, m))
				break
			}
		}
	}
	return words
}

// compareBanner says how a documented start-up block differs from the one
// printed, or nil when it does not.
func compareBanner(sample, printed []string) error {
	if len(sample) == 0 || len(printed) == 0 {
		return fmt.Errorf("an empty start-up block")
	}
	m := bannerFirstLine.FindStringSubmatch(sample[0])
	if m == nil || !bannerFirstLine.MatchString(printed[0]) {
		return fmt.Errorf("first line %q, want %q", sample[0], "paywatch <version> is running (dev)")
	}
	if !describedVersion.MatchString(m[1]) {
		return fmt.Errorf("first line %q: %q is not a version as make run prints it (git describe --tags --always --dirty, such as 29d73cb or v1.2.0)", sample[0], m[1])
	}
	for i := 1; i < max(len(sample), len(printed)); i++ {
		switch {
		case i >= len(sample):
			return fmt.Errorf("line %d missing: %q", i+1, printed[i])
		case i >= len(printed):
			return fmt.Errorf("line %d is not printed: %q", i+1, sample[i])
		}
		if want, got := bannerWords(printed[i]), bannerWords(sample[i]); strings.Join(want, " ") != strings.Join(got, " ") {
			return fmt.Errorf("line %d: %q, printed %q", i+1, sample[i], printed[i])
		}
	}
	return nil
}

// printedBanner returns the start-up block from a process's output.
func printedBanner(out string) []string {
	var block []string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case block == nil && bannerFirstLine.MatchString(l):
			block = []string{l}
		case block != nil && strings.TrimSpace(l) == "":
			return block
		case block != nil:
			block = append(block, l)
		}
	}
	return block
}

// docBanners returns every start-up block that the README and docs/*.md
// show, by page and line: a code block whose first line reads like the
// block's.
func docBanners(t *testing.T) map[string][]string {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	out := map[string][]string{}
	for _, page := range append([]string{"../../README.md"}, pages...) {
		raw, err := os.ReadFile(page)
		require.NoError(t, err)
		lines := strings.Split(string(raw), "\n")
		for i := 0; i+1 < len(lines); i++ {
			if !strings.HasPrefix(lines[i], "```") || !bannerLike.MatchString(lines[i+1]) {
				continue
			}
			var block []string
			for j := i + 1; j < len(lines) && !strings.HasPrefix(lines[j], "```"); j++ {
				block = append(block, lines[j])
			}
			out[fmt.Sprintf("%s:%d", strings.TrimPrefix(page, "../../"), i+2)] = block
			i += len(block) + 1
		}
	}
	return out
}

// assertDocBannersMatch holds every documented start-up block to the one
// the test's `paywatch dev` printed.
func assertDocBannersMatch(t *testing.T, out string) {
	t.Helper()
	printed := printedBanner(out)
	require.NotEmpty(t, printed, "no start-up block in:\n%s", out)
	shown := map[string]bool{}
	for where, sample := range docBanners(t) {
		shown[strings.Split(where, ":")[0]] = true
		assert.NoError(t, compareBanner(sample, printed), "%s: the start-up block differs from the one printed:\n%s", where, strings.Join(printed, "\n"))
	}
	for _, page := range []string{"README.md", "docs/getting-started.md"} {
		assert.True(t, shown[page], "%s shows no start-up block", page)
	}
}

// The comparison refuses what a stale sample gets wrong. printed is a
// block that `paywatch dev` printed, as the test's configuration makes it.
func TestCompareBanner(t *testing.T) {
	printed := strings.Split(`paywatch dev is running (dev)
  API          http://127.0.0.1:41235
  Pay pages    http://127.0.0.1:38771
  Temporal UI  http://127.0.0.1:40077
  Master key   mk_XTYSY3SBYKQO6FV7ZNKUYL46KF
  Metrics      http://127.0.0.1:44511/metrics
  Database     postgres@127.0.0.1:5432/paywatch_test_q3x7rbh2kmnd
  Devnet chains (a block every 1s; send test transfers with "paywatch devnet send"):
    TRC20     127.0.0.1:42859          USDT TJhSSbZ8dVqtEiLYgva1WWcV4R4NkRCARH
    BEP20     http://127.0.0.1:42475   USDT USDC DAI
    ERC20     http://127.0.0.1:45365   USDT USDC DAI PYUSD
    POLYGON   http://127.0.0.1:43651   USDT USDC DAI
    ARBITRUM  http://127.0.0.1:44801   USDT USDC DAI PYUSD
    BASE      http://127.0.0.1:40111   USDC DAI
    Token contracts of the chains above that name a token alone:
      USDT 0x5FbDB2315678afecb367f032d93F642f64180aa3
      USDC 0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512
      DAI 0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0
      PYUSD 0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9`, "\n")
	good := strings.Split(`paywatch 29d73cb is running (dev)
  API          http://127.0.0.1:8080
  Pay pages    http://127.0.0.1:8081
  Temporal UI  http://127.0.0.1:8233
  Master key   mk_ZFGRHTW5KPRXLV6HCE6BBOZGAI
  Metrics      http://127.0.0.1:9090/metrics
  Database     postgres@127.0.0.1:5432/paywatch
  Devnet chains (a block every 1s; send test transfers with "paywatch devnet send"):
    TRC20     127.0.0.1:39309          USDT TJhSSbZ8dVqtEiLYgva1WWcV4R4NkRCARH
    BEP20     http://127.0.0.1:46641   USDT USDC DAI
    ERC20     http://127.0.0.1:45643   USDT USDC DAI PYUSD
    POLYGON   http://127.0.0.1:45123   USDT USDC DAI
    ARBITRUM  http://127.0.0.1:38727   USDT USDC DAI PYUSD
    BASE      http://127.0.0.1:40111   USDC DAI
    Token contracts of the chains above that name a token alone:
      USDT 0x5FbDB2315678afecb367f032d93F642f64180aa3
      USDC 0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512
      DAI 0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0
      PYUSD 0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9`, "\n")
	require.NoError(t, compareBanner(good, printed))
	for _, v := range []string{"29d73cb-dirty", "v1.2.0", "v1.2.0-3-g29d73cb", "v0.1.0-rc.1"} {
		assert.NoError(t, compareBanner(append([]string{"paywatch " + v + " is running (dev)"}, good[1:]...), printed), v)
	}

	edit := func(i int, line string) []string {
		s := append([]string(nil), good...)
		s[i] = line
		return s
	}
	for name, sample := range map[string][]string{
		"the version the README showed before issue 30": edit(0, "paywatch dev is running (dev)"),
		"another label":          edit(2, "  Payment pages http://127.0.0.1:8081"),
		"another contract":       edit(15, "      USDT 0xdAC17F958D2ee523a2206206994597C13D831ec7"),
		"another token list":     edit(10, "    ERC20     http://127.0.0.1:45643   USDT USDC"),
		"another block time":     edit(7, `  Devnet chains (a block every 2s; send test transfers with "paywatch devnet send"):`),
		"a line missing":         append(append([]string(nil), good[:5]...), good[6:]...),
		"lines in another order": append(append(append([]string(nil), good[:1]...), good[2], good[1]), good[3:]...),
		"a line too many":        append(append([]string(nil), good...), "  Web UI       http://127.0.0.1:8233"),
	} {
		assert.Error(t, compareBanner(sample, printed), name)
	}
}
