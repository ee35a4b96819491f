package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch"
)

// The hosted pages on the pay listener ({pay_url}):
//
//	GET  /{payment_id}                          payment page (HTML)
//	POST /{payment_id}/select-network           network choice without JavaScript (form post, 303 back)
//	GET  /api/pay/{payment_id}                  what the page shows, polled every 10 s (JSON)
//	POST /api/pay/{payment_id}/select-network   network choice (JSON, interface.md)
//	GET  /l/{slug}, POST /l/{slug}              payment link page and its form
//	GET  /assets/{name}                         the pages' CSS and JavaScript, embedded
//
// Everything is served from the binary (no CDN, no external fonts) under a
// strict Content-Security-Policy: no inline script or style, so the pages'
// script and style are files of their own.

// ContentSecurityPolicy is sent with every answer of the pay listener.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// contextHTML marks a request whose errors are answered with an HTML page
// instead of JSON.
const contextHTML = "paywatch.html"

// payRoutes registers the hosted pages on the pay listener.
func (s *Server) payRoutes() {
	p := s.pay
	p.GET("/assets/:name", s.serveAsset)
	p.GET("/api/pay/:id", s.payStatus, s.limitPerIP("pay-status"))
	p.POST("/api/pay/:id/select-network", s.selectNetworkJSON)
	p.Any("/api/*", func(echo.Context) error { return echo.ErrNotFound })
	p.GET("/l/:slug", s.linkPage, htmlPage, s.limitPerIP("pay-link"))
	p.POST("/l/:slug", s.linkSubmit, htmlPage, s.limitPerIP("pay-link"))
	p.GET("/:id", s.paymentPage, htmlPage, s.limitPerIP("pay-page"))
	p.POST("/:id/select-network", s.selectNetworkForm, htmlPage)
	p.Any("/*", func(echo.Context) error { return echo.ErrNotFound }, htmlPage)
}

// payHeaders sets the security headers of every pay-listener answer. Pages
// and JSON carry deposit addresses and states that must not be cached by
// anything in between; the assets override Cache-Control.
func payHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		return next(c)
	}
}

// htmlPage makes the error handler answer with an HTML page.
func htmlPage(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(contextHTML, true)
		return next(c)
	}
}

// errorPage is the data of the error template.
type errorPage struct {
	Assets  pageAssets
	Code    int
	Heading string
	Message string
}

// renderHTMLError is the HTML form of an error answer (the error handler's
// choice for the pages): the status and a message for people, never
// internals.
func renderHTMLError(c echo.Context, status int, msg string) {
	p := errorPage{Assets: assetURLs, Code: status}
	l := pageLang(c)
	switch {
	case status == http.StatusNotFound:
		p.Heading = l.T("error.not_found.title")
		p.Message = l.T("error.not_found.text")
		if msg == paywatch.MsgPaymentNotFound {
			p.Message = l.T("error.payment_not_found.text")
		}
	case status == http.StatusTooManyRequests:
		p.Heading = l.T("msg.too_many")
		p.Message = l.T("error.too_many.text")
	case status >= 500:
		p.Heading = l.T("error.failed.title")
		p.Message = l.T("error.failed.text")
	default:
		p.Heading = l.T("error.refused.title")
		p.Message = buyerMessage(l, msg)
	}
	if err := render(c, status, "error", p); err != nil {
		_ = c.String(status, p.Heading)
	}
}

// payStatus is GET {pay_url}/api/pay/{id}.
func (s *Server) payStatus(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.payments.PaymentByID(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	v, err := s.payView(ctx, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// paymentPage is GET {pay_url}/{id}; unknown and malformed ids get the 404
// page.
func (s *Server) paymentPage(c echo.Context) error {
	p, err := s.payments.PaymentByID(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return s.renderPayment(c, http.StatusOK, p, "")
}
