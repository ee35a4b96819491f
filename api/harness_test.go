package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/api"
	"github.com/paywatch/paywatch/chains"
	"github.com/paywatch/paywatch/payments"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
	"github.com/paywatch/paywatch/workflows"
)

// One real Temporal server for the whole package: linking and starting it
// is the expensive part, so every test that reaches a workflow shares it,
// each with its own task queue, worker and database.
var temporal struct {
	server *temporaltest.TestServer
	client client.Client
}

func TestMain(m *testing.M) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	temporal.server = temporaltest.NewServer(temporaltest.WithBaseClientOptions(client.Options{
		Logger: sdklog.NewStructuredLogger(quiet),
	}))
	temporal.client = temporal.server.GetDefaultClient()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if err := workflows.EnsureSearchAttributes(ctx, temporal.client, temporal.server.GetDefaultNamespace()); err != nil {
		fmt.Fprintln(os.Stderr, "register search attributes:", err)
		os.Exit(1)
	}
	cancel()
	code := m.Run()
	temporal.server.Stop()
	os.Exit(code)
}

const (
	testMasterKey = "mk_testmasterkey0123456789abcdef"
	apiHost       = "api.paywatch.test"
	payURL        = "https://pay.paywatch.test"
	testIP        = "198.51.100.7"
)

// Keys of the BIP39 test mnemonic "abandon ×11 about" (see store tests).
const (
	testXPubEVM    = "xpub6DCoCpSuQZB2jawqnGMEPS63ePKWkwWPH4TU45Q7LPXWuNd8TMtVxRrgjtEshuqpK3mdhaWHPFsBngh5GFZaM6si3yZdUsT8ddYM3PwnATt"
	testXPubTron   = "xpub6D1AabNHCupeiLM65ZR9UStMhJ1vCpyV4XbZdyhMZBiJXALQtmn9p42VTQckoHVn8WNqS7dqnJokZHAHcHGoaQgmv8D45oNUKx6DZMNZBCd"
	testXPrv       = "xprv9zDSoJv1aBcjX6sNgEpE2J9K6MV2MUnXuqXsFgzVn3zY2aHyupaFQdYCtdCbNMkvcTdx9FeN49sgXw6mjrhrFLRSzJVnRYPfSCCgjeg4GxY"
	testTronIndex1 = "TSeJkUh4Qv67VNFwY8LaAxERygNdy6NQZK"
	testEVMIndex1  = "0x6Fac4D18c912343BF86fa7049364Dd4E424Ab9C0"
)

var (
	tronAddrs = []string{"TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH", "TSeJkUh4Qv67VNFwY8LaAxERygNdy6NQZK", "TYJPRrdB5APNeRs4R7fYZSwW3TcrTKw2gx"}
	evmAddrs  = []string{"0x9858EfFD232B4033E47d90003D41EC34EcaEda94", "0x6Fac4D18c912343BF86fa7049364Dd4E424Ab9C0", "0xb6716976A3ebe8D39aCEB04372f22Ff8e6802D7A"}
)

// testClock is the injected clock of the store and the API.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is one test's service: a fresh database, its own task queue with a
// worker running the real payment workflow and activities over a fake
// chain, and the API handler on top.
type env struct {
	t      *testing.T
	clock  *testClock
	store  *store.Store
	server *api.Server
	chain  *fakeChains
	queue  string
	// scanning holds the networks whose scanner runs (scanChain).
	scanning *sync.Map
}

type envOptions struct {
	networks     []paywatch.Network // offered; nil for all
	noWorkflows  bool               // API without a workflow client
	allowPrivate bool
	requireHTTPS bool
	// devnetNetworks are served by devnet chains (no explorer links).
	devnetNetworks []paywatch.Network
	// trustedProxies is PAYWATCH_TRUSTED_PROXIES.
	trustedProxies []netip.Prefix
	// requireTwoFactor is PAYWATCH_REQUIRE_2FA.
	requireTwoFactor bool
	// walletTokens is api.Deps.WalletTokens (nil: the mainnet contracts).
	walletTokens map[paywatch.Network]map[paywatch.Token]string
}

func newEnv(t *testing.T, opts ...envOptions) *env {
	t.Helper()
	e := newEnvTB(t, opts...)
	e.t = t
	return e
}

