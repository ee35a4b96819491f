package accounts

import (
	"context"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/locale"
	"github.com/paywatch/paywatch/store"
)

// Invite e-mails an invitation to view a project's payments.
//
// The owner's own address, or a viewer's, is ECONFLICT
// MsgAlreadyHasAccess. Inviting an address again replaces its open
// invitation, so only the newest link works.
func (s *Service) Invite(ctx context.Context, projectID int64, email string) error {
	email, err := paywatch.NormalizeEmail(email)
	if err != nil {
		return err
	}
	if _, err := s.hit(ctx, limitInvite, idKey(projectID)); err != nil {
		return err
	}
	token, hash := newToken()
	m, err := s.deps.Store.IssueInvitation(ctx,
		store.NewToken{Hash: hash, Email: email, ProjectID: projectID, TTL: InviteTTL},
		func(p *store.Project) store.Mail { return s.inviteMail(locale.FromContext(ctx), p, email, token) })
	if err != nil {
		return err
	}
	s.startMail(ctx, m)
	return nil
}

// Invitation returns an open invitation, for the acceptance page: the
// address it was sent to, whether an account has it, the project and who
// invited.
func (s *Service) Invitation(ctx context.Context, token string) (store.Invitation, error) {
	if token == "" {
		return store.Invitation{}, linkGone()
	}
	return s.deps.Store.InvitationByHash(ctx, hashToken(token))
}

// AcceptInvite opens an invitation, and returns it with, for an address
// that had no account, the session of the account it made: the invited
// address becomes a viewer of the project, and an address without an
// account gets one with password and is signed in at once.
//
// The new account is plan free and active, its address confirmed by the
// link; for an address with an account, password is ignored, and the
// invitation is taken only by that account signed in (signedIn): a link
// alone, forwarded or intercepted, must not add a project to someone
// else's account, nor sign anyone in to it. The store checks this again
// in the transaction that uses the link, for an account made since. Of
// two acceptances at once, one wins and the other is EGONE.
func (s *Service) AcceptInvite(ctx context.Context, token, password string, signedIn *store.Account, ip, userAgent string) (store.Invitation, *Session, error) {
	inv, err := s.Invitation(ctx, token)
	if err != nil {
		return inv, nil, err
	}
	if inv.HasAccount && (signedIn == nil || normalEmail(signedIn.Email) != normalEmail(inv.Email)) {
		return inv, nil, paywatch.Errorf(paywatch.EFORBIDDEN, paywatch.MsgInviteSignIn, inv.Email)
	}
	var pw string
	var as int64
	if signedIn != nil {
		as = signedIn.ID
	}
	if !inv.HasAccount {
		if err := validatePassword(password); err != nil {
			return inv, nil, err
		}
		if pw, err = hashSecret(password); err != nil {
			return inv, nil, err
		}
	}
	accountID, created, err := s.deps.Store.AcceptInvitation(ctx, hashToken(token), pw, as)
	// Someone signed in as another account keeps their session: the new
	// account signs in when they choose.
	if err != nil || !created || signedIn != nil {
		return inv, nil, err
	}
	// The link proved the address and the form chose the password: asking
	// for both again on a sign-in page would be a step for nothing.
	auth, err := s.deps.Store.AccountAuthByID(ctx, accountID)
	if err != nil {
		return inv, nil, err
	}
	sess, err := s.newSession(ctx, auth, ip, userAgent)
	return inv, sess, err
}

// Viewers lists a project's viewers and open invitations.
func (s *Service) Viewers(ctx context.Context, projectID int64) ([]Viewer, error) {
	list, err := s.deps.Store.ProjectViewers(ctx, projectID)
	if err != nil {
		return nil, err
	}
	out := make([]Viewer, len(list))
	for i, v := range list {
		out[i] = Viewer{Email: v.Email, Accepted: v.Accepted, CreatedAt: v.CreatedAt}
	}
	return out, nil
}

// RemoveViewer takes a viewer's access to a project away, or withdraws an
// open invitation.
func (s *Service) RemoveViewer(ctx context.Context, projectID int64, email string) error {
	return s.deps.Store.RemoveViewer(ctx, projectID, normalEmail(email))
}

// RoleIn returns what the account may do in the project.
func (s *Service) RoleIn(ctx context.Context, accountID int64, p *store.Project) (Role, error) {
	if p == nil {
		return RoleNone, nil
	}
	if p.Owner != nil && p.Owner.ID == accountID {
		return RoleOwner, nil
	}
	ok, err := s.deps.Store.IsViewer(ctx, p.ID, accountID)
	if err != nil || !ok {
		return RoleNone, err
	}
	return RoleViewer, nil
}

// Projects lists the projects an account owns or views, owned first.
func (s *Service) Projects(ctx context.Context, accountID int64) ([]ProjectRole, error) {
	owned, err := s.deps.Store.ProjectsOwnedBy(ctx, accountID)
	if err != nil {
		return nil, err
	}
	viewed, err := s.deps.Store.ProjectsViewedBy(ctx, accountID)
	if err != nil {
		return nil, err
	}
	out := make([]ProjectRole, 0, len(owned)+len(viewed))
	for _, p := range owned {
		out = append(out, ProjectRole{Project: p, Role: RoleOwner})
	}
	for _, p := range viewed {
		out = append(out, ProjectRole{Project: p, Role: RoleViewer})
	}
	return out, nil
}
