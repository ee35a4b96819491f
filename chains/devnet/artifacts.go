package devnet

import (
	_ "embed"
	"encoding/hex"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
)

// The test token's ABI and creation bytecode, compiled from
// contracts/TestToken.sol by contracts/build.sh (solc-js pinned in
// contracts/package-lock.json). They are committed, so building paywatch
// never needs node.
var (
	//go:embed contracts/TestToken.abi
	testTokenABIJSON string
	//go:embed contracts/TestToken.bin
	testTokenBinHex string
)

// testTokenABI is the parsed ABI of the test token.
var testTokenABI = func() abi.ABI {
	a, err := abi.JSON(strings.NewReader(testTokenABIJSON))
	if err != nil {
		panic("devnet: embedded TestToken.abi: " + err.Error())
	}
	return a
}()

// testTokenBin is the creation bytecode of the test token.
var testTokenBin = func() []byte {
	b, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(testTokenBinHex), "0x"))
	if err != nil {
		panic("devnet: embedded TestToken.bin: " + err.Error())
	}
	return b
}()
