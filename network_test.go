package paywatch_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mr-tron/base58"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

func TestNetworksTable(t *testing.T) {
	tests := []struct {
		network       paywatch.Network
		name          string
		native        string
		confirmations int
		family        paywatch.Family
		explorer      string
		chainID       int64
		blockTime     time.Duration
		poll          time.Duration
		tokens        []paywatch.Token
	}{
		{paywatch.TRC20, "Tron (TRC20)", "TRX", 19, paywatch.FamilyTron, "https://tronscan.org", 0, 3 * time.Second, 0, []paywatch.Token{paywatch.USDT}},
		{paywatch.BEP20, "BSC (BEP20)", "BNB", 15, paywatch.FamilyEVM, "https://bscscan.com", 56, 450 * time.Millisecond, 0, []paywatch.Token{paywatch.USDT, paywatch.USDC, paywatch.DAI}},
		{paywatch.ERC20, "Ethereum (ERC20)", "ETH", 12, paywatch.FamilyEVM, "https://etherscan.io", 1, 12 * time.Second, 0, []paywatch.Token{paywatch.USDT, paywatch.USDC, paywatch.DAI, paywatch.PYUSD}},
		{paywatch.POLYGON, "Polygon", "POL", 64, paywatch.FamilyEVM, "https://polygonscan.com", 137, 1750 * time.Millisecond, 0, []paywatch.Token{paywatch.USDT, paywatch.USDC, paywatch.DAI}},
		{paywatch.ARBITRUM, "Arbitrum One", "ETH", 40, paywatch.FamilyEVM, "https://arbiscan.io", 42161, 250 * time.Millisecond, 0, []paywatch.Token{paywatch.USDT, paywatch.USDC, paywatch.DAI, paywatch.PYUSD}},
		{paywatch.BASE, "Base", "ETH", 10, paywatch.FamilyEVM, "https://basescan.org", 8453, 2 * time.Second, 0, []paywatch.Token{paywatch.USDC, paywatch.DAI}},
		{paywatch.SOLANA, "Solana", "SOL", 32, paywatch.FamilySolana, "https://solscan.io", 0, 400 * time.Millisecond, 2 * time.Second, []paywatch.Token{paywatch.USDT, paywatch.USDC, paywatch.PYUSD}},
		{paywatch.TON, "TON", "TON", 1, paywatch.FamilyTON, "https://tonviewer.com", 0, 400 * time.Millisecond, 2 * time.Second, []paywatch.Token{paywatch.USDT}},
	}
	all := paywatch.Networks()
	require.Len(t, all, len(tests), "order and count of Networks()")
	for i, tt := range tests {
		t.Run(string(tt.network), func(t *testing.T) {
			want := paywatch.NetworkInfo{
				Network: tt.network, Name: tt.name, NativeToken: tt.native, Confirmations: tt.confirmations,
				Family: tt.family, Explorer: tt.explorer, ChainID: tt.chainID, BlockTime: tt.blockTime, PollInterval: tt.poll, Tokens: tt.tokens,
			}
			assert.Equal(t, want, all[i])
			got, ok := paywatch.LookupNetwork(tt.network)
			require.True(t, ok)
			assert.Equal(t, want, got)
			assert.Equal(t, tt.family, tt.network.Family())
			assert.True(t, tt.network.Valid())
			n, err := paywatch.ParseNetwork(string(tt.network))
			require.NoError(t, err)
			assert.Equal(t, tt.network, n)
		})
	}
}

func TestNetworksReturnsCopies(t *testing.T) {
	all := paywatch.Networks()
	all[1].Tokens[0] = "EVIL"
	all[1].Name = "changed"
	info, _ := paywatch.LookupNetwork(paywatch.BEP20)
	info.Tokens[1] = "EVIL"
	again, ok := paywatch.LookupNetwork(paywatch.BEP20)
	require.True(t, ok)
	assert.Equal(t, "BSC (BEP20)", again.Name)
	assert.Equal(t, []paywatch.Token{paywatch.USDT, paywatch.USDC, paywatch.DAI}, again.Tokens)
	assert.Equal(t, []paywatch.Token{paywatch.USDT, paywatch.USDC, paywatch.DAI}, paywatch.Networks()[1].Tokens)
}

