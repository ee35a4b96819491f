package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// composeFile is the subset of the Compose specification the test checks.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       any               `yaml:"build"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Ports   []string `yaml:"ports"`
		Volumes []string `yaml:"volumes"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

// docker-compose.yml describes the topology TestCluster runs: the same
// commands, variables and images, from the shared list in
// cluster_topology_test.go.
func TestDockerComposePromises(t *testing.T) {
	raw, err := os.ReadFile("../../docker-compose.yml")
	require.NoError(t, err)
	var f composeFile
	require.NoError(t, yaml.Unmarshal(raw, &f), "docker-compose.yml must be valid YAML (anchors and merges included)")

	names := make([]string, 0, len(f.Services))
	for n := range f.Services {
		names = append(names, n)
	}
	want := []string{"postgres", "prometheus"}
	for _, r := range clusterRoles {
		want = append(want, r.Service)
	}
	assert.ElementsMatch(t, want, names, "PostgreSQL, Prometheus and the roles of the cluster test")

	assert.Regexp(t, `^postgres:\d+`, f.Services["postgres"].Image)
	assert.Contains(t, f.Volumes, "postgres-data", "PostgreSQL data must outlive the container")

	// Every role runs the command, with exactly the variables, that the
	// cluster test gives it, from the image of its Dockerfile target.
	built := map[string]string{} // image → Dockerfile target
	for _, role := range clusterRoles {
		svc := f.Services[role.Service]
		assert.Equal(t, role.Image, svc.Image, role.Service)
		assert.Equal(t, role.Command, svc.Command, "%s runs `paywatch %s`", role.Service, strings.Join(role.Command, " "))
		assert.ElementsMatch(t, role.Env, slices.Collect(maps.Keys(svc.Environment)), "%s: the variables of the cluster test's %s role", role.Service, role.Service)
		assert.NotEqual(t, clusterDevnetCommand, svc.Command, "production reads real networks")
		assert.Equal(t, "service_healthy", svc.DependsOn["postgres"].Condition, "%s waits for PostgreSQL", role.Service)
		if b, ok := svc.Build.(map[string]any); ok {
			assert.Equal(t, ".", b["context"], role.Service)
			built[svc.Image], _ = b["target"].(string)
		}
	}
	for _, role := range clusterRoles {
		assert.Equal(t, role.Target, built[role.Image], "a service builds %s from the Dockerfile's %q target", role.Image, role.Target)
	}

	// The Temporal server: paywatch's own, on the same PostgreSQL.
	temporal := f.Services["temporal"]
	assert.Contains(t, temporal.Environment["PAYWATCH_TEMPORAL_DATABASE_URL"], "@postgres:5432/", "Temporal persists to the same PostgreSQL")
	assert.Equal(t, "0.0.0.0:7233", temporal.Environment["PAYWATCH_TEMPORAL_LISTEN_ADDR"])
	assert.Equal(t, "0.0.0.0:8000", temporal.Environment["PAYWATCH_METRICS_ADDR"], "Prometheus scrapes temporal:8000")
	assert.ElementsMatch(t, []string{"127.0.0.1:7233:7233", "127.0.0.1:8233:8233"}, temporal.Ports, "frontend and Web UI on loopback only")
	gomod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^\s*go\.temporal\.io/server `+regexp.QuoteMeta(clusterTemporalVersion)+`$`, string(gomod),
		"the image links the Temporal server the cluster test ran, %s", clusterTemporalVersion)
	assert.Contains(t, string(raw), strings.TrimPrefix(clusterTemporalVersion, "v"), "docker-compose.yml names the Temporal version")

	for _, role := range []string{"api", "worker"} {
		svc := f.Services[role]
		assert.Equal(t, "temporal:7233", svc.Environment["TEMPORAL_ADDRESS"], role)
		assert.True(t, strings.HasPrefix(svc.Environment["DATABASE_URL"], "postgres://"), role)
		assert.Contains(t, svc.Environment["DATABASE_URL"], "@postgres:5432/", role)
		assert.Contains(t, svc.Environment["PAYWATCH_MASTER_KEY"], "${PAYWATCH_MASTER_KEY:?", "%s: the master key must be required, never defaulted", role)
		assert.Equal(t, "false", svc.Environment["PAYWATCH_WEBHOOK_ALLOW_PRIVATE"], role)
		assert.Equal(t, "false", svc.Environment["PAYWATCH_WEBHOOK_ALLOW_HTTP"], role)
		assert.NotContains(t, svc.Environment, "PAYWATCH_DEVNET", "%s: production never runs devnet chains", role)
		assert.Contains(t, svc.DependsOn, "temporal", role)
		assert.Equal(t, "0.0.0.0:9090", svc.Environment["PAYWATCH_METRICS_ADDR"], "%s serves /metrics to Prometheus", role)
	}
	assert.Equal(t, "0.0.0.0:8080", f.Services["api"].Environment["PAYWATCH_API_ADDR"])
	assert.ElementsMatch(t, []string{"8080:8080", "8081:8081"}, f.Services["api"].Ports)
}

