package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/paywatch/paywatch/accounts"
)

// viewersPage is the data of a project's viewers page.
type viewersPage struct {
	dashPage
	Viewers []accounts.Viewer
	Invite  string
}

// viewersRender renders the viewers page, with err's message.
func (s *Server) viewersRender(c echo.Context, typed string, err error) error {
	vs, verr := s.accounts.Viewers(c.Request().Context(), dashProject(c).ID)
	if verr != nil {
		return verr
	}
	pg := viewersPage{dashPage: s.page(c, "Viewers"), Viewers: vs, Invite: typed}
	pg.Tab = "viewers"
	status := http.StatusOK
	if err != nil {
		st, msg, ok := formError(err)
		if !ok {
			return err
		}
		status, pg.Error, pg.Flash = st, msg, ""
	}
	return renderDash(c, status, "viewers", pg)
}

func (s *Server) viewersShow(c echo.Context) error {
	return s.viewersRender(c, "", nil)
}

// viewerInvite e-mails an invitation to view the project's payments.
func (s *Server) viewerInvite(c echo.Context) error {
	email := strings.TrimSpace(c.FormValue("email"))
	if err := s.accounts.Invite(c.Request().Context(), dashProject(c).ID, email); err != nil {
		return s.viewersRender(c, email, err)
	}
	return s.redirect(c, DashboardPath+"/p/"+dashProject(c).Slug+"/viewers", flashInvited)
}

// viewerRemove takes a viewer's access away or withdraws an invitation.
func (s *Server) viewerRemove(c echo.Context) error {
	if err := s.accounts.RemoveViewer(c.Request().Context(), dashProject(c).ID, c.FormValue("email")); err != nil {
		return s.viewersRender(c, "", err)
	}
	return s.redirect(c, DashboardPath+"/p/"+dashProject(c).Slug+"/viewers", flashRemoved)
}
