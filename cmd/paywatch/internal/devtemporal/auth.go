package devtemporal

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"strings"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	"google.golang.org/grpc/peer"
)

// Reasons the frontend gives with a PermissionDenied.
const (
	reasonAPIKey           = "a valid API key is required: send it as authorization: Bearer <key>"
	reasonSearchAttributes = "search attributes cannot be changed through the API on this server: they are managed by its operator"
)

// apiKeyClaimMapper maps the public frontend's callers to claims: with no
// API key configured, everyone is a system admin (the server's default);
// with one, only a caller whose authorization header carries it. The
// server's own callers (system workers, the history service) reach the
// internal frontend instead, whose claim mapper is the server's internal
// one (Start).
type apiKeyClaimMapper struct {
	// keyHash is the SHA-256 of the key: the key itself is not kept, and
	// comparing two hashes of equal length in constant time says nothing
	// about the key through timing.
	keyHash [sha256.Size]byte
	hasKey  bool
	logger  log.Logger
}

var (
	_ authorization.ClaimMapper                     = (*apiKeyClaimMapper)(nil)
	_ authorization.ClaimMapperWithAuthInfoRequired = (*apiKeyClaimMapper)(nil)
)

func newAPIKeyClaimMapper(key string, logger log.Logger) *apiKeyClaimMapper {
	return &apiKeyClaimMapper{keyHash: sha256.Sum256([]byte(key)), hasKey: key != "", logger: logger}
}

// GetClaims gives a caller with the key (or every caller, without one) the
// system admin role, and anyone else no role at all, which the authorizer
// refuses. It never fails: a failure would be logged with the header.
func (m *apiKeyClaimMapper) GetClaims(info *authorization.AuthInfo) (*authorization.Claims, error) {
	if !m.hasKey {
		return &authorization.Claims{System: authorization.RoleAdmin}, nil
	}
	if key, ok := bearer(info.AuthToken); ok {
		sum := sha256.Sum256([]byte(key))
		if subtle.ConstantTimeCompare(sum[:], m.keyHash[:]) == 1 {
			return &authorization.Claims{Subject: "api-key", System: authorization.RoleAdmin}, nil
		}
	}
	return &authorization.Claims{}, nil
}

// AuthInfoRequired is false: GetClaims also decides for callers that send
// no authorization header and no client certificate.
func (*apiKeyClaimMapper) AuthInfoRequired() bool { return false }

// bearer returns the credentials of an "authorization: Bearer <key>"
// header, as the Go SDK's client.NewAPIKeyStaticCredentials sends it.
func bearer(header string) (string, bool) {
	const scheme = "bearer "
	if len(header) <= len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) {
		return "", false
	}
	return header[len(scheme):], true
}

// authorizer is the server's authorizer: Temporal's default one (health
// checks for everyone, then by role), refusing search attribute changes
// when asked to, as Temporal Cloud's frontend does.
type authorizer struct {
	base                   authorization.Authorizer
	refuseSearchAttributes bool
	logger                 log.Logger
}

var _ authorization.Authorizer = (*authorizer)(nil)

// Authorize decides one call.
func (a *authorizer) Authorize(ctx context.Context, claims *authorization.Claims, target *authorization.CallTarget) (authorization.Result, error) {
	if a.refuseSearchAttributes {
		switch target.APIName {
		case operatorservice.OperatorService_AddSearchAttributes_FullMethodName,
			operatorservice.OperatorService_RemoveSearchAttributes_FullMethodName:
			return authorization.Result{Decision: authorization.DecisionDeny, Reason: reasonSearchAttributes}, nil
		}
	}
	result, err := a.base.Authorize(ctx, claims, target)
	if err == nil && result.Decision != authorization.DecisionAllow && (claims == nil || claims.System == authorization.RoleUndefined) {
		result.Reason = reasonAPIKey
		// Who was refused, never what they sent.
		addr := "unknown"
		if p, ok := peer.FromContext(ctx); ok {
			addr = p.Addr.String()
		}
		a.logger.Warn("Temporal API call refused: missing or wrong API key", tag.Address(addr), tag.NewStringTag("api", target.APIName))
	}
	return result, err
}

// authOptions returns the claim mapper and authorizer for opts, or nils
// when the server needs neither (no API key, search attributes open), so
// that it runs as Temporal's default does.
func authOptions(opts Options, logger log.Logger) (func(*config.Config) authorization.ClaimMapper, authorization.Authorizer) {
	if opts.APIKey == "" && !opts.RefuseSearchAttributeChanges {
		return nil, nil
	}
	mapper := newAPIKeyClaimMapper(opts.APIKey, logger)
	return func(*config.Config) authorization.ClaimMapper { return mapper },
		&authorizer{base: authorization.NewDefaultAuthorizer(), refuseSearchAttributes: opts.RefuseSearchAttributeChanges, logger: logger}
}
