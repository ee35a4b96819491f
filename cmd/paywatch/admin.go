package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

const adminUsage = `Usage: paywatch admin <command> [arguments]

Operator commands over the operator endpoints (operations.md §2). They call
PAYWATCH_BASE_URL (default http://127.0.0.1:8080) with the master key from
PAYWATCH_MASTER_KEY, or from $PAYWATCH_DATA_DIR/master_key (default .data)
as "paywatch dev" keeps it. Responses are printed as JSON.

Commands:
  accounts create --email EMAIL [--plan free|pro]
  accounts update EMAIL [--plan free|pro] [--status active|suspended|closed] [--clear-protection-key]
                  [--limit NAME=N]... [--clear-limit NAME]...
      limit names: projects, wallets, payment_links, api_calls_per_day,
      webhooks_per_day, chat_notifications_per_day (-1 for unlimited)
  projects create --slug SLUG [--name NAME] [--owner-email EMAIL] [--webhook-url URL] [settings]
  projects list
  projects update SLUG [--name NAME] [--owner-email EMAIL] [--webhook-url URL] [settings]
      settings: --address-mode per_payment|per_user|dedicated|pool
                --pool-matching micro_amount|txid  --min-amount X
                --micro-amount-decimals 1-4  --rotation-threshold X
                --payment-expiry-minutes N  --active true|false
                --telegram-chat-id ID
      an empty value ("") clears --webhook-url, --owner-email, --min-amount,
      --rotation-threshold and --telegram-chat-id
  projects regenerate-keys SLUG
  projects telegram-link SLUG
      a one-time https://t.me/<bot>?start=<code> link (an hour): the chat
      that presses Start gets the project's payment notifications
  wallet set SLUG [--name NAME] [--xpub-evm XPUB] [--xpub-tron XPUB] [--address NETWORK=ADDRESS]...
  deliveries SLUG [--payment-id ID] [--limit N] [--offset N]
  webhooks redeliver SLUG EVENT_ID
      sends a webhook event of project SLUG again now: same event_id and
      payload, the current secret, up to 5 new attempts (event_id is in the
      deliveries listing)
  links create SLUG --slug LINK --title TITLE [--amount X] [--token TOKEN] [--network NETWORK]
      a payment link of project SLUG at {pay_url}/l/LINK; without --amount
      the buyer enters the amount, without --network the buyer picks it
  temporal-search [--external-ref REF] [--external-order-id ID]
      prints the Temporal visibility query that finds the payments of a
      customer or an order (the ExternalRef and ExternalOrderId search
      attributes hold keyed hashes of them, computed from the master key,
      or the values with PAYWATCH_TEMPORAL_CLEAR_REFS=true); paste it into
      the Web UI's search or "temporal workflow list -q". A payment link's
      payments have the external_ref link:<slug>:<buyer e-mail>
`

// decimalArg is an amount given on the command line.
var decimalArg = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// adminTimeout bounds one operator call.
const adminTimeout = 30 * time.Second

// adminClient calls the operator endpoints.
type adminClient struct {
	baseURL   string
	masterKey string
	http      *http.Client
	stdout    io.Writer
}

