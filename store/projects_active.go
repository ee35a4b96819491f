package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/paywatch/paywatch"
)

// setActiveBy records who turns a project off, and refuses the owner
// turning on a project the operator turned off.
func setActiveBy(ctx context.Context, tx pgx.Tx, id int64, active, byOwner bool) error {
	if active && byOwner {
		var by *string
		if err := tx.QueryRow(ctx, `SELECT deactivated_by FROM projects WHERE id = $1`, id).Scan(&by); err != nil {
			return fmt.Errorf("read deactivated_by: %w", err)
		}
		if by != nil && *by == "operator" {
			return forbidden(paywatch.MsgOperatorDeactivated)
		}
	}
	var by *string
	if !active {
		who := "operator"
		if byOwner {
			who = "owner"
		}
		by = &who
	}
	// An owner turning off a project the operator turned off leaves the
	// operator's mark, or the owner could then turn it on.
	if _, err := tx.Exec(ctx, `
		UPDATE projects SET deactivated_by = CASE WHEN NOT active AND deactivated_by = 'operator' AND $3 THEN 'operator' ELSE $2 END
		WHERE id = $1`, id, by, byOwner); err != nil {
		return fmt.Errorf("record deactivated_by: %w", err)
	}
	return nil
}
