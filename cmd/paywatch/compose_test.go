package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
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

func TestDockerComposePromises(t *testing.T) {
	raw, err := os.ReadFile("../../docker-compose.yml")
	require.NoError(t, err)
	var f composeFile
	require.NoError(t, yaml.Unmarshal(raw, &f), "docker-compose.yml must be valid YAML (anchors and merges included)")

	names := make([]string, 0, len(f.Services))
	for n := range f.Services {
		names = append(names, n)
	}
	assert.ElementsMatch(t, []string{"postgres", "temporal", "temporal-ui", "api", "worker", "prometheus"}, names)

	assert.Regexp(t, `^postgres:\d+`, f.Services["postgres"].Image)
	assert.Contains(t, f.Volumes, "postgres-data", "PostgreSQL data must outlive the container")

	temporal := f.Services["temporal"]
	assert.Regexp(t, `^temporalio/auto-setup:\d+\.\d+\.\d+$`, temporal.Image, "pin the Temporal server version")
	assert.Equal(t, "postgres12", temporal.Environment["DB"], "Temporal persists to the same PostgreSQL")
	assert.Equal(t, "postgres", temporal.Environment["POSTGRES_SEEDS"])
	assert.Contains(t, temporal.DependsOn, "postgres")

	ui := f.Services["temporal-ui"]
	assert.Regexp(t, `^temporalio/ui:\d+\.\d+\.\d+$`, ui.Image)
	assert.Equal(t, "temporal:7233", ui.Environment["TEMPORAL_ADDRESS"])

	for _, role := range []string{"api", "worker"} {
		svc := f.Services[role]
		assert.Equal(t, "paywatch:latest", svc.Image, role)
		assert.Equal(t, []string{role}, svc.Command, "%s runs `paywatch %s`", role, role)
		assert.Equal(t, "temporal:7233", svc.Environment["TEMPORAL_ADDRESS"], role)
		assert.True(t, strings.HasPrefix(svc.Environment["DATABASE_URL"], "postgres://"), role)
		assert.Contains(t, svc.Environment["DATABASE_URL"], "@postgres:5432/", role)
		assert.Contains(t, svc.Environment["PAYWATCH_MASTER_KEY"], "${PAYWATCH_MASTER_KEY:?", "%s: the master key must be required, never defaulted", role)
		assert.Equal(t, "false", svc.Environment["PAYWATCH_WEBHOOK_ALLOW_PRIVATE"], role)
		assert.NotContains(t, svc.Environment, "PAYWATCH_DEVNET", "%s: production never runs devnet chains", role)
		for _, n := range []string{"TRC20", "BEP20", "ERC20", "POLYGON", "ARBITRUM"} {
			assert.Contains(t, svc.Environment, "PAYWATCH_"+n+"_RPC_URL", role)
		}
		assert.Equal(t, "service_healthy", svc.DependsOn["postgres"].Condition, "%s waits for PostgreSQL", role)
		assert.Contains(t, svc.DependsOn, "temporal", role)
		assert.Equal(t, "0.0.0.0:9090", svc.Environment["PAYWATCH_METRICS_ADDR"], "%s serves /metrics to Prometheus", role)
	}
	assert.NotNil(t, f.Services["api"].Build, "the api service builds the image from the Dockerfile")
	assert.Equal(t, "0.0.0.0:8080", f.Services["api"].Environment["PAYWATCH_API_ADDR"])
	assert.ElementsMatch(t, []string{"8080:8080", "8081:8081"}, f.Services["api"].Ports)
}

func TestDockerfileIsMultiStageAndNonRoot(t *testing.T) {
	raw, err := os.ReadFile("../../Dockerfile")
	require.NoError(t, err)
	df := string(raw)
	assert.Len(t, regexp.MustCompile(`(?m)^FROM `).FindAllString(df, -1), 2, "one build stage, one runtime stage")
	assert.Regexp(t, `(?m)^FROM golang:1\.26`, df)
	assert.Regexp(t, `-tags noembed`, df, "the image leaves out the embedded Temporal server")
	assert.Regexp(t, `\./cmd/paywatch`, df)
	user := regexp.MustCompile(`(?m)^USER (\S+)`).FindStringSubmatch(df)
	require.NotNil(t, user, "the runtime stage sets a user")
	assert.NotRegexp(t, `^(root|0)(:|$)`, user[1])
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