// runAdmin runs `paywatch admin ...` and returns the exit code: 0 on
// success, 1 when the call fails or the service refuses it, 2 on a usage
// error.
func runAdmin(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || wantsHelp(args) {
		// "paywatch admin accounts create --help" too: before the master
		// key is looked for, and whatever else the line holds.
		fmt.Fprint(stdout, adminUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	base := serviceBaseURL(getenv)
	key := strings.TrimSpace(getenv("PAYWATCH_MASTER_KEY"))
	if key == "" {
		dir := getenv("PAYWATCH_DATA_DIR")
		if dir == "" {
			dir = ".data"
		}
		if b, err := os.ReadFile(filepath.Join(dir, "master_key")); err == nil {
			key = strings.TrimSpace(string(b))
		}
	}
	if key == "" {
		fmt.Fprintln(stderr, "paywatch admin: set PAYWATCH_MASTER_KEY")
		return 2
	}
	if args[0] == "temporal-search" {
		clear, err := clearRefs(getenv("PAYWATCH_TEMPORAL_CLEAR_REFS"))
		if err != nil {
			fmt.Fprintf(stderr, "paywatch admin: %v\n", err)
			return 2
		}
		q, err := temporalSearchQuery(args[1:], key, clear)
		if err != nil {
			fmt.Fprintf(stderr, "paywatch admin: %v\n\n%s", err, adminUsage)
			return 2
		}
		fmt.Fprintln(stdout, q)
		return 0
	}
	c := &adminClient{baseURL: base, masterKey: key, http: &http.Client{Timeout: adminTimeout}, stdout: stdout}
	method, path, body, err := adminRequest(args)
	var usage usageError
	if errors.As(err, &usage) {
		fmt.Fprintf(stderr, "paywatch admin: %v\n\n%s", err, adminUsage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "paywatch admin: %v\n", err)
		return 2
	}
	if err := c.call(ctx, method, path, body); err != nil {
		fmt.Fprintf(stderr, "paywatch admin: %v\n", err)
		return 1
	}
	return 0
}

// usageError is a command line that does not name a valid command.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// optFlag is a string flag that remembers whether it was given.
type optFlag struct {
	set   bool
	value string
}

func (o *optFlag) String() string     { return o.value }
func (o *optFlag) Set(v string) error { o.set, o.value = true, v; return nil }

// splitPositional takes a leading positional argument (an email or slug)
// off args, so it may come before the flags.
func splitPositional(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}

// adminRequest turns a command line into the operator call it makes.
func adminRequest(args []string) (method, path string, body map[string]any, err error) {
	if len(args) < 2 {
		return "", "", nil, usageError{"missing command"}
	}
	group, cmd, rest := args[0], args[1], args[2:]
	fs := flag.NewFlagSet("paywatch admin "+group+" "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	pos, rest := splitPositional(rest)
	switch group + " " + cmd {
	case "accounts create":
		email := fs.String("email", pos, "")
		plan := fs.String("plan", "free", "")
		if err := fs.Parse(rest); err != nil {
			return "", "", nil, usageError{err.Error()}
		}
		if *email == "" {
			return "", "", nil, usageError{"--email is required"}
		}
		return "POST", "/v1/accounts", map[string]any{"email": *email, "plan": *plan}, nil

	case "accounts update":
		var plan, status optFlag
		var limits, clear listFlag
		clearKey := fs.Bool("clear-protection-key", false, "")
		fs.Var(&plan, "plan", "")
		fs.Var(&status, "status", "")
		fs.Var(&limits, "limit", "")
		fs.Var(&clear, "clear-limit", "")
		if err := fs.Parse(rest); err != nil {
			return "", "", nil, usageError{err.Error()}
		}
		if pos == "" {
			return "", "", nil, usageError{"the account's email is required"}
		}
		body = map[string]any{}
		if plan.set {
			body["plan"] = plan.value
		}
		if status.set {
			body["status"] = status.value
		}
		if *clearKey {
			body["protection_key"] = nil
		}
		if len(limits)+len(clear) > 0 {
			l := map[string]any{}
			for _, kv := range limits {
				name, v, ok := strings.Cut(kv, "=")
				n, err := strconv.ParseInt(v, 10, 64)
				if !ok || err != nil {
					return "", "", nil, usageError{fmt.Sprintf("--limit %s: want NAME=N", kv)}
				}
				l[name] = n
			}
			for _, name := range clear {
				l[name] = nil
			}
			body["limits"] = l
		}
		return "PATCH", "/v1/accounts/" + url.PathEscape(pos), body, nil

	case "projects create", "projects update":
		var slug optFlag
		if cmd == "create" {
			fs.Var(&slug, "slug", "")
			if pos != "" {
				_ = slug.Set(pos)
			}
		}
		settings := projectFlags(fs)
		if err := fs.Parse(rest); err != nil {
			return "", "", nil, usageError{err.Error()}
		}
		body, err := settings()
		if err != nil {
			return "", "", nil, usageError{err.Error()}
		}
		if cmd == "create" {
			if slug.value == "" {
				return "", "", nil, usageError{"--slug is required"}
			}
			body["slug"] = slug.value
			return "POST", "/v1/projects", body, nil
		}
		if pos == "" {
			return "", "", nil, usageError{"the project's slug is required"}
		}
		return "PATCH", "/v1/projects/" + url.PathEscape(pos), body, nil

	case "projects list":
		return "GET", "/v1/projects", nil, nil

	case "projects telegram-link":
		if pos == "" {
			return "", "", nil, usageError{"the project's slug is required"}
		}
		return "POST", "/v1/projects/" + url.PathEscape(pos) + "/telegram-link", nil, nil

	case "projects regenerate-keys":
		if pos == "" {
			return "", "", nil, usageError{"the project's slug is required"}
		}
		return "POST", "/v1/projects/" + url.PathEscape(pos) + "/regenerate-keys", nil, nil

	case "wallet set":
		var name, evm, tron optFlag
		var addrs listFlag
		fs.Var(&name, "name", "")
		fs.Var(&evm, "xpub-evm", "")
		fs.Var(&tron, "xpub-tron", "")
		fs.Var(&addrs, "address", "")
		if err := fs.Parse(rest); err != nil {
			return "", "", nil, usageError{err.Error()}
		}
		if pos == "" {
			return "", "", nil, usageError{"the project's slug is required"}
		}
		body = map[string]any{}
		if name.set {
			body["name"] = name.value
		}
		xpubs := map[string]any{}
		if evm.set {
			xpubs["evm"] = emptyAsNull(evm.value)
		}
		if tron.set {
			xpubs["tron"] = emptyAsNull(tron.value)
		}
		if len(xpubs) > 0 {
			body["xpubs"] = xpubs
		}
		if len(addrs) > 0 {
			byNetwork := map[string][]string{}
			for _, kv := range addrs {
				n, a, ok := strings.Cut(kv, "=")
				if !ok || n == "" || a == "" {
					return "", "", nil, usageError{fmt.Sprintf("--address %s: want NETWORK=ADDRESS", kv)}
				}
				byNetwork[n] = append(byNetwork[n], a)
			}
			body["addresses"] = byNetwork
		}
		return "PUT", "/v1/projects/" + url.PathEscape(pos) + "/wallet", body, nil

	case "links create":
		var slug, title, amount, token, network optFlag
		fs.Var(&slug, "slug", "")
		fs.Var(&title, "title", "")
		fs.Var(&amount, "amount", "")
		fs.Var(&token, "token", "")
		fs.Var(&network, "network", "")
		if err := fs.Parse(rest); err != nil {
			return "", "", nil, usageError{err.Error()}
		}
		if pos == "" {
			return "", "", nil, usageError{"the project's slug is required"}
		}
		if slug.value == "" || title.value == "" {
			return "", "", nil, usageError{"--slug and --title are required"}
		}
		body = map[string]any{"slug": slug.value, "title": title.value, "amount": nil}
		if amount.set && amount.value != "" {
			if !decimalArg.MatchString(amount.value) {
				return "", "", nil, usageError{fmt.Sprintf("--amount %s: want a decimal number such as 25 or 25.50", amount.value)}
			}
			body["amount"] = json.Number(amount.value) // sent as a JSON number, never through a float
		}
		if token.set {
			body["token"] = token.value
		}
		if network.set {
			body["network"] = network.value
		}
		return "POST", "/v1/projects/" + url.PathEscape(pos) + "/payment-links", body, nil

	case "webhooks redeliver":
		if err := fs.Parse(rest); err != nil {
			return "", "", nil, usageError{err.Error()}
		}
		if pos == "" || fs.NArg() != 1 {
			return "", "", nil, usageError{"the project's slug and the event_id are required"}
		}
		return "POST", "/v1/projects/" + url.PathEscape(pos) + "/webhook-events/" + url.PathEscape(fs.Arg(0)) + "/redeliver", nil, nil

	case "deliveries " + cmd:
		// "deliveries SLUG": the slug is the second word.
		pos, rest = cmd, args[2:]
		paymentID := fs.String("payment-id", "", "")
		limit := fs.Int("limit", 20, "")
		offset := fs.Int("offset", 0, "")
		if err := fs.Parse(rest); err != nil {
			return "", "", nil, usageError{err.Error()}
		}
		q := url.Values{}
		if *paymentID != "" {
			q.Set("payment_id", *paymentID)
		}
		q.Set("limit", strconv.Itoa(*limit))
		q.Set("offset", strconv.Itoa(*offset))
		return "GET", "/v1/projects/" + url.PathEscape(pos) + "/webhook-deliveries?" + q.Encode(), nil, nil
	}
	return "", "", nil, usageError{fmt.Sprintf("unknown command %q", group+" "+cmd)}
}

// projectFlags declares the project settings flags and returns a function
// that builds the request body from the flags given.
func projectFlags(fs *flag.FlagSet) func() (map[string]any, error) {
	strs := map[string]*optFlag{}
	for _, f := range []string{"name", "owner-email", "webhook-url", "address-mode", "pool-matching", "min-amount", "rotation-threshold", "telegram-chat-id"} {
		strs[f] = &optFlag{}
		fs.Var(strs[f], f, "")
	}
	ints := map[string]*optFlag{}
	for _, f := range []string{"micro-amount-decimals", "payment-expiry-minutes"} {
		ints[f] = &optFlag{}
		fs.Var(ints[f], f, "")
	}
	active := &optFlag{}
	fs.Var(active, "active", "")
	keys := map[string]string{
		"name": "name", "owner-email": "owner_email", "webhook-url": "webhook_url", "address-mode": "address_mode", "telegram-chat-id": "telegram_chat_id",
		"pool-matching": "pool_matching", "min-amount": "minAmount", "rotation-threshold": "rotation_threshold",
		"micro-amount-decimals": "micro_amount_decimals", "payment-expiry-minutes": "payment_expiry_minutes",
	}
	clearable := map[string]bool{"owner-email": true, "webhook-url": true, "min-amount": true, "rotation-threshold": true, "telegram-chat-id": true}
	return func() (map[string]any, error) {
		body := map[string]any{}
		for f, v := range strs {
			if !v.set {
				continue
			}
			if clearable[f] && v.value == "" {
				body[keys[f]] = nil
				continue
			}
			body[keys[f]] = v.value
		}
		for f, v := range ints {
			if !v.set {
				continue
			}
			n, err := strconv.Atoi(v.value)
			if err != nil {
				return nil, fmt.Errorf("--%s: want a whole number", f)
			}
			body[keys[f]] = n
		}
		if active.set {
			b, err := strconv.ParseBool(active.value)
			if err != nil {
				return nil, errors.New("--active: want true or false")
			}
			body["active"] = b
		}
		return body, nil
	}
}

func emptyAsNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (c *adminClient) call(ctx context.Context, method, path string, body map[string]any) error {
	var payload any
	if body != nil {
		payload = body
	}
	err := callJSON(ctx, c.http, c.baseURL, method, path, http.Header{"X-Master-Key": {c.masterKey}}, payload, c.stdout)
	var se *statusError
	if err != nil && !errors.As(err, &se) {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return err
}
