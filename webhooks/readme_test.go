package webhooks_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/activities"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/webhooks"
	"github.com/paywatch/paywatch/workflows"
)

// Issue 17, part 3: the webhook verifiers of the "Webhooks" section of
// docs/integrating.md (the README's until issue 30 moved it there), in Go,
// Node, Python and PHP, are run as the page prints them against real
// signed deliveries: payloads built by the code that builds every webhook,
// signed and POSTed by the Sender that makes every attempt, captured as a
// receiver gets them. Each must accept what paywatch sends
// and refuse the forgeries a receiver must refuse. A missing interpreter
// fails the test: .ci/setup test installs node, python3 and php from
// Debian's packages.

// delivery is one webhook as a receiver gets it; a nil header is absent.
type delivery struct {
	Name      string  `json:"name"`
	Secret    string  `json:"secret"`
	Body      []byte  `json:"body"` // base64 in JSON, for every driver
	Signature *string `json:"signature"`
	Timestamp *string `json:"timestamp"`
}

// verifierPage is the page whose "Webhooks" section holds the verifiers.
const verifierPage = "docs/integrating.md"

// readmeVerifiers returns the Webhooks section's code blocks by language.
func readmeVerifiers(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../" + verifierPage)
	require.NoError(t, err)
	text := string(raw)
	start := strings.Index(text, "\n## Webhooks\n")
	require.GreaterOrEqual(t, start, 0, "%s has no Webhooks section", verifierPage)
	section := text[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	blocks := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)```(go|js|python|php)\n(.*?)```").FindAllStringSubmatch(section, -1) {
		_, dup := blocks[m[1]]
		require.False(t, dup, "two %s blocks in the Webhooks section of %s", m[1], verifierPage)
		blocks[m[1]] = m[2]
	}
	for _, lang := range []string{"go", "js", "python", "php"} {
		require.Contains(t, blocks, lang, "the Webhooks section of %s has no %s verifier", verifierPage, lang)
	}
	return blocks
}

// capture receives webhooks as a merchant's endpoint does.
type capture struct {
	mu   sync.Mutex
	got  []delivery
	srv  *httptest.Server
	send *webhooks.Sender
}

func newCapture(t *testing.T) *capture {
	c := &capture{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := delivery{Body: body}
		if v := r.Header.Values(paywatch.HeaderSignature); len(v) > 0 {
			d.Signature = &v[0]
		}
		if v := r.Header.Values(paywatch.HeaderTimestamp); len(v) > 0 {
			d.Timestamp = &v[0]
		}
		c.mu.Lock()
		c.got = append(c.got, d)
		c.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// deliver has the Sender sign and POST payload at the given signing time,
// and returns the request as received.
func (c *capture) deliver(t *testing.T, secret string, payload []byte, signedAt time.Time) delivery {
	t.Helper()
	s := &webhooks.Sender{Client: webhooks.NewClient(5*time.Second, true), AllowPrivate: true, Now: func() time.Time { return signedAt }}
	res := s.Send(context.Background(), c.srv.URL+"/hooks", secret, payload)
	require.Equal(t, webhooks.Delivered, res.Outcome, "%+v", res)
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.got[len(c.got)-1]
	require.NotNil(t, d.Signature)
	require.NotNil(t, d.Timestamp)
	return d
}

// realPayload is a payment.completed webhook as the activity builds it,
// with metadata whose bytes a verifier must not re-encode.
func realPayload(t *testing.T) []byte {
	t.Helper()
	paid := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	amount := paywatch.MustParseAmount("25.50", 6)
	p := activities.BuildWebhookPayload(workflows.QueueWebhookInput{
		EventID: "6f1c1d0e-8a5b-5c3e-9f57-1f2e0d4c6b7a", Sequence: 1, Event: paywatch.EventCompleted,
		State: paywatch.PaymentState{
			PaymentID: "0b0c7c1e-3f5a-4d52-9a0e-8f7c3d2b1a09", Status: paywatch.StatusPaid, Network: paywatch.ERC20, Token: paywatch.USDT,
			Address: "0x9858EfFD232B4033E47d90003D41EC34EcaEda94", Amount: amount, PaidAmount: amount,
			TxHash: "0x5e1d" + strings.Repeat("ab", 30),
			Transactions: []paywatch.Transaction{{TxHash: "0x5e1d" + strings.Repeat("ab", 30), Amount: amount,
				From: "0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B", Confirmed: true, Confirmations: 12}},
			PaidAt: &paid, ExpiresAt: paid.Add(time.Hour),
		},
	}, storeInfo(paid))
	body, err := json.Marshal(p)
	require.NoError(t, err)
	return body
}

// runVerifier runs one language's driver with the deliveries on stdin and
// returns its verdicts: true (accepted), false (refused) or an error text.
func runVerifier(t *testing.T, name string, cmd *exec.Cmd, ds []delivery) []any {
	t.Helper()
	in, err := json.Marshal(ds)
	require.NoError(t, err)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s: %s", name, stderr.String())
	var out []any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), "%s printed %q (stderr %s)", name, stdout.String(), stderr.String())
	require.Len(t, out, len(ds), "%s: one verdict per delivery", name)
	return out
}

