package ton

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/paywatch/paywatch/chains/internal/chainapi"
)

// httpTimeout bounds one request, as on the other networks.
const httpTimeout = 30 * time.Second

// maxAnswer bounds an answer's body: a page of 1,000 jetton transfers
// with its address book is a few MB.
const maxAnswer = 32 << 20

// MaxPage is the largest page TON Center's v3 endpoints serve.
const MaxPage = 1000

// endpoint is one TON Center API v3 (or ton-indexer) base URL.
type endpoint struct {
	base   *url.URL
	header http.Header
	hc     *http.Client
}

// Client reads TON through one or more TON Center API v3 endpoints,
// with failover, each endpoint's credentials (an X-API-Key header, an
// api_key in the URL) redacted from every error (chainapi.Endpoints).
type Client struct {
	eps   *chainapi.Endpoints[*endpoint]
	calls atomic.Uint64
}

// Dial returns a client of urls (http(s)://host[/path], the API's base,
// such as https://toncenter.com/api/v3); headers, per URL, may carry an
// X-API-Key. It makes no call.
func Dial(urls []string, headers []http.Header, observe func(chainapi.RPCOutcome)) (*Client, error) {
	if len(urls) == 0 {
		return nil, errors.New("ton: no API URL")
	}
	var eps []*endpoint
	var names []chainapi.Redactor
	for i, raw := range urls {
		var h http.Header
		if i < len(headers) {
			h = headers[i]
		}
		name := chainapi.NewRedactor(raw, h)
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("ton: API URL %q: want http(s)://host[:port][/path]", name.Name())
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		eps = append(eps, &endpoint{base: u, header: h.Clone(), hc: &http.Client{
			Timeout: httpTimeout,
			// An API has no business redirecting, and a redirect would
			// carry its key to wherever it points.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}})
		names = append(names, name)
	}
	return &Client{eps: chainapi.NewEndpoints(eps, names, observe)}, nil
}

// Calls returns the requests made, failed attempts and failovers too.
func (c *Client) Calls() uint64 { return c.calls.Load() }

// apiError is an endpoint's refusal.
type apiError struct {
	status int
	msg    string
	class  chainapi.Failure
}

func (e *apiError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.status, e.msg)
}

// classify sorts an endpoint's error: a rate limit (HTTP 429, or TON
// Center's {"code":429} body, which it sometimes sends with 200) tries the
// next endpoint and rests this one for its Retry-After; a server error
// or a transport error tries the next; another refusal is the answer.
func classify(err error) chainapi.Failure {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.class
	}
	if errors.Is(err, chainapi.ErrRateLimited) {
		return chainapi.Limited
	}
	return chainapi.Failover
}

// get asks path with q of the first endpoint that answers, and decodes
// the answer into out.
func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	return c.eps.Do(ctx, classify, func(ep *endpoint) error {
		c.calls.Add(1)
		u := *ep.base
		u.Path += path
		query := u.Query() // an api_key in the configured URL stays
		for k, vs := range q {
			query[k] = vs
		}
		u.RawQuery = query.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return err
		}
		for k, vs := range ep.header {
			req.Header[k] = vs
		}
		req.Header.Set("Accept", "application/json")
		res, err := ep.hc.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		body, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
		if err != nil {
			return err
		}
		// TON Center's refusals are small {"ok":false,…} objects, sent
		// with 200 too: only those are read twice.
		var refusal struct {
			Code  int    `json:"code"`
			Error string `json:"error"`
		}
		if res.StatusCode != http.StatusOK || bytes.HasPrefix(bytes.TrimSpace(body), []byte(`{"ok"`)) {
			_ = json.Unmarshal(body, &refusal)
		}
		switch {
		case res.StatusCode == http.StatusTooManyRequests || refusal.Code == http.StatusTooManyRequests:
			err := fmt.Errorf("%w: %s", chainapi.ErrRateLimited, strings.TrimSpace(string(body[:min(len(body), 200)])))
			if wait := chainapi.ParseRetryAfter(res.Header.Get("Retry-After"), time.Now()); wait > 0 {
				return &chainapi.RetryAfterError{After: wait, Err: err}
			}
			return err
		case res.StatusCode >= 500:
			return &apiError{res.StatusCode, strings.TrimSpace(string(body[:min(len(body), 200)])), chainapi.Failover}
		case res.StatusCode != http.StatusOK:
			msg := refusal.Error
			if msg == "" {
				msg = strings.TrimSpace(string(body[:min(len(body), 200)]))
			}
			return &apiError{res.StatusCode, msg, chainapi.Final}
		}
		if err := json.Unmarshal(body, out); err != nil {
			return &apiError{res.StatusCode, "not an API v3 answer: " + err.Error(), chainapi.Failover}
		}
		return nil
	})
}

