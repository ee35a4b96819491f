//go:build !noembed

package main

import (
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
	})
}