// interpreter finds a program the test needs; a missing one fails it.
func interpreter(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is missing: the documented verifier needs it (.ci/setup test installs Debian's %s, or apt-get install -y %s)", name, pkg, pkg)
	}
	return path
}

func TestReadmeWebhookVerifiers(t *testing.T) {
	blocks := readmeVerifiers(t)
	const secret = "whsec_2ez5ew23h2lo3cy2uxeeipd2c4"
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	// The Go example is built before anything is signed: a cold build may
	// take minutes, which would age the deliveries past their cases.
	goCmd := goVerifier(t, blocks["go"], write)

	c := newCapture(t)
	payload := realPayload(t)
	now := time.Now()
	fresh := c.deliver(t, secret, payload, now)
	str := func(s string) *string { return &s }
	with := func(name string, d delivery, change func(*delivery)) delivery {
		d.Name, d.Secret = name, secret
		d.Body = bytes.Clone(d.Body)
		if change != nil {
			change(&d)
		}
		return d
	}
	tampered := bytes.Replace(payload, []byte(`"25.50"`), []byte(`"95.50"`), 1)
	require.NotEqual(t, payload, tampered)
	other := c.deliver(t, secret, []byte(`{"event":"payment.cancelled"}`), now)

	cases := []struct {
		d      delivery
		accept bool
	}{
		{with("the delivery as sent", fresh, nil), true},
		{with("the signature in upper case", fresh, func(d *delivery) { d.Signature = str(strings.ToUpper(*d.Signature)) }), true},
		{with("signed 4 minutes ago", c.deliver(t, secret, payload, now.Add(-4*time.Minute)), nil), true},
		{with("a tampered body", fresh, func(d *delivery) { d.Body = tampered }), false},
		{with("a body with a trailing newline", fresh, func(d *delivery) { d.Body = append(d.Body, '\n') }), false},
		{with("another delivery's body", fresh, func(d *delivery) { d.Body = other.Body }), false},
		{with("a wrong secret", fresh, func(d *delivery) { d.Secret = "whsec_fcuqa3eqerhynx5izaazjjwv5q" }), false},
		{with("signed 6 minutes ago", c.deliver(t, secret, payload, now.Add(-6*time.Minute)), nil), false},
		{with("signed 6 minutes ahead", c.deliver(t, secret, payload, now.Add(6*time.Minute)), nil), false},
		{with("another timestamp than the signed one", fresh, func(d *delivery) { d.Timestamp = str(paywatch.WebhookTimestamp(now.Add(-time.Second))) }), false},
		{with("no signature", fresh, func(d *delivery) { d.Signature = nil }), false},
		{with("no timestamp", fresh, func(d *delivery) { d.Timestamp = nil }), false},
		{with("a signature of 63 characters", fresh, func(d *delivery) { d.Signature = str((*d.Signature)[:63]) }), false},
		{with("a signature that is not hex", fresh, func(d *delivery) { d.Signature = str(strings.Repeat("zz", 32)) }), false},
		{with("a signature of the body alone (the scheme before timestamps)", fresh, func(d *delivery) { d.Signature = str(bodyOnlyMAC(secret, d.Body)) }), false},
	}
	ds := make([]delivery, len(cases))
	for i, tc := range cases {
		ds[i] = tc.d
		// paywatch's own verifier agrees with the table.
		var sig, ts string
		if tc.d.Signature != nil {
			sig = *tc.d.Signature
		}
		if tc.d.Timestamp != nil {
			ts = *tc.d.Timestamp
		}
		require.Equal(t, tc.accept, paywatch.VerifyWebhook(tc.d.Secret, sig, ts, tc.d.Body, time.Now()) == nil, tc.d.Name)
	}

	for _, lang := range []struct {
		name string
		cmd  func(t *testing.T) *exec.Cmd
	}{
		{"Go", func(*testing.T) *exec.Cmd { return goCmd }},
		{"Node", func(t *testing.T) *exec.Cmd {
			return exec.Command(interpreter(t, "node", "nodejs"), write("verify.js", blocks["js"]+nodeDriver))
		}},
		{"Python", func(t *testing.T) *exec.Cmd {
			return exec.Command(interpreter(t, "python3", "python3"), write("verify.py", blocks["python"]+pythonDriver))
		}},
		{"PHP", func(t *testing.T) *exec.Cmd {
			return exec.Command(interpreter(t, "php", "php-cli"), write("verify.php", "<?php\n"+blocks["php"]+phpDriver))
		}},
	} {
		t.Run(lang.name, func(t *testing.T) {
			got := runVerifier(t, lang.name, lang.cmd(t), ds)
			for i, tc := range cases {
				assert.Equal(t, tc.accept, got[i], "%s verifier, %s", lang.name, tc.d.Name)
			}
		})
	}
}

