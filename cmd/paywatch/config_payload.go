package main

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/paywatch/paywatch/api"
	"github.com/paywatch/paywatch/workflows"
)

// payloadConfig is how paywatch seals what it hands Temporal (issue 42):
//
//	PAYWATCH_PAYLOAD_KEY          the AES-256 key payloads are sealed with: 32 bytes,
//	                              base64 or hex (default: derived from the master key)
//	PAYWATCH_PAYLOAD_OLD_KEYS     earlier keys, comma-separated, still read (key rotation)
//	PAYWATCH_TEMPORAL_CLEAR_REFS  true shows external_ref and external_order_id in the
//	                              ExternalRef and ExternalOrderId search attributes in
//	                              clear (default false: keyed hashes)
//	PAYWATCH_TEMPORAL_UI_ORIGINS  browser origins whose Temporal Web UI may call the codec
//	                              endpoint, comma-separated (e.g. https://cloud.temporal.io);
//	                              dev adds the embedded UI's
type payloadConfig struct {
	// Codec seals and opens payloads.
	Codec *workflows.PayloadCodec
	// KeySource says where the current key came from, for the start log.
	KeySource string
	// SearchRefKey keys the search attributes' hashes of the merchant's
	// references; nil shows them in clear.
	SearchRefKey []byte
	// UIOrigins are PAYWATCH_TEMPORAL_UI_ORIGINS.
	UIOrigins []string
}

// payloadEnv holds the payload variables as LoadConfig read them; the
// keys stay out of every print of Config.
type payloadEnv struct {
	key, oldKeys, clearRefs, uiOrigins string
}

func readPayloadEnv(getenv func(string) string) payloadEnv {
	return payloadEnv{
		key: getenv("PAYWATCH_PAYLOAD_KEY"), oldKeys: getenv("PAYWATCH_PAYLOAD_OLD_KEYS"),
		clearRefs: getenv("PAYWATCH_TEMPORAL_CLEAR_REFS"), uiOrigins: getenv("PAYWATCH_TEMPORAL_UI_ORIGINS"),
	}
}

// String and GoString keep the keys out of %v, %+v and %#v.
func (e payloadEnv) String() string   { return "payload keys (not shown)" }
func (e payloadEnv) GoString() string { return e.String() }

// load reads the payload configuration; masterKey is the configured or
// generated master key the defaults derive from. Errors name the
// variable, never a key.
func (e payloadEnv) load(masterKey string) (payloadConfig, error) {
	getenv := func(k string) string {
		return map[string]string{
			"PAYWATCH_PAYLOAD_KEY": e.key, "PAYWATCH_PAYLOAD_OLD_KEYS": e.oldKeys,
			"PAYWATCH_TEMPORAL_CLEAR_REFS": e.clearRefs, "PAYWATCH_TEMPORAL_UI_ORIGINS": e.uiOrigins,
		}[k]
	}
	var c payloadConfig
	var errs []error
	current := workflows.DerivePayloadKey(masterKey)
	c.KeySource = "derived from the master key"
	if raw := strings.TrimSpace(getenv("PAYWATCH_PAYLOAD_KEY")); raw != "" {
		k, err := parsePayloadKey(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("PAYWATCH_PAYLOAD_KEY: %w", err))
		}
		current, c.KeySource = k, "PAYWATCH_PAYLOAD_KEY"
	}
	var old [][]byte
	for i, raw := range strings.Split(getenv("PAYWATCH_PAYLOAD_OLD_KEYS"), ",") {
		if raw = strings.TrimSpace(raw); raw == "" {
			continue
		}
		k, err := parsePayloadKey(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("PAYWATCH_PAYLOAD_OLD_KEYS: key %d: %w", i+1, err))
			continue
		}
		old = append(old, k)
	}
	if c.KeySource == "PAYWATCH_PAYLOAD_KEY" && masterKey != "" {
		// The key a derived default sealed with stays readable after an
		// operator sets a key of their own.
		old = append(old, workflows.DerivePayloadKey(masterKey))
	}
	if clear, err := clearRefs(getenv("PAYWATCH_TEMPORAL_CLEAR_REFS")); err != nil {
		errs = append(errs, err)
	} else if !clear {
		c.SearchRefKey = workflows.DeriveSearchRefKey(masterKey)
	}
	for _, o := range strings.Split(getenv("PAYWATCH_TEMPORAL_UI_ORIGINS"), ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		origin, ok := api.Origin(o)
		if !ok {
			errs = append(errs, fmt.Errorf("PAYWATCH_TEMPORAL_UI_ORIGINS: %q is not an origin such as https://cloud.temporal.io", o))
			continue
		}
		c.UIOrigins = append(c.UIOrigins, origin)
	}
	if err := errors.Join(errs...); err != nil {
		return payloadConfig{}, err
	}
	codec, err := workflows.NewPayloadCodec(current, old...)
	if err != nil {
		return payloadConfig{}, err
	}
	c.Codec = codec
	return c, nil
}

// parsePayloadKey reads a 32-byte key written in base64 (standard or URL
// alphabet, padded or not) or hex. Its errors never quote the key.
func parsePayloadKey(raw string) ([]byte, error) {
	if len(raw) == 2*workflows.PayloadKeySize {
		if k, err := hex.DecodeString(raw); err == nil {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(raw); err == nil {
			if len(k) != workflows.PayloadKeySize {
				return nil, fmt.Errorf("the key is %d bytes, not %d (make one with: openssl rand -base64 32)", len(k), workflows.PayloadKeySize)
			}
			return k, nil
		}
	}
	return nil, errors.New("not base64 or hex (make one with: openssl rand -base64 32)")
}

// codecOrigins are the browser origins whose Temporal Web UI may call the
// codec endpoint: PAYWATCH_TEMPORAL_UI_ORIGINS, and the embedded UI's.
func (m *Main) codecOrigins() []string {
	origins := m.payload.UIOrigins
	if m.embedded != nil && m.embedded.UIAddr() != "" {
		// dev's embedded UI serves plain http.
		origins = append(origins, "http://"+m.embedded.UIAddr())
	}
	return origins
}

// clearRefs reads PAYWATCH_TEMPORAL_CLEAR_REFS, for the service and for
// `paywatch admin temporal-search` alike.
func clearRefs(raw string) (bool, error) {
	switch v := strings.ToLower(strings.TrimSpace(raw)); v {
	case "", "false", "0", "no":
		return false, nil
	case "true", "1", "yes":
		return true, nil
	default:
		return false, fmt.Errorf("PAYWATCH_TEMPORAL_CLEAR_REFS: %q is not true or false", v)
	}
}