func TestParseNetwork(t *testing.T) {
	// A network the API names before it serves it (none now: TON was the
	// last) is refused as planned.
	planned := paywatch.PlannedNetworks
	paywatch.PlannedNetworks = []paywatch.Network{"SUI"}
	t.Cleanup(func() { paywatch.PlannedNetworks = planned })
	tests := []struct {
		in      string
		wantErr string
	}{
		{"TRC20", ""},
		{"ARBITRUM", ""},
		{"trc20", `unknown network "trc20": network names are uppercase, e.g. TRC20`},
		{"BASE", ""},
		{"base", `unknown network "base": network names are uppercase, e.g. BASE`},
		{"SOLANA", ""},
		{"TON", ""},
		{"ton", `unknown network "ton": network names are uppercase, e.g. TON`},
		{"SUI", "network SUI is planned but not yet available"},
		{"", `unknown network ""`},
		{"BTC", `unknown network "BTC"`},
		{" TRC20", `unknown network " TRC20"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			n, err := paywatch.ParseNetwork(tt.in)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, paywatch.Network(tt.in), n)
				return
			}
			require.EqualError(t, err, tt.wantErr)
			assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))
			assert.Empty(t, n)
		})
	}
}

func TestParseToken(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
	}{
		{"USDT", ""},
		{"USDC", ""},
		{"usdt", `unknown token "usdt": token names are uppercase, e.g. USDT`},
		{"DAI", ""},
		{"PYUSD", ""},
		{"pyusd", `unknown token "pyusd": token names are uppercase, e.g. PYUSD`},
		{"BUSD", `unknown token "BUSD"`},
		{"", `unknown token ""`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			tok, err := paywatch.ParseToken(tt.in)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, paywatch.Token(tt.in), tok)
				assert.True(t, tok.Valid())
				return
			}
			require.EqualError(t, err, tt.wantErr)
			assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))
		})
	}
}

func TestValidatePairAndPairs(t *testing.T) {
	// operations.md §9's table, and nothing else.
	want := []paywatch.Pair{
		{paywatch.TRC20, paywatch.USDT},
		{paywatch.BEP20, paywatch.USDT}, {paywatch.BEP20, paywatch.USDC}, {paywatch.BEP20, paywatch.DAI},
		{paywatch.ERC20, paywatch.USDT}, {paywatch.ERC20, paywatch.USDC}, {paywatch.ERC20, paywatch.DAI}, {paywatch.ERC20, paywatch.PYUSD},
		{paywatch.POLYGON, paywatch.USDT}, {paywatch.POLYGON, paywatch.USDC}, {paywatch.POLYGON, paywatch.DAI},
		{paywatch.ARBITRUM, paywatch.USDT}, {paywatch.ARBITRUM, paywatch.USDC}, {paywatch.ARBITRUM, paywatch.DAI}, {paywatch.ARBITRUM, paywatch.PYUSD},
		{paywatch.BASE, paywatch.USDC}, {paywatch.BASE, paywatch.DAI},
		{paywatch.SOLANA, paywatch.USDT}, {paywatch.SOLANA, paywatch.USDC}, {paywatch.SOLANA, paywatch.PYUSD},
		{paywatch.TON, paywatch.USDT},
	}
	assert.Equal(t, want, paywatch.Pairs())
	for _, p := range want {
		assert.NoError(t, paywatch.ValidatePair(p.Network, p.Token), p.String())
	}

	err := paywatch.ValidatePair(paywatch.TRC20, paywatch.USDC)
	require.EqualError(t, err, "USDC is not supported on TRC20")
	assert.Equal(t, paywatch.EINVALID, paywatch.ErrorCode(err))
	assert.Equal(t, "USDC is not supported on TRC20", paywatch.ErrorMessage(err))

	for _, refused := range []struct {
		n   paywatch.Network
		t   paywatch.Token
		msg string
	}{
		{paywatch.BASE, paywatch.USDT, "USDT is not supported on BASE"},
		{paywatch.BASE, paywatch.PYUSD, "PYUSD is not supported on BASE"},
		{paywatch.TRC20, paywatch.DAI, "DAI is not supported on TRC20"},
		{paywatch.TRC20, paywatch.PYUSD, "PYUSD is not supported on TRC20"},
		{paywatch.BEP20, paywatch.PYUSD, "PYUSD is not supported on BEP20"},
		{paywatch.POLYGON, paywatch.PYUSD, "PYUSD is not supported on POLYGON"},
		{paywatch.SOLANA, paywatch.DAI, "DAI is not supported on SOLANA"},
		{paywatch.TON, paywatch.USDC, "USDC is not supported on TON"},
		{paywatch.TON, paywatch.DAI, "DAI is not supported on TON"},
	} {
		assert.EqualError(t, paywatch.ValidatePair(refused.n, refused.t), refused.msg)
	}
	assert.EqualError(t, paywatch.ValidatePair("", ""), `unknown network ""`)
	assert.EqualError(t, paywatch.ValidatePair(paywatch.ERC20, "usdc"), `unknown token "usdc": token names are uppercase, e.g. USDC`)
	assert.Equal(t, "USDT on TRC20", paywatch.Pair{paywatch.TRC20, paywatch.USDT}.String())
}

func TestDecimalsAndContracts(t *testing.T) {
	tests := []struct {
		network  paywatch.Network
		token    paywatch.Token
		decimals int
		contract string
	}{
		{paywatch.TRC20, paywatch.USDT, 6, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"},
		{paywatch.BEP20, paywatch.USDT, 18, "0x55d398326f99059fF775485246999027B3197955"},
		{paywatch.BEP20, paywatch.USDC, 18, "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d"},
		{paywatch.ERC20, paywatch.USDT, 6, "0xdAC17F958D2ee523a2206206994597C13D831ec7"},
		{paywatch.ERC20, paywatch.USDC, 6, "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"},
		{paywatch.POLYGON, paywatch.USDT, 6, "0xc2132D05D31c914a87C6611C10748AEb04B58e8F"},
		{paywatch.POLYGON, paywatch.USDC, 6, "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359"},
		{paywatch.ARBITRUM, paywatch.USDT, 6, "0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9"},
		{paywatch.ARBITRUM, paywatch.USDC, 6, "0xaf88d065e77c8cC2239327C5EDb3A432268e5831"},
		// Pairs that are not served have no decimals and no contract.
		{paywatch.TRC20, paywatch.USDC, 0, ""},
		{paywatch.BEP20, paywatch.DAI, 18, "0x1AF3F329e8BE154074D8769D1FFa4eE058B1DBc3"},
		{paywatch.ERC20, paywatch.DAI, 18, "0x6B175474E89094C44Da98b954EedeAC495271d0F"},
		{paywatch.ERC20, paywatch.PYUSD, 6, "0x6c3ea9036406852006290770BEdFcAbA0e23A0e8"},
		{paywatch.POLYGON, paywatch.DAI, 18, "0x8f3Cf7ad23Cd3CaDbD9735AFf958023239c6A063"},
		{paywatch.ARBITRUM, paywatch.DAI, 18, "0xDA10009cBd5D07dd0CeCc66161FC93D7c9000da1"},
		{paywatch.ARBITRUM, paywatch.PYUSD, 6, "0x46850aD61C2B7d64d08c9C754F45254596696984"},
		{paywatch.BASE, paywatch.USDC, 6, "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"},
		{paywatch.BASE, paywatch.DAI, 18, "0x50c5725949A6F0c72E6C4a641F24049A917DB0Cb"},
		{paywatch.BASE, paywatch.USDT, 0, ""},
		{paywatch.TRC20, paywatch.DAI, 0, ""},
		{paywatch.SOLANA, paywatch.USDT, 6, "Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB"},
		{paywatch.SOLANA, paywatch.USDC, 6, "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"},
		{paywatch.SOLANA, paywatch.PYUSD, 6, "2b1kV6DkPAnxd5ixfnxCpjxmKwqjjaYmCZfHsFu24GXo"},
		{paywatch.SOLANA, paywatch.DAI, 0, ""},
		{paywatch.TON, paywatch.USDT, 6, "EQCxE6mUtQJKFnGfaROTKOt1lZbDiiX1kCixRv7Nw2Id_sDs"},
		{paywatch.TON, paywatch.USDC, 0, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.network)+"/"+string(tt.token), func(t *testing.T) {
			assert.Equal(t, tt.decimals, paywatch.Decimals(tt.network, tt.token))
			contract := paywatch.DefaultContract(tt.network, tt.token)
			assert.Equal(t, tt.contract, contract)
			if contract == "" {
				return
			}
			// Every default contract is already in canonical form: a valid
			// EIP-55 checksum or a valid Tron base58check address. A Solana
			// mint is an account, not a wallet: base58 of 32 bytes, and
			// its token program is named.
			if tt.network.Family() == paywatch.FamilySolana {
				b, err := base58.Decode(contract)
				require.NoError(t, err)
				assert.Len(t, b, 32)
				want := paywatch.SolanaTokenProgram
				if tt.token == paywatch.PYUSD {
					want = paywatch.SolanaToken2022Program // PYUSD is a Token-2022 mint
				}
				assert.Equal(t, want, paywatch.TokenProgram(tt.network, tt.token))
				return
			}
			assert.Empty(t, paywatch.TokenProgram(tt.network, tt.token))
			if tt.network.Family() == paywatch.FamilyTON {
				// A jetton master is a contract, named in its bounceable
				// form ("EQ…") as TON's explorers and docs name it; it is
				// the address a wallet's canonical form ("UQ…") would be.
				assert.True(t, strings.HasPrefix(contract, "EQ"), contract)
				canon, err := paywatch.NormalizeNetworkAddress(tt.network, contract)
				require.NoError(t, err)
				assert.Equal(t, "UQ"+contract[2:44], canon[:44])
				return
			}
			canon, err := paywatch.NormalizeNetworkAddress(tt.network, contract)
			require.NoError(t, err)
			assert.Equal(t, contract, canon)
		})
	}
}

func TestTronUSDTContractBytes(t *testing.T) {
	// Field note: mainnet USDT is 41a614f803b6fd780986a42c78ec9c7f77e6ded13c.
	b, err := paywatch.TronAddressBytes(paywatch.DefaultContract(paywatch.TRC20, paywatch.USDT))
	require.NoError(t, err)
	assert.Equal(t, "41a614f803b6fd780986a42c78ec9c7f77e6ded13c", hexString(b))
}

func TestTokenNamesAndFamilies(t *testing.T) {
	assert.Equal(t, "Tether USD", paywatch.TokenName(paywatch.USDT))
	assert.Equal(t, "USD Coin", paywatch.TokenName(paywatch.USDC))
	assert.Equal(t, "Dai Stablecoin", paywatch.TokenName(paywatch.DAI))
	assert.Equal(t, "PayPal USD", paywatch.TokenName(paywatch.PYUSD))
	assert.Equal(t, "", paywatch.TokenName("BUSD"))
	assert.Equal(t, paywatch.FamilyEVM, paywatch.BASE.Family())
	assert.Equal(t, paywatch.FamilySolana, paywatch.SOLANA.Family())
	assert.Equal(t, paywatch.FamilyTON, paywatch.TON.Family())
	assert.True(t, paywatch.TON.Valid())
	assert.Equal(t, paywatch.Family(""), paywatch.Network("SUI").Family())
	assert.False(t, paywatch.Network("SUI").Valid())
	assert.True(t, paywatch.FamilyEVM.Derived())
	assert.True(t, paywatch.FamilyTron.Derived())
	assert.False(t, paywatch.FamilySolana.Derived(), "ed25519 wallets have no watch-only derivation")
	assert.False(t, paywatch.FamilyTON.Derived(), "ed25519 wallets have no watch-only derivation")
	assert.True(t, paywatch.Token("PYUSD").Valid())
	assert.False(t, paywatch.Token("BUSD").Valid())

	assert.Equal(t, []paywatch.Family{paywatch.FamilyTron, paywatch.FamilyEVM, paywatch.FamilySolana, paywatch.FamilyTON}, paywatch.Families())
	assert.Equal(t, []paywatch.Network{paywatch.TON}, paywatch.NetworksOf(paywatch.FamilyTON))
	assert.Equal(t, []paywatch.Network{paywatch.SOLANA}, paywatch.NetworksOf(paywatch.FamilySolana))
	assert.Equal(t, []paywatch.Network{paywatch.TRC20}, paywatch.NetworksOf(paywatch.FamilyTron))
	assert.Equal(t, []paywatch.Network{paywatch.BEP20, paywatch.ERC20, paywatch.POLYGON, paywatch.ARBITRUM, paywatch.BASE}, paywatch.NetworksOf(paywatch.FamilyEVM))
	f, err := paywatch.ParseFamily("evm")
	require.NoError(t, err)
	assert.Equal(t, paywatch.FamilyEVM, f)
	_, err = paywatch.ParseFamily("EVM")
	assert.EqualError(t, err, `unknown address family "EVM"`)
}

// Tokens keeps tokenList's fixed order, and LinkToken gives a network's
// first token: USDT wherever it is served, USDC on BASE.
func TestTokensOrderAndLinkToken(t *testing.T) {
	assert.Equal(t, []paywatch.Token{paywatch.USDT, paywatch.USDC, paywatch.DAI, paywatch.PYUSD}, paywatch.Tokens())
	assert.Equal(t, "TRC20, BEP20, ERC20, POLYGON, ARBITRUM, BASE, SOLANA or TON", paywatch.NetworkList("or"))
	assert.Equal(t, "USDT, USDC, DAI and PYUSD", paywatch.TokenList("and"))
	for _, info := range paywatch.Networks() {
		assert.Equal(t, info.Tokens[0], paywatch.LinkToken(info.Network), info.Network)
		assert.NoError(t, paywatch.ValidatePair(info.Network, paywatch.LinkToken(info.Network)))
	}
	assert.Equal(t, paywatch.USDC, paywatch.LinkToken(paywatch.BASE))
	assert.Equal(t, paywatch.USDT, paywatch.LinkToken(""), "no network: the API's default")
	assert.Equal(t, "https://basescan.org/tx/0xab", paywatch.ExplorerTxURL(paywatch.BASE, "0xab"))
	assert.Equal(t, "https://tronscan.org/#/transaction/ab", paywatch.ExplorerTxURL(paywatch.TRC20, "ab"))
}
