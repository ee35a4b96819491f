package api

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/labstack/echo/v4"
)

// HeaderRequestID carries a request's id: paywatch answers every request
// with it, and its access log line and error lines name it, so a merchant
// quoting it finds the request in the logs.
const HeaderRequestID = echo.HeaderXRequestID

// maxRequestIDLen bounds an X-Request-Id taken from a trusted proxy.
const maxRequestIDLen = 128

// accessLog is the outermost middleware of both listeners: it gives the
// request its id (X-Request-Id on the answer), lets the rest answer
// (errors included, through the error handler, so the status is the one
// sent) and logs one line per request:
//
//	level=INFO msg=request method=GET route=/v1/payments/:id status=200 durationMs=3.1 bytes=412 clientIp=203.0.113.7 requestId=6f1c…
//
// The route is Echo's pattern, never the path or the query: paths and
// queries hold payment ids, e-mail addresses and the dashboard's one-time
// tokens (?token=…), and a log is no place for those. A request no route
// matched has an empty route. Successful /health probes, which load
// balancers send every few seconds, are logged at DEBUG.
func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		req := c.Request()
		id := s.requestID(req)
		c.Response().Header().Set(HeaderRequestID, id)
		if err := next(c); err != nil {
			c.Error(err) // answer now, so the line has the status sent
		}
		res := c.Response()
		level := slog.LevelInfo
		if c.Path() == "/health" && res.Status == http.StatusOK {
			level = slog.LevelDebug
		}
		s.deps.Logger.LogAttrs(req.Context(), level, "request",
			slog.String("method", req.Method),
			slog.String("route", c.Path()),
			slog.Int("status", res.Status),
			slog.Float64("durationMs", float64(time.Since(start).Microseconds())/1000),
			slog.Int64("bytes", res.Size),
			slog.String("clientIp", c.RealIP()),
			slog.String("requestId", id),
		)
		return nil
	}
}

// requestID returns the id of req: the X-Request-Id a trusted proxy
// (PAYWATCH_TRUSTED_PROXIES) sent, when it is a well-formed one, so the
// proxy's logs and paywatch's name a request alike; otherwise a new random
// one. A client's own header is ignored: it could make its requests look
// like someone else's in the logs.
func (s *Server) requestID(req *http.Request) string {
	if v := req.Header.Get(HeaderRequestID); v != "" && validRequestID(v) && s.fromTrustedProxy(req) {
		return v
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// fromTrustedProxy reports whether req's peer is one of the trusted proxies.
func (s *Server) fromTrustedProxy(req *http.Request) bool {
	if len(s.deps.TrustedProxies) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		host = req.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, p := range s.deps.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// validRequestID accepts the ids proxies generate (UUIDs, hex, base64url,
// dotted or colon-separated trace ids): 1 to maxRequestIDLen characters of
// letters, digits and - _ . : — nothing that could forge a log line.
func validRequestID(v string) bool {
	if len(v) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(v); i++ {
		switch ch := v[i]; {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9':
		case ch == '-', ch == '_', ch == '.', ch == ':':
		default:
			return false
		}
	}
	return true
}

// requestIDOf returns the id accessLog gave c's request.
func requestIDOf(c echo.Context) string {
	return c.Response().Header().Get(HeaderRequestID)
}