// newEnvTB is newEnv for a test or a fuzz target (testing.F); the env it
// returns has no *testing.T until the caller sets one, as a fuzz target
// does on a copy for each input.
func newEnvTB(t testing.TB, opts ...envOptions) *env {
	t.Helper()
	var o envOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	// Real time, so the workflows (which run on the server's clock) and
	// the rows agree; limit tests move it forward.
	clk := &testClock{t: time.Now().UTC().Truncate(time.Millisecond)}
	storeOpts := []store.Option{store.WithClock(clk.Now)}
	if o.networks != nil {
		storeOpts = append(storeOpts, store.WithNetworks(o.networks))
	}
	st := store.New(storetest.NewPool(t), storeOpts...)
	e := &env{clock: clk, store: st, chain: newFakeChains(), queue: "q-" + strings.ToLower(rand.Text()[:10]), scanning: &sync.Map{}}
	var wf payments.Workflows
	if !o.noWorkflows {
		w := worker.New(temporal.client, e.queue, worker.Options{})
		workflows.Register(w, activities.New(activities.Deps{Store: st, Chains: e.chain, AllowPrivate: true}))
		require.NoError(t, w.Start())
		t.Cleanup(w.Stop)
		wf = payments.NewTemporalWorkflows(temporal.client, e.queue, nil)
	}
	e.server = e.newServer(wf, o)
	return e
}

// newServer builds an API server over the env's store and clock.
func (e *env) newServer(wf payments.Workflows, o envOptions) *api.Server {
	return api.New(api.Deps{
		Version:             "test",
		Logger:              slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:                 e.clock.Now,
		Store:               e.store,
		Workflows:           wf,
		MasterKey:           testMasterKey,
		BaseURL:             "https://" + apiHost,
		PayURL:              payURL,
		WebhookAllowPrivate: o.allowPrivate,
		WebhookRequireHTTPS: o.requireHTTPS,
		DevnetNetworks:      o.devnetNetworks,
		TrustedProxies:      o.trustedProxies,
		DevMail:             true,
		Dashboard:           true,
		RequireTwoFactor:    o.requireTwoFactor,
		WalletTokens:        o.walletTokens,
	})
}

// newEnvSharing is another replica over e's database that has no workflow
// client, so the rows it writes stay unstarted.
func newEnvSharing(t *testing.T, e *env) *env {
	c := *e
	c.t = t
	c.server = e.newServer(nil, envOptions{})
	c.scanning = &sync.Map{}
	return &c
}

// response is a recorded answer with its JSON body decoded.
type response struct {
	Code   int
	Header http.Header
	Body   map[string]any
	Raw    string
}

// str returns a string field of the body (or of a nested object via a path
// such as "payment.id").
func (r response) str(path string) string {
	v, _ := r.get(path).(string)
	return v
}

