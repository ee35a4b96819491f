package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// defaultBaseURL is where the CLI commands find `paywatch dev`.
const defaultBaseURL = "http://127.0.0.1:8080"

// serviceBaseURL is PAYWATCH_BASE_URL without a trailing slash, or the dev
// default: the address `paywatch admin` and `paywatch devnet` call.
func serviceBaseURL(getenv func(string) string) string {
	if base := strings.TrimRight(getenv("PAYWATCH_BASE_URL"), "/"); base != "" {
		return base
	}
	return defaultBaseURL
}

// statusError is a non-2xx answer of the service, with its { "error" } message.
type statusError struct {
	method, path string
	status       int
	message      string
}

func (e *statusError) Error() string {
	if e.message != "" {
		return fmt.Sprintf("%s (HTTP %d)", e.message, e.status)
	}
	return fmt.Sprintf("%s %s: HTTP %d", e.method, e.path, e.status)
}

// callJSON sends one JSON request for a CLI command and prints the answer
// as indented JSON. A non-2xx answer is a *statusError carrying the
// service's message; a transport failure is returned as is.
func callJSON(ctx context.Context, hc *http.Client, base, method, path string, header http.Header, body any, stdout io.Writer) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, r)
	if err != nil {
		return err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		return &statusError{method: method, path: path, status: resp.StatusCode, message: e.Error}
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, raw, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(raw)
	}
	if b := pretty.Bytes(); len(b) == 0 || b[len(b)-1] != '\n' {
		pretty.WriteByte('\n')
	}
	_, err = stdout.Write(pretty.Bytes())
	return err
}

// isStatus reports whether err is an answer of the service with this status.
func isStatus(err error, status int) bool {
	var se *statusError
	return errors.As(err, &se) && se.status == status && se.message == ""
}
