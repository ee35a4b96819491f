package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// benchClients is how many merchants' backends call the API at once.
const benchClients = 16

// paymentsPerKey stays under the 60 requests per minute that every API key
// may make, so the benchmark measures creation, not the rate limiter.
const paymentsPerKey = 50

func noopWorkflow(ctx workflow.Context) error { return nil }

// BenchmarkCreatePayment measures payment creation through the real HTTP
// stack of `paywatch dev` (embedded Temporal, PostgreSQL, per_payment
// address derivation, the payment workflow started) and, in the same run,
// a bare StartWorkflow loop against the same Temporal server, so the API's
// own cost shows as the ratio of the two.
func BenchmarkCreatePayment(b *testing.B) {
	cfg := devConfig(b, b.TempDir())
	cfg.LogLevel = "error"
	m, _ := startMain(b, cfg, func(r worker.Registry) {
		r.RegisterWorkflowWithOptions(noopWorkflow, workflow.RegisterOptions{Name: "bench.noop"})
	})
	c := apiClient{t: b, base: "http://" + m.APIAddr()}
	master := map[string]string{"x-master-key": m.Config.MasterKey}
	code, body := c.do("POST", "/v1/accounts", master, map[string]any{"email": "bench@merchant.test", "plan": "pro"})
	if code != http.StatusCreated {
		b.Fatalf("create account: %d %v", code, body)
	}
	unlimited := map[string]any{"limits": map[string]any{"projects": -1, "wallets": -1, "api_calls_per_day": -1}}
	if code, body = c.do("PATCH", "/v1/accounts/bench@merchant.test", master, unlimited); code != http.StatusOK {
		b.Fatalf("raise limits: %d %v", code, body)
	}
	var keys []string
	used := 0 // keys before this index spent part of their minute's budget
	newKey := func() string {
		slug := fmt.Sprintf("bench-%d", len(keys))
		code, body := c.do("POST", "/v1/projects", master, map[string]any{"slug": slug, "owner_email": "bench@merchant.test"})
		if code != http.StatusCreated {
			b.Fatalf("create project: %d %v", code, body)
		}
		// Two projects cannot share an xPub, so each takes its own account.
		xpub := accountXPubAt(b, 60, uint32(len(keys)))
		if code, body := c.do("PUT", "/v1/projects/"+slug+"/wallet", master, map[string]any{"xpubs": map[string]any{"evm": xpub}}); code != http.StatusOK {
			b.Fatalf("set wallet: %d %v", code, body)
		}
		return body["api_key"].(string)
	}

	b.Run("api", func(b *testing.B) {
		b.StopTimer()
		// Every run takes fresh keys, so no key exceeds its per-minute budget.
		first := used
		used += (b.N + paymentsPerKey - 1) / paymentsPerKey
		for len(keys) < used {
			keys = append(keys, newKey())
		}
		httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchClients}}
		var n atomic.Int64
		lat := measure(b, func(i int) error {
			seq := n.Add(1) - 1
			payload, _ := json.Marshal(map[string]any{
				"amount": json.Number("25.50"), "external_ref": fmt.Sprintf("c-%d", seq), "network": "ERC20",
			})
			req, _ := http.NewRequest("POST", c.base+"/v1/payments", bytes.NewReader(payload))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("x-api-key", keys[first+int(seq)/paymentsPerKey])
			resp, err := httpc.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				msg, _ := io.ReadAll(resp.Body)
				return fmt.Errorf("status %d: %s", resp.StatusCode, msg)
			}
			return nil
		})
		report(b, lat)
	})

	b.Run("start-workflow", func(b *testing.B) {
		var n atomic.Int64
		run := fmt.Sprint(time.Now().UnixNano())
		lat := measure(b, func(i int) error {
			_, err := m.temporal.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
				ID: fmt.Sprintf("bench/%s/%d", run, n.Add(1)), TaskQueue: cfg.TaskQueue,
			}, "bench.noop")
			return err
		})
		report(b, lat)
	})
}

// measure runs op b.N times from benchClients goroutines and returns each
// call's latency.
func measure(b *testing.B, op func(i int) error) []time.Duration {
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	b.StartTimer()
	for range benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				t0 := time.Now()
				if err := op(i); err != nil {
					failed.Store(err)
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
	return lat
}

// report adds throughput and latency percentiles to the benchmark line.
func report(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
