package accounts

import (
	"context"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// The records the account use cases take and answer with, named here so
// that the edges never import store: aliases of the store's rows, one
// definition.
type (
	Account       = store.Account
	AccountUpdate = store.AccountUpdate
	AccountStatus = store.AccountStatus
	Invitation    = store.Invitation
)

// The account statuses (store.AccountStatus).
const (
	AccountActive    = store.AccountActive
	AccountSuspended = store.AccountSuspended
	AccountClosed    = store.AccountClosed
)

// ParseAccountStatus validates an account status name.
func ParseAccountStatus(s string) (AccountStatus, error) { return store.ParseAccountStatus(s) }

// CreateAccount adds an account for the operator (POST /v1/accounts); an
// existing e-mail address is ECONFLICT. AccountCreated sends its owner the
// link that sets a first password.
func (s *Service) CreateAccount(ctx context.Context, email string, plan paywatch.Plan) (*Account, error) {
	return s.deps.Store.CreateAccount(ctx, email, plan)
}

// UpdateAccount changes an account's plan, status or limit overrides, for
// the operator (PATCH /v1/accounts/{email}).
func (s *Service) UpdateAccount(ctx context.Context, email string, u AccountUpdate) (*Account, error) {
	return s.deps.Store.UpdateAccount(ctx, email, u)
}
