package main

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/workflows"
)

// The payload variables: a key in base64 or hex, old keys that stay
// readable, the clear-references opt-in and the UI origins; every mistake
// named by its variable, and no key in any message or print.
func TestPayloadConfig(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	old := []byte(strings.Repeat("o", 32))
	load := func(env map[string]string) (payloadConfig, error) {
		cfg, err := LoadConfig(ModeDev, func(k string) string { return env[k] })
		require.NoError(t, err)
		if err := cfg.Validate(); err != nil {
			return payloadConfig{}, err
		}
		return cfg.Payload.load("mk_test")
	}

	pc, err := load(nil)
	require.NoError(t, err)
	assert.Equal(t, workflows.PayloadKeyID(workflows.DerivePayloadKey("mk_test")), pc.Codec.KeyID(), "derived from the master key")
	assert.Equal(t, workflows.DeriveSearchRefKey("mk_test"), pc.SearchRefKey, "references hashed by default")

	for _, form := range []string{base64.StdEncoding.EncodeToString(key), base64.RawURLEncoding.EncodeToString(key), hex.EncodeToString(key)} {
		pc, err = load(map[string]string{"PAYWATCH_PAYLOAD_KEY": form, "PAYWATCH_PAYLOAD_OLD_KEYS": base64.StdEncoding.EncodeToString(old)})
		require.NoError(t, err, form)
		assert.Equal(t, workflows.PayloadKeyID(key), pc.Codec.KeyID(), form)
	}
	// What the old key and the derived default sealed is still read.
	for _, k := range [][]byte{old, workflows.DerivePayloadKey("mk_test")} {
		before, err := workflows.NewPayloadCodec(k)
		require.NoError(t, err)
		sealed, err := workflows.NewDataConverter(before).ToPayload("x")
		require.NoError(t, err)
		var s string
		require.NoError(t, workflows.NewDataConverter(pc.Codec).FromPayload(sealed, &s))
	}

	pc, err = load(map[string]string{"PAYWATCH_TEMPORAL_CLEAR_REFS": "true", "PAYWATCH_TEMPORAL_UI_ORIGINS": "https://Cloud.Temporal.io:443, http://127.0.0.1:8233/"})
	require.NoError(t, err)
	assert.Nil(t, pc.SearchRefKey, "opted in to clear references")
	assert.Equal(t, []string{"https://cloud.temporal.io", "http://127.0.0.1:8233"}, pc.UIOrigins)

	secret := base64.StdEncoding.EncodeToString(key[:16])
	_, err = load(map[string]string{
		"PAYWATCH_PAYLOAD_KEY": secret, "PAYWATCH_PAYLOAD_OLD_KEYS": "not-a-key!",
		"PAYWATCH_TEMPORAL_CLEAR_REFS": "maybe", "PAYWATCH_TEMPORAL_UI_ORIGINS": "cloud.temporal.io",
	})
	require.Error(t, err)
	for _, want := range []string{
		"PAYWATCH_PAYLOAD_KEY: the key is 16 bytes, not 32 (make one with: openssl rand -base64 32)",
		"PAYWATCH_PAYLOAD_OLD_KEYS: key 1: not base64 or hex",
		`PAYWATCH_TEMPORAL_CLEAR_REFS: "maybe" is not true or false`,
		`PAYWATCH_TEMPORAL_UI_ORIGINS: "cloud.temporal.io" is not an origin`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), secret)

	cfg, err := LoadConfig(ModeDev, func(k string) string {
		return map[string]string{"PAYWATCH_PAYLOAD_KEY": hex.EncodeToString(key)}[k]
	})
	require.NoError(t, err)
	for _, verb := range []string{"%v", "%+v", "%#v"} {
		assert.NotContains(t, fmt.Sprintf(verb, cfg), hex.EncodeToString(key), verb)
	}
}

// A worker needs the key the API seals with: the master key it derives
// from, or the payload key itself.
func TestWorkerNeedsThePayloadKey(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1/db", "TEMPORAL_ADDRESS": "127.0.0.1:7233"}
	validate := func(extra map[string]string) error {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range extra {
			env[k] = v
		}
		cfg, err := LoadConfig(ModeWorker, func(k string) string { return env[k] })
		require.NoError(t, err)
		return cfg.Validate()
	}
	assert.ErrorContains(t, validate(nil), "PAYWATCH_MASTER_KEY (or PAYWATCH_PAYLOAD_KEY) is required for paywatch worker")
	assert.NoError(t, validate(map[string]string{"PAYWATCH_MASTER_KEY": "mk_" + strings.Repeat("a", 24)}))
	assert.NoError(t, validate(map[string]string{"PAYWATCH_PAYLOAD_KEY": hex.EncodeToString(make([]byte, 32))}))

	// Without the master key, no key is derived from an empty one.
	pc, err := payloadEnv{key: hex.EncodeToString(make([]byte, 32))}.load("")
	require.NoError(t, err)
	fromEmpty, err := workflows.NewPayloadCodec(workflows.DerivePayloadKey(""))
	require.NoError(t, err)
	sealed, err := workflows.NewDataConverter(fromEmpty).ToPayload("x")
	require.NoError(t, err)
	var s string
	assert.ErrorIs(t, workflows.NewDataConverter(pc.Codec).FromPayload(sealed, &s), workflows.ErrUnknownPayloadKey)
}

// `paywatch admin temporal-search` prints the query the Web UI takes: the
// keyed hashes the workflows carry (as payments.TemporalWorkflows computes
// them), or the values when the operator opted into clear references.
func TestAdminTemporalSearch(t *testing.T) {
	master := "mk_" + strings.Repeat("q", 24)
	run := func(env map[string]string, args ...string) (int, string, string) {
		var out, errOut strings.Builder
		code := runAdmin(context.Background(), append([]string{"temporal-search"}, args...),
			func(k string) string { return env[k] }, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	key := workflows.DeriveSearchRefKey(master)
	code, out, _ := run(map[string]string{"PAYWATCH_MASTER_KEY": " " + master + "\n"}, "--external-ref", "alice@example.com", "--external-order-id", "o-1")
	require.Equal(t, 0, code)
	assert.Equal(t, `ExternalRef = "`+workflows.SearchRef(key, "alice@example.com")+`" AND ExternalOrderId = "`+workflows.SearchRef(key, "o-1")+`"`+"\n", out)
	assert.NotContains(t, out, "alice")

	code, out, _ = run(map[string]string{"PAYWATCH_MASTER_KEY": master, "PAYWATCH_TEMPORAL_CLEAR_REFS": "yes"}, "--external-ref", `al"ice`)
	require.Equal(t, 0, code)
	assert.Equal(t, `ExternalRef = "al\"ice"`+"\n", out)

	code, _, errOut := run(map[string]string{"PAYWATCH_MASTER_KEY": master})
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "temporal-search takes --external-ref, --external-order-id or both")
}
