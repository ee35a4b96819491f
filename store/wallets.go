package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// Wallet is a project's wallet: an xPub per address family and the static
// addresses registered per network.
type Wallet struct {
	ID        int64
	ProjectID int64
	Name      string
	// XPubs holds the canonical xPub of each family that has one.
	XPubs map[paywatch.Family]string
	// Addresses counts the static addresses per network.
	Addresses map[paywatch.Network]int
}

// HasXPub reports whether the wallet has an xPub for family f.
func (w *Wallet) HasXPub(f paywatch.Family) bool {
	return w != nil && w.XPubs[f] != ""
}

// WalletUpdate is the body of PUT /v1/projects/{slug}/wallet; every part is
// optional.
type WalletUpdate struct {
	Name *string
	// XPubs sets (non-nil, non-empty) or removes (nil or "") the xPub of
	// each family present as a key.
	XPubs map[string]*string
	// Addresses adds static addresses per network name; addresses already
	// registered are kept, so the call is idempotent.
	Addresses map[string][]string
}

// xpubCache keeps parsed xPubs, because every per_payment creation derives
// from one and parsing costs a base58 decode and a curve step.
var xpubCache sync.Map // canonical or raw string → *paywatch.XPub

// parseXPub parses an xPub through the cache.
func parseXPub(s string) (*paywatch.XPub, error) {
	if x, ok := xpubCache.Load(s); ok {
		return x.(*paywatch.XPub), nil
	}
	x, err := paywatch.ParseXPub(s)
	if err != nil {
		return nil, err
	}
	xpubCache.Store(s, x)
	return x, nil
}

// validatedWallet is a WalletUpdate checked and normalised.
type validatedWallet struct {
	name      *string
	xpubs     map[paywatch.Family]*savedXPub // nil value removes
	addresses map[paywatch.Network][]string
}

// savedXPub is an xPub as the wallets table keeps it.
type savedXPub struct {
	canonical string
	// fingerprint identifies the addresses the key derives; see
	// xpubFingerprint.
	fingerprint string
}

// xpubFingerprint returns what a unique index compares to keep two wallets
// from deriving the same addresses: the family's first payment address. An
// account xpub (depth 3) and its external chain xpub (depth 4) are
// different strings with the same fingerprint, because they derive the
// same addresses.
func xpubFingerprint(x *paywatch.XPub, f paywatch.Family) (string, error) {
	// Address fails for an index BIP32 declares invalid (odds below
	// 2^-127); the next one identifies the chain just as well.
	var err error
	for i := uint32(paywatch.FirstPaymentIndex); i < paywatch.FirstPaymentIndex+4; i++ {
		var a string
		if a, err = x.Address(f, i); err == nil {
			return a, nil
		}
	}
	return "", err
}

// xpubInUse is the 409 of an xPub whose addresses another wallet derives.
func xpubInUse(f paywatch.Family) error {
	return conflict(fmt.Sprintf("xpubs.%s: this xPub is already used by another project", f))
}

// addressInUse is the 409 of a static address another wallet registered.
func addressInUse(n paywatch.Network, a string) error {
	return conflict(fmt.Sprintf("addresses.%s: %s is already registered by another project", n, a))
}

// Unique indexes of migration 00007 that map to a 409.
const (
	idxXPubEVMFingerprint  = "wallets_xpub_evm_fingerprint_idx"
	idxXPubTronFingerprint = "wallets_xpub_tron_fingerprint_idx"
	idxStaticAddress       = "static_addresses_network_address_idx"
)

