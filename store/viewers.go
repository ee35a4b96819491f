package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// ProjectViewer is a viewer of a project, or an invitation still open.
type ProjectViewer struct {
	Email     string
	Accepted  bool
	CreatedAt time.Time
}

// IssueInvitation stores an invitation link t to view project
// t.ProjectID and queues the e-mail build makes, in one transaction. The
// owner's own address or an existing viewer's gives ECONFLICT
// MsgAlreadyHasAccess; an earlier open invitation of the address is
// replaced.
func (s *Store) IssueInvitation(ctx context.Context, t NewToken, build func(p *Project) Mail) (*Mail, error) {
	var queued *Mail
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		p, err := projectByID(ctx, tx, t.ProjectID)
		if noRows(err) {
			return notFound(paywatch.MsgProjectNotFound)
		}
		if err != nil {
			return fmt.Errorf("load project: %w", err)
		}
		var viewer bool
		if err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM project_viewers v JOIN accounts a ON a.id = v.account_id
			               WHERE v.project_id = $1 AND a.email = $2)`, p.ID, t.Email).Scan(&viewer); err != nil {
			return fmt.Errorf("load viewers: %w", err)
		}
		if viewer || p.OwnerEmail() == t.Email {
			return conflict(paywatch.MsgAlreadyHasAccess)
		}
		t.Purpose = TokenInvite
		if err := s.storeToken(ctx, tx, t, 0); err != nil {
			return err
		}
		q, err := s.queueMail(ctx, tx, build(p))
		if err != nil {
			return err
		}
		queued = &q
		return nil
	})
	if err != nil {
		return nil, err
	}
	return queued, nil
}

// Invitation is an open invitation to view a project, as its page shows
// it: to whom, for which project, and from whom.
type Invitation struct {
	Email string
	// HasAccount says the address has an account already.
	HasAccount bool
	// ProjectSlug and ProjectName name the project; InvitedBy is its
	// owner's address ("" without one), who alone invites.
	ProjectSlug, ProjectName, InvitedBy string
}

// InvitationByHash returns an open invitation; EGONE when the link is
// unknown, used or expired.
func (s *Store) InvitationByHash(ctx context.Context, hash []byte) (Invitation, error) {
	var inv Invitation
	var owner *string
	err := s.pool.QueryRow(ctx, `
		SELECT t.email, EXISTS (SELECT 1 FROM accounts a WHERE a.email = t.email),
		       p.slug, p.name, o.email
		FROM account_tokens t
		JOIN projects p ON p.id = t.project_id
		LEFT JOIN accounts o ON o.id = p.owner_id
		WHERE t.token_hash = $1 AND t.purpose = 'invite' AND t.used_at IS NULL AND t.expires_at > $2`,
		hash, s.clock()).Scan(&inv.Email, &inv.HasAccount, &inv.ProjectSlug, &inv.ProjectName, &owner)
	if noRows(err) {
		return Invitation{}, linkGone()
	}
	if err != nil {
		return Invitation{}, fmt.Errorf("load invitation: %w", err)
	}
	if owner != nil {
		inv.InvitedBy = *owner
	}
	return inv, nil
}

// AcceptInvitation uses an invitation link: its address becomes a viewer
// of the project, in the transaction that uses the link. An address
// without an account gets one (plan free, active, confirmed) with
// passwordHash, and created is true; when passwordHash is "" it gives
// EINVALID MsgPasswordLength and leaves the link open. An address with an
// account is taken only by that account signed in (signedIn, its id; 0
// for nobody), checked inside the transaction so that an account made
// since the page was shown is not joined by whoever holds the link:
// EFORBIDDEN MsgInviteSignIn, the link left open. Of two concurrent uses,
// one wins and the other gets EGONE.
func (s *Store) AcceptInvitation(ctx context.Context, hash []byte, passwordHash string, signedIn int64) (accountID int64, created bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		email, _, projectID, _, err := s.consumeToken(ctx, tx, hash, TokenInvite)
		if err != nil {
			return err
		}
		if projectID == nil {
			return linkGone()
		}
		err = tx.QueryRow(ctx, `SELECT id FROM accounts WHERE email = $1`, email).Scan(&accountID)
		switch {
		case noRows(err) && passwordHash == "":
			return invalid(paywatch.MsgPasswordLength)
		case noRows(err):
			if accountID, err = s.createDashboardAccount(ctx, tx, email, passwordHash); err != nil {
				return err
			}
			created = true
		case err != nil:
			return fmt.Errorf("load account: %w", err)
		case accountID != signedIn:
			return paywatch.Errorf(paywatch.EFORBIDDEN, paywatch.MsgInviteSignIn, email)
		}
		// The owner (if the project changed hands to this address) needs
		// no viewer row.
		if _, err := tx.Exec(ctx, `
			INSERT INTO project_viewers (project_id, account_id, created_at)
			SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM projects WHERE id = $1 AND owner_id = $2)
			ON CONFLICT (project_id, account_id) DO NOTHING`, *projectID, accountID, s.clock()); err != nil {
			return fmt.Errorf("add viewer: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return accountID, created, nil
}

// ProjectViewers lists a project's viewers and its open invitations (of
// addresses that are not viewers yet), by address.
func (s *Store) ProjectViewers(ctx context.Context, projectID int64) ([]ProjectViewer, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT a.email, true, v.created_at
		FROM project_viewers v JOIN accounts a ON a.id = v.account_id
		WHERE v.project_id = $1
		UNION ALL
		SELECT t.email, false, max(t.created_at)
		FROM account_tokens t
		WHERE t.project_id = $1 AND t.purpose = 'invite' AND t.used_at IS NULL AND t.expires_at > $2
		  AND NOT EXISTS (SELECT 1 FROM project_viewers v JOIN accounts a ON a.id = v.account_id
		                  WHERE v.project_id = $1 AND a.email = t.email)
		GROUP BY t.email
		ORDER BY 1`, projectID, s.clock())
	if err != nil {
		return nil, fmt.Errorf("list viewers: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ProjectViewer, error) {
		var v ProjectViewer
		err := r.Scan(&v.Email, &v.Accepted, &v.CreatedAt)
		v.CreatedAt = v.CreatedAt.UTC()
		return v, err
	})
}

