package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/workflows"
)

// This file is TestCluster's side of the traffic: the merchants' webhook
// receiver, an API client that fails over between the replicas as a load
// balancer would, the payments and their devnet transfers, the burst, and
// the scan cursor's history.

// clusterReceiver is the merchants' webhook endpoint (one path per
// project, /hooks/{slug}). It checks every signature, answers 500 to the
// first attempt of every fourth event (by event_id), so those are retried,
// and records every delivery.
type clusterReceiver struct {
	mu      sync.Mutex
	secrets map[string]string
	events  map[string]*receivedEvent
	// bad counts deliveries with a wrong signature.
	bad int
	// refused counts first attempts answered 500 on purpose.
	refused int
}

// receivedEvent is what the receiver saw of one event_id.
type receivedEvent struct {
	paymentID, event string
	attempts, acks   int
}

func newClusterReceiver() *clusterReceiver {
	return &clusterReceiver{secrets: map[string]string{}, events: map[string]*receivedEvent{}}
}

func (rc *clusterReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	slug := strings.TrimPrefix(r.URL.Path, "/hooks/")
	rc.mu.Lock()
	secret := rc.secrets[slug]
	rc.mu.Unlock()
	body, err := paywatch.VerifyWebhookRequest(secret, r, time.Now())
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err != nil {
		rc.bad++
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var ev struct {
		Event     string `json:"event"`
		EventID   string `json:"event_id"`
		PaymentID string `json:"payment_id"`
	}
	_ = json.Unmarshal(body, &ev)
	e := rc.events[ev.EventID]
	if e == nil {
		e = &receivedEvent{paymentID: ev.PaymentID, event: ev.Event}
		rc.events[ev.EventID] = e
	}
	e.attempts++
	h := fnv.New32a()
	_, _ = h.Write([]byte(ev.EventID))
	if e.attempts == 1 && h.Sum32()%4 == 0 {
		rc.refused++
		http.Error(w, "try again", http.StatusInternalServerError)
		return
	}
	e.acks++
	w.WriteHeader(http.StatusOK)
}

// final returns, per payment, the event_ids of its event kind and whether
// one of them was acknowledged.
func (rc *clusterReceiver) final(kind string) (ids map[string][]string, acked map[string]bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ids, acked = map[string][]string{}, map[string]bool{}
	for id, e := range rc.events {
		if e.event != kind {
			continue
		}
		ids[e.paymentID] = append(ids[e.paymentID], id)
		if e.acks > 0 {
			acked[e.paymentID] = true
		}
	}
	return ids, acked
}

// duplicates counts deliveries of events already acknowledged.
func (rc *clusterReceiver) duplicates() (dups, events int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, e := range rc.events {
		if e.acks > 1 {
			dups += e.acks - 1
		}
	}
	return dups, len(rc.events)
}

// clusterAPI calls the API replicas as a load balancer in front of them
// would: a replica that does not answer (killed, restarting) or answers
// 5xx is skipped for the other one, and the call is retried until it gets
// an answer below 500.
type clusterAPI struct {
	hc    *http.Client
	addrs []string
	// host is the Host of every request: PAYWATCH_BASE_URL's, which a load
	// balancer passes on.
	host string
	// failovers counts calls a replica failed, answered by another.
	failovers atomic.Int64
}

// call sends one request, first to replica first, for up to two minutes.
func (a *clusterAPI) call(ctx context.Context, first int, method, path string, header map[string]string, body any) (int, map[string]any, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return 0, nil, err
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for try := 0; time.Now().Before(deadline) && ctx.Err() == nil; try++ {
		addr := a.addrs[(first+try)%len(a.addrs)]
		code, out, err := a.once(ctx, addr, method, path, header, raw)
		if err == nil && code < 500 {
			if try > 0 {
				a.failovers.Add(1)
			}
			return code, out, nil
		}
		last = fmt.Errorf("%s: HTTP %d %v", addr, code, err)
		if try%len(a.addrs) == len(a.addrs)-1 {
			sleepCtx(ctx, 250*time.Millisecond)
		}
	}
	return 0, nil, fmt.Errorf("%s %s: no replica answered: %w", method, path, last)
}

// once sends one request to one replica.
func (a *clusterAPI) once(ctx context.Context, addr, method, path string, header map[string]string, raw []byte) (int, map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, bytes.NewReader(raw))
	if err != nil {
		return 0, nil, err
	}
	req.Host = a.host
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	var out map[string]any
	if len(b) > 0 && json.Unmarshal(b, &out) != nil {
		return resp.StatusCode, nil, fmt.Errorf("not JSON: %.200s", b)
	}
	return resp.StatusCode, out, nil
}

