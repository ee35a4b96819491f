package api_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// unmatchedShop is a project of an owner's with one TRC20 payment that a
// transfer paid (matched) and a second transfer to its address after it
// (unmatched, after_paid), both confirmed.
type unmatchedShop struct {
	owner            *browser
	key              string // the project's API key
	payment, address string
	matched, another string
}

// tronHash is a 64-hex transaction hash made of c.
func tronHash(c string) string { return strings.Repeat(c, 64) }

func newUnmatchedShop(t *testing.T, e *env, email, slug string) unmatchedShop {
	t.Helper()
	ctx := t.Context()
	b := e.browser(t)
	key := b.owner(email, slug)
	require.Equal(t, http.StatusOK, e.op("PUT", "/v1/projects/"+slug+"/wallet", hdWallet()).Code)
	r := e.call(key, "POST", "/v1/payments", map[string]any{"amount": 10, "external_ref": "alice", "network": "TRC20", "token": "USDT"})
	require.Equal(t, http.StatusCreated, r.Code, r.Raw)
	p, err := e.store.GetPayment(ctx, projectID(t, e, slug), r.str("payment.id"))
	require.NoError(t, err)

	ten, err := paywatch.ParseAmount("10", paywatch.Decimals(paywatch.TRC20, paywatch.USDT))
	require.NoError(t, err)
	transfer := func(hash string, block uint64) paywatch.Transfer {
		return paywatch.Transfer{TxHash: hash, BlockNumber: block, BlockHash: "b" + hash[:8], Token: paywatch.USDT,
			From: tronAddrs[0], To: p.Address, Amount: ten.Units()}
	}
	record := func(height uint64, payment string, ts ...paywatch.Transfer) {
		b := store.ScanBatch{Network: paywatch.TRC20, Height: height, BlockHash: fmt.Sprint("h", height), Head: height, Transfers: ts}
		for _, tr := range ts {
			if payment != "" {
				b.Claims = append(b.Claims, store.TransferClaim{Transfer: tr, PaymentID: payment})
			}
		}
		_, err := e.store.RecordScan(ctx, b, nil)
		require.NoError(t, err)
	}
	shop := unmatchedShop{owner: b, key: key, payment: p.ID, address: p.Address, matched: tronHash("1"), another: tronHash("2")}
	paid := transfer(shop.matched, 10)
	record(10, p.ID, paid)
	_, err = e.store.SavePaymentState(ctx, paywatch.PaymentState{
		PaymentID: p.ID, Status: paywatch.StatusPaid, Network: p.Network, Token: p.Token, Address: p.Address,
		Amount: p.Amount, PaidAmount: ten, TxHash: paid.TxHash, ExpiresAt: p.ExpiresAt, Version: 1,
		Transactions: []paywatch.Transaction{{TxHash: paid.TxHash, BlockNumber: 10, BlockHash: paid.BlockHash, From: paid.From, Amount: ten, Confirmations: 19, Confirmed: true}},
	})
	require.NoError(t, err)
	record(11, "", transfer(shop.another, 11))
	record(40, "") // past TRC20's 19 confirmations
	// The reconciler's pass tells it, which the navigation's count reads.
	_, err = e.server.Reconciler().Unmatched(ctx)
	require.NoError(t, err)
	return shop
}

