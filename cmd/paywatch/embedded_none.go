//go:build noembed

package main

import "errors"

// startEmbeddedTemporal is unavailable in binaries built with -tags noembed,
// which leave the Temporal server out to stay small.
func startEmbeddedTemporal(Config) (embeddedTemporal, error) {
	return nil, errors.New("this paywatch binary was built without the embedded Temporal server (-tags noembed); set TEMPORAL_ADDRESS")
}
