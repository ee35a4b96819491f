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
	return c.call(ctx, http.MethodGet, path, q, nil, out)
}

// post sends body (JSON) to path of the first endpoint that answers, and
// decodes the answer into out.
func (c *Client) post(ctx context.Context, path string, body any, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodPost, path, nil, b, out)
}

// call makes one request of the first endpoint that answers.
func (c *Client) call(ctx context.Context, method, path string, q url.Values, reqBody []byte, out any) error {
	return c.eps.Do(ctx, classify, func(ep *endpoint) error {
		c.calls.Add(1)
		u := *ep.base
		u.Path += path
		query := u.Query() // an api_key in the configured URL stays
		for k, vs := range q {
			query[k] = vs
		}
		u.RawQuery = query.Encode()
		var rd io.Reader
		if reqBody != nil {
			rd = bytes.NewReader(reqBody)
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
		if err != nil {
			return err
		}
		for k, vs := range ep.header {
			req.Header[k] = vs
		}
		req.Header.Set("Accept", "application/json")
		if reqBody != nil {
			req.Header.Set("Content-Type", "application/json")
		}
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
			OK     *bool  `json:"ok"`
			Code   int    `json:"code"`
			Error  string `json:"error"`
			Result any    `json:"result"`
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
		case res.StatusCode == http.StatusOK && refusal.OK != nil && !*refusal.OK:
			// A refusal sent with 200 is no answer: never read it as an
			// empty one.
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
