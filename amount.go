package paywatch

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

// MaxDecimals is the largest number of decimals an Amount may carry. Tokens
// use at most 18; the headroom keeps sums of differently scaled amounts
// representable while bounding the work a hostile input can cause.
const MaxDecimals = 36

// MaxUnitsDigits bounds the base units of a parsed amount to 78 decimal
// digits, the width of the NUMERIC(78,0) columns that store them (and enough
// for any uint256 token balance).
const MaxUnitsDigits = 78

// Amount is an exact token amount: an integer number of base units and the
// number of decimals they are scaled by (10.50 USDT on Tron is 10500000 units
// with 6 decimals). It is an immutable value; no method modifies its
// receiver or shares memory with its arguments or results, and no float is
// ever involved.
//
// The zero value is 0 with 0 decimals and is ready to use. Two Amounts are
// reflect.DeepEqual exactly when they have the same value and the same
// decimals, so tests may compare them with assert.Equal.
//
// Amount implements encoding.TextMarshaler, so encoding/json (and with it
// Temporal payloads) writes it as a string with all its decimals, such as
// "10.500000", which reads back identically. API responses use String
// instead, which is the display form "10.50".
type Amount struct {
	units    *big.Int // nil when zero, so equal values are DeepEqual; never mutated.
	decimals uint8
}

// bigZero is a shared zero for reading; it must never be written.
var bigZero = new(big.Int)

// pow10Cache holds 10^0 .. 10^(2*MaxDecimals+4) so scaling never recomputes
// powers; entries are shared and must never be written.
var pow10Cache = func() []*big.Int {
	out := make([]*big.Int, 2*MaxDecimals+5)
	p := big.NewInt(1)
	for i := range out {
		out[i] = new(big.Int).Set(p)
		p.Mul(p, big.NewInt(10))
	}
	return out
}()

