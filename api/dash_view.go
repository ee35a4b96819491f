package api

import (
	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch/accounts"
	"github.com/paywatch/paywatch/store"
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
	Project *store.Project
	Owner   bool
	// Tab names the project page in view, for the navigation.
	Tab string
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
	}
	return p
}