// storeInfo is the payment row's part of the payload.
func storeInfo(created time.Time) store.WebhookPaymentInfo {
	order := "order-1001"
	return store.WebhookPaymentInfo{
		ExternalRef: "customer-42", ExternalOrderID: &order, CreatedAt: created.Add(-2 * time.Minute),
		// Non-ASCII text and an escaped character: the bytes signed are
		// the bytes sent, never a re-encoding.
		Metadata: json.RawMessage(`{"cart":"A7","note":"café ☕ \u00e9","amount":25.5}`),
	}
}

// bodyOnlyMAC is HMAC-SHA256 of the body without the timestamp.
func bodyOnlyMAC(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// The drivers below follow each documented block: they read the deliveries
// (JSON, bodies in base64) on stdin, call the documented function with each
// as a receiver's framework hands it over (absent headers as null or
// undefined), and print the verdicts as a JSON array. An exception is
// printed as an error, which the test reports: a verifier must refuse,
// not crash, on anything a client may send.

const nodeDriver = `
const deliveries = JSON.parse(require('fs').readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(deliveries.map((d) => {
  try {
    return verifyWebhook(d.secret, Buffer.from(d.body, 'base64'), d.signature ?? undefined, d.timestamp ?? undefined);
  } catch (e) {
    return 'error: ' + e.message;
  }
})));
`

const pythonDriver = `
import base64 as _b64, json as _json, sys as _sys
_out = []
for _d in _json.load(_sys.stdin):
    try:
        _out.append(verify_webhook(_d["secret"], _b64.b64decode(_d["body"]), _d["signature"], _d["timestamp"]))
    except Exception as _e:
        _out.append("error: %r" % (_e,))
print(_json.dumps(_out))
`

const phpDriver = `
$deliveries = json_decode(file_get_contents('php://stdin'), true);
$out = [];
foreach ($deliveries as $d) {
    try {
        $out[] = verify_webhook($d['secret'], base64_decode($d['body']), $d['signature'], $d['timestamp']);
    } catch (Throwable $e) {
        $out[] = 'error: ' . $e->getMessage();
    }
}
echo json_encode($out);
`

// goDriver serves each delivery to the documented handler, as net/http
// would, and reads its verdict from the status: 2xx accepts.
const goDriver = `package main

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
)

func main() {
	var deliveries []struct {
		Secret               string
		Body                 []byte
		Signature, Timestamp *string
	}
	if err := json.NewDecoder(os.Stdin).Decode(&deliveries); err != nil {
		panic(err)
	}
	out := []bool{}
	for _, d := range deliveries {
		secret = d.Secret
		req := httptest.NewRequest("POST", "/hooks", bytes.NewReader(d.Body))
		req.Header.Set("Content-Type", "application/json")
		if d.Signature != nil {
			req.Header.Set("X-Service-Signature", *d.Signature)
		}
		if d.Timestamp != nil {
			req.Header.Set("X-Service-Timestamp", *d.Timestamp)
		}
		rec := httptest.NewRecorder()
		handler(rec, req)
		out = append(out, rec.Code >= 200 && rec.Code < 300)
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}
`

// goVerifier builds the documented Go block, as printed, into a program of
// this module: the go command's overlay puts it and its driver in
// webhooks/testdata/readme_go without writing into the tree, so the block
// compiles against this checkout's paywatch package.
func goVerifier(t *testing.T, block string, write func(name, text string) string) *exec.Cmd {
	t.Helper()
	goCmd := interpreter(t, "go", "golang")
	pkg, err := filepath.Abs(filepath.Join("testdata", "readme_go"))
	require.NoError(t, err)
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{
		filepath.Join(pkg, "verify.go"): write("verify.go", "package main\n\n"+block),
		filepath.Join(pkg, "driver.go"): write("driver.go", goDriver),
	}})
	require.NoError(t, err)
	bin := filepath.Join(filepath.Dir(write("overlay.json", string(overlay))), "verify")
	build := exec.Command(goCmd, "build", "-overlay", filepath.Join(filepath.Dir(bin), "overlay.json"), "-o", bin, "./testdata/readme_go")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the documented Go verifier does not build: %v\n%s", err, out)
	}
	return exec.Command(bin)
}
