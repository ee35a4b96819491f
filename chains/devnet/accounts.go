package devnet

import (
	"crypto/ecdsa"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/paywatch/paywatch"
)

// devKeys are the private keys of the devnet accounts: the first three
// accounts of the well-known development mnemonic "test test test test test
// test test test test test test junk" (m/44'/60'/0'/0/i), the same keys
// Hardhat and anvil print at start. They are public: never send anything of
// value to these addresses on a real network.
//
//	#  EVM address                                 Tron address
//	0  0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266  TYBNgWfhGuNzdLtjKtxXTfskAhTbMcqbaG (the faucet)
//	1  0x70997970C51812dc3A010C7d01b50e0d17dc79C8  TLEaY8XoqpBmndLsjcfThgdKLN1ssNuUcF
//	2  0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC  TFTsyAaajS3DTEbekme2wm9fNcypguDHp4
//
// Account 0 is the faucet: it deploys the test tokens on every EVM chain,
// receives their whole supply, and is the sender of a transfer that names
// no From. Accounts 1 and 2 start with 1,000,000 of every token.
var devKeys = []string{
	"ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
	"59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
	"5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
}

// devAccountFunding is what accounts other than the faucet start with, in
// whole tokens.
const devAccountFunding = 1_000_000

// account is one devnet account.
type account struct {
	key  *ecdsa.PrivateKey
	addr common.Address // its 20 bytes, shared by the EVM and Tron forms
}

// accounts holds the parsed devKeys, faucet first.
var accounts = func() []account {
	out := make([]account, len(devKeys))
	for i, k := range devKeys {
		key, err := crypto.HexToECDSA(k)
		if err != nil {
			panic(err)
		}
		out[i] = account{key: key, addr: crypto.PubkeyToAddress(key.PublicKey)}
	}
	return out
}()

// Account is one devnet account as API callers see it.
type Account struct {
	// EVM is the account's address on the EVM devnets (EIP-55).
	EVM string
	// Tron is the account's address on the TRC20 devnet (base58).
	Tron string
	// PrivateKey is the account's well-known development key, hex without
	// 0x. It is public knowledge; it exists so tests and demos can sign.
	PrivateKey string
}

// Accounts returns the devnet accounts, the faucet first. A transfer's From
// must be one of them.
func Accounts() []Account {
	out := make([]Account, len(accounts))
	for i, a := range accounts {
		out[i] = Account{
			EVM:        a.addr.Hex(),
			Tron:       paywatch.TronAddressFromEVMBytes(a.addr.Bytes()),
			PrivateKey: devKeys[i],
		}
	}
	return out
}

// findAccount returns the devnet account with the given normalised address
// of family f; the empty string means the faucet.
func findAccount(f paywatch.Family, from string) (account, error) {
	if strings.TrimSpace(from) == "" {
		return accounts[0], nil
	}
	norm, err := paywatch.NormalizeAddress(f, from)
	if err != nil {
		return account{}, paywatch.Errorf(paywatch.EINVALID, "from: %s", paywatch.ErrorMessage(err))
	}
	for _, a := range accounts {
		if addressOf(f, a) == norm {
			return a, nil
		}
	}
	return account{}, paywatch.Errorf(paywatch.EINVALID,
		"from %s is not a devnet account; leave it empty to send from the faucet %s", norm, addressOf(f, accounts[0]))
}

// addressOf returns a's normalised address in family f.
func addressOf(f paywatch.Family, a account) string {
	if f == paywatch.FamilyTron {
		return paywatch.TronAddressFromEVMBytes(a.addr.Bytes())
	}
	return a.addr.Hex()
}
