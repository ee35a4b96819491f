package paywatch

import (
	"slices"
	"strings"
	"time"
)

// Network names a blockchain network as it appears in the API.
type Network string

// The supported networks.
const (
	TRC20    Network = "TRC20"
	BEP20    Network = "BEP20"
	ERC20    Network = "ERC20"
	POLYGON  Network = "POLYGON"
	ARBITRUM Network = "ARBITRUM"
	BASE     Network = "BASE"
	SOLANA   Network = "SOLANA"
	TON      Network = "TON"
)

// Token names a stablecoin as it appears in the API.
type Token string

// The supported tokens.
const (
	USDT  Token = "USDT"
	USDC  Token = "USDC"
	DAI   Token = "DAI"
	PYUSD Token = "PYUSD"
)

// PlannedNetworks lists networks the API already names but does not serve
// yet, so a client sending one learns it is coming rather than unknown
// (none since TON joined; kept for the next one).
var PlannedNetworks = []Network{}

// PlannedTokens lists tokens the API already names but does not serve yet
// (none since DAI and PYUSD joined; kept for the next one).
var PlannedTokens = []Token{}

// NetworkInfo describes one supported network: everything the API, the
// scanners and the hosted page need to know about it.
type NetworkInfo struct {
	// Network is the API name, such as TRC20.
	Network Network
	// Name is the display name, such as "Tron (TRC20)".
	Name string
	// NativeToken is the symbol of the coin that pays for gas.
	NativeToken string
	// Confirmations is the fixed number of blocks a transfer needs.
	Confirmations int
	// Family is the address family of the network.
	Family Family
	// Explorer is the block explorer's base address, without a trailing slash.
	Explorer string
	// ChainID is the EIP-155 chain id of an EVM network and 0 otherwise.
	ChainID int64
	// BlockTime is the typical block interval; it sets poll intervals.
	// docs/networks.md gives each figure's source and the date it took
	// effect (BSC: 0.45 s since Fermi, 2026-01-14; Polygon: 1.75 s since
	// PIP-86, May 2026).
	BlockTime time.Duration
	// PollInterval is how often a scanner polls while a payment waits, when
	// that is not BlockTime (0): SOLANA is read per watched account, so a
	// poll costs a call per account and polling every 400 ms slot would
	// spend a provider's day in hours, while finality takes about 13 s
	// anyway.
	PollInterval time.Duration
	// Tokens lists the tokens served on the network, in API order.
	Tokens []Token
}

// Pair is a network and token combination a payment can use.
type Pair struct {
	Network Network
	Token   Token
}

// String returns the pair as "USDT on TRC20", the form used in messages.
func (p Pair) String() string {
	return string(p.Token) + " on " + string(p.Network)
}

// tokenRow is one token on one network: its on-chain facts.
type tokenRow struct {
	token    Token
	decimals int
	contract string
	// program is the token program that owns a Solana mint (SPL Token or
	// Token-2022), which its associated token accounts derive with; ""
	// elsewhere.
	program string
}

// networkRow is one row of the registry. Adding a network means adding one
// row here and nothing else; adding a token to a network is one tokenRow.
type networkRow struct {
	info   NetworkInfo // Tokens is filled from tokens at init.
	tokens []tokenRow
	// txPath is the explorer's path before a transaction hash; "" means
	// "/tx/", which every EVM explorer uses.
	txPath string
}