// section returns the HTML of the element with id, up to its closing tag
// name (enough for a table or a list).
func section(body, id, tag string) string {
	i := strings.Index(body, `id="`+id+`"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(body[i:], "</"+tag+">")
	if j < 0 {
		return body[i:]
	}
	return body[i : i+j]
}

var navCount = regexp.MustCompile(`id="unmatched-count"><span class="sr-only">\(</span>(\d+)<`)

// The Unmatched funds page lists a transfer no payment counted, with why
// in words and the payment it came after, and not the one the payment
// counted; the project's navigation counts it; the payment's page lists
// it among the later transfers to its address.
func TestDashboardUnmatchedFunds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	shop := newUnmatchedShop(t, e, "unm@example.com", "unm")
	b := shop.owner

	p := b.get("/dashboard/p/unm/unmatched")
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, "<h1>Unmatched funds</h1>")
	list := section(p.Body, "unmatched", "ol")
	assert.Contains(t, list, shop.another)
	assert.NotContains(t, list, shop.matched, "a transfer the payment counted is not unmatched")
	assert.Contains(t, list, "Arrived after the payment was paid")
	assert.Contains(t, list, "10.00 USDT")
	assert.Contains(t, list, tronAddrs[0], "the sender")
	assert.Contains(t, list, paywatch.ExplorerTxURL(paywatch.TRC20, shop.another))
	assert.Contains(t, list, `href="/dashboard/p/unm/payments/`+shop.payment+`"`)
	assert.Contains(t, list, `class="form handled-form"`)
	assert.Contains(t, p.Body, "1 transfer")
	m := navCount.FindStringSubmatch(p.Body)
	require.NotNil(t, m, "the navigation counts the unmatched transfer")
	assert.Equal(t, "1", m[1])
	assert.Regexp(t, navCount, b.get("/dashboard/p/unm/payments").Body, "on every project page")

	p = b.get("/dashboard/p/unm/payments/" + shop.payment)
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	later := section(p.Body, "later-transfers", "table")
	assert.Contains(t, later, shop.another[:8])
	assert.NotContains(t, later, shop.matched[:8], "its own transfer is among its transactions")
	assert.Contains(t, section(p.Body, "transactions", "table"), shop.matched[:8])
	assert.Contains(t, later, "state-unmatched")
	assert.Contains(t, later, "Arrived after the payment was paid")

	// Another project sees none of it.
	other := e.browser(t)
	other.owner("oth@example.com", "oth")
	p = other.get("/dashboard/p/oth/unmatched")
	assert.Contains(t, p.Body, `id="unmatched-empty"`)
	assert.NotContains(t, p.Body, shop.another)
	assert.NotContains(t, p.Body, `id="unmatched-count"`, "no count when there is nothing to handle")
	p = other.get("/dashboard/p/unm/unmatched")
	assert.Equal(t, http.StatusNotFound, p.Code)

	p = b.get("/dashboard/p/unm/unmatched?limit=0")
	assert.Equal(t, http.StatusBadRequest, p.Code)
	assert.Contains(t, p.Body, paywatch.MsgInvalidLimit)
}

// The owner marks an unmatched transfer handled with a note and the page
// says who and when; a note too long, a form without its token, a
// transfer a payment counted and a viewer are refused on the page and
// change nothing.
func TestDashboardMarkTransferHandled(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	shop := newUnmatchedShop(t, e, "mrk@example.com", "mrk")
	b := shop.owner
	prj := projectID(t, e, "mrk")
	handled := func(hash string) *store.TransferMark {
		t.Helper()
		tr, err := e.store.ProjectTransfer(t.Context(), prj, paywatch.TRC20, hash, nil)
		require.NoError(t, err)
		return tr.Handled
	}
	form := func(hash, note string) map[string]string {
		return map[string]string{"network": "TRC20", "tx_hash": hash, "log_index": "0", "note": note}
	}

	// A viewer sees the list but no form, and cannot post one.
	b.get("/dashboard/p/mrk/viewers")
	require.Equal(t, http.StatusOK, b.post("/dashboard/p/mrk/viewers", map[string]string{"email": "see@example.com"}).Code)
	viewer := e.browser(t)
	path, token := link(t, e.mailTo(t, "see@example.com", "invited"))
	viewer.get(path + "?token=" + token)
	require.Equal(t, http.StatusOK, viewer.post("/dashboard/invite", map[string]string{"token": token, "password": dashPassword}).Code)
	viewer.signIn("see@example.com", dashPassword)
	p := viewer.get("/dashboard/p/mrk/unmatched")
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, shop.another)
	assert.Regexp(t, navCount, p.Body, "a viewer sees the count")
	assert.NotContains(t, p.Body, "handled-form")
	p = viewer.post("/dashboard/p/mrk/unmatched/handled", form(shop.another, "mine now"))
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.Contains(t, p.Body, html.EscapeString(paywatch.MsgOwnerOnly))
	assert.Nil(t, handled(shop.another))

	b.get("/dashboard/p/mrk/unmatched")
	csrf := b.csrf
	b.csrf = ""
	p = b.post("/dashboard/p/mrk/unmatched/handled", form(shop.another, "no token"))
	assert.Equal(t, http.StatusForbidden, p.Code)
	assert.Contains(t, p.Body, html.EscapeString(paywatch.MsgFormExpired))
	assert.Nil(t, handled(shop.another))
	b.csrf = csrf

	long := strings.Repeat("é", 501)
	p = b.post("/dashboard/p/mrk/unmatched/handled", form(shop.another, long))
	assert.Equal(t, http.StatusBadRequest, p.Code)
	assert.Contains(t, p.Body, `id="error"`)
	assert.Contains(t, p.Body, paywatch.MsgInvalidNote)
	assert.Contains(t, p.Body, long, "the note typed is kept")
	assert.Contains(t, p.Body, shop.another, "the list is still shown")
	assert.Nil(t, handled(shop.another))

	p = b.post("/dashboard/p/mrk/unmatched/handled", form(shop.matched, "counted"))
	assert.Equal(t, http.StatusConflict, p.Code)
	assert.Contains(t, p.Body, paywatch.MsgTransferNotUnmatched)
	assert.Nil(t, handled(shop.matched))
	p = b.post("/dashboard/p/mrk/unmatched/handled", map[string]string{"network": "BTC", "tx_hash": shop.another, "note": "x"})
	assert.Equal(t, http.StatusNotFound, p.Code)
	assert.Contains(t, p.Body, paywatch.MsgTransferNotFound)

	start := time.Now()
	p = b.send(http.MethodPost, "/dashboard/p/mrk/unmatched/handled", url.Values{"csrf": {b.csrf}, "network": {"TRC20"}, "tx_hash": {shop.another}, "note": {"Refunded to the sender"}})
	require.Equal(t, http.StatusSeeOther, p.Code, p.Body)
	assert.Equal(t, "/dashboard/p/mrk/unmatched?show=all", p.Location)
	p = b.get(p.Location)
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, "Transfer marked as handled.")
	assert.Contains(t, p.Body, "Handled by mrk@example.com at ")
	assert.Contains(t, p.Body, ": Refunded to the sender</dd>")
	assert.NotContains(t, p.Body, `id="unmatched-count"`, "nothing left to handle")
	mark := handled(shop.another)
	require.NotNil(t, mark)
	assert.Equal(t, "mrk@example.com", mark.By)
	assert.Equal(t, "Refunded to the sender", mark.Note)
	assert.WithinDuration(t, start, mark.At, time.Minute)

	// By default the list keeps what is left to handle.
	p = b.get("/dashboard/p/mrk/unmatched")
	assert.Contains(t, p.Body, `id="unmatched-empty"`)
	assert.NotContains(t, p.Body, shop.another)
	assert.Contains(t, p.Body, `href="/dashboard/p/mrk/unmatched?show=all"`)
	p = b.get("/dashboard/p/mrk/payments/" + shop.payment)
	assert.Contains(t, section(p.Body, "later-transfers", "table"), "Handled by mrk@example.com")
}

// A transfer marked a second time keeps the first mark in its history on
// the Unmatched funds page (issue 27, item 3): the current mark is the
// second, and "Earlier marks" lists the first with who, when and the
// note. A transfer marked once has no history.
func TestDashboardTransferMarkHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noWorkflows: true})
	shop := newUnmatchedShop(t, e, "his@example.com", "his")
	b := shop.owner
	r := e.call(shop.key, "POST", "/v1/transfers/TRC20/"+shop.another+"/handled", map[string]any{"note": "Credited to order 7"})
	require.Equal(t, http.StatusOK, r.Code, r.Raw)
	p := b.get("/dashboard/p/his/unmatched?show=all")
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, ": Credited to order 7</dd>")
	assert.NotContains(t, p.Body, "Earlier marks", "marked once")

	p = b.send(http.MethodPost, "/dashboard/p/his/unmatched/handled", url.Values{"csrf": {b.csrf}, "network": {"TRC20"}, "tx_hash": {shop.another},
		"log_index": {"0"}, "note": {"Refunded instead"}})
	require.Equal(t, http.StatusSeeOther, p.Code, p.Body)
	p = b.get(p.Location)
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	assert.Contains(t, p.Body, "Handled by his@example.com at ")
	assert.Contains(t, p.Body, ": Refunded instead</dd>", "the current mark is the latest")
	assert.Contains(t, p.Body, "<summary>Earlier marks (1)</summary>")
	i := strings.Index(p.Body, `class="timeline history"`)
	require.GreaterOrEqual(t, i, 0, "the history is listed")
	history := p.Body[i : i+strings.Index(p.Body[i:], "</ol>")]
	assert.Regexp(t, `<li>Handled by api at <time datetime="[^"]+Z" title="[^"]+ UTC">[^<]+ UTC</time>: Credited to order 7</li>`, history)
	assert.NotContains(t, history, "Refunded instead", "the current mark is not repeated")
}

// A devnet chain's transactions are shown without a link to the public
// explorer, which does not know them (issue 28, item 7); a real network's
// are linked.
func TestDashboardDevnetTransactionsAreNotLinked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		devnet []paywatch.Network
		linked bool
	}{{nil, true}, {[]paywatch.Network{paywatch.TRC20}, false}} {
		e := newEnv(t, envOptions{noWorkflows: true, devnetNetworks: tc.devnet})
		shop := newUnmatchedShop(t, e, "dev@example.com", "dev")
		for _, path := range []string{"/dashboard/p/dev/payments/" + shop.payment, "/dashboard/p/dev/unmatched"} {
			body := shop.owner.get(path).Body
			assert.Contains(t, body, shop.another[:8], path)
			assert.Equal(t, tc.linked, strings.Contains(body, "tronscan.org"), "%s, devnet %v", path, tc.devnet)
		}
	}
}
