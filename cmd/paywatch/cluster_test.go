package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/api"
	"github.com/paywatch/paywatch/store/storetest"
	"github.com/paywatch/paywatch/workflows"
)

// The cluster test's load and its schedule of faults.
const (
	clusterPayments     = 300                    // spread over every network in turn
	clusterLoadProjects = 8                      // about 38 payments each: well under 60 calls a minute per key
	clusterLoadEvery    = 500 * time.Millisecond // one new payment every half second: 150 s of load
	clusterBlockTime    = "250ms"                // devnet block time: 64 POLYGON confirmations in 16 s
	clusterRestartAfter = 3 * time.Second        // how long a killed process stays down
	clusterBurst        = 100                    // requests of the burst, against a limit of 60 a minute
	clusterPublicHost   = "paywatch.test"        // the host of PAYWATCH_BASE_URL, which the load balancer keeps
)

// The faults, at these offsets from the start of the load.
var (
	clusterKillWorkerAt   = 20 * time.Second
	clusterKillAPIAt      = 60 * time.Second
	clusterKillTemporalAt = 95 * time.Second
)

// killRecord is one fault and how long the cluster took to get over it.
type killRecord struct {
	what, detail        string
	at, back, recovered time.Time
}

// TestCluster is issue 16's cluster test on one machine: a standalone
// Temporal server on PostgreSQL (`paywatch temporal serve`), two `paywatch
// api` and two `paywatch worker` processes with production configuration,
// and the devnet chains in a process of their own (`paywatch devnet
// serve`), all from the real binary. It creates hundreds of payments on the
// six networks, pays them with devnet transfers and receives their
// webhooks with a receiver that refuses some first attempts, while it
// kills one worker, one API process and the Temporal server with SIGKILL
// and starts them again. Then every payment must be paid with its exact
// amount and its payment.completed acknowledged under one event_id, each
// network's cursor must have been written by one scanner at a time, the
// per-key burst limit must hold across both API replicas, and /health on
// each must report Temporal and the chains. It prints the figures the
// README quotes.
func TestCluster(t *testing.T) {
	if os.Getenv("PAYWATCH_CLUSTER_TEST") != "1" {
		t.Skip("the cluster test runs with PAYWATCH_CLUSTER_TEST=1 (make test-cluster): " +
			"a Temporal server on PostgreSQL, 2 api and 2 worker processes, kill -9 faults; about 5 minutes")
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	h := newClusterHarness(t, clusterBinary(t))
	built := time.Now()
	t.Logf("logs of every process in %s", h.logs)

	// Databases of their own, dropped at the start of a run and left
	// behind after it for a look. paywatch's is created as an operator
	// creates it (compose: POSTGRES_DB); `temporal serve` creates its own.
	server := storetest.ServerURL()
	resetClusterDatabases(t, server, []string{"paywatch_cluster", "temporal_cluster", "temporal_cluster_visibility"}, "paywatch_cluster")
	paywatchDB, temporalDB := clusterDatabaseURL(t, server, "paywatch_cluster"), clusterDatabaseURL(t, server, "temporal_cluster")

	// Temporal and the devnet chains.
	temporalRole, apiRole, workerRole := clusterRoleOf("temporal"), clusterRoleOf("api"), clusterRoleOf("worker")
	temporalAddr, uiAddr, temporalMetrics := freeAddr(t), freeAddr(t), freeAddr(t)
	// Over mutual TLS, with an API key (issue 42).
	sec := newClusterTLS(t)
	temporal := h.start("temporal", &temporalRole, func(string) map[string]string {
		env := map[string]string{
			"PAYWATCH_TEMPORAL_DATABASE_URL": temporalDB, "PAYWATCH_TEMPORAL_LISTEN_ADDR": temporalAddr,
			"PAYWATCH_TEMPORAL_UI_ADDR": uiAddr, "TEMPORAL_NAMESPACE": "default",
			"PAYWATCH_METRICS_ADDR": temporalMetrics, "PAYWATCH_LOG_LEVEL": "warn",
		}
		maps.Copy(env, sec.serverEnv())
		return env
	}, temporalRole.Command...)
	devnetAddr := freeAddr(t)
	devnetURL := "http://" + devnetAddr
	dev := h.start("devnet", nil, func(string) map[string]string {
		return map[string]string{"PAYWATCH_DEVNET_BLOCK_INTERVAL": clusterBlockTime}
	}, append(slices.Clone(clusterDevnetCommand), "--addr", devnetAddr)...)
	pairs := paywatch.Pairs()
	last := pairs[len(pairs)-1]
	chainsEnv := parseEnvLines(dev.waitOutput("PAYWATCH_"+string(last.Network)+"_"+string(last.Token)+"_CONTRACT=", 2*time.Minute))
	require.Len(t, chainsEnv, len(paywatch.Networks())+len(pairs), "an RPC URL per network and a contract per token")
	temporal.waitOutput("is running", 3*time.Minute)
	temporalReady := time.Now()

	// The paywatch database, migrated, with the cursor history trigger.
	cmd := exec.CommandContext(ctx, h.bin, "migrate")
	cmd.Env = []string{"DATABASE_URL=" + paywatchDB}
	migrateOut, err := cmd.CombinedOutput()
	require.NoError(t, err, "paywatch migrate: %s", migrateOut)
	pool, err := pgxpool.New(ctx, paywatchDB)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pool.Exec(ctx, cursorHistorySQL)
	require.NoError(t, err)

	// Two api and two worker replicas, configured as in production.
	masterKey := "mk_" + rand.Text()
	metricsAddrs := map[string]string{}
	replicaEnv := func(base string, extra map[string]string) func(string) map[string]string {
		metricsAddrs[base] = freeAddr(t)
		return func(name string) map[string]string {
			u, _ := url.Parse(paywatchDB)
			q := u.Query()
			q.Set("application_name", name)
			u.RawQuery = q.Encode()
			env := map[string]string{
				"DATABASE_URL": u.String(), "TEMPORAL_ADDRESS": temporalAddr, "TEMPORAL_NAMESPACE": "default",
				"PAYWATCH_MASTER_KEY": masterKey,
				// One public address for both replicas, behind a load
				// balancer (clusterAPI, which sends its Host).
				"PAYWATCH_BASE_URL": "http://" + clusterPublicHost, "PAYWATCH_PAY_URL": "http://pay." + clusterPublicHost,
				"PAYWATCH_WEBHOOK_ALLOW_PRIVATE": "true", "PAYWATCH_WEBHOOK_ALLOW_HTTP": "true",
				"PAYWATCH_METRICS_ADDR": metricsAddrs[base],
			}
			maps.Copy(env, chainsEnv)
			maps.Copy(env, sec.clientEnv())
			maps.Copy(env, extra)
			return env
		}
	}
	apiAddrs := []string{freeAddr(t), freeAddr(t)}
	var apis, workers []*clusterProc
	for i, addr := range apiAddrs {
		base := fmt.Sprintf("api-%d", i+1)
		apis = append(apis, h.start(base, &apiRole, replicaEnv(base, map[string]string{
			"PAYWATCH_API_ADDR": addr, "PAYWATCH_PAY_ADDR": freeAddr(t),
		}), apiRole.Command...))
	}
	for i := range 2 {
		base := fmt.Sprintf("worker-%d", i+1)
		workers = append(workers, h.start(base, &workerRole, replicaEnv(base, nil), workerRole.Command...))
	}
	for _, p := range append(slices.Clone(apis), workers...) {
		p.waitOutput("paywatch started", 2*time.Minute)
	}
	clusterUp := time.Now()
	// A worker without a client certificate, or without the key, is
	// refused: the first at the TLS handshake (its first call fails), the
	// second by the server's authorizer at its first namespace call.
	refusedEnv := replicaEnv("refused", nil)("refused")
	sec.assertRefusedWithout(ctx, t, h.bin, refusedEnv, "paywatch worker: connect to Temporal at 127.0.0.1", "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH")
	sec.assertRefusedWithout(ctx, t, h.bin, refusedEnv, "Temporal refused to list the search attributes of namespace default (PermissionDenied: Request unauthorized.)", "TEMPORAL_API_KEY")

	// The merchants: projects with a wallet and a webhook receiver each,
	// one project for the burst and one for probes.
	receiver := newClusterReceiver()
	hooks := httptest.NewServer(receiver)
	t.Cleanup(hooks.Close)
	apiClient := &clusterAPI{hc: &http.Client{Timeout: 15 * time.Second}, addrs: apiAddrs, host: clusterPublicHost}
	master := map[string]string{"x-master-key": masterKey}
	do := func(method, path string, header map[string]string, body any, want int) map[string]any {
		t.Helper()
		code, out, err := apiClient.call(ctx, 0, method, path, header, body)
		require.NoError(t, err)
		require.Equal(t, want, code, "%s %s: %v", method, path, out)
		return out
	}
	var projects []*clusterProject
	var burstKey, probeKey string
	for i := range clusterLoadProjects + 2 {
		if i%3 == 0 {
			do("POST", "/v1/accounts", master, map[string]any{"email": fmt.Sprintf("owner-%d@merchant.test", i/3), "plan": "pro"}, http.StatusCreated)
		}
		slug := fmt.Sprintf("shop-%d", i)
		out := do("POST", "/v1/projects", master, map[string]any{
			"name": slug, "slug": slug, "owner_email": fmt.Sprintf("owner-%d@merchant.test", i/3),
			"webhook_url": hooks.URL + "/hooks/" + slug,
		}, http.StatusCreated)
		key := out["api_key"].(string)
		switch i {
		case clusterLoadProjects:
			burstKey = key
			continue
		case clusterLoadProjects + 1:
			probeKey = key
			continue
		}
		receiver.mu.Lock()
		receiver.secrets[slug] = out["webhook_secret"].(string)
		receiver.mu.Unlock()
		// SOLANA and TON payments are memo payments on the project's
		// registered wallet: every one carries its memo.
		do("PUT", "/v1/projects/"+slug+"/wallet", master, map[string]any{"name": "main", "xpubs": map[string]any{
			"evm": accountXPubAt(t, 60, uint32(i+1)), "tron": accountXPubAt(t, 195, uint32(i+1)),
		}, "addresses": map[string]any{"SOLANA": []string{sol.NewWallet().PublicKey().String()}, "TON": []string{newTONWallet(t)}}}, http.StatusOK)
		projects = append(projects, &clusterProject{slug: slug, key: key})
	}

	// The load: a payment every clusterLoadEvery, each paid on the devnet
	// right after its creation.
	loadStart := time.Now()
	payments := make([]*clusterPayment, clusterPayments)
	var paying sync.WaitGroup
	launched := make(chan struct{})
	go func() {
		defer close(launched)
		tick := time.NewTicker(clusterLoadEvery)
		defer tick.Stop()
		for n := range clusterPayments {
			p := clusterPaymentPlan(n, projects)
			payments[n] = p
			paying.Add(1)
			go func() {
				defer paying.Done()
				p.run(ctx, apiClient, devnetURL)
			}()
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()

	// The faults, while the load runs.
	var kills []killRecord
	waitUntil := func(offset time.Duration) { sleepCtx(ctx, time.Until(loadStart.Add(offset))) }

	// 1. The worker that scans the most networks.
	waitUntil(clusterKillWorkerAt)
	history, err := cursorHistory(ctx, pool)
	require.NoError(t, err)
	holder := map[string]string{}
	for _, w := range history {
		holder[w.network] = w.writer
	}
	victim := workers[0]
	held := func(p *clusterProc) (nets []string) {
		for n, w := range holder {
			if w == p.current() {
				nets = append(nets, n)
			}
		}
		slices.Sort(nets)
		return nets
	}
	if len(held(workers[1])) > len(held(victim)) {
		victim = workers[1]
	}
	k := killRecord{what: "worker (kill -9 " + victim.current() + ")", detail: "until every network's cursor moves again; it scanned " + strings.Join(held(victim), ", ")}
	k.at = victim.kill9()
	sleepCtx(ctx, clusterRestartAfter)
	victim.restart()
	victim.waitOutput("paywatch started", 2*time.Minute)
	k.back = time.Now()
	k.recovered = waitScannersMoved(ctx, t, pool, k.at)
	kills = append(kills, k)

	// 2. An API replica.
	waitUntil(clusterKillAPIAt)
	k = killRecord{what: "api (kill -9 " + apis[0].current() + ")"}
	failoversBefore := apiClient.failovers.Load()
	k.at = apis[0].kill9()
	sleepCtx(ctx, clusterRestartAfter)
	apis[0].restart()
	k.recovered = waitAPIServing(ctx, t, apiClient, 0, probeKey)
	k.back = k.recovered
	k.detail = fmt.Sprintf("meanwhile %d calls failed over to api-2", apiClient.failovers.Load()-failoversBefore)
	kills = append(kills, k)

	// 3. The Temporal server; /health says so while it is down.
	waitUntil(clusterKillTemporalAt)
	k = killRecord{what: "temporal (kill -9 temporal serve)"}
	k.at = temporal.kill9()
	var downHealth []api.HealthResponse
	for _, addr := range apiAddrs {
		_, hr := getHealth(t, addr)
		downHealth = append(downHealth, hr)
	}
	sleepCtx(ctx, time.Until(k.at.Add(clusterRestartAfter)))
	temporal.restart()
	temporal.waitOutput("is running", 2*time.Minute)
	k.back = time.Now()
	k.recovered = waitScannerQueries(ctx, t, sec.clientOptions(t, temporalAddr))
	k.detail = "until every scanner workflow answers a query again"
	kills = append(kills, k)

	// The rest of the load; then the burst, while the payments settle.
	<-launched
	paying.Wait()
	loadEnd := time.Now()
	burstDone := make(chan burstResult, 1)
	go func() { burstDone <- burst(ctx, apiClient, burstKey, clusterBurst) }()
	final := settle(ctx, t, apiClient, projects, payments, receiver)
	settled := time.Now()
	br := <-burstDone

	// Every payment paid, with its exact amount, and its final event
	// acknowledged under one event_id.
	var created, failed, lost, double, unacked, twoIDs int
	ids, acked := receiver.final("payment.completed")
	for _, p := range payments {
		if p.err != nil {
			failed++
			t.Errorf("payment %d (%s %s %s): %v", p.n, p.network, p.token, p.amount, p.err)
			continue
		}
		created++
		got, ok := final[p.id]
		want := paywatch.MustParseAmount(p.amount, 6)
		paid, err := paywatch.ParseAmount(got.PaidAmount, 18)
		if err != nil { // "0.00" (nothing paid) is no amount to ParseAmount
			paid = paywatch.NewAmount(big.NewInt(0), 6)
		}
		isLost := false
		switch {
		case !ok || !paywatch.Status(got.Status).Final():
			isLost = true
			t.Errorf("payment %d %s (%s %s %s): status %q, paid %q", p.n, p.id, p.network, p.token, p.amount, got.Status, got.PaidAmount)
		case paid.Cmp(want) > 0 || got.Transactions > len(p.parts):
			double++
			t.Errorf("payment %d %s (%s): %s, paid %s of %s in %d transactions (%d sent)", p.n, p.id, p.network, got.Status, got.PaidAmount, want, got.Transactions, len(p.parts))
		case paid.Cmp(want) < 0 || got.Status != string(paywatch.StatusPaid):
			isLost = true
			t.Errorf("payment %d %s (%s): %s, paid %s of %s", p.n, p.id, p.network, got.Status, got.PaidAmount, want)
		}
		if !acked[p.id] {
			unacked++
			isLost = true
			t.Errorf("payment %d %s: payment.completed never acknowledged", p.n, p.id)
		}
		if isLost {
			lost++
		}
		if len(ids[p.id]) > 1 {
			twoIDs++
			t.Errorf("payment %d %s: payment.completed under %d event_ids %v", p.n, p.id, len(ids[p.id]), ids[p.id])
		}
	}
	assert.Zero(t, receiver.bad, "every webhook is signed with its project's secret")

	// One scanner per network at any time.
	history, err = cursorHistory(ctx, pool)
	require.NoError(t, err)
	runs, problems := checkOneScanner(history)
	assert.Empty(t, problems, "one scanner per network at a time")
	for _, info := range paywatch.Networks() {
		rs := runs[string(info.Network)]
		require.NotEmpty(t, rs, "%s was scanned", info.Network)
		assert.True(t, rs[len(rs)-1].last.After(kills[len(kills)-1].at), "%s is still scanned after the last fault", info.Network)
		for _, r := range rs {
			assert.True(t, strings.HasPrefix(r.writer, "worker-"), "%s: only workers scan, not %s", info.Network, r.writer)
		}
	}

	// The burst limit is the cluster's, not each replica's.
	require.NoError(t, br.err)
	assert.Equal(t, 60, br.ok, "60 requests a minute per key across both replicas: %+v", br)
	assert.Equal(t, clusterBurst-60, br.limited, "%+v", br)
	for i, c := range br.perReplica {
		assert.Positive(t, c[1], "replica %d refused some of the burst too: %+v", i+1, br)
	}

	// /health on each replica reports the cluster and the chains.
	for i, addr := range apiAddrs {
		assert.NotEqual(t, api.CheckUp, downHealth[i].Checks["temporal"], "api-%d while Temporal was down: %+v", i+1, downHealth[i])
		assert.Equal(t, api.HealthDegraded, downHealth[i].Status, "api-%d while Temporal was down", i+1)
		code, hr := getHealth(t, addr)
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, api.HealthOK, hr.Status, "api-%d: %+v", i+1, hr)
		assert.Equal(t, map[string]string{"database": api.CheckUp, "temporal": api.CheckUp}, hr.Checks, "api-%d", i+1)
		require.Len(t, hr.Chains, len(paywatch.Networks()), "api-%d reports every network", i+1)
		for _, ch := range hr.Chains {
			assert.Equal(t, api.ChainOK, ch.Status, "api-%d: %+v", i+1, ch)
			assert.Positive(t, ch.Scanned, "api-%d: %+v", i+1, ch)
		}
	}

	// The server is the pinned Temporal, with its Web UI and metrics.
	tc, err := client.Dial(sec.clientOptions(t, temporalAddr))
	require.NoError(t, err)
	info, err := tc.WorkflowService().GetSystemInfo(ctx, &workflowservice.GetSystemInfoRequest{})
	tc.Close()
	require.NoError(t, err)
	assert.Equal(t, clusterTemporalVersion, "v"+info.GetServerVersion(), "the server is go.temporal.io/server %s", clusterTemporalVersion)
	uiClient := sec.httpClient(t)
	for _, u := range []string{"https://" + uiAddr + "/", "http://" + temporalMetrics + "/metrics"} {
		resp, err := uiClient.Get(u)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, u)
	}

	// The figures.
	dups, events := receiver.duplicates()
	var b strings.Builder
	fmt.Fprintf(&b, "cluster test figures (Temporal %s on PostgreSQL, 2 api + 2 worker processes, devnet blocks every %s):\n", clusterTemporalVersion, clusterBlockTime)
	fmt.Fprintf(&b, "  payments               %d created over %s (%d networks, %d merchants, %d paid in two transfers), %d failed to create\n",
		created, loadEnd.Sub(loadStart).Round(time.Second), len(paywatch.Networks()), len(projects), clusterPayments/10, failed)
	fmt.Fprintf(&b, "  lost                   %d (not paid in full, or its payment.completed never acknowledged: %d)\n", lost, unacked)
	fmt.Fprintf(&b, "  double counted         %d\n", double)
	fmt.Fprintf(&b, "  duplicate deliveries   %d (of %d events; %d first attempts refused on purpose; %d final events under two event_ids)\n", dups, events, receiver.refused, twoIDs)
	for _, k := range kills {
		during := 0
		for _, p := range payments {
			if !p.created.Before(k.at) && p.created.Before(k.recovered) {
				during++
			}
		}
		fmt.Fprintf(&b, "  recovery: %-36s %5.1f s (process back after %.1f s, %s of them kept down; %s; %d payments created meanwhile)\n",
			k.what, k.recovered.Sub(k.at).Seconds(), k.back.Sub(k.at).Seconds(), clusterRestartAfter, k.detail, during)
	}
	for _, info := range paywatch.Networks() {
		var ws []string
		for _, r := range runs[string(info.Network)] {
			ws = append(ws, fmt.Sprintf("%s (%d batches)", r.writer, r.writes))
		}
		fmt.Fprintf(&b, "  scanner %-9s      %s\n", info.Network, strings.Join(ws, " → "))
	}
	fmt.Fprintf(&b, "  burst                  %d of %d requests accepted with one key across both replicas (per replica ok/429: %v)\n", br.ok, clusterBurst, br.perReplica)
	fmt.Fprintf(&b, "  all settled            %.1f s after the last payment was paid\n", settled.Sub(loadEnd).Seconds())
	fmt.Fprintf(&b, "  wall time              %s (build %s, Temporal ready %s, cluster up %s)\n", time.Since(began).Round(time.Second),
		built.Sub(began).Round(time.Second), temporalReady.Sub(built).Round(100*time.Millisecond), clusterUp.Sub(built).Round(100*time.Millisecond))
	t.Log("\n" + b.String())
	if path := os.Getenv("PAYWATCH_CLUSTER_FIGURES"); path != "" {
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	}
}

// clusterDatabaseURL is the URL of database name on the test server.
func clusterDatabaseURL(t *testing.T, server, name string) string {
	u, err := url.Parse(server)
	require.NoError(t, err)
	u.Path = "/" + name
	return u.String()
}

// resetClusterDatabases drops the databases an earlier run left, then
// creates the empty ones of create.
func resetClusterDatabases(t *testing.T, server string, names []string, create ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	require.NoError(t, err, "connect to PostgreSQL (PAYWATCH_TEST_DATABASE_URL)")
	defer conn.Close(ctx)
	for _, n := range names {
		_, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{n}.Sanitize()+" WITH (FORCE)")
		require.NoError(t, err)
	}
	for _, n := range create {
		_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{n}.Sanitize())
		require.NoError(t, err)
	}
}

