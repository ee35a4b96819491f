package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
)

// Issue 38, item 4: a clean stop of paywatch dev (SIGTERM: Main.Close)
// logs no WARN "RecordActivityHeartbeat with error ... context canceled"
// for each scanner. The scanners heartbeat after every poll; the SDK sends
// one heartbeat a minute and holds the newest of the others back, to send
// when the worker stops, which the scan's own end (and then the client
// closing) cut short.
func TestDevStopsWithoutHeartbeatWarnings(t *testing.T) {
	m, out := startMain(t, devConfig(t, t.TempDir()), nil)
	// Every scanner is running, and heartbeats after each poll and at
	// least every second while it waits.
	require.Eventually(t, func() bool {
		status, h := getHealth(t, m.APIAddr())
		return status == http.StatusOK && len(h.Chains) == len(paywatch.Networks())
	}, time.Minute, 250*time.Millisecond, out.String())
	time.Sleep(3 * time.Second)
	require.NoError(t, m.Close())
	time.Sleep(500 * time.Millisecond)
	assert.NotContains(t, out.String(), "RecordActivityHeartbeat", "a clean stop logs no heartbeat error")
}
