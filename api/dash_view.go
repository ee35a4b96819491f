package api

import (
	"log/slog"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch/accounts"
	"github.com/paywatch/paywatch/payments"
)

// dashAssets are the URLs of the dashboard's stylesheet and script.
type dashAssets struct {
	CSS string
	JS  string
}

// dashPage is what every dashboard page shows around its content: the
// signed-in account, the form token, a message and the project in view.
type dashPage struct {
	Title   string
	Assets  dashAssets
	CSRF    string
	Email   string
	Flash   string
	Error   string
	Project *payments.Project
	Owner   bool
	// Tab names the project page in view, for the navigation.
	Tab string
	// Unmatched is how many of the project's transfers are unmatched and
	// not marked handled: the count beside "Unmatched funds".
	Unmatched int
}

// page builds the frame of a dashboard page.
func (s *Server) page(c echo.Context, title string) dashPage {
	p := dashPage{
		Title:  title,
		Assets: dashAssets{CSS: DashboardPath + "/assets/dash.css?v=" + assetFiles["dash.css"].hash, JS: DashboardPath + "/assets/dash.js?v=" + assetFiles["dash.js"].hash},
		CSRF:   s.csrfToken(c),
		Flash:  s.takeFlash(c),
	}
	if sess := session(c); sess != nil {
		p.Email = sess.Account.Email
	}
	if ended, ok := c.Get(ctxEnded).(string); ok && p.Flash == "" {
		p.Error = ended
	}
	if prj := dashProject(c); prj != nil {
		p.Project = prj
		role, _ := c.Get(ctxRole).(accounts.Role)
		p.Owner = role == accounts.RoleOwner
		p.Unmatched = s.unmatchedCount(c, prj.ID)
	}
	return p
}

// unmatchedCount is the project's count of unmatched, unhandled
// transfers for the navigation. A failure to count is logged and shows no
// count: the page itself still opens.
func (s *Server) unmatchedCount(c echo.Context, projectID int64) int {
	n, err := s.payments.CountUnmatched(c.Request().Context(), projectID)
	if err != nil {
		s.deps.Logger.Warn("count unmatched transfers", slog.Int64("project_id", projectID), slog.Any("error", err))
		return 0
	}
	return n
}
