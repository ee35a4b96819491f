package paywatch_test

import (
	"testing"

	"github.com/paywatch/paywatch"
)

// BenchmarkDeriveAddressEVM measures one payment address from a depth-3
// account xpub: the cost payment creation pays (target ≤ 0.1 ms).
func BenchmarkDeriveAddressEVM(b *testing.B) {
	x, err := paywatch.ParseXPub(testHD(b).ethAccount.PublicKey().B58Serialize())
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		if _, err := x.Address(paywatch.FamilyEVM, uint32(i%(1<<31))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeriveAddressTron is BenchmarkDeriveAddressEVM for Tron.
func BenchmarkDeriveAddressTron(b *testing.B) {
	x, err := paywatch.ParseXPub(testHD(b).tronAccount.PublicKey().B58Serialize())
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		if _, err := x.Address(paywatch.FamilyTron, uint32(i%(1<<31))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeriveBip32Reference is go-bip32's own public child step for the
// same work (without even the address hashing), for comparison.
func BenchmarkDeriveBip32Reference(b *testing.B) {
	chain := testHD(b).ethChain.PublicKey()
	for i := 0; b.Loop(); i++ {
		if _, err := chain.NewChildKey(uint32(i % (1 << 31))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseXPub measures parsing, including the precomputed external
// chain step of a depth-3 key.
func BenchmarkParseXPub(b *testing.B) {
	s := testHD(b).ethAccount.PublicKey().B58Serialize()
	for b.Loop() {
		if _, err := paywatch.ParseXPub(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQRCodeDataURI measures the QR code of a payment response.
func BenchmarkQRCodeDataURI(b *testing.B) {
	for b.Loop() {
		if _, err := paywatch.QRCodeDataURI("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseAmount measures parsing an 18-decimal request amount.
func BenchmarkParseAmount(b *testing.B) {
	for b.Loop() {
		if _, err := paywatch.ParseAmount("12345.678901234567", 18); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClassify measures the status rule on 18-decimal amounts at
// mixed scales.
func BenchmarkClassify(b *testing.B) {
	paid := paywatch.MustParseAmount("100.999999999999999999", 18)
	expected := paywatch.MustParseAmount("100", 6)
	for b.Loop() {
		if paywatch.Classify(paid, expected) != paywatch.StatusPaid {
			b.Fatal("wrong status")
		}
	}
}

// BenchmarkAmountString measures the display form used in every response.
func BenchmarkAmountString(b *testing.B) {
	a := paywatch.MustParseAmount("12345.678901234567", 18)
	for b.Loop() {
		_ = a.String()
	}
}