// TransferQuery asks for jetton transfers to owners.
type TransferQuery struct {
	// Owners are the recipients' owner addresses (at most MaxPage).
	Owners []string
	// Master is the jetton master (USDT's).
	Master string
	// FromLT and ToLT bound the transactions' logical times, inclusive
	// (0: no bound).
	FromLT, ToLT uint64
	// Limit and Offset page the answer, oldest first.
	Limit, Offset int
}

// TransfersTo returns master's jetton transfers to q.Owners in the
// logical times asked, oldest first (/api/v3/jetton/transfers, direction
// in), as Credits reads them, and the number of rows the page held (a
// full page means more may follow).
func (c *Client) TransfersTo(ctx context.Context, q TransferQuery) ([]Credit, int, error) {
	if len(q.Owners) == 0 || len(q.Owners) > MaxPage {
		return nil, 0, fmt.Errorf("ton: %d owners: want 1 to %d", len(q.Owners), MaxPage)
	}
	limit := q.Limit
	if limit <= 0 || limit > MaxPage {
		limit = MaxPage
	}
	v := url.Values{
		"owner_address": q.Owners, "jetton_master": {q.Master}, "direction": {"in"},
		"sort": {"asc"}, "limit": {strconv.Itoa(limit)}, "offset": {strconv.Itoa(q.Offset)},
	}
	if q.FromLT > 0 {
		v.Set("start_lt", strconv.FormatUint(q.FromLT, 10))
	}
	if q.ToLT > 0 {
		v.Set("end_lt", strconv.FormatUint(q.ToLT, 10))
	}
	var page jettonTransfers
	if err := c.get(ctx, "/jetton/transfers", v, &page); err != nil {
		return nil, 0, err
	}
	if page.JettonTransfers == nil {
		return nil, 0, ErrBadAnswer
	}
	credits, err := creditsOf(page, q.Master)
	return credits, len(page.JettonTransfers), err
}

// MasterchainSeqno returns the newest masterchain block the indexer has
// (/api/v3/masterchainInfo's last): every transaction it lists is in a
// masterchain block at or below it, so final.
func (c *Client) MasterchainSeqno(ctx context.Context) (uint64, error) {
	var info struct {
		Last *struct {
			Seqno uint64 `json:"seqno"`
		} `json:"last"`
	}
	if err := c.get(ctx, "/masterchainInfo", nil, &info); err != nil {
		return 0, err
	}
	if info.Last == nil {
		return 0, errors.New("ton: masterchainInfo without last")
	}
	return info.Last.Seqno, nil
}

// TransfersSince returns every one of master's jetton transfers to
// owners with a logical time at or after fromLT (and at most toLT, 0: no
// bound), oldest first, paging through pages of limit (at most MaxPage)
// until a page is short. A transaction listed twice (a page boundary
// that moved while it was read) is returned once.
func (c *Client) TransfersSince(ctx context.Context, owners []string, master string, fromLT, toLT uint64, limit int) ([]Credit, error) {
	if limit <= 0 || limit > MaxPage {
		limit = MaxPage
	}
	var out []Credit
	seen := map[string]bool{}
	for offset := 0; ; offset += limit {
		page, rows, err := c.TransfersTo(ctx, TransferQuery{Owners: owners, Master: master, FromLT: fromLT, ToLT: toLT, Limit: limit, Offset: offset})
		if err != nil {
			return nil, err
		}
		for _, cr := range page {
			key := cr.TxHash + "/" + cr.To
			if !seen[key] {
				seen[key] = true
				out = append(out, cr)
			}
		}
		if rows < limit {
			return out, nil
		}
	}
}
