//go:build !noembed

package main

import "github.com/paywatch/paywatch/cmd/paywatch/internal/devtemporal"

// startEmbeddedTemporal starts the in-process Temporal server and Web UI.
func startEmbeddedTemporal(cfg Config) (embeddedTemporal, error) {
	return devtemporal.Start(devtemporal.Options{
		DataDir:      cfg.DataDir,
		FrontendAddr: cfg.TemporalDevAddr,
		UIAddr:       cfg.TemporalUIAddr,
		Namespace:    cfg.TemporalNamespace,
	})
}
