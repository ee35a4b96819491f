package api_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/paywatch/paywatch/api"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/store/storetest"
	"github.com/paywatch/paywatch/workflows"
)

const uiOrigin = "http://127.0.0.1:8233"

// codecServer is an API server with the payload codec endpoint, and the
// codec it serves.
func codecServer(t *testing.T) (*api.Server, *workflows.PayloadCodec) {
	t.Helper()
	key := make([]byte, workflows.PayloadKeySize)
	_, err := rand.Read(key)
	require.NoError(t, err)
	codec, err := workflows.NewPayloadCodec(key)
	require.NoError(t, err)
	s := api.New(api.Deps{
		Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Store: store.New(storetest.NewPool(t)), MasterKey: testMasterKey,
		BaseURL: "https://" + apiHost, PayURL: payURL,
		PayloadCodec: converter.NewPayloadCodecHTTPHandler(codec),
		CodecOrigins: []string{uiOrigin},
	})
	return s, codec
}

func codecCall(s *api.Server, method, path string, body io.Reader, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, body)
	req.Host = apiHost
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.API().ServeHTTP(rec, req)
	return rec
}

// The Temporal Web UI's decode call: an operator's (master key as bearer
// token, as `temporal --codec-auth` sends it) gets the payloads decoded;
// anyone else gets 401 and nothing.
func TestCodecEndpointDecodesForOperatorsOnly(t *testing.T) {
	t.Parallel()
	s, codec := codecServer(t)
	plain, err := converter.GetDefaultDataConverter().ToPayload("alice@example.com")
	require.NoError(t, err)
	sealed, err := codec.Encode([]*commonpb.Payload{plain})
	require.NoError(t, err)
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: sealed})
	require.NoError(t, err)

	for name, h := range map[string]map[string]string{
		"no credentials": {},
		"wrong key":      {"Authorization": "Bearer mk_wrong"},
		"x-master-key":   {"x-master-key": testMasterKey}, // not a browser's or the CLI's way; bearer only
		"cookie forged":  {"Cookie": "paywatch_codec=v1.9999999999.00"},
	} {
		rec := codecCall(s, "POST", api.CodecPath+"/decode", bytes.NewReader(body), h)
		assert.Equal(t, http.StatusUnauthorized, rec.Code, name)
		assert.JSONEq(t, `{"error":"Invalid master key"}`, rec.Body.String(), name)
		assert.NotContains(t, rec.Body.String(), "alice", name)
	}

	rec := codecCall(s, "POST", api.CodecPath+"/decode", bytes.NewReader(body),
		map[string]string{"Authorization": "Bearer " + testMasterKey, "Content-Type": "application/json", "X-Namespace": "default"})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var out commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(rec.Body.Bytes(), &out))
	require.Len(t, out.Payloads, 1)
	var got string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(out.Payloads[0], &got))
	assert.Equal(t, "alice@example.com", got)
}

