package api

import (
	"time"

	"github.com/labstack/echo/v4"
)

// observe reports every request to f once it is answered: the route
// pattern Echo matched (c.Path, such as /v1/payments/:id; "" for a request
// no route matched or the host rule refused), the status code and how long
// it took. It runs first, before the host rule and the router, so it times
// everything; it answers an error itself, through the listener's error
// handler, to see the status code that error gets.
func observe(f func(route string, code int, took time.Duration)) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			if err := next(c); err != nil {
				c.Error(err)
			}
			f(c.Path(), c.Response().Status, time.Since(start))
			return nil
		}
	}
}
