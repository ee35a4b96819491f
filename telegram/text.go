package telegram

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxTextLength is the most characters Telegram accepts in one message. It
// counts UTF-16 code units, so an emoji outside the Basic Multilingual
// Plane takes two.
const MaxTextLength = 4096

// maxFieldLength caps each merchant-provided field, so that one absurd
// order id cannot push the amount or the link out of a phone's screen.
const maxFieldLength = 256

// Notification is one payment event as a chat message shows it. The fields
// carry the webhook payload's values.
type Notification struct {
	// Project is the project's name.
	Project string
	// Event is the webhook event, such as "payment.completed".
	Event string
	// Late marks funds that arrived after the payment expired.
	Late bool
	// Amount and PaidAmount are decimal strings as in webhooks, e.g. "25.00".
	Amount, PaidAmount string
	// Token and Network are empty for a payment without a selected network.
	Token, Network string
	// ExternalOrderID and ExternalRef are the merchant's references.
	ExternalOrderID, ExternalRef string
	// TxHash is the counted transfer's hash, "" if none.
	TxHash string
	// ExplorerTxURL is the explorer page of TxHash, "" if none.
	ExplorerTxURL string
	// PaymentID is paywatch's id of the payment.
	PaymentID string
	// To and Reason are a transfer.unmatched event's recipient and why no
	// payment counted the transfer, in words.
	To, Reason string
}

// Text returns the plain-text message for n (sent without parse_mode, so
// nothing needs escaping), for example:
//
//	✅ Paid: 25.00 USDT on TRC20
//	Shop: My shop
//	Order: ORDER-1
//	Payment: 0f8c…
//	Tx: 3f2a…9c1d
//	https://tronscan.org/#/transaction/3f2a…
//
// Every field is stripped of control and bidirectional-override characters
// first: they come from merchants and customers, and a newline or a
// right-to-left override could otherwise forge a line or make an amount
// read differently. The result fits MaxTextLength.
func Text(n Notification) string {
	amount, paid := clean(n.Amount), clean(n.PaidAmount)
	unit := clean(n.Token)
	if network := clean(n.Network); network != "" {
		unit = strings.TrimSpace(unit + " on " + network)
	}
	money := func(v string) string {
		return strings.TrimSpace(v + " " + unit)
	}

	var head string
	switch {
	case n.Event == "payment.completed" && paid != "":
		// What arrived, which within the 1% tolerance may exceed the price.
		head = "✅ Paid: " + money(paid)
	case n.Event == "payment.completed":
		head = "✅ Paid: " + money(amount)
	case n.Event == "payment.overpaid" && paid != "":
		head = "✅ Overpaid: " + money(paid) + " (expected " + amount + ")"
	case n.Event == "payment.overpaid":
		head = "✅ Overpaid: " + money(amount)
	case n.Event == "payment.partial" && paid != "":
		head = "🟡 Partially paid: " + paid + " of " + money(amount)
	case n.Event == "payment.partial":
		head = "🟡 Partially paid: " + money(amount)
	case n.Event == "payment.expired":
		head = "⌛ Expired: " + money(amount)
	case n.Event == "payment.cancelled":
		head = "✖ Cancelled: " + money(amount)
	case n.Event == "transfer.unmatched":
		head = "⚠️ Unmatched funds: " + money(amount)
	default:
		// A new event must still reach the merchant, if less prettily.
		head = "🔔 " + clean(n.Event) + ": " + money(amount)
	}
	if n.Late {
		head += " (late payment)"
	}

	lines := []string{head}
	add := func(label, v string) {
		if v = clean(v); v != "" {
			lines = append(lines, label+v)
		}
	}
	add("Shop: ", n.Project)
	if clean(n.ExternalOrderID) != "" {
		add("Order: ", n.ExternalOrderID)
	} else {
		add("Customer: ", n.ExternalRef)
	}
	add("To: ", n.To)
	add("Why: ", n.Reason)
	add("Payment: ", n.PaymentID)
	if link := clean(n.ExplorerTxURL); link != "" {
		// The link carries the full hash, so the line above it only needs
		// enough to recognise the transfer.
		add("Tx: ", shortHash(clean(n.TxHash)))
		lines = append(lines, link)
	} else {
		add("Tx: ", n.TxHash)
	}
	return Truncate(strings.Join(lines, "\n"), MaxTextLength)
}

// shortHash abbreviates a transaction hash to its first and last four
// digits, keeping an "0x" prefix: "0x3f2a…9c1d".
func shortHash(h string) string {
	prefix := ""
	if len(h) > 2 && (h[:2] == "0x" || h[:2] == "0X") {
		prefix, h = h[:2], h[2:]
	}
	if utf8.RuneCountInString(h) <= 12 {
		return prefix + h
	}
	r := []rune(h)
	return prefix + string(r[:4]) + "…" + string(r[len(r)-4:])
}

// clean makes a field safe to put on one line of a message: invalid UTF-8
// is replaced (Telegram rejects it), whitespace controls become spaces,
// other control and bidi formatting characters are dropped, and the result
// is trimmed and capped at maxFieldLength.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == 0x85 || r == 0x2028 || r == 0x2029:
			return ' '
		case unicode.IsControl(r), unicode.Is(unicode.Bidi_Control, r):
			return -1
		}
		return r
	}, s)
	return Truncate(strings.TrimSpace(s), maxFieldLength)
}

// Truncate cuts s to at most limit UTF-16 code units, the unit Telegram
// counts in, ending it with "…" when anything was cut. It cuts between
// runes, never inside one, so the result stays valid UTF-8.
func Truncate(s string, limit int) string {
	if limit <= 0 {
		return ""
	}
	if utf16Len(s) <= limit {
		return s
	}
	const ellipsis = "…" // one UTF-16 unit
	used := 0
	for i, r := range s {
		n := utf16.RuneLen(r)
		if n < 0 {
			n = 1 // invalid UTF-8 decodes as U+FFFD, one unit
		}
		if used+n > limit-1 {
			return s[:i] + ellipsis
		}
		used += n
	}
	return s
}

// utf16Len is the length of s in UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if l := utf16.RuneLen(r); l > 0 {
			n += l
		} else {
			n++
		}
	}
	return n
}
