package store

import (
	"fmt"
	"strings"

	"github.com/paywatch/paywatch"
)

// confirmationsSQL is a CASE over the network registry: each network's
// confirmations.
func confirmationsSQL(network string) string {
	var b strings.Builder
	b.WriteString("CASE " + network)
	for _, n := range paywatch.Networks() {
		fmt.Fprintf(&b, " WHEN '%s' THEN %d", n.Network, max(n.Confirmations, 1))
	}
	b.WriteString(" END")
	return b.String()
}

// otherNetworksSQL is the other networks sharing network's addresses
// (its address family, less itself), as a text[]: empty for TRC20.
func otherNetworksSQL(network string) string {
	var b strings.Builder
	b.WriteString("CASE " + network)
	for _, n := range paywatch.Networks() {
		members := []string{}
		for _, m := range paywatch.NetworksOf(n.Family) {
			if m != n.Network {
				members = append(members, "'"+string(m)+"'")
			}
		}
		fmt.Fprintf(&b, " WHEN '%s' THEN ARRAY[%s]::text[]", n.Network, strings.Join(members, ", "))
	}
	b.WriteString(" END")
	return b.String()
}

// decimalsSQL is a CASE over the pairs: each token's decimals.
func decimalsSQL(network, token string) string {
	var b strings.Builder
	b.WriteString("CASE")
	for _, p := range paywatch.Pairs() {
		fmt.Fprintf(&b, " WHEN %s = '%s' AND %s = '%s' THEN %d", network, p.Network, token, p.Token, paywatch.Decimals(p.Network, p.Token))
	}
	b.WriteString(" END")
	return b.String()
}

// belowMinimumSQL is the condition that transfer t is below its project's
// (pr) dust minimum now: min_amount, else the global 0.10, compared
// exactly in the token's base units. The verdict, the dashboard's count
// and the reopening of settled dust (reopenUnderLoweredMinimum) all read
// this one rule.
func belowMinimumSQL() string {
	return `t.amount < COALESCE(pr.min_amount, 0.10) * power(10::numeric, ` + decimalsSQL("t.network", "t.token") + `)`
}