// clusterProject is a merchant of the load.
type clusterProject struct {
	slug, key string
}

// clusterPayment is one payment of the load and what paid it.
type clusterPayment struct {
	n                int
	project          *clusterProject
	network, token   string
	amount           string
	parts            []string
	id, address      string
	memo             string // a memo payment's (SOLANA), sent with each part
	created, settled time.Time
	err              error
}

// clusterPaymentPlan is payment n of the load: networks in turn, each
// network's tokens in turn (so DAI at 18 decimals too), an amount between 1.00 and
// 99.99, and every tenth payment paid in two transfers (partial first).
func clusterPaymentPlan(n int, projects []*clusterProject) *clusterPayment {
	nets := paywatch.Networks()
	info := nets[n%len(nets)]
	token := info.Tokens[(n/len(nets))%len(info.Tokens)]
	cents := 100 + (n*7919)%9900
	p := &clusterPayment{n: n, project: projects[n%len(projects)], network: string(info.Network), token: string(token), amount: centsString(cents)}
	if n%10 == 3 {
		first := cents * 2 / 5
		p.parts = []string{centsString(first), centsString(cents - first)}
	} else {
		p.parts = []string{p.amount}
	}
	return p
}

func centsString(c int) string { return fmt.Sprintf("%d.%02d", c/100, c%100) }

// run creates the payment through the API, then pays it on the devnet.
func (p *clusterPayment) run(ctx context.Context, api *clusterAPI, devnetURL string) {
	p.created = time.Now()
	code, body, err := api.call(ctx, p.n, "POST", "/v1/payments", map[string]string{"x-api-key": p.project.key}, map[string]any{
		"amount": json.Number(p.amount), "network": p.network, "token": p.token,
		"external_ref": fmt.Sprintf("customer-%d", p.n), "external_order_id": fmt.Sprintf("order-%d", p.n),
	})
	if err == nil && code != http.StatusCreated && code != http.StatusOK {
		err = fmt.Errorf("create: HTTP %d %v", code, body)
	}
	if err != nil {
		p.err = err
		return
	}
	pay, _ := body["payment"].(map[string]any)
	p.id, _ = pay["id"].(string)
	p.address, _ = pay["address"].(string)
	p.memo, _ = pay["memo"].(string)
	if p.id == "" || p.address == "" {
		p.err = fmt.Errorf("create: no id or address in %v", body)
		return
	}
	for i, part := range p.parts {
		if i > 0 {
			sleepCtx(ctx, 3*time.Second) // the first part may count alone: partial
		}
		if err := devnetTransfer(ctx, devnetURL, p.network, p.token, p.address, part, p.memo); err != nil {
			p.err = err
			return
		}
	}
}

// devnetTransfer sends a transfer through `paywatch devnet serve`.
func devnetTransfer(ctx context.Context, devnetURL, network, token, to, amount, memo string) error {
	body := map[string]string{"network": network, "token": token, "to": to, "amount": amount}
	if memo != "" {
		body["memo"] = memo
	}
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, "POST", devnetURL+"/devnet/transfers", bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("devnet transfer: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("devnet transfer: HTTP %d %s", resp.StatusCode, b)
	}
	return nil
}

// burstResult is what one burst of requests with one API key got.
type burstResult struct {
	ok, limited, other int
	// perReplica counts, per replica, its 200 and 429 answers.
	perReplica [][2]int
	err        error
}

