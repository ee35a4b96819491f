package api

import (
	"slices"

	"github.com/paywatch/paywatch"
)

// The dashboard's choices of networks and tokens all come from the one
// table of paywatch.Networks and paywatch.Pairs, so that a pair added
// there shows in every form without touching a page.

// tokenOption is a token as a form's select offers it.
type tokenOption struct {
	Token paywatch.Token
	// Name is the display name, such as "Dai Stablecoin".
	Name string
}

// tokenOptions returns the tokens served on at least one network that
// keep accepts, in paywatch.Tokens' order (USDT, USDC, DAI, PYUSD); keep
// nil accepts every network.
func tokenOptions(keep func(paywatch.Network) bool) []tokenOption {
	var out []tokenOption
	pairs := paywatch.Pairs()
	for _, t := range paywatch.Tokens() {
		if slices.ContainsFunc(pairs, func(p paywatch.Pair) bool {
			return p.Token == t && (keep == nil || keep(p.Network))
		}) {
			out = append(out, tokenOption{Token: t, Name: paywatch.TokenName(t)})
		}
	}
	return out
}
