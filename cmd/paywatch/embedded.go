//go:build !noembed

package main

import (
	"github.com/paywatch/paywatch/api"
	"github.com/paywatch/paywatch/cmd/paywatch/internal/devtemporal"
	"github.com/paywatch/paywatch/workflows"
)

// startEmbeddedTemporal starts the in-process Temporal server and Web UI,
// with paywatch's search attributes on the namespace from its creation.
func startEmbeddedTemporal(cfg Config) (embeddedTemporal, error) {
	return devtemporal.Start(devtemporal.Options{
		DataDir:          cfg.DataDir,
		FrontendAddr:     cfg.TemporalDevAddr,
		UIAddr:           cfg.TemporalUIAddr,
		Namespace:        cfg.TemporalNamespace,
		SearchAttributes: workflows.SearchAttributes,
		HistoryCacheSize: cfg.TemporalHistoryCacheSize,
		// The UI decodes payment histories at paywatch's codec endpoint,
		// with the session of an operator who signed in there.
		UICodecEndpoint:           cfg.BaseURL + api.CodecPath,
		UICodecIncludeCredentials: true,
	})
}

// temporalServerVersion is the version of the Temporal server this binary
// links, for `paywatch temporal serve`.
const temporalServerVersion = "v" + devtemporal.ServerVersion

// startStandaloneTemporal starts the Temporal server of `paywatch temporal
// serve` on PostgreSQL, with its Web UI and metrics when configured, and
// TLS and an API key when configured.
func startStandaloneTemporal(cfg temporalServeConfig) (embeddedTemporal, error) {
	opts := devtemporal.Options{
		FrontendAddr:     cfg.ListenAddr,
		UIAddr:           cfg.UIAddr,
		MetricsAddr:      cfg.MetricsAddr,
		Namespace:        cfg.Namespace,
		SearchAttributes: workflows.SearchAttributes,
		HistoryCacheSize: cfg.HistoryCacheSize,
		LogLevel:         cfg.LogLevel,
		Postgres:         &devtemporal.PostgresOptions{URL: cfg.DatabaseURL, VisibilityURL: cfg.VisibilityURL},
		APIKey:           cfg.APIKey,
	}
	if cfg.TLSCertPath != "" {
		opts.TLS = &devtemporal.TLSOptions{CertFile: cfg.TLSCertPath, KeyFile: cfg.TLSKeyPath, ClientCAFile: cfg.TLSClientCAPath}
	}
	return devtemporal.Start(opts)
}