func (u WalletUpdate) validate() (validatedWallet, error) {
	v := validatedWallet{name: u.Name, xpubs: map[paywatch.Family]*savedXPub{}, addresses: map[paywatch.Network][]string{}}
	if u.Name != nil && len(*u.Name) > paywatch.MaxProjectNameLength {
		return v, invalid("name must be at most 255 characters")
	}
	if u.Name != nil && paywatch.HasControlChars(*u.Name, false) {
		return v, invalid("name must not contain control characters")
	}
	for _, key := range sortedKeys(u.XPubs) {
		f, err := paywatch.ParseFamily(key)
		if err != nil {
			return v, unknownFamily(key)
		}
		if !f.Derived() {
			return v, noXPubFamily(f)
		}
		raw := u.XPubs[key]
		if raw == nil || *raw == "" {
			v.xpubs[f] = nil
			continue
		}
		x, err := walletXPub(f, *raw)
		if err != nil {
			return v, err
		}
		fp, err := xpubFingerprint(x, f)
		if err != nil {
			return v, invalid(fmt.Sprintf("xpubs.%s: %s", f, paywatch.ErrorMessage(err)))
		}
		v.xpubs[f] = &savedXPub{canonical: x.String(), fingerprint: fp}
	}
	for _, key := range sortedKeys(u.Addresses) {
		n := paywatch.Network(key)
		if !n.Valid() {
			return v, invalid(fmt.Sprintf("addresses: unknown network %q", key))
		}
		seen := map[string]bool{}
		for i, raw := range u.Addresses[key] {
			a, err := paywatch.NormalizeNetworkAddress(n, raw)
			if err != nil {
				return v, invalid(fmt.Sprintf("addresses.%s[%d]: %s", n, i, paywatch.ErrorMessage(err)))
			}
			if !seen[a] {
				seen[a] = true
				v.addresses[n] = append(v.addresses[n], a)
			}
		}
	}
	return v, nil
}

// walletXPub parses the xPub given for family f, with the message the
// wallet endpoint answers for a malformed or private key.
func walletXPub(f paywatch.Family, raw string) (*paywatch.XPub, error) {
	x, err := paywatch.ParseXPub(raw)
	if err != nil {
		return nil, invalid(fmt.Sprintf("xpubs.%s: %s", f, paywatch.ErrorMessage(err)))
	}
	return x, nil
}