// parseEnvLines reads the VARIABLE=value lines of `paywatch devnet serve`.
func parseEnvLines(out string) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && strings.HasPrefix(k, "PAYWATCH_") && !strings.ContainsAny(k, " \t") {
			env[k] = v
		}
	}
	return env
}

// waitScannersMoved returns when every network's cursor has been written
// after since: every scanner runs again.
func waitScannersMoved(ctx context.Context, t *testing.T, pool *pgxpool.Pool, since time.Time) time.Time {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var n int
		var last time.Time
		err := pool.QueryRow(ctx, `
			SELECT count(*), coalesce(max(first), now()) FROM (
				SELECT network, min(at) AS first FROM cluster_cursor_history WHERE at > $1 GROUP BY network) f`,
			since).Scan(&n, &last)
		require.NoError(t, err)
		if n == len(paywatch.Networks()) {
			return last
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	t.Fatalf("some scanner did not run again within 3 minutes of %s", since.Format(time.StampMilli))
	return time.Time{}
}

// waitAPIServing returns when replica i answers an authenticated request.
func waitAPIServing(ctx context.Context, t *testing.T, a *clusterAPI, i int, key string) time.Time {
	t.Helper()
	require.True(t, waitListening(a.addrs[i], 2*time.Minute), "api-%d listens again", i+1)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		code, _, err := a.once(ctx, a.addrs[i], "GET", "/v1/payments?limit=1", map[string]string{"x-api-key": key}, nil)
		if err == nil && code == http.StatusOK {
			return time.Now()
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
	t.Fatalf("api-%d does not serve again", i+1)
	return time.Time{}
}

// waitScannerQueries returns when every network's scanner workflow answers
// a query, through a fresh client each time: Temporal serves again and a
// worker polls it.
func waitScannerQueries(ctx context.Context, t *testing.T, opts client.Options) time.Time {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if scannerQueriesAnswer(ctx, opts) {
			return time.Now()
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	t.Fatal("the scanner workflows did not answer queries within 3 minutes of Temporal's restart")
	return time.Time{}
}

func scannerQueriesAnswer(ctx context.Context, opts client.Options) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return false
	}
	defer c.Close()
	for _, info := range paywatch.Networks() {
		v, err := c.QueryWorkflow(ctx, workflows.ScannerWorkflowID(info.Network), "", workflows.QueryScanProgress)
		var p workflows.ScanProgress
		if err != nil || v.Get(&p) != nil {
			return false
		}
	}
	return true
}

// settledPayment is a payment as GET /v1/payments lists it.
type settledPayment struct {
	Status, PaidAmount string
	Transactions       int
}

// settle waits until every payment of the load is final and its
// payment.completed acknowledged (or 4 minutes pass), and returns the
// payments as the API lists them.
func settle(ctx context.Context, t *testing.T, a *clusterAPI, projects []*clusterProject, payments []*clusterPayment, rc *clusterReceiver) map[string]settledPayment {
	t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for {
		final := map[string]settledPayment{}
		for i, pr := range projects {
			for offset := 0; ; offset += 100 {
				code, out, err := a.call(ctx, i, "GET", fmt.Sprintf("/v1/payments?limit=100&offset=%d", offset), map[string]string{"x-api-key": pr.key}, nil)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, code, "%v", out)
				var page struct {
					Payments []struct {
						ID           string            `json:"id"`
						Status       string            `json:"status"`
						PaidAmount   string            `json:"paid_amount"`
						Transactions []json.RawMessage `json:"transactions"`
					} `json:"payments"`
				}
				raw, _ := json.Marshal(out)
				require.NoError(t, json.Unmarshal(raw, &page))
				for _, p := range page.Payments {
					final[p.ID] = settledPayment{Status: p.Status, PaidAmount: p.PaidAmount, Transactions: len(p.Transactions)}
				}
				if len(page.Payments) < 100 {
					break
				}
			}
		}
		_, acked := rc.final("payment.completed")
		done := true
		for _, p := range payments {
			if p.err != nil {
				continue
			}
			st := final[p.id].Status
			if !paywatch.Status(st).Final() || !acked[p.id] {
				done = false
				break
			}
		}
		if done || time.Now().After(deadline) {
			return final
		}
		sleepCtx(ctx, 3*time.Second)
	}
}
