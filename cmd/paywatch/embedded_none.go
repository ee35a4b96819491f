//go:build noembed

package main

import "errors"

// startEmbeddedTemporal is unavailable in binaries built with -tags noembed,
// which leave the Temporal server out to stay small.
func startEmbeddedTemporal(Config) (embeddedTemporal, error) {
	return nil, errors.New("this paywatch binary was built without the embedded Temporal server (-tags noembed); set TEMPORAL_ADDRESS")
}

// temporalServerVersion is empty: no Temporal server is linked.
const temporalServerVersion = ""

// startStandaloneTemporal is unavailable in binaries built with -tags
// noembed: `paywatch temporal serve` needs the full build.
func startStandaloneTemporal(temporalServeConfig) (embeddedTemporal, error) {
	return nil, errors.New("this paywatch binary was built without the Temporal server (-tags noembed); paywatch temporal serve needs the full build (make build: bin/paywatch)")
}
