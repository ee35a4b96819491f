package api

// ProjectRoute is a project page or action of the dashboard, for tests that
// walk them all.
type ProjectRoute struct {
	Method, Path string
	Owner        bool
}

// DashboardProjectRoutes lists the routes under /dashboard/p/:slug.
func DashboardProjectRoutes(s *Server) []ProjectRoute {
	var out []ProjectRoute
	for _, r := range s.projectRoutes() {
		out = append(out, ProjectRoute{Method: r.method, Path: r.path, Owner: r.owner})
	}
	return out
}
