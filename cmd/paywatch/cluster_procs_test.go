package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// This file runs the processes of TestCluster: the real paywatch binary,
// one process per role replica, each with only the environment its role
// lists (cluster_topology_test.go), killed with SIGKILL and started again
// as an orchestrator would.

// clusterBinary returns the paywatch binary to run: PAYWATCH_BIN (make
// test-cluster hands in bin/paywatch), or one built here the same way.
func clusterBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("PAYWATCH_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		require.NoError(t, err)
		_, err = os.Stat(abs)
		require.NoError(t, err, "PAYWATCH_BIN")
		return abs
	}
	out := filepath.Join(t.TempDir(), "paywatch")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/paywatch: %s", b)
	return out
}

// clusterHarness starts and stops the processes of one TestCluster run.
type clusterHarness struct {
	t    *testing.T
	bin  string
	logs string

	mu    sync.Mutex
	procs []*clusterProc
}

// clusterProc is one replica. Each start is a new incarnation with its own
// name ("worker-1", then "worker-1#2" after a restart), which its
// PostgreSQL connections carry as application_name, so the scan cursor's
// history says which process wrote each batch.
type clusterProc struct {
	h    *clusterHarness
	base string
	role *clusterRole
	args []string
	// env returns the environment of an incarnation.
	env func(name string) map[string]string

	mu      sync.Mutex
	starts  int
	name    string
	cmd     *exec.Cmd
	stdout  *syncBuffer // stdout and stderr
	exited  chan struct{}
	started time.Time
}

func newClusterHarness(t *testing.T, bin string) *clusterHarness {
	logs := os.Getenv("PAYWATCH_CLUSTER_LOGS")
	if logs == "" {
		logs = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(logs, 0o755))
	h := &clusterHarness{t: t, bin: bin, logs: logs}
	t.Cleanup(h.stopAll)
	t.Cleanup(func() {
		if t.Failed() {
			h.dumpLogs()
		}
	})
	return h
}

// start runs a process and returns once it has started (not once it is
// ready: see waitOutput). role, when set, limits the environment to the
// variables it lists.
func (h *clusterHarness) start(base string, role *clusterRole, env func(name string) map[string]string, args ...string) *clusterProc {
	h.t.Helper()
	p := &clusterProc{h: h, base: base, role: role, args: args, env: env}
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	p.launch()
	return p
}

func (p *clusterProc) launch() {
	t := p.h.t
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starts++
	p.name = p.base
	if p.starts > 1 {
		p.name = fmt.Sprintf("%s#%d", p.base, p.starts)
	}
	vars := p.env(p.name)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "TMPDIR=" + os.TempDir()}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if p.role != nil && !slices.Contains(p.role.Env, k) && !clusterTestOnlyEnv(k) {
			t.Fatalf("%s: %s is not a variable of the %s role (cluster_topology_test.go)", p.name, k, p.role.Service)
		}
		env = append(env, k+"="+vars[k])
	}
	if p.role != nil {
		for _, k := range p.role.Env {
			if _, ok := vars[k]; !ok {
				t.Fatalf("%s: the %s role sets %s; set it here too", p.name, p.role.Service, k)
			}
		}
	}
	logFile, err := os.OpenFile(filepath.Join(p.h.logs, strings.ReplaceAll(p.name, "#", "-")+".log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	require.NoError(t, err)
	p.stdout = &syncBuffer{}
	cmd := exec.Command(p.h.bin, p.args...)
	cmd.Env = env
	// One writer for both streams, so the log keeps their order and
	// waitOutput sees the start-up block (stdout) and the log (stderr).
	w := io.MultiWriter(logFile, p.stdout)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start(), p.name)
	p.cmd, p.started = cmd, time.Now()
	exited := make(chan struct{})
	p.exited = exited
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(exited)
	}()
}

// waitOutput waits until the process's output contains s.
func (p *clusterProc) waitOutput(s string, within time.Duration) string {
	t := p.h.t
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		p.mu.Lock()
		out, exited := p.stdout, p.exited
		p.mu.Unlock()
		if strings.Contains(out.String(), s) {
			return out.String()
		}
		select {
		case <-exited:
			t.Fatalf("%s exited before printing %q:\n%s", p.current(), s, p.tail(40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not print %q within %s:\n%s", p.current(), s, within, p.tail(40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// current is the name of the running incarnation.
func (p *clusterProc) current() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.name
}

// kill9 kills the process with SIGKILL, as a crash or an OOM kill does,
// and returns when it is gone.
func (p *clusterProc) kill9() time.Time {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	at := time.Now()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
	return at
}

// restart starts a new incarnation.
func (p *clusterProc) restart() { p.launch() }

// stopAll stops every process: SIGTERM, then SIGKILL after 15 s.
func (h *clusterHarness) stopAll() {
	h.mu.Lock()
	procs := slices.Clone(h.procs)
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		p.mu.Lock()
		cmd, exited := p.cmd, p.exited
		p.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(15 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			}
		}()
	}
	wg.Wait()
}

// tail returns the last n lines of the process's log.
func (p *clusterProc) tail(n int) string {
	f, err := os.Open(filepath.Join(p.h.logs, strings.ReplaceAll(p.current(), "#", "-")+".log"))
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

func (h *clusterHarness) dumpLogs() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.procs {
		h.t.Logf("---- %s (logs in %s) ----\n%s", p.current(), h.logs, p.tail(30))
	}
}

// waitListening waits until addr accepts TCP connections.
func waitListening(addr string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			_ = c.Close()
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