// burst sends n GET /v1/payments with one key, alternating between the
// replicas, from 8 goroutines, inside one fixed window of the per-key
// limit (it waits for a window with 20 s left).
func burst(ctx context.Context, api *clusterAPI, key string, n int) burstResult {
	if now := time.Now(); now.Second() >= 40 {
		sleepCtx(ctx, now.Truncate(time.Minute).Add(time.Minute+time.Second).Sub(now))
	}
	res := burstResult{perReplica: make([][2]int, len(api.addrs))}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				r := i % len(api.addrs)
				code, _, err := api.once(ctx, api.addrs[r], "GET", "/v1/payments?limit=1", map[string]string{"x-api-key": key}, nil)
				mu.Lock()
				switch {
				case err != nil:
					res.err = errors.Join(res.err, err)
				case code == http.StatusOK:
					res.ok++
					res.perReplica[r][0]++
				case code == http.StatusTooManyRequests:
					res.limited++
					res.perReplica[r][1]++
				default:
					res.other++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res
}

// cursorHistorySQL records every write of a scan cursor with the
// application_name of the connection that made it: the incarnation of the
// worker (cluster_procs_test.go). It is the test's own table and trigger,
// added to the paywatch database after its migrations.
const cursorHistorySQL = `
CREATE TABLE cluster_cursor_history (
	id         BIGSERIAL PRIMARY KEY,
	network    TEXT NOT NULL,
	old_height BIGINT,
	new_height BIGINT NOT NULL,
	writer     TEXT NOT NULL,
	at         TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);
CREATE FUNCTION cluster_cursor_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO cluster_cursor_history (network, old_height, new_height, writer)
	VALUES (NEW.network, CASE WHEN TG_OP = 'UPDATE' THEN OLD.height END, NEW.height, current_setting('application_name'));
	RETURN NEW;
END $$;
CREATE TRIGGER cluster_cursor_log AFTER INSERT OR UPDATE ON chain_cursors
	FOR EACH ROW EXECUTE FUNCTION cluster_cursor_log();`

// cursorWrite is one row of the cursor history.
type cursorWrite struct {
	network           string
	oldHeight, height int64
	hasOld            bool
	writer            string
	at                time.Time
}

// cursorHistory reads the whole history, in the order of the writes.
func cursorHistory(ctx context.Context, pool *pgxpool.Pool) ([]cursorWrite, error) {
	rows, err := pool.Query(ctx, `SELECT network, old_height, new_height, writer, at FROM cluster_cursor_history ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []cursorWrite
	for rows.Next() {
		var w cursorWrite
		var old *int64
		if err := rows.Scan(&w.network, &old, &w.height, &w.writer, &w.at); err != nil {
			return nil, err
		}
		if old != nil {
			w.oldHeight, w.hasOld = *old, true
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// scannerRun is a stretch of one network's cursor writes by one writer.
type scannerRun struct {
	writer      string
	first, last time.Time
	writes      int
}

// checkOneScanner checks that one scanner at a time wrote each network's
// cursor: every write moves the cursor forward (a second scanner working
// from a stale position would write a height at or below the cursor), and
// each writer's writes form one unbroken stretch (a scanner that carries on
// after another took over would write again after it), unless a whole
// scan run (workflows.DefaultScanRunFor) separates them, after which the
// scan may move to any worker. It returns the stretches per network.
func checkOneScanner(history []cursorWrite) (map[string][]scannerRun, []string) {
	runs := map[string][]scannerRun{}
	var problems []string
	for _, w := range history {
		if w.hasOld && w.height <= w.oldHeight {
			problems = append(problems, fmt.Sprintf("%s: %s wrote the cursor back from %d to %d at %s", w.network, w.writer, w.oldHeight, w.height, w.at.Format(time.StampMilli)))
		}
		rs := runs[w.network]
		if n := len(rs); n > 0 && rs[n-1].writer == w.writer {
			rs[n-1].last = w.at
			rs[n-1].writes++
			continue
		}
		for _, r := range rs {
			if r.writer == w.writer && w.at.Sub(r.last) < workflows.DefaultScanRunFor {
				problems = append(problems, fmt.Sprintf("%s: %s scanned again at %s after another worker took over (it last wrote at %s)", w.network, w.writer, w.at.Format(time.StampMilli), r.last.Format(time.StampMilli)))
			}
		}
		runs[w.network] = append(rs, scannerRun{writer: w.writer, first: w.at, last: w.at, writes: 1})
	}
	return runs, problems
}
