package devtemporal

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/log"
)

func describeDefault() *workflowservice.DescribeNamespaceRequest {
	return &workflowservice.DescribeNamespaceRequest{Namespace: "default"}
}

// assertPermissionDenied asserts that err is the frontend's refusal.
func assertPermissionDenied(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	var denied *serviceerror.PermissionDenied
	assert.True(t, errors.As(err, &denied), "want PermissionDenied, got %v: %v", err, msgAndArgs)
}

// With an API key, a client that sends it works end to end; one without it
// or with another is refused with PermissionDenied, and the Web UI keeps
// working without one (it calls the internal frontend).
func TestAPIKey(t *testing.T) {
	const key = "pwk_0123456789abcdef0123456789abcdef"
	s := startTestServer(t, Options{APIKey: key})
	plain := client.ConnectionOptions{TLSDisabled: true}
	ctx := context.Background()

	c, err := dial(s, plain, client.NewAPIKeyStaticCredentials(key))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.WorkflowService().DescribeNamespace(ctx, describeDefault())
	require.NoError(t, err)
	assert.Equal(t, "hello key", runGreet(t, c, "key"))

	for name, creds := range map[string]client.Credentials{
		"no key":      nil,
		"another key": client.NewAPIKeyStaticCredentials(key + "x"),
		"a prefix":    client.NewAPIKeyStaticCredentials(key[:len(key)-1]),
	} {
		// Dialing asks GetSystemInfo, which Temporal answers everyone.
		other, err := dial(s, plain, creds)
		require.NoError(t, err, name)
		_, err = other.WorkflowService().DescribeNamespace(ctx, describeDefault())
		assertPermissionDenied(t, err, name)
		_, err = other.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "devtemporal-test"}, "greet", name)
		assertPermissionDenied(t, err, name)
		other.Close()
	}
	_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
	require.NoError(t, err)

	var ns map[string]any
	require.NoError(t, getJSON(&http.Client{Timeout: 10 * time.Second}, "http://"+s.UIAddr()+"/api/v1/namespaces/default", &ns))
	assert.Contains(t, ns, "namespaceInfo")
}

// The key is read from "authorization: Bearer <key>" only, whole.
func TestAPIKeyClaims(t *testing.T) {
	m := newAPIKeyClaimMapper("secret-key", log.NewNoopLogger())
	for header, admin := range map[string]bool{
		"Bearer secret-key": true, "bearer secret-key": true,
		"Bearer secret-key ": false, "Bearer secret": false, "secret-key": false, "Basic secret-key": false, "": false, "Bearer ": false,
	} {
		claims, err := m.GetClaims(&authorization.AuthInfo{AuthToken: header})
		require.NoError(t, err)
		assert.Equal(t, admin, claims.System == authorization.RoleAdmin, "%q", header)
	}
	open := newAPIKeyClaimMapper("", log.NewNoopLogger())
	claims, err := open.GetClaims(&authorization.AuthInfo{})
	require.NoError(t, err)
	assert.Equal(t, authorization.RoleAdmin, claims.System, "without a key, as Temporal's default")
}

// A namespace whose search attributes only its operator changes, as on
// Temporal Cloud: both calls are refused, and the namespace starts without
// the attributes the server would otherwise register.
func TestRefuseSearchAttributeChanges(t *testing.T) {
	s := startTestServer(t, Options{RefuseSearchAttributeChanges: true,
		SearchAttributes: map[string]enumspb.IndexedValueType{"PaywatchStatus": enumspb.INDEXED_VALUE_TYPE_KEYWORD}})
	c, err := dial(s, client.ConnectionOptions{}, nil)
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()

	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: "default",
		SearchAttributes: map[string]enumspb.IndexedValueType{"PaywatchStatus": enumspb.INDEXED_VALUE_TYPE_KEYWORD}})
	assertPermissionDenied(t, err)
	assert.ErrorContains(t, err, "Request unauthorized")
	_, err = c.OperatorService().RemoveSearchAttributes(ctx, &operatorservice.RemoveSearchAttributesRequest{Namespace: "default",
		SearchAttributes: []string{"CustomKeywordField"}})
	assertPermissionDenied(t, err)

	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	assert.NotContains(t, list.CustomAttributes, "PaywatchStatus")
	assert.Contains(t, list.SystemAttributes, "WorkflowType", "the list itself is answered")
	_, err = c.WorkflowService().DescribeNamespace(ctx, describeDefault())
	assert.NoError(t, err, "everything else is open, as without the option")
}
