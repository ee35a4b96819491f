package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/paywatch/paywatch/cmd/paywatch/internal/devtemporal"
	"github.com/paywatch/paywatch/workflows"
)

// startTestTemporal starts a Temporal server on SQLite in a private data
// dir and free ports, without its Web UI, and stops it after the test.
func startTestTemporal(t *testing.T, opts devtemporal.Options) *devtemporal.Server {
	t.Helper()
	opts.DataDir, opts.FrontendAddr = t.TempDir(), freeAddr(t)
	srv, err := devtemporal.Start(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}

// dialTest connects to a test server.
func dialTest(t *testing.T, ctx context.Context, addr string) client.Client {
	t.Helper()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: "default"})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// Issue 42, item 2: a namespace whose search attributes only its operator
// adds (Temporal Cloud's frontend refuses AddSearchAttributes) stops
// paywatch at start with one message naming each missing attribute and
// its type, and the tcld command that adds them all.
func TestSearchAttributesRefused(t *testing.T) {
	srv := startTestTemporal(t, devtemporal.Options{RefuseSearchAttributeChanges: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := dialTest(t, ctx, srv.FrontendAddr())

	err := workflows.EnsureSearchAttributes(ctx, c, "default")
	require.Error(t, err)
	msg := err.Error()
	for _, name := range []string{"ExternalOrderId", "ExternalRef", "Network", "PaymentStatus", "ProjectSlug", "Token"} {
		assert.Contains(t, msg, "  "+name+" (Keyword) is missing\n")
	}
	assert.Contains(t, msg, "Temporal refused to add them (PermissionDenied: ")
	assert.Contains(t, msg, `  tcld namespace search-attributes add --namespace default --search-attribute "ExternalOrderId=Keyword" --search-attribute "ExternalRef=Keyword" --search-attribute "Network=Keyword" --search-attribute "PaymentStatus=Keyword" --search-attribute "ProjectSlug=Keyword" --search-attribute "Token=Keyword"`+"\n")

	// paywatch itself stops with it, before its worker or API start.
	cfg := devConfig(t, t.TempDir())
	cfg.TemporalAddress = srv.FrontendAddr()
	m := NewMain(cfg, &syncBuffer{}, &syncBuffer{})
	err = m.Run(ctx)
	_ = m.Close()
	require.Error(t, err)
	assert.Equal(t, "register search attributes: "+msg, err.Error())
	assert.Empty(t, m.APIAddr(), "no listener opened")
}

// A search attribute registered with another type cannot be fixed in
// place: start-up stops, naming it with both types, after adding the
// missing ones where the server allows it.
func TestSearchAttributesWrongType(t *testing.T) {
	srv := startTestTemporal(t, devtemporal.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := dialTest(t, ctx, srv.FrontendAddr())
	_, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        "default",
		SearchAttributes: map[string]enumspb.IndexedValueType{"ExternalRef": enumspb.INDEXED_VALUE_TYPE_TEXT},
	})
	require.NoError(t, err)

	err = workflows.EnsureSearchAttributes(ctx, c, "default")
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "namespace default does not have the search attributes paywatch needs:\n"+
		"  ExternalRef is Text, and must be Keyword: a search attribute's type cannot change, so rename it (Temporal Cloud) or remove it\n"+
		"Run these, then start paywatch again. On Temporal Cloud:\n"+
		"  tcld namespace search-attributes rename --namespace default --existing-name ExternalRef --new-name ExternalRefText\n")
	assert.Contains(t, msg, "  temporal operator search-attribute remove --namespace default --name ExternalRef --yes\n")
	assert.NotContains(t, msg, "is missing", "the missing ones were added")

	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	for name, typ := range workflows.SearchAttributes {
		if name != "ExternalRef" {
			assert.Equal(t, typ, have.GetCustomAttributes()[name], name)
		}
	}

	// Removed, as the message says, it is added back with its type.
	_, err = c.OperatorService().RemoveSearchAttributes(ctx, &operatorservice.RemoveSearchAttributesRequest{Namespace: "default", SearchAttributes: []string{"ExternalRef"}})
	require.NoError(t, err)
	require.NoError(t, workflows.EnsureSearchAttributes(ctx, c, "default"))
}