// unknownFamily is the 400 of an address family that does not exist.
func unknownFamily(name string) error {
	return invalid(fmt.Sprintf("xpubs: unknown address family %q (use evm or tron)", name))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// PutWallet creates or changes the wallet of the project with the given
// slug. Creating a wallet counts against the owner's plan limit (403 when
// reached), checked under the owner's row lock; re-adding a wallet the
// project deleted counts the same and reattaches the old one, with its
// derivation counters and static addresses. An xPub or static address
// whose deposit addresses another project's wallet already has gives a
// 409, since a transfer to a shared address would credit both projects.
func (s *Store) PutWallet(ctx context.Context, slug string, u WalletUpdate) (*Wallet, *Project, error) {
	w, prj, _, err := s.PutWalletAlerted(ctx, slug, u, nil)
	return w, prj, err
}

// PutWalletAlerted is PutWallet that also queues the e-mail alert makes
// of the project (nil: none), in the transaction that changes the wallet,
// so the wallet never changes without its alert.
func (s *Store) PutWalletAlerted(ctx context.Context, slug string, u WalletUpdate, alert func(*Project) *Mail) (*Wallet, *Project, *Mail, error) {
	v, err := u.validate()
	if err != nil {
		return nil, nil, nil, err
	}
	var w *Wallet
	var prj *Project
	var queued *Mail
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		prj, err = scanProject(tx.QueryRow(ctx, projectSelect+` WHERE p.slug = $1 FOR UPDATE OF p`, slug))
		if noRows(err) {
			return notFound(paywatch.MsgProjectNotFound)
		}
		if err != nil {
			return err
		}
		var walletID int64
		err = tx.QueryRow(ctx, `SELECT id FROM wallets WHERE project_id = $1`, prj.ID).Scan(&walletID)
		if noRows(err) {
			if prj.Owner != nil {
				var n int64
				if err := tx.QueryRow(ctx, `SELECT id FROM accounts WHERE id = $1 FOR UPDATE`, prj.Owner.ID).Scan(&n); err != nil {
					return err
				}
				if n, err = countWallets(ctx, tx, prj.Owner.ID); err != nil {
					return err
				}
				if limit := prj.Owner.Limits().Wallets; limit != paywatch.Unlimited && n >= limit {
					return forbidden(paywatch.MsgPlanLimit(limit, "wallet"))
				}
			}
			name := ""
			if v.name != nil {
				name = *v.name
			}
			// A wallet the project deleted comes back with its derivation
			// counters and addresses (DeleteWallet), so no index is used
			// twice.
			err = tx.QueryRow(ctx, `
				UPDATE wallets SET project_id = deleted_from, deleted_from = NULL, deleted_at = NULL, name = $2, updated_at = $3
				WHERE deleted_from = $1 RETURNING id`, prj.ID, name, s.clock()).Scan(&walletID)
			if noRows(err) {
				err = tx.QueryRow(ctx, `INSERT INTO wallets (project_id, name) VALUES ($1, $2) RETURNING id`, prj.ID, name).Scan(&walletID)
			}
		}
		if err != nil {
			return fmt.Errorf("wallet: %w", err)
		}
		now := s.clock()
		if v.name != nil {
			if _, err := tx.Exec(ctx, `UPDATE wallets SET name = $2, updated_at = $3 WHERE id = $1`, walletID, *v.name, now); err != nil {
				return err
			}
		}
		for _, f := range paywatch.DerivedFamilies() {
			x, ok := v.xpubs[f]
			if !ok {
				continue
			}
			col, idx := "xpub_evm", idxXPubEVMFingerprint
			if f == paywatch.FamilyTron {
				col, idx = "xpub_tron", idxXPubTronFingerprint
			}
			var canonical, fingerprint *string
			if x != nil {
				canonical, fingerprint = &x.canonical, &x.fingerprint
			}
			// The fingerprint's unique index refuses a key whose addresses
			// another wallet derives, also when two projects save it at
			// once; a wallet's own row may keep its fingerprint, so saving
			// the same key again is idempotent.
			_, err := tx.Exec(ctx, `UPDATE wallets SET `+col+` = $2, `+col+`_fingerprint = $3, updated_at = $4 WHERE id = $1`,
				walletID, canonical, fingerprint, now)
			if uniqueViolation(err, idx) {
				return xpubInUse(f)
			}
			if err != nil {
				return err
			}
		}
		// Every address is claimed in address_owners first, in one global
		// order, so two registrations of overlapping lists wait for each
		// other instead of deadlocking; the claim refuses an address
		// another project registered or derived, also concurrently.
		for _, c := range ownerClaims(v.addresses) {
			if err := claimStaticAddress(ctx, tx, walletID, c.network, c.address); err != nil {
				return err
			}
		}
		for _, n := range sortedNetworks(v.addresses) {
			for _, a := range v.addresses[n] {
				if err := s.refuseWatchedAddress(ctx, tx, walletID, n, a); err != nil {
					return err
				}
				// The index on (network, address) still refuses a row that
				// another wallet holds without owning the address: a pair
				// that predates address_owners (see migration 00010).
				_, err := tx.Exec(ctx, `
					INSERT INTO static_addresses (wallet_id, network, address) VALUES ($1, $2, $3)
					ON CONFLICT (wallet_id, network, address) DO UPDATE SET removed_at = NULL
					WHERE static_addresses.removed_at IS NOT NULL`, walletID, n, a)
				if uniqueViolation(err, idxStaticAddress) {
					return addressInUse(n, a)
				}
				if err != nil {
					return err
				}
			}
		}
		if w, err = walletByProject(ctx, tx, prj.ID); err != nil {
			return err
		}
		if alert != nil {
			if m := alert(prj); m != nil {
				q, err := s.queueMail(ctx, tx, *m)
				if err != nil {
					return err
				}
				queued = &q
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	prj.HasWallet = true
	return w, prj, queued, nil
}

// refuseWatchedAddress refuses to register address a on network n as a
// new static address of wallet walletID while a payment still takes
// transfers on it there (in progress, or expired inside its late window):
// the wallet's own derived address of a per_payment or per_user payment,
// which a pool or dedicated payment on it would share (issue 24). An
// address the wallet already has on n passes, so a PUT that repeats the
// current list works while its pool payments are open. The project row is
// locked (PutWalletAlerted), and creations hold it shared, so no payment
// takes the address meanwhile.
func (s *Store) refuseWatchedAddress(ctx context.Context, tx pgx.Tx, walletID int64, n paywatch.Network, a string) error {
	var watched bool
	if err := tx.QueryRow(ctx, `
		SELECT NOT EXISTS (SELECT 1 FROM static_addresses s
		                   WHERE s.wallet_id = $4 AND s.network = $1 AND s.address = $2 AND s.removed_at IS NULL)
		   AND EXISTS (SELECT 1 FROM payments p WHERE `+watchedCondition("$3")+` AND p.address = $2)`,
		string(n), a, s.lateWindowStart(), walletID).Scan(&watched); err != nil {
		return fmt.Errorf("check watched address: %w", err)
	}
	if watched {
		return conflict(paywatch.MsgStaticAddressWatched(n, a))
	}
	return nil
}

// countWallets counts the wallets of an owner's projects, as the wallet
// plan limit counts them: a deleted wallet belongs to no project and is
// not counted.
func countWallets(ctx context.Context, q querier, ownerID int64) (int64, error) {
	var n int64
	if err := q.QueryRow(ctx, `
		SELECT count(*) FROM wallets w JOIN projects p ON p.id = w.project_id WHERE p.owner_id = $1`,
		ownerID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count wallets: %w", err)
	}
	return n, nil
}

// ownerClaim is one address of a registration, with the first network (by
// name) it is registered on, which a 409 names.
type ownerClaim struct {
	network paywatch.Network
	address string
}

// ownerClaims lists the distinct (family, address) pairs of a registration
// sorted by family and address: the order in which PutWallet claims them.
func ownerClaims(addresses map[paywatch.Network][]string) []ownerClaim {
	type key struct {
		family  paywatch.Family
		address string
	}
	seen := map[key]bool{}
	var out []ownerClaim
	for _, n := range sortedNetworks(addresses) {
		for _, a := range addresses[n] {
			k := key{n.Family(), a}
			if !seen[k] {
				seen[k] = true
				out = append(out, ownerClaim{network: n, address: a})
			}
		}
	}
	slices.SortStableFunc(out, func(x, y ownerClaim) int {
		if c := strings.Compare(string(x.network.Family()), string(y.network.Family())); c != 0 {
			return c
		}
		return strings.Compare(x.address, y.address)
	})
	return out
}

func sortedNetworks[V any](m map[paywatch.Network]V) []paywatch.Network {
	out := make([]paywatch.Network, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// querier is what both a pool and a transaction offer.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// walletByProject loads a project's wallet with its address counts, in one
// statement (creation reads it for every payment); nil without error when
// the project has none.
func walletByProject(ctx context.Context, q querier, projectID int64) (*Wallet, error) {
	w := &Wallet{ProjectID: projectID, XPubs: map[paywatch.Family]string{}, Addresses: map[paywatch.Network]int{}}
	var evm, tron *string
	var counts map[string]int
	err := q.QueryRow(ctx, `
		SELECT w.id, w.name, w.xpub_evm, w.xpub_tron,
		       COALESCE((SELECT jsonb_object_agg(s.network, s.n) FROM (
		           SELECT network, count(*) AS n FROM static_addresses
		           WHERE wallet_id = w.id AND removed_at IS NULL GROUP BY network) s), '{}')
		FROM wallets w WHERE w.project_id = $1`, projectID).
		Scan(&w.ID, &w.Name, &evm, &tron, &counts)
	if noRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load wallet: %w", err)
	}
	if evm != nil {
		w.XPubs[paywatch.FamilyEVM] = *evm
	}
	if tron != nil {
		w.XPubs[paywatch.FamilyTron] = *tron
	}
	for n, c := range counts {
		w.Addresses[paywatch.Network(n)] = c
	}
	return w, nil
}

// WalletOf returns a project's wallet, or nil when it has none.
func (s *Store) WalletOf(ctx context.Context, projectID int64) (*Wallet, error) {
	return walletByProject(ctx, s.pool, projectID)
}

// Offered reports whether the service offers network n.
func (s *Store) Offered(n paywatch.Network) bool {
	return s.offered == nil || slices.Contains(s.offered, n)
}

// AvailableNetworks returns the networks a project can take payments on, in
// API order: those the service offers for which the wallet has what the
// project's address mode needs (an xPub of the network's family for
// per_payment and per_user, static addresses for dedicated and pool).
func (s *Store) AvailableNetworks(mode paywatch.AddressMode, w *Wallet) []paywatch.NetworkInfo {
	var out []paywatch.NetworkInfo
	if w == nil {
		return out
	}
	for _, info := range paywatch.Networks() {
		if !s.Offered(info.Network) || !walletServes(mode, w, info.Network) {
			continue
		}
		out = append(out, info)
	}
	return out
}

// walletServes reports whether wallet w can give an address on network n in
// the given mode.
// A memo payment (an HD mode on a family without derivation) takes the
// wallet's first registered address.
func walletServes(mode paywatch.AddressMode, w *Wallet, n paywatch.Network) bool {
	if mode.UsesXPub() && n.Family().Derived() {
		return w.HasXPub(n.Family())
	}
	return w.Addresses[n] > 0
}