func (r response) get(path string) any {
	var cur any = r.Body
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// request describes one call.
type request struct {
	method, path string
	body         any // string for raw bodies, else marshalled
	apiKey       string
	masterKey    string
	host         string
	ip           string
	header       map[string]string
}

func (e *env) do(r request) response {
	e.t.Helper()
	var body io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(e.t, err)
		body = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(r.method, r.path, body)
	req.Host = apiHost
	if r.host != "" {
		req.Host = r.host
	}
	req.RemoteAddr = testIP + ":4321"
	if r.ip != "" {
		req.RemoteAddr = r.ip + ":4321"
	}
	req.Header.Set("Content-Type", "application/json")
	if r.apiKey != "" {
		req.Header.Set("x-api-key", r.apiKey)
	}
	if r.masterKey != "" {
		req.Header.Set("x-master-key", r.masterKey)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	rec := serve(e.t, e.server.API(), apiListener, req)
	out := response{Code: rec.Code, Header: rec.Header(), Raw: rec.Body.String()}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		dec := json.NewDecoder(rec.Body)
		dec.UseNumber()
		require.NoError(e.t, dec.Decode(&out.Body), "body %s", out.Raw)
	}
	return out
}

// op calls an operator endpoint with the master key.
func (e *env) op(method, path string, body any) response {
	e.t.Helper()
	return e.do(request{method: method, path: path, body: body, masterKey: testMasterKey})
}

// call calls a merchant endpoint with an API key.
func (e *env) call(key, method, path string, body any) response {
	e.t.Helper()
	return e.do(request{method: method, path: path, body: body, apiKey: key})
}

// requireError asserts an error response: status and exact message.
func requireError(t *testing.T, r response, code int, msg string) {
	t.Helper()
	require.Equal(t, code, r.Code, "body %s", r.Raw)
	require.Equal(t, msg, r.Body["error"], "body %s", r.Raw)
}

// merchant creates, through the operator endpoints, an owner account on
// plan, a project with the given settings and a wallet, and returns the
// project's API key.
func (e *env) merchant(slug, plan string, settings map[string]any, wallet map[string]any) string {
	e.t.Helper()
	email := slug + "@example.com"
	r := e.op("POST", "/v1/accounts", map[string]any{"email": email, "plan": plan})
	require.Equal(e.t, http.StatusCreated, r.Code, r.Raw)
	body := map[string]any{"name": "Shop " + slug, "slug": slug, "owner_email": email}
	for k, v := range settings {
		body[k] = v
	}
	r = e.op("POST", "/v1/projects", body)
	require.Equal(e.t, http.StatusCreated, r.Code, r.Raw)
	key := r.str("api_key")
	require.NotEmpty(e.t, key)
	if wallet != nil {
		r = e.op("PUT", "/v1/projects/"+slug+"/wallet", wallet)
		require.Equal(e.t, http.StatusOK, r.Code, r.Raw)
	}
	return key
}

// hdWallet is a wallet with both xpubs.
func hdWallet() map[string]any {
	return map[string]any{"xpubs": map[string]any{"evm": testXPubEVM, "tron": testXPubTron}}
}

// testSolanaWallet is a Solana wallet's address (an ed25519 key on the
// curve): SOLANA takes registered addresses only.
const testSolanaWallet = "GabwTHe1P9wLKCqqBNBnAPgD71K8j8Dp4Uk4L6EyFUnK"

// testTONWallet is a TON wallet's address in its canonical form (the
// non-bounceable mainnet "UQ…" form of 0:7a3c5e9b…2a4c): TON takes
// registered addresses only.
const testTONWallet = "UQB6PF6bHS9KbI4LLU9qjA4rTW-KDC5LbY8KLE5rjQ8qTBBa"

// fullWallet is hdWallet with a registered SOLANA and TON address: a
// per_payment or per_user project with it is offered every network of the
// table (memo payments on SOLANA and TON).
func fullWallet() map[string]any {
	w := hdWallet()
	w["addresses"] = map[string]any{"SOLANA": []string{testSolanaWallet}, "TON": []string{testTONWallet}}
	return w
}

// staticWallet is a wallet with static addresses on one network.
func staticWallet(network string, addrs ...string) map[string]any {
	return map[string]any{"addresses": map[string]any{network: addrs}}
}

// paymentRow reads a payment's row fields the API does not show.
func (e *env) workflowStarted(id string) bool {
	e.t.Helper()
	var started bool
	require.NoError(e.t, e.store.Pool().QueryRow(context.Background(),
		`SELECT workflow_started FROM payments WHERE id = $1`, id).Scan(&started))
	return started
}

// workflowRunning reports whether the payment's workflow exists.
func workflowRunning(t *testing.T, id string) bool {
	t.Helper()
	_, err := temporal.client.DescribeWorkflowExecution(context.Background(), workflows.PaymentWorkflowID(id), "")
	return err == nil
}

// fakeChains serves fake chain clients, one per network.
type fakeChains struct {
	mu      sync.Mutex
	clients map[paywatch.Network]*fakeChain
}

func newFakeChains() *fakeChains {
	return &fakeChains{clients: map[paywatch.Network]*fakeChain{}}
}

// Client implements activities.Chains.
func (f *fakeChains) Client(n paywatch.Network) (chains.Client, error) {
	return f.chain(n), nil
}

func (f *fakeChains) chain(n paywatch.Network) *fakeChain {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.clients[n]
	if c == nil {
		c = &fakeChain{network: n, head: 100, txs: map[string][]chains.Transfer{}}
		f.clients[n] = c
	}
	return c
}

// fakeChain is a chain whose transactions the test adds.
type fakeChain struct {
	mu      sync.Mutex
	network paywatch.Network
	head    uint64
	txs     map[string][]chains.Transfer
}

// addTransfer puts a token transfer to `to` of amount (display units) in a
// transaction mined at the current head.
func (c *fakeChain) addTransfer(txHash string, t paywatch.Token, to, amount string) {
	a := paywatch.MustParseAmount(amount, paywatch.Decimals(c.network, t))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.txs[txHash] = append(c.txs[txHash], chains.Transfer{
		Network: c.network, Token: t, TxHash: txHash, LogIndex: uint32(len(c.txs[txHash])),
		BlockNumber: c.head, BlockHash: blockHash(c.head), From: "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH", To: to,
		Amount: a.Units(),
	})
}

func blockHash(n uint64) string { return fmt.Sprintf("%064x", new(big.Int).SetUint64(n+1)) }

func (c *fakeChain) Network() paywatch.Network { return c.network }

func (c *fakeChain) Head(context.Context) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.head, nil
}

func (c *fakeChain) Transfers(context.Context, uint64, uint64) ([]chains.Transfer, error) {
	return nil, nil
}

func (c *fakeChain) BlockHash(_ context.Context, n uint64) (string, error) { return blockHash(n), nil }

func (c *fakeChain) TransactionTransfers(_ context.Context, h string) ([]chains.Transfer, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ts, ok := c.txs[h]
	return ts, ok, nil
}

func (c *fakeChain) AddressTransfers(context.Context, string, uint64) ([]chains.Transfer, error) {
	return nil, nil
}

func (c *fakeChain) Close() {}

// parallel runs fn n times at once and waits.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

// jsonNumber is how decoded bodies hold numbers (UseNumber).
type jsonNumber = json.Number