// pow10 returns 10^n; the result for small n is shared and read-only.
func pow10(n int) *big.Int {
	if n < len(pow10Cache) {
		return pow10Cache[n]
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// makeAmount builds an Amount that takes ownership of u.
func makeAmount(u *big.Int, decimals int) Amount {
	if u != nil && u.Sign() == 0 {
		u = nil
	}
	return Amount{units: u, decimals: uint8(decimals)}
}

// NewAmount returns the amount of units base units scaled by decimals, as
// read from a chain (a Transfer log value and the token's decimals). units is
// copied and may be nil for zero. It panics if decimals is outside
// 0..MaxDecimals, which is a programming error, never bad input.
func NewAmount(units *big.Int, decimals int) Amount {
	if decimals < 0 || decimals > MaxDecimals {
		panic(fmt.Sprintf("paywatch: NewAmount decimals %d outside 0..%d", decimals, MaxDecimals))
	}
	if units == nil {
		return Amount{decimals: uint8(decimals)}
	}
	return makeAmount(new(big.Int).Set(units), decimals)
}

// ParseAmount parses a request amount given as decimal text with the syntax
// of a JSON number (digits, an optional fraction, an optional exponent such
// as "1e1" or "2.5E-1") into an amount with the given decimals. It refuses
// anything that is not exactly representable: zero or negative values
// ("amount must be positive"), more significant fraction digits than decimals
// ("amount has more than 6 decimal places"; trailing zeros do not count, so
// "10.500" is fine with 2 decimals), and values whose base units exceed
// MaxUnitsDigits digits. Leading zeros are tolerated. Errors are *Error with
// code EINVALID.
func ParseAmount(s string, decimals int) (Amount, error) {
	if decimals < 0 || decimals > MaxDecimals {
		return Amount{}, invalidf("amount decimals %d outside 0..%d", decimals, MaxDecimals)
	}
	neg, mant, exp, ok := scanNumber(s)
	if !ok {
		return Amount{}, invalidf("amount is not a valid number")
	}
	if neg || mant == "" {
		return Amount{}, invalidf("amount must be positive")
	}
	return scaleMantissa(mant, exp, decimals)
}

// ParseAmountNumber parses a number taken from a JSON request decoded with
// UseNumber, so the amount never passes through a float.
func ParseAmountNumber(n json.Number, decimals int) (Amount, error) {
	return ParseAmount(string(n), decimals)
}

// MustParseAmount is ParseAmount for constants and tests; it panics on error.
func MustParseAmount(s string, decimals int) Amount {
	a, err := ParseAmount(s, decimals)
	if err != nil {
		panic(fmt.Sprintf("paywatch: MustParseAmount(%q, %d): %v", s, decimals, err))
	}
	return a
}

// maxExponentDigits bounds the exponent of a parsed number; anything larger
// is out of range either way and is refused without arithmetic.
const maxExponentDigits = 6

// scanNumber splits JSON-number text into sign, mantissa digits and a power
// of ten, so that the value is ±mant × 10^exp. mant has no leading or trailing
// zeros ("" means zero); trailing zeros are folded into exp.
func scanNumber(s string) (neg bool, mant string, exp int, ok bool) {
	i := 0
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	intStart := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[intStart:i]
	if intPart == "" {
		return false, "", 0, false
	}
	var frac string
	if i < len(s) && s[i] == '.' {
		i++
		fracStart := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		frac = s[fracStart:i]
		if frac == "" {
			return false, "", 0, false
		}
	}
	var e int
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		eStart := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		digits := strings.TrimLeft(s[eStart:i], "0")
		if i == eStart {
			return false, "", 0, false
		}
		if len(digits) > maxExponentDigits {
			// Out of range whatever the mantissa; make it obviously so
			// while keeping the sign for the error message.
			digits = "1" + strings.Repeat("0", maxExponentDigits)
		}
		for _, c := range digits {
			e = e*10 + int(c-'0')
		}
		if eneg {
			e = -e
		}
	}
	if i != len(s) {
		return false, "", 0, false
	}
	m := strings.TrimLeft(intPart+frac, "0")
	exp = e - len(frac)
	trimmed := strings.TrimRight(m, "0")
	exp += len(m) - len(trimmed)
	return neg, trimmed, exp, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scaleMantissa turns mant × 10^exp into base units with the given decimals,
// checking precision and size before doing any big-number work.
func scaleMantissa(mant string, exp, decimals int) (Amount, error) {
	if -exp > decimals {
		return Amount{}, invalidf("amount has more than %d decimal places", decimals)
	}
	shift := exp + decimals // ≥ 0
	if len(mant)+shift > MaxUnitsDigits {
		return Amount{}, invalidf("amount is too large")
	}
	u, ok := new(big.Int).SetString(mant, 10)
	if !ok {
		return Amount{}, invalidf("amount is not a valid number")
	}
	if shift > 0 {
		u.Mul(u, pow10(shift))
	}
	return makeAmount(u, decimals), nil
}

// int returns the units for reading; the result must never be written.
func (a Amount) int() *big.Int {
	if a.units == nil {
		return bigZero
	}
	return a.units
}

// Units returns the amount in base units, as a copy the caller owns.
func (a Amount) Units() *big.Int {
	return new(big.Int).Set(a.int())
}

// Decimals returns the number of decimals the units are scaled by.
func (a Amount) Decimals() int {
	return int(a.decimals)
}

// scaledTo returns the units at d ≥ a.decimals; the result must be treated
// as read-only because it may be a's own units.
func (a Amount) scaledTo(d int) *big.Int {
	if d == int(a.decimals) || a.units == nil {
		return a.int()
	}
	return new(big.Int).Mul(a.units, pow10(d-int(a.decimals)))
}

// Rescale returns the same value with d decimals. It is exact: it fails
// rather than drop a non-zero digit, because rounding money silently is how
// customers get credited for less than they paid.
func (a Amount) Rescale(d int) (Amount, error) {
	if d < 0 || d > MaxDecimals {
		return Amount{}, invalidf("amount decimals %d outside 0..%d", d, MaxDecimals)
	}
	cur := int(a.decimals)
	switch {
	case d == cur:
		return a, nil
	case d > cur:
		return makeAmount(a.scaledTo(d), d), nil
	}
	if a.FractionDigits() > d {
		return Amount{}, invalidf("amount %s cannot be expressed with %d decimals", a, d)
	}
	if a.units == nil {
		return Amount{decimals: uint8(d)}, nil
	}
	return makeAmount(new(big.Int).Quo(a.units, pow10(cur-d)), d), nil
}

// align returns a's and b's units at their common (larger) decimals. The
// results are read-only.
func align(a, b Amount) (x, y *big.Int, d int) {
	d = max(int(a.decimals), int(b.decimals))
	return a.scaledTo(d), b.scaledTo(d), d
}

// Add returns a + b with the larger of the two decimals.
func (a Amount) Add(b Amount) Amount {
	x, y, d := align(a, b)
	return makeAmount(new(big.Int).Add(x, y), d)
}

// Sub returns a − b with the larger of the two decimals; the result may be
// negative.
func (a Amount) Sub(b Amount) Amount {
	x, y, d := align(a, b)
	return makeAmount(new(big.Int).Sub(x, y), d)
}

// Cmp compares the values of a and b regardless of their decimals: -1 if
// a < b, 0 if equal, +1 if a > b. 10.5 with 6 decimals equals 10.50 with 2.
func (a Amount) Cmp(b Amount) int {
	x, y, _ := align(a, b)
	return x.Cmp(y)
}

// Equal reports whether a and b have the same value and the same decimals,
// which is what a lossless round trip must preserve; use Cmp to compare
// values alone.
func (a Amount) Equal(b Amount) bool {
	return a.decimals == b.decimals && a.int().Cmp(b.int()) == 0
}

// Sign returns -1, 0 or +1 for a negative, zero or positive amount.
func (a Amount) Sign() int {
	return a.int().Sign()
}

// IsZero reports whether the amount is zero.
func (a Amount) IsZero() bool {
	return a.units == nil || a.units.Sign() == 0
}

// FractionDigits returns the number of significant fraction digits: 2 for
// 10.50, 0 for 10. It is what the micro-amount precision rule checks.
func (a Amount) FractionDigits() int {
	if a.IsZero() {
		return 0
	}
	digits := a.int().Text(10) // non-zero, so it ends in a non-zero digit eventually
	zeros := len(digits) - len(strings.TrimRight(digits, "0"))
	return max(0, int(a.decimals)-zeros)
}

// split returns the sign, integer digits and all fraction digits of a.
func (a Amount) split() (neg bool, intPart, frac string) {
	u := a.int()
	digits := new(big.Int).Abs(u).Text(10)
	d := int(a.decimals)
	if len(digits) <= d {
		digits = strings.Repeat("0", d-len(digits)+1) + digits
	}
	return u.Sign() < 0, digits[:len(digits)-d], digits[len(digits)-d:]
}

// String returns the display form used in every API response and webhook:
// at least 2 fraction digits, more only when they are significant ("10.00",
// "10.50", "10.123456", "0.10", "-1.25").
func (a Amount) String() string {
	neg, intPart, frac := a.split()
	frac = frac[:a.FractionDigits()]
	if len(frac) < 2 {
		frac += strings.Repeat("0", 2-len(frac))
	}
	if neg {
		return "-" + intPart + "." + frac
	}
	return intPart + "." + frac
}

// MarshalText writes the amount with all its decimals ("10.500000" for 6
// decimals, "10" for none), so UnmarshalText restores both the value and the
// decimals exactly.
func (a Amount) MarshalText() ([]byte, error) {
	neg, intPart, frac := a.split()
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(intPart)
	if frac != "" {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return []byte(b.String()), nil
}

// UnmarshalText reads the form MarshalText writes: an optional minus sign,
// digits and an optional fraction whose length sets the decimals. Unlike
// ParseAmount it accepts zero and negative values, because stored amounts
// include differences and empty totals.
func (a *Amount) UnmarshalText(text []byte) error {
	s := string(text)
	body, neg := strings.CutPrefix(s, "-")
	intPart, frac, hasDot := strings.Cut(body, ".")
	if intPart == "" || (hasDot && frac == "") || !allDigits(intPart) || !allDigits(frac) {
		return invalidf("amount %s is not a valid decimal number", quoteInput(s))
	}
	if len(frac) > MaxDecimals {
		return invalidf("amount has more than %d decimal places", MaxDecimals)
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if len(digits) > MaxUnitsDigits {
		return invalidf("amount is too large")
	}
	var u *big.Int
	if digits != "" {
		var ok bool
		u, ok = new(big.Int).SetString(digits, 10)
		if !ok {
			return invalidf("amount %s is not a valid decimal number", quoteInput(s))
		}
		if neg {
			u.Neg(u)
		}
	}
	*a = makeAmount(u, len(frac))
	return nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}
