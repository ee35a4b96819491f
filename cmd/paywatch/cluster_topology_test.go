package main

import (
	"slices"
	"strings"

	"github.com/paywatch/paywatch"
)

// The production topology, written once for the two tests that must tell
// the same story: TestCluster runs it on one machine (cluster_test.go), and
// TestDockerComposePromises checks that docker-compose.yml and the
// Dockerfile describe it (compose_test.go). Both take the commands, the
// variables and the Temporal version from here.

// clusterTemporalVersion is the Temporal server of the topology:
// go.temporal.io/server in go.mod, which `paywatch temporal serve` links.
// TestCluster asserts that the running server reports it; the compose test
// that go.mod requires it.
const clusterTemporalVersion = "v1.32.1"

// clusterRole is one kind of process of the topology.
type clusterRole struct {
	// Service is the docker-compose service that runs it.
	Service string
	// Command is its paywatch command line.
	Command []string
	// Image is the image compose runs it from, and Target the Dockerfile
	// stage that builds that image.
	Image, Target string
	// Env lists every variable it is configured with. Values differ
	// (compose's for containers, the test's for loopback ports); the names
	// are the same.
	Env []string
}

// paywatchEnv is the configuration of the api and worker replicas: one
// PostgreSQL, one Temporal frontend, the master key, the public URLs, the
// webhook guards (off in the test only: its receiver is on loopback over
// http), the metrics listener and an RPC URL per network.
var paywatchEnv = func() []string {
	env := []string{
		"DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "PAYWATCH_MASTER_KEY",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_API_KEY", "TEMPORAL_TLS",
		"PAYWATCH_PAYLOAD_KEY", "PAYWATCH_PAYLOAD_OLD_KEYS", "PAYWATCH_TEMPORAL_UI_ORIGINS",
		"PAYWATCH_BASE_URL", "PAYWATCH_PAY_URL",
		"PAYWATCH_WEBHOOK_ALLOW_PRIVATE", "PAYWATCH_WEBHOOK_ALLOW_HTTP", "PAYWATCH_METRICS_ADDR",
	}
	for _, n := range paywatch.Networks() {
		env = append(env, "PAYWATCH_"+string(n.Network)+"_RPC_URL")
	}
	return env
}()

// Images of the topology (docker-compose.yml).
const (
	clusterPaywatchImage = "paywatch:latest"
	clusterTemporalImage = "paywatch-temporal:latest"
)

// clusterRoles are the processes of the topology: the standalone Temporal
// server on PostgreSQL, and the api and worker replicas (two of each in
// TestCluster, as many as you like in production).
var clusterRoles = []clusterRole{
	{
		Service: "temporal", Command: []string{"temporal", "serve"},
		Image: clusterTemporalImage, Target: "temporal",
		Env: []string{"PAYWATCH_TEMPORAL_DATABASE_URL", "PAYWATCH_TEMPORAL_LISTEN_ADDR", "PAYWATCH_TEMPORAL_UI_ADDR", "TEMPORAL_NAMESPACE", "PAYWATCH_METRICS_ADDR",
			"PAYWATCH_TEMPORAL_TLS_CERT_PATH", "PAYWATCH_TEMPORAL_TLS_KEY_PATH", "PAYWATCH_TEMPORAL_TLS_CLIENT_CA_PATH", "PAYWATCH_TEMPORAL_API_KEY"},
	},
	{
		Service: "api", Command: []string{"api"},
		Image: clusterPaywatchImage, Target: "paywatch",
		Env: append(slices.Clone(paywatchEnv), "PAYWATCH_API_ADDR", "PAYWATCH_PAY_ADDR"),
	},
	{
		Service: "worker", Command: []string{"worker"},
		Image: clusterPaywatchImage, Target: "paywatch",
		Env: paywatchEnv,
	},
}

// clusterRoleOf returns the role run by a compose service.
func clusterRoleOf(service string) clusterRole {
	for _, r := range clusterRoles {
		if r.Service == service {
			return r
		}
	}
	panic("no cluster role " + service)
}

// clusterDevnetCommand runs the devnet chains as their own process in
// TestCluster, standing in for the real networks; compose has none (it
// reads real RPC endpoints).
var clusterDevnetCommand = []string{"devnet", "serve"}

// clusterTestOnlyEnv reports whether TestCluster may set variable v
// beyond its role's Env: the token contracts of the devnet chains, which
// `paywatch devnet serve` prints next to their RPC URLs (production uses
// the mainnet contracts), and the log level.
func clusterTestOnlyEnv(v string) bool {
	return v == "PAYWATCH_LOG_LEVEL" || (strings.HasPrefix(v, "PAYWATCH_") && strings.HasSuffix(v, "_CONTRACT"))
}