// networkTable is the registry of supported networks, in API order.
var networkTable = []networkRow{
	{
		info: NetworkInfo{
			Network: TRC20, Name: "Tron (TRC20)", NativeToken: "TRX", Confirmations: 19,
			Family: FamilyTron, Explorer: "https://tronscan.org", ChainID: 0, BlockTime: 3 * time.Second,
		},
		tokens: []tokenRow{
			{USDT, 6, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", ""},
		},
		txPath: "/#/transaction/",
	},
	{
		info: NetworkInfo{
			Network: BEP20, Name: "BSC (BEP20)", NativeToken: "BNB", Confirmations: 15,
			Family: FamilyEVM, Explorer: "https://bscscan.com", ChainID: 56, BlockTime: 450 * time.Millisecond,
		},
		tokens: []tokenRow{
			{USDT, 18, "0x55d398326f99059fF775485246999027B3197955", ""},
			{USDC, 18, "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d", ""},
			{DAI, 18, "0x1AF3F329e8BE154074D8769D1FFa4eE058B1DBc3", ""},
		},
	},
	{
		info: NetworkInfo{
			Network: ERC20, Name: "Ethereum (ERC20)", NativeToken: "ETH", Confirmations: 12,
			Family: FamilyEVM, Explorer: "https://etherscan.io", ChainID: 1, BlockTime: 12 * time.Second,
		},
		tokens: []tokenRow{
			{USDT, 6, "0xdAC17F958D2ee523a2206206994597C13D831ec7", ""},
			{USDC, 6, "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", ""},
			{DAI, 18, "0x6B175474E89094C44Da98b954EedeAC495271d0F", ""},
			{PYUSD, 6, "0x6c3ea9036406852006290770BEdFcAbA0e23A0e8", ""},
		},
	},
	{
		info: NetworkInfo{
			Network: POLYGON, Name: "Polygon", NativeToken: "POL", Confirmations: 64,
			Family: FamilyEVM, Explorer: "https://polygonscan.com", ChainID: 137, BlockTime: 1750 * time.Millisecond,
		},
		tokens: []tokenRow{
			{USDT, 6, "0xc2132D05D31c914a87C6611C10748AEb04B58e8F", ""},
			{USDC, 6, "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359", ""},
			{DAI, 18, "0x8f3Cf7ad23Cd3CaDbD9735AFf958023239c6A063", ""},
		},
	},
	{
		info: NetworkInfo{
			Network: ARBITRUM, Name: "Arbitrum One", NativeToken: "ETH", Confirmations: 40,
			Family: FamilyEVM, Explorer: "https://arbiscan.io", ChainID: 42161, BlockTime: 250 * time.Millisecond,
		},
		tokens: []tokenRow{
			{USDT, 6, "0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9", ""},
			{USDC, 6, "0xaf88d065e77c8cC2239327C5EDb3A432268e5831", ""},
			{DAI, 18, "0xDA10009cBd5D07dd0CeCc66161FC93D7c9000da1", ""},
			{PYUSD, 6, "0x46850aD61C2B7d64d08c9C754F45254596696984", ""},
		},
	},
	{
		info: NetworkInfo{
			Network: BASE, Name: "Base", NativeToken: "ETH", Confirmations: 10,
			Family: FamilyEVM, Explorer: "https://basescan.org", ChainID: 8453, BlockTime: 2 * time.Second,
		},
		tokens: []tokenRow{
			{USDC, 6, "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", ""},
			{DAI, 18, "0x50c5725949A6F0c72E6C4a641F24049A917DB0Cb", ""},
		},
	},
	{
		info: NetworkInfo{
			Network: SOLANA, Name: "Solana", NativeToken: "SOL", Confirmations: 32,
			Family: FamilySolana, Explorer: "https://solscan.io", ChainID: 0, BlockTime: 400 * time.Millisecond,
			PollInterval: 2 * time.Second,
		},
		tokens: []tokenRow{
			{USDT, 6, "Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB", SolanaTokenProgram},
			{USDC, 6, "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", SolanaTokenProgram},
			{PYUSD, 6, "2b1kV6DkPAnxd5ixfnxCpjxmKwqjjaYmCZfHsFu24GXo", SolanaToken2022Program},
		},
	},
	{
		// A masterchain block every 400 ms since Catchain 2.0 (April
		// 2026); polled every 2 s like SOLANA, as a poll costs a call per
		// watched owner, and a transfer is final once a masterchain
		// block commits it.
		info: NetworkInfo{
			Network: TON, Name: "TON", NativeToken: "TON", Confirmations: 1,
			Family: FamilyTON, Explorer: "https://tonviewer.com", ChainID: 0, BlockTime: 400 * time.Millisecond,
			PollInterval: 2 * time.Second,
		},
		tokens: []tokenRow{
			{USDT, 6, "EQCxE6mUtQJKFnGfaROTKOt1lZbDiiX1kCixRv7Nw2Id_sDs", ""},
		},
		txPath: "/transaction/",
	},
}

// tokenList names every token the table uses, with its display name, in
// the order Tokens returns them. Append only: the devnet deploys each
// token at the faucet nonce of its place here, so its contract address
// on every EVM devnet (in the README and in operators' env files) stays
// put when a row or a token is added.
var tokenList = []struct {
	token Token
	name  string
}{
	{USDT, "Tether USD"},
	{USDC, "USD Coin"},
	{DAI, "Dai Stablecoin"},
	{PYUSD, "PayPal USD"},
}

// Indexes built once from networkTable, so lookups stay O(1) and the table
// stays the single source of truth.
var (
	networkIndex = map[Network]*networkRow{}
	tokenIndex   = map[Token]bool{}
)

func init() {
	for i := range networkTable {
		row := &networkTable[i]
		row.info.Tokens = nil
		for _, t := range row.tokens {
			row.info.Tokens = append(row.info.Tokens, t.token)
			tokenIndex[t.token] = true
		}
		networkIndex[row.info.Network] = row
	}
	for t := range tokenIndex {
		if TokenName(t) == "" {
			panic("paywatch: token " + string(t) + " of the network table is missing from tokenList")
		}
	}
}

// copyInfo returns a NetworkInfo whose Tokens slice the caller may modify
// without corrupting the registry.
func (r *networkRow) copyInfo() NetworkInfo {
	info := r.info
	info.Tokens = slices.Clone(r.info.Tokens)
	return info
}

// token returns the row of token t on this network.
func (r *networkRow) token(t Token) (tokenRow, bool) {
	for _, tr := range r.tokens {
		if tr.token == t {
			return tr, true
		}
	}
	return tokenRow{}, false
}

// Networks returns every supported network in API order (TRC20, BEP20, ERC20,
// POLYGON, ARBITRUM, BASE). The result is a copy the caller owns.
func Networks() []NetworkInfo {
	out := make([]NetworkInfo, 0, len(networkTable))
	for i := range networkTable {
		out = append(out, networkTable[i].copyInfo())
	}
	return out
}

// LookupNetwork returns the description of a supported network; ok is false
// for planned and unknown names.
func LookupNetwork(n Network) (NetworkInfo, bool) {
	row, ok := networkIndex[n]
	if !ok {
		return NetworkInfo{}, false
	}
	return row.copyInfo(), true
}

// ParseNetwork validates an API network name. Names are exact and uppercase;
// planned networks get an error saying so, because a client sending BASE has
// read our docs and deserves a better answer than "unknown".
func ParseNetwork(s string) (Network, error) {
	n := Network(s)
	if _, ok := networkIndex[n]; ok {
		return n, nil
	}
	if slices.Contains(PlannedNetworks, n) {
		return "", invalidf("network %s is planned but not yet available", s)
	}
	if up := Network(strings.ToUpper(s)); up != n {
		if _, ok := networkIndex[up]; ok {
			return "", invalidf("unknown network %s: network names are uppercase, e.g. %s", quoteInput(s), up)
		}
	}
	return "", invalidf("unknown network %s", quoteInput(s))
}

// ParseToken validates an API token name; like ParseNetwork it is exact and
// uppercase, and names planned tokens as such.
func ParseToken(s string) (Token, error) {
	t := Token(s)
	if tokenIndex[t] {
		return t, nil
	}
	if slices.Contains(PlannedTokens, t) {
		return "", invalidf("token %s is planned but not yet available", s)
	}
	if up := Token(strings.ToUpper(s)); up != t && tokenIndex[up] {
		return "", invalidf("unknown token %s: token names are uppercase, e.g. %s", quoteInput(s), up)
	}
	return "", invalidf("unknown token %s", quoteInput(s))
}

// ValidatePair reports whether t is served on n. The message for a known
// token on a network that lacks it is exactly "<T> is not supported on <N>",
// the text the API returns with 400.
func ValidatePair(n Network, t Token) error {
	row, ok := networkIndex[n]
	if !ok {
		_, err := ParseNetwork(string(n))
		return err
	}
	if !tokenIndex[t] {
		_, err := ParseToken(string(t))
		return err
	}
	if _, ok := row.token(t); !ok {
		return invalidf("%s is not supported on %s", t, n)
	}
	return nil
}

// Pairs returns the valid network and token combinations in API order; the
// caller owns the slice.
func Pairs() []Pair {
	var out []Pair
	for i := range networkTable {
		for _, t := range networkTable[i].tokens {
			out = append(out, Pair{Network: networkTable[i].info.Network, Token: t.token})
		}
	}
	return out
}

// LinkToken is the token of a payment link that fixes network n and names
// no token: the network's first token in the table (USDT wherever it is
// served, USDC on BASE), so a link on any network is valid without one.
// Without a network it is USDT, the API's default; the buyer then picks
// the pair.
func LinkToken(n Network) Token {
	if row, ok := networkIndex[n]; ok && len(row.tokens) > 0 {
		return row.tokens[0].token
	}
	return USDT
}

// TokenSlots returns every token of tokenList, served or not, in its fixed
// order: the devnet deploys the n-th at the faucet's nonce n, so a token
// keeps its address whatever else is added or no longer served.
func TokenSlots() []Token {
	out := make([]Token, len(tokenList))
	for i, t := range tokenList {
		out[i] = t.token
	}
	return out
}

// NetworkList names the supported networks as prose, in API order: "TRC20,
// BEP20, ERC20, POLYGON, ARBITRUM and BASE" with conj "and", for help
// texts and guides that must not name them by hand.
func NetworkList(conj string) string {
	var names []string
	for i := range networkTable {
		names = append(names, string(networkTable[i].info.Network))
	}
	return proseList(names, conj)
}

// TokenList names the supported tokens as prose in Tokens' order: "USDT,
// USDC, DAI or PYUSD" with conj "or".
func TokenList(conj string) string {
	var names []string
	for _, t := range Tokens() {
		names = append(names, string(t))
	}
	return proseList(names, conj)
}

// proseList writes "A", "A conj B", "A, B conj C".
func proseList(words []string, conj string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}

// Tokens returns every supported token in tokenList's fixed order (USDT,
// USDC, DAI, PYUSD); the caller owns the slice.
func Tokens() []Token {
	var out []Token
	for _, t := range tokenList {
		if tokenIndex[t.token] {
			out = append(out, t.token)
		}
	}
	return out
}

// Decimals returns the number of decimals of token t's contract on network
// n (18 for every token on BEP20 and for DAI everywhere, 6 otherwise). It returns 0 for a pair that
// is not served, so callers must ValidatePair first.
func Decimals(n Network, t Token) int {
	if row, ok := networkIndex[n]; ok {
		if tr, ok := row.token(t); ok {
			return tr.decimals
		}
	}
	return 0
}

// DefaultContract returns the mainnet contract address of token t on network
// n in canonical form (EIP-55 or Tron base58), or "" for a pair that is not
// served. Deployments may override it, for example on a test network.
func DefaultContract(n Network, t Token) string {
	if row, ok := networkIndex[n]; ok {
		if tr, ok := row.token(t); ok {
			return tr.contract
		}
	}
	return ""
}

// Valid reports whether n is a supported network.
func (n Network) Valid() bool {
	_, ok := networkIndex[n]
	return ok
}

// Valid reports whether t is a supported token on at least one network.
func (t Token) Valid() bool {
	return tokenIndex[t]
}

// TokenName returns the display name of a token ("Tether USD", "USD Coin"),
// or "" for an unknown token.
func TokenName(t Token) string {
	for _, e := range tokenList {
		if e.token == t {
			return e.name
		}
	}
	return ""
}

// ExplorerTxURL is a transaction's page on the network's block explorer;
// "" for an unknown network or an empty hash.
func ExplorerTxURL(n Network, hash string) string {
	row, ok := networkIndex[n]
	if !ok || hash == "" {
		return ""
	}
	path := row.txPath
	if path == "" {
		path = "/tx/"
	}
	return row.info.Explorer + path + hash
}