// dockerStage is one FROM of the Dockerfile and what follows it.
type dockerStage struct {
	from, name, body string
}

// dockerStages splits a Dockerfile into its stages.
func dockerStages(df string) []dockerStage {
	var stages []dockerStage
	re := regexp.MustCompile(`(?m)^FROM (\S+)(?: AS (\S+))?$`)
	idx := re.FindAllStringSubmatchIndex(df, -1)
	for i, m := range idx {
		end := len(df)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		st := dockerStage{from: df[m[2]:m[3]], body: df[m[1]:end]}
		if m[4] >= 0 {
			st.name = df[m[4]:m[5]]
		}
		stages = append(stages, st)
	}
	return stages
}

func TestDockerfileIsMultiStageAndNonRoot(t *testing.T) {
	raw, err := os.ReadFile("../../Dockerfile")
	require.NoError(t, err)
	stages := dockerStages(string(raw))
	require.NotEmpty(t, stages)
	byName := map[string]dockerStage{}
	for _, st := range stages {
		byName[st.name] = st
	}
	assert.Regexp(t, `^golang:1\.26`, stages[0].from, "the build stage")

	// The default target (the last stage) is the slim api/worker image;
	// the temporal target runs `paywatch temporal serve` from the full build.
	for _, role := range clusterRoles {
		st, ok := byName[role.Target]
		require.True(t, ok, "the Dockerfile has a %q stage for %s", role.Target, role.Image)
		assert.Regexp(t, `^gcr\.io/distroless/`, st.from, "%s: a small runtime image", role.Target)
		user := regexp.MustCompile(`(?m)^USER (\S+)`).FindStringSubmatch(st.body)
		require.NotNil(t, user, "%s: the runtime stage sets a user", role.Target)
		assert.NotRegexp(t, `^(root|0)(:|$)`, user[1], role.Target)
		from := regexp.MustCompile(`COPY --from=(\S+) /out/`).FindStringSubmatch(st.body)
		require.NotNil(t, from, "%s copies its binary from a build stage", role.Target)
		build := byName[from[1]]
		assert.Regexp(t, `go build .*\./cmd/paywatch`, build.body, role.Target)
		if role.Service == "temporal" {
			assert.NotRegexp(t, `-tags noembed`, build.body, "the temporal image links the Temporal server")
			assert.Contains(t, st.body, `CMD ["temporal", "serve"]`)
		} else {
			assert.Regexp(t, `-tags noembed`, build.body, "the %s image leaves out the Temporal server", role.Target)
		}
	}
	assert.Equal(t, clusterRoleOf("api").Target, stages[len(stages)-1].name, "`docker build .` makes the api/worker image")
}

// Prometheus in the compose stack scrapes both roles with the scrape
// configuration under deploy/, which the sample Grafana dashboard reads.
func TestComposePrometheus(t *testing.T) {
	raw, err := os.ReadFile("../../docker-compose.yml")
	require.NoError(t, err)
	var f composeFile
	require.NoError(t, yaml.Unmarshal(raw, &f))
	prom := f.Services["prometheus"]
	assert.Regexp(t, `^prom/prometheus:v\d+\.\d+\.\d+$`, prom.Image, "pin the Prometheus version")
	assert.Contains(t, prom.Volumes, "./deploy/prometheus.yml:/etc/prometheus/prometheus.yml:ro")
	assert.Contains(t, prom.Command, "--config.file=/etc/prometheus/prometheus.yml")
	assert.Contains(t, f.Volumes, "prometheus-data", "metrics outlive the container")
	assert.Equal(t, []string{"127.0.0.1:9091:9090"}, prom.Ports,
		"Prometheus on host port 9091, clear of paywatch dev's metrics on 127.0.0.1:9090")

	raw, err = os.ReadFile("../../deploy/prometheus.yml")
	require.NoError(t, err)
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	var targets []string
	for _, sc := range cfg.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	assert.Subset(t, targets, []string{"api:9090", "worker:9090", "temporal:8000"})
	for _, rf := range cfg.RuleFiles {
		assert.Contains(t, prom.Volumes, "./deploy/"+filepath.Base(rf)+":"+rf+":ro", "rule file %s is mounted", rf)
	}

	raw, err = os.ReadFile("../../deploy/grafana/paywatch.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash), "the dashboard is valid JSON")
	var exprs strings.Builder
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs.WriteString(tg.Expr + "\n")
		}
	}
	for _, family := range []string{"paywatch_scanner_lag_blocks", "paywatch_scanner_head", "paywatch_scanner_scanned",
		"paywatch_rpc_requests_total", "paywatch_webhook_deliveries_total", "paywatch_payments_total",
		"paywatch_http_request_duration_seconds_bucket", "temporal_"} {
		assert.Contains(t, exprs.String(), family, "the dashboard shows %s", family)
	}
}
