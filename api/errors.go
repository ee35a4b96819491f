package api

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"go.temporal.io/sdk/temporal"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/workflows"
)

// errInvalidBody is the one answer to bad JSON and schema failures: the
// message alone, never a field list.
var errInvalidBody = paywatch.Errorf(paywatch.EINVALID, paywatch.MsgInvalidRequestBody)

// schemaFailure gives a validation failure (EINVALID) the one message of
// interface.md's endpoints, "Invalid request body", with no field named;
// any other error passes unchanged. Operator endpoints keep their detailed
// messages.
func schemaFailure(err error) error {
	if paywatch.ErrorCode(err) == paywatch.EINVALID {
		return errInvalidBody
	}
	return err
}

// internalError is a failure whose cause is logged and whose public message
// says only what failed, such as "Failed to create payment".
type internalError struct {
	public string
	err    error
}

func (e *internalError) Error() string { return e.public + ": " + e.err.Error() }
func (e *internalError) Unwrap() error { return e.err }

// failed wraps an unexpected error with the public message of a 500; errors
// that carry their own client message (*paywatch.Error, update
// rejections) pass unchanged.
func failed(public string, err error) error {
	if err == nil {
		return nil
	}
	if _, _, ok := clientError(err); ok {
		return err
	}
	return &internalError{public: public, err: err}
}

// statusOf maps the error codes to HTTP statuses: of a *paywatch.Error,
// and of a workflow's refusal, whose type is the same code.
var statusOf = map[string]int{
	paywatch.EINVALID:      http.StatusBadRequest,
	paywatch.EUNAUTHORIZED: http.StatusUnauthorized,
	paywatch.EFORBIDDEN:    http.StatusForbidden,
	paywatch.ENOTFOUND:     http.StatusNotFound,
	paywatch.ECONFLICT:     http.StatusConflict,
	paywatch.EGONE:         http.StatusGone,
	paywatch.ERATELIMIT:    http.StatusTooManyRequests,
}

// clientError classifies an error that carries a message meant for the
// client: a domain *paywatch.Error or a workflow update rejection. It
// returns the status and the body ({"error": message} plus extra fields).
func clientError(err error) (int, map[string]any, bool) {
	var pe *paywatch.Error
	if errors.As(err, &pe) {
		if status, ok := statusOf[pe.Code]; ok {
			return status, body(pe.Message, pe.Fields), true
		}
		return 0, nil, false
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		status, ok := statusOf[workflows.ErrorCode(err)]
		if !ok {
			return 0, nil, false
		}
		var fields workflows.ErrorFields
		if ae.HasDetails() {
			if ae.Details(&fields) != nil {
				fields = nil
			}
		}
		return status, body(ae.Message(), fields), true
	}
	return 0, nil, false
}

// body is the error format of interface.md: {"error": msg} and any extra
// fields next to it.
func body(msg string, fields map[string]any) map[string]any {
	b := make(map[string]any, len(fields)+1)
	for k, v := range fields {
		b[k] = v
	}
	b["error"] = msg
	return b
}

// errorHandler is the single place where errors become HTTP responses:
// domain errors and workflow rejections by their code, Echo's own errors
// (unknown route, body too large, unreadable body) by status, and anything
// else as a logged 500 whose body never shows internals. The hosted pages
// (marked by htmlPage) and the dashboard's pages get the same status with
// an HTML page; the dashboard's polls get the JSON body.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, b, ok := clientError(err)
	if !ok {
		status = http.StatusInternalServerError
		msg := paywatch.MsgInternal
		var he *echo.HTTPError
		var ie *internalError
		switch {
		case errors.As(err, &he):
			status = he.Code
			switch status {
			case http.StatusNotFound, http.StatusMethodNotAllowed:
				status, msg = http.StatusNotFound, paywatch.MsgNotFound
			case http.StatusRequestEntityTooLarge:
				msg = paywatch.MsgBodyTooLarge
			case http.StatusBadRequest, http.StatusUnsupportedMediaType:
				status, msg = http.StatusBadRequest, paywatch.MsgInvalidRequestBody
			default:
				if m, ok := he.Message.(string); ok && status < 500 {
					msg = m
				} else {
					msg = http.StatusText(status)
				}
			}
		case errors.As(err, &ie):
			msg = ie.public
			s.deps.Logger.Error("request failed", "method", c.Request().Method, "path", c.Path(), "requestId", requestIDOf(c), "error", err)
		default:
			s.deps.Logger.Error("request failed", "method", c.Request().Method, "path", c.Path(), "requestId", requestIDOf(c), "error", err)
		}
		b = body(msg, nil)
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	// The dashboard's polls (statusPoll) are read by its script, which
	// expects JSON as the API answers it, whatever the status.
	if dash, _ := c.Get(ctxDash).(bool); dash && !statusPoll(c) {
		msg, _ := b["error"].(string)
		s.renderDashError(c, status, msg)
		return
	}
	if html, _ := c.Get(contextHTML).(bool); html {
		msg, _ := b["error"].(string)
		renderHTMLError(c, status, msg)
		return
	}
	_ = c.JSON(status, b)
}
