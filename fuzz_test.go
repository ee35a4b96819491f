package paywatch_test

import (
	"math/big"
	"strings"
	"testing"

	"github.com/paywatch/paywatch"
)

// FuzzParseAmount checks that any accepted amount survives String, Parse
// and MarshalText/UnmarshalText without losing value or decimals, and that
// its value is exactly the rational number the text denotes.
func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{
		"10", "10.5", "10.50", "0.1", "0.000001", "1e1", "2.5e-1", "1E+2", "125e-2",
		"25.000000000000000001", "18446744073709551616", "0", "-1", "1.", ".5", "",
		"1e-7", "1e99999999999", "0010.5", "10.500", "NaN", "1e0000000000001",
		"99999999999999999999999999999999999999999999999999999999999999999999999999999",
	} {
		for _, d := range []uint8{0, 2, 6, 18} {
			f.Add(s, d)
		}
	}
	f.Fuzz(func(t *testing.T, s string, d uint8) {
		decimals := int(d) % (paywatch.MaxDecimals + 1)
		a, err := paywatch.ParseAmount(s, decimals)
		if err != nil {
			if paywatch.ErrorCode(err) != paywatch.EINVALID {
				t.Fatalf("ParseAmount(%q, %d): error %v has code %q", s, decimals, err, paywatch.ErrorCode(err))
			}
			return
		}
		if a.Sign() <= 0 || a.Decimals() != decimals || a.FractionDigits() > decimals {
			t.Fatalf("ParseAmount(%q, %d) = %s: sign %d, decimals %d, fraction digits %d",
				s, decimals, a, a.Sign(), a.Decimals(), a.FractionDigits())
		}
		if len(a.Units().String()) > paywatch.MaxUnitsDigits {
			t.Fatalf("ParseAmount(%q, %d): %d unit digits", s, decimals, len(a.Units().String()))
		}

		// The value is exactly the number written.
		want, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("ParseAmount accepted %q, which big.Rat refuses", s)
		}
		got := new(big.Rat).SetFrac(a.Units(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil))
		if got.Cmp(want) != 0 {
			t.Fatalf("ParseAmount(%q, %d) = %s, want %s", s, decimals, got.FloatString(decimals), want.FloatString(decimals))
		}

		// The display form parses back to the same amount.
		back, err := paywatch.ParseAmount(a.String(), decimals)
		if err != nil || !back.Equal(a) {
			t.Fatalf("ParseAmount(String()=%q, %d) = %v, %v; want %v", a.String(), decimals, back, err, a)
		}
		if !strings.Contains(a.String(), ".") || len(a.String())-strings.Index(a.String(), ".")-1 < 2 {
			t.Fatalf("String() = %q has fewer than 2 decimals", a.String())
		}

		// The text form restores value and decimals exactly.
		text, err := a.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var restored paywatch.Amount
		if err := restored.UnmarshalText(text); err != nil || !restored.Equal(a) {
			t.Fatalf("UnmarshalText(%q) = %v, %v; want %v with %d decimals", text, restored, err, a, decimals)
		}
	})
}

// FuzzParseXPub checks that no input makes the parser panic and that an
// accepted key round-trips and derives canonical addresses.
func FuzzParseXPub(f *testing.F) {
	k := testHD(f)
	pub := k.ethAccount.PublicKey()
	for _, s := range []string{
		pub.B58Serialize(),
		k.ethChain.PublicKey().B58Serialize(),
		k.tronAccount.PublicKey().B58Serialize(),
		k.ethAccount.B58Serialize(),
		reencode(f, pub, 0x049D7CB2),
		reencode(f, pub, 0x043587CF),
		k.master.PublicKey().B58Serialize(),
		"", "xpub", "xprv", "0x9858EfFD232B4033E47d90003D41EC34EcaEda94",
		strings.Repeat("1", 111), strings.Repeat("z", 111),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		x, err := paywatch.ParseXPub(s)
		if err != nil {
			if x != nil {
				t.Fatal("non-nil key with an error")
			}
			if paywatch.ErrorCode(err) != paywatch.EINVALID {
				t.Fatalf("error %v has code %q", err, paywatch.ErrorCode(err))
			}
			return
		}
		if d := x.Depth(); d != 3 && d != 4 {
			t.Fatalf("accepted depth %d", d)
		}
		y, err := paywatch.ParseXPub(x.String())
		if err != nil || y.String() != x.String() {
			t.Fatalf("String() %q does not round-trip: %v", x.String(), err)
		}
		for _, fam := range []paywatch.Family{paywatch.FamilyEVM, paywatch.FamilyTron} {
			a, err := x.Address(fam, paywatch.FirstPaymentIndex)
			if err != nil {
				continue // the 2^-127 invalid-child case
			}
			if c, err := paywatch.NormalizeAddress(fam, a); err != nil || c != a {
				t.Fatalf("derived %s address %q is not canonical: %q, %v", fam, a, c, err)
			}
		}
	})
}

