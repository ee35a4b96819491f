package webhooks_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/webhooks"
)

func TestPublicIP(t *testing.T) {
	for _, tc := range []struct {
		ip     string
		public bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"2606:4700:4700::1111", true},
		{"127.0.0.1", false},
		{"127.5.5.5", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false}, // cloud metadata
		{"100.64.0.1", false},      // CGNAT
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"255.255.255.255", false},
		{"240.0.0.1", false},
		{"192.0.2.1", false},    // TEST-NET-1
		{"198.51.100.7", false}, // TEST-NET-2
		{"203.0.113.9", false},  // TEST-NET-3
		{"198.18.0.1", false},   // benchmarking
		{"::1", false},
		{"::", false},
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"ff02::1", false},
		{"2001:db8::1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:8.8.8.8", true},
		{"64:ff9b::7f00:1", false}, // NAT64 of 127.0.0.1
		{"64:ff9b::808:808", true}, // NAT64 of 8.8.8.8
		{"2002:7f00:1::1", false},  // 6to4
		{"::127.0.0.1", false},     // IPv4-compatible
		// Outside global unicast (issue 28): IPv4-translated, the rest of
		// ::/8, and unallocated blocks, whatever they embed.
		{"::ffff:0:127.0.0.1", false},
		{"::ffff:0:8.8.8.8", false},
		{"::1:2:3:4", false},
		{"0:0:0:0:0:1:7f00:1", false},
		{"100::1", false},
		{"4000::1", false},
		{"e000::1", false},
		{"2a00:1450:4001:80b::200e", true},
	} {
		ip := netip.MustParseAddr(tc.ip)
		assert.Equal(t, tc.public, webhooks.PublicIP(ip), tc.ip)
	}
}

func TestCheckWebhookURL(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		url string
		err error
	}{
		{"https://8.8.8.8/hook", nil},
		{"https://[2606:4700:4700::1111]:8443/hook", nil},
		{"http://127.0.0.1:8080/hook", webhooks.ErrPrivateAddress},
		{"http://[::1]/hook", webhooks.ErrPrivateAddress},
		{"http://[::ffff:192.168.0.1]/hook", webhooks.ErrPrivateAddress},
		{"http://[::ffff:0:127.0.0.1]/hook", webhooks.ErrPrivateAddress},
		{"http://[::ffff:0:7f00:1]/hook", webhooks.ErrPrivateAddress},
		{"http://[0:0:0:0:ffff:0:7f00:1]:80/hook", webhooks.ErrPrivateAddress},
		{"http://[::1:0:0:1]/hook", webhooks.ErrPrivateAddress},
		{"http://localhost:3000/hook", webhooks.ErrPrivateAddress},
		{"http://api.localhost/hook", webhooks.ErrPrivateAddress},
		{"http://169.254.169.254/latest/meta-data", webhooks.ErrPrivateAddress},
		{"ftp://8.8.8.8/hook", webhooks.ErrBadURL},
		{"/relative", webhooks.ErrBadURL},
		{"https://user:pw@8.8.8.8/", webhooks.ErrBadURL},
		// A port is 1-65535 (issue 38, item 4): no dialer reaches another.
		{"https://8.8.8.8:1/hook", nil},
		{"https://8.8.8.8:65535/hook", nil},
		{"https://8.8.8.8:99999/hook", webhooks.ErrBadURL},
		{"https://8.8.8.8:65536/hook", webhooks.ErrBadURL},
		{"https://8.8.8.8:0/hook", webhooks.ErrBadURL},
		{"https://8.8.8.8:00000/hook", webhooks.ErrBadURL},
		{"https://[2606:4700:4700::1111]:70000/hook", webhooks.ErrBadURL},
		{"https://8.8.8.8:99999999999999999999999/hook", webhooks.ErrBadURL},
	} {
		err := webhooks.CheckURL(ctx, tc.url, false)
		if tc.err == nil {
			assert.NoError(t, err, tc.url)
		} else {
			assert.ErrorIs(t, err, tc.err, tc.url)
		}
	}
	assert.NoError(t, webhooks.CheckURL(ctx, "http://127.0.0.1:8080/hook", true), "allowPrivate lifts the range check")
	assert.ErrorIs(t, webhooks.CheckURL(ctx, "ftp://127.0.0.1/", true), webhooks.ErrBadURL)
	assert.ErrorIs(t, webhooks.CheckURL(ctx, "http://127.0.0.1:99999/", true), webhooks.ErrBadURL, "allowPrivate checks the port too")
}

// The dialer refuses private addresses after DNS resolution, so a name that
// resolves to one (here "localhost", as after DNS rebinding) cannot be
// reached even though no URL check ran.
func TestWebhookClientRefusesPrivateAddressAtDial(t *testing.T) {
	hit := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hit = true }))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	u.Host = "localhost:" + u.Port()

	_, err = webhooks.NewClient(time.Second, false).Post(u.String(), "application/json", nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, webhooks.ErrPrivateAddress), "got %v", err)
	assert.False(t, hit)

	resp, err := webhooks.NewClient(time.Second, true).Post(u.String(), "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.True(t, hit)
}
