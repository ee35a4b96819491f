package chains

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// transferID names a transfer: its transaction and log index.
func transferID(t Transfer) string {
	return fmt.Sprintf("%s:%d", strings.ToLower(t.TxHash), t.LogIndex)
}

// transferFields are the fields of a transfer endpoints must agree on,
// besides its id, each with its name.
func transferFields(t Transfer) [][2]string {
	amount := "<nil>"
	if t.Amount != nil {
		amount = t.Amount.String()
	}
	return [][2]string{
		{"block", fmt.Sprint(t.BlockNumber)},
		{"block hash", strings.ToLower(t.BlockHash)},
		{"network", string(t.Network)},
		{"token", string(t.Token)},
		// Addresses as the clients normalise them, compared exactly: TRON's
		// base58 is case-sensitive.
		{"contract", t.Contract},
		{"from", t.From},
		{"to", t.To},
		{"amount", amount},
		// A memo payment's reference: an endpoint that drops or changes
		// it would send the money to unmatched funds, or to another payment.
		{"memos", strings.Join(t.Memos, ",")},
	}
}

// sortedTransfers returns ts ordered by block, log index and transaction.
func sortedTransfers(ts []Transfer) []Transfer {
	s := slices.Clone(ts)
	slices.SortFunc(s, func(a, b Transfer) int {
		return cmp.Or(cmp.Compare(a.BlockNumber, b.BlockNumber), cmp.Compare(a.LogIndex, b.LogIndex),
			strings.Compare(strings.ToLower(a.TxHash), strings.ToLower(b.TxHash)))
	})
	return s
}

// transfersKey is a list of transfers in a form that is equal for two
// lists exactly when they hold the same transfers, field for field, in
// any order.
func transfersKey(ts []Transfer) string {
	var b strings.Builder
	for _, t := range sortedTransfers(ts) {
		b.WriteString(transferID(t))
		for _, f := range transferFields(t) {
			b.WriteByte('/')
			b.WriteString(f[1])
		}
		b.WriteByte(';')
	}
	return b.String()
}

// transfersDiff says how two lists of transfers differ: the first
// transfer only one has, or the first field they give differently.
func transfersDiff(a, b []Transfer) string {
	byID := func(ts []Transfer) map[string]Transfer {
		m := make(map[string]Transfer, len(ts))
		for _, t := range ts {
			m[transferID(t)] = t
		}
		return m
	}
	ma, mb := byID(a), byID(b)
	for _, t := range sortedTransfers(append(slices.Clone(a), b...)) {
		id := transferID(t)
		ta, inA := ma[id]
		tb, inB := mb[id]
		switch {
		case !inA:
			return fmt.Sprintf("transfer %s of block %d given by the second only", id, t.BlockNumber)
		case !inB:
			return fmt.Sprintf("transfer %s of block %d given by the first only", id, t.BlockNumber)
		}
		fa, fb := transferFields(ta), transferFields(tb)
		for i := range fa {
			if fa[i][1] != fb[i][1] {
				return fmt.Sprintf("transfer %s: %s %s ≠ %s", id, fa[i][0], fa[i][1], fb[i][1])
			}
		}
	}
	if len(a) != len(b) {
		return fmt.Sprintf("%d transfers ≠ %d", len(a), len(b))
	}
	return "the same transfers"
}
