package chainapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Wherever a key sits in an endpoint's URL or headers, the endpoint's name
// leaves it out and its errors lose it.
func TestRedactor(t *testing.T) {
	for _, tc := range []struct {
		raw, name string
		headers   http.Header
		secrets   []string
	}{
		{"https://mainnet.infura.io/v3/0123456789abcdef", "https://mainnet.infura.io/…", nil, []string{"0123456789abcdef"}},
		{"https://user:pa55word@rpc.example?apikey=k3y-in-query", "https://rpc.example/…", nil, []string{"pa55word", "k3y-in-query"}},
		{"https://name.quiknode.pro/t0ken%2Fwith-slash/", "https://name.quiknode.pro/…", nil, []string{"t0ken%2Fwith-slash", "t0ken/with-slash"}},
		{"http://127.0.0.1:8545/", "http://127.0.0.1:8545", nil, nil},
		{"grpc.example:50051", "grpc.example:50051", http.Header{"Tron-Pro-Api-Key": {"k1"}}, []string{"k1"}},
		{"127.0.0.1:50051", "127.0.0.1:50051", http.Header{"Authorization": {"Bearer abc"}}, []string{"Bearer abc", "abc"}},
		// Without a scheme, anything past host:port could be a key.
		{"grpc.example:50051/s3cret-path", "grpc.example:50051/…", nil, []string{"s3cret-path"}},
		{"user:s3cret@grpc.example:50051", "grpc.example:50051/…", nil, []string{"s3cret"}},
		{"mainnet.infura.io:443/v3/0123456789abcdef", "mainnet.infura.io:443/…", nil, []string{"0123456789abcdef"}},
	} {
		r := NewRedactor(tc.raw, tc.headers)
		assert.Equal(t, tc.name, r.Name(), tc.raw)
		for _, s := range tc.secrets {
			assert.NotContains(t, r.Name(), s, tc.raw)
			base := errors.New("boom")
			err := r.Error(fmt.Errorf("calling %s with %s: %w", tc.raw, s, base))
			assert.NotContains(t, err.Error(), s, tc.raw)
			assert.ErrorIs(t, err, base, "the scrubbed error unwraps to the original")
		}
	}
	assert.Nil(t, NewRedactor("https://x.example/v3/abcdefgh", nil).Error(nil))
}

// Issue 38: a credential is scrubbed in every form it is sent in, and a
// piece of one cut short (from its first six characters on) goes too.
func TestRedactorScrubsEveryForm(t *testing.T) {
	r := NewRedactor("https://alice:pa55-w0rd%2Fx@rpc.example/k3y-in-path?apikey=a+b%2Fcdefg", http.Header{"X-Key": {"hdr-s3cret"}})
	for _, echo := range []string{
		"Authorization: Basic YWxpY2U6cGE1NS13MHJkL3g=", // base64("alice:pa55-w0rd/x"), as Go sends user info
		"pass=pa55-w0rd/x", "pass=pa55-w0rd%2Fx", "query=apikey=a+b%2Fcdefg", "value=a b/cdefg",
		"hdr=aGRyLXMzY3JldA==", "path=k3y-in-pa", "cut at k3y-in", "header cut hdr-s3c",
	} {
		clean := r.String(echo)
		for _, bad := range []string{"YWxpY2U6", "pa55-w", "aGRyLXMz", "k3y-in", "hdr-s3", "a b/cd", "a+b%2F"} {
			assert.NotContains(t, clean, bad, echo)
		}
	}
	assert.Equal(t, "nothing secret here: 0x12", r.String("nothing secret here: 0x12"))

	// What holds a credential (the URL, the query, a header's whole value)
	// is replaced whole, never by its first characters: a message that
	// merely starts like one keeps its words.
	r = NewRedactor("https://mainnet.infura.io/v3/0123456789abcdef?apikey=zzzzzzzzzz",
		http.Header{"Authorization": {"Bearer tok3ntok3ntok3n"}})
	plain := `bad endpoint "grpc://x:1": see https://docs.infura.io/ invalid apikey; Bearer token missing; block 1234567`
	assert.Equal(t, plain, r.String(plain))
	assert.NotContains(t, r.String("got Bearer tok3ntok3n"), "tok3nt", "a cut token")

	// A Basic header's user and password, decoded; lower-case escapes and
	// JSON's escaped slash.
	r = NewRedactor("https://rpc.example/ab%2Fcdefghijkl/", http.Header{"Authorization": {"Basic Ym9iLXVzZXI6aHVudGVyMi1zZWNyZXQ="}})
	clean := r.String(`user=bob-user pass=hunter2-secret path=/ab%2fcdefghijkl/ json="ab\/cdefghijkl"`)
	for _, bad := range []string{"bob-us", "hunter", "ab%2fcdef", `ab\/cdef`, "cdefghijkl"} {
		assert.NotContains(t, clean, bad)
	}

	// A long answer is read up to maxRedacted, and a key across that cut
	// goes as a piece.
	long := strings.Repeat("x", maxRedacted-10) + "hunter2-secret and more"
	clean = r.String(long)
	assert.LessOrEqual(t, len(clean), maxRedacted+len("…"))
	assert.NotContains(t, clean, "hunter")
}