// FuzzNormalizeAddress checks that normalisation never panics, is
// idempotent, and yields the expected shape per family.
func FuzzNormalizeAddress(f *testing.F) {
	for _, s := range []string{
		"0x9858EfFD232B4033E47d90003D41EC34EcaEda94", "0x9858effd232b4033e47d90003d41ec34ecaeda94",
		"0X9858EFFD232B4033E47D90003D41EC34ECAEDA94", "0x9858EfFD232B4033E47d90003D41EC34EcaEdA94",
		"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",
		"0x41a614f803b6fd780986a42c78ec9c7f77e6ded13c", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u",
		"", "0x", "T", " TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH ",
	} {
		f.Add(true, s)
		f.Add(false, s)
	}
	f.Fuzz(func(t *testing.T, evm bool, s string) {
		fam := paywatch.FamilyTron
		if evm {
			fam = paywatch.FamilyEVM
		}
		got, err := paywatch.NormalizeAddress(fam, s)
		if err != nil {
			if paywatch.ErrorCode(err) != paywatch.EINVALID {
				t.Fatalf("error %v has code %q", err, paywatch.ErrorCode(err))
			}
			return
		}
		again, err := paywatch.NormalizeAddress(fam, got)
		if err != nil || again != got {
			t.Fatalf("NormalizeAddress(%s, %q) = %q is not a fixed point: %q, %v", fam, s, got, again, err)
		}
		if evm {
			if len(got) != 42 || got[:2] != "0x" {
				t.Fatalf("EVM address %q has the wrong shape", got)
			}
			return
		}
		b, err := paywatch.TronAddressBytes(got)
		if err != nil || len(b) != 21 || b[0] != paywatch.TronAddressPrefix || got[0] != 'T' {
			t.Fatalf("Tron address %q: bytes %x, %v", got, b, err)
		}
		if paywatch.TronAddressFromEVMBytes(b[1:]) != got {
			t.Fatalf("Tron address %q does not round-trip through its bytes", got)
		}
	})
}

// FuzzNormalizeTxHash checks that hash normalisation never panics, is
// idempotent and yields the stored shape of each network.
func FuzzNormalizeTxHash(f *testing.F) {
	for _, s := range []string{
		"a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90",
		"0xA1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F90",
		"0x", "", "0x0x", strings.Repeat("g", 64),
	} {
		f.Add(true, s)
		f.Add(false, s)
	}
	f.Fuzz(func(t *testing.T, evm bool, s string) {
		n := paywatch.TRC20
		if evm {
			n = paywatch.ERC20
		}
		got, err := paywatch.NormalizeTxHash(n, s)
		if err != nil {
			return
		}
		again, err := paywatch.NormalizeTxHash(n, got)
		if err != nil || again != got {
			t.Fatalf("NormalizeTxHash(%s, %q) = %q is not a fixed point: %q, %v", n, s, got, again, err)
		}
		hexPart := got
		if evm {
			if !strings.HasPrefix(got, "0x") {
				t.Fatalf("EVM hash %q lacks 0x", got)
			}
			hexPart = got[2:]
		}
		if len(hexPart) != 64 || strings.ToLower(hexPart) != hexPart || strings.Trim(hexPart, "0123456789abcdef") != "" {
			t.Fatalf("hash %q has the wrong shape", got)
		}
		// The other family's form of the same hash is the same hash.
		other := paywatch.ERC20
		if evm {
			other = paywatch.TRC20
		}
		o, err := paywatch.NormalizeTxHash(other, got)
		if err != nil || strings.TrimPrefix(o, "0x") != hexPart {
			t.Fatalf("cross-family normalisation of %q: %q, %v", got, o, err)
		}
	})
}

// FuzzAmountUnmarshalText checks that any stored text that reads back is
// written again in a form that reads back to the identical amount.
func FuzzAmountUnmarshalText(f *testing.F) {
	for _, s := range []string{"0", "10.500000", "-10.50", "007.50", "-0.00", "1.", "", "1e6",
		"123456789012345678901234567890.123456789012345678"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var a paywatch.Amount
		if err := a.UnmarshalText([]byte(s)); err != nil {
			return
		}
		text, err := a.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var b paywatch.Amount
		if err := b.UnmarshalText(text); err != nil || !b.Equal(a) {
			t.Fatalf("%q -> %q -> %v, %v", s, text, b, err)
		}
		if want, ok := new(big.Rat).SetString(s); !ok || want.Cmp(new(big.Rat).SetFrac(a.Units(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(a.Decimals())), nil))) != 0 {
			t.Fatalf("UnmarshalText(%q) = %v, which is not the value written", s, a)
		}
	})
}
