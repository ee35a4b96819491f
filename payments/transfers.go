package payments

import (
	"context"
	"unicode/utf8"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
)

// MaxTransferNote is the longest note a handled mark takes, in characters.
const MaxTransferNote = 500

// Transfers lists a project's recorded token transfers, newest first, each
// with how it stands (matched to a payment, pending, unmatched, or below
// the dust minimum), and how many match f in all: where a merchant finds
// money no payment counted.
func (s *Service) Transfers(ctx context.Context, projectID int64, f store.TransferFilter) ([]store.ProjectTransfer, int, error) {
	return s.store.ProjectTransfers(ctx, projectID, f)
}

// Transfer returns one of a project's transfers: of transaction txHash on
// network n, at logIndex or, with logIndex nil, the transaction's first.
// A malformed hash is not found, as an unknown one is.
func (s *Service) Transfer(ctx context.Context, projectID int64, n paywatch.Network, txHash string, logIndex *uint32) (store.ProjectTransfer, error) {
	h, err := paywatch.NormalizeTxHash(n, txHash)
	if err != nil {
		return store.ProjectTransfer{}, paywatch.Errorf(paywatch.ENOTFOUND, paywatch.MsgTransferNotFound)
	}
	return s.store.ProjectTransfer(ctx, projectID, n, h, logIndex)
}

// MarkTransferHandled records that an unmatched transfer is settled (the
// money refunded, or credited to an order), by whom (an account's e-mail,
// or "api" for a call with the project's key), with a note of at most
// MaxTransferNote characters. A later mark becomes the current one, and
// the transfer's timeline keeps them all. Without logIndex it marks the
// transaction's first unmatched transfer. It refuses a transfer a payment
// holds or may still take.
func (s *Service) MarkTransferHandled(ctx context.Context, projectID int64, n paywatch.Network, txHash string, logIndex *uint32, by, note string) (store.ProjectTransfer, error) {
	if !utf8.ValidString(note) || utf8.RuneCountInString(note) > MaxTransferNote {
		return store.ProjectTransfer{}, paywatch.Errorf(paywatch.EINVALID, paywatch.MsgInvalidNote)
	}
	h, err := paywatch.NormalizeTxHash(n, txHash)
	if err != nil {
		return store.ProjectTransfer{}, paywatch.Errorf(paywatch.ENOTFOUND, paywatch.MsgTransferNotFound)
	}
	return s.store.MarkTransferHandled(ctx, projectID, n, h, logIndex, by, note)
}

// The bounds of a page of a transfer's timeline.
const (
	// DefaultTimelineLimit is how many steps a page holds unless asked.
	DefaultTimelineLimit = store.DefaultTimelineLimit
	// MaxTimelineLimit is the most steps one page holds.
	MaxTimelineLimit = store.MaxTimelineLimit
)

// TransferTimeline returns what happened to one of a project's
// transfers, oldest first: recorded, told as unmatched, and each mark of
// it as handled (who, when, the note); the page of at most limit steps
// from offset on, and how many there are in all.
func (s *Service) TransferTimeline(ctx context.Context, projectID int64, id store.TransferID, limit, offset int) ([]store.TransferEvent, int, error) {
	return s.store.TransferTimeline(ctx, projectID, id, limit, offset)
}

// TransferMarks returns every mark of a project's transfers ids, each
// transfer's oldest first: the history under a page of transfers.
func (s *Service) TransferMarks(ctx context.Context, projectID int64, ids []store.TransferID) (map[store.TransferID][]store.TransferMark, error) {
	return s.store.TransferMarks(ctx, projectID, ids)
}

// CountUnmatched returns how many of a project's transfers are unmatched
// and not yet marked handled: the count the dashboard shows beside its
// Unmatched funds page.
func (s *Service) CountUnmatched(ctx context.Context, projectID int64) (int, error) {
	return s.store.CountUnmatched(ctx, projectID)
}