// A browser signs in once on the codec page; the UI on a listed origin may
// then call the endpoint with the session cookie, and only that origin
// gets the CORS headers that let its script read the answer.
func TestCodecSignInAndCORS(t *testing.T) {
	t.Parallel()
	s, codec := codecServer(t)
	page := codecCall(s, "GET", api.CodecPath, nil, nil)
	require.Equal(t, http.StatusOK, page.Code)
	assert.Contains(t, page.Body.String(), `name="master_key"`)
	assert.Contains(t, page.Header().Get("Content-Security-Policy"), "default-src 'none'")

	form := func(key string) io.Reader { return strings.NewReader(url.Values{"master_key": {key}}.Encode()) }
	formHeader := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://" + apiHost}
	bad := codecCall(s, "POST", api.CodecPath, form("mk_wrong"), formHeader)
	assert.Equal(t, http.StatusUnauthorized, bad.Code)
	assert.Contains(t, bad.Body.String(), "Invalid master key")
	assert.Empty(t, bad.Result().Cookies())

	// A form posted from another site signs nobody in.
	cross := codecCall(s, "POST", api.CodecPath, form(testMasterKey),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.test"})
	assert.Equal(t, http.StatusForbidden, cross.Code)
	assert.Empty(t, cross.Result().Cookies())

	ok := codecCall(s, "POST", api.CodecPath, form(testMasterKey), formHeader)
	require.Equal(t, http.StatusOK, ok.Code, ok.Body.String())
	assert.Contains(t, ok.Body.String(), "Signed in")
	cookies := ok.Result().Cookies()
	require.Len(t, cookies, 1)
	ck := cookies[0]
	assert.True(t, ck.HttpOnly)
	assert.True(t, ck.Secure, "https base URL")
	assert.Equal(t, http.SameSiteNoneMode, ck.SameSite, "a UI on another site must be able to send it")
	assert.Equal(t, api.CodecPath, ck.Path)
	assert.NotContains(t, ck.Value, testMasterKey)

	pre := codecCall(s, "OPTIONS", api.CodecPath+"/decode", nil, map[string]string{
		"Origin": uiOrigin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,x-namespace"})
	assert.Equal(t, http.StatusNoContent, pre.Code)
	assert.Equal(t, uiOrigin, pre.Header().Get("Access-Control-Allow-Origin"))
	assert.Equal(t, "true", pre.Header().Get("Access-Control-Allow-Credentials"))
	assert.Contains(t, pre.Header().Get("Access-Control-Allow-Headers"), "X-Namespace")

	body, _ := json.Marshal(map[string]any{"payloads": []any{}})
	withCookie := map[string]string{"Origin": uiOrigin, "Cookie": ck.Name + "=" + ck.Value, "Content-Type": "application/json"}
	dec := codecCall(s, "POST", api.CodecPath+"/decode", bytes.NewReader(body), withCookie)
	assert.Equal(t, http.StatusOK, dec.Code, dec.Body.String())
	assert.Equal(t, uiOrigin, dec.Header().Get("Access-Control-Allow-Origin"))

	// Temporal Cloud's UI may pass its user's access token too: the
	// session still counts.
	withCookie["Authorization"] = "Bearer eyJhbGciOiJSUzI1NiJ9.cloud-user-token"
	both := codecCall(s, "POST", api.CodecPath+"/decode", bytes.NewReader(body), withCookie)
	assert.Equal(t, http.StatusOK, both.Code, both.Body.String())
	delete(withCookie, "Authorization")

	withCookie["Origin"] = "https://evil.test"
	other := codecCall(s, "POST", api.CodecPath+"/decode", bytes.NewReader(body), withCookie)
	assert.Empty(t, other.Header().Get("Access-Control-Allow-Origin"), "an unlisted origin's script cannot read the answer")

	// A history page's payloads may be far over the API's 64 KB; a body
	// over the codec's own limit is refused, not read.
	sealed, err := codec.Encode([]*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("binary/plain")}, Data: bytes.Repeat([]byte("a"), 1<<20)}})
	require.NoError(t, err)
	large, err := protojson.Marshal(&commonpb.Payloads{Payloads: sealed})
	require.NoError(t, err)
	bearer := map[string]string{"Authorization": "Bearer " + testMasterKey}
	assert.Equal(t, http.StatusOK, codecCall(s, "POST", api.CodecPath+"/decode", bytes.NewReader(large), bearer).Code)
	// Valid, and decodable but for its size: 9 MB in one payload.
	over, err := codec.Encode([]*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("binary/plain")}, Data: bytes.Repeat([]byte("a"), 9<<20)}})
	require.NoError(t, err)
	huge, err := protojson.Marshal(&commonpb.Payloads{Payloads: over})
	require.NoError(t, err)
	big := codecCall(s, "POST", api.CodecPath+"/decode", bytes.NewReader(huge), bearer)
	assert.Equal(t, http.StatusBadRequest, big.Code)
	assert.NotContains(t, big.Body.String(), `"payloads"`)
}