// RemoveViewer takes an address's access to a project away and withdraws
// its open invitations there.
func (s *Store) RemoveViewer(ctx context.Context, projectID int64, email string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			DELETE FROM project_viewers WHERE project_id = $1
			AND account_id = (SELECT id FROM accounts WHERE email = $2)`, projectID, email); err != nil {
			return fmt.Errorf("remove viewer: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			DELETE FROM account_tokens WHERE project_id = $1 AND purpose = 'invite' AND email = $2 AND used_at IS NULL`,
			projectID, email); err != nil {
			return fmt.Errorf("withdraw invitation: %w", err)
		}
		return nil
	})
}

// IsViewer tells whether an account views a project.
func (s *Store) IsViewer(ctx context.Context, projectID, accountID int64) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM project_viewers WHERE project_id = $1 AND account_id = $2)`,
		projectID, accountID).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("load viewer: %w", err)
	}
	return ok, nil
}

// ProjectsViewedBy lists the projects an account views (and does not
// own), by name. (ProjectsOwnedBy, in dashboard.go, lists those it owns.)
func (s *Store) ProjectsViewedBy(ctx context.Context, accountID int64) ([]*Project, error) {
	rows, err := s.pool.Query(ctx, projectSelect+`
		WHERE p.id IN (SELECT project_id FROM project_viewers WHERE account_id = $1)
		  AND p.owner_id IS DISTINCT FROM $1
		ORDER BY p.name, p.id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("list viewed projects: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Project, error) { return scanProject(r) })
}
