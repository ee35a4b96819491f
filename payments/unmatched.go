package payments

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/paywatch/paywatch"
	"github.com/paywatch/paywatch/store"
	"github.com/paywatch/paywatch/telegram"
)

// unmatchedEventNamespace derives the stable event_id of a transfer's
// transfer.unmatched event from the transfer's key.
var unmatchedEventNamespace = uuid.MustParse("b7d2c0a4-5e61-4c8f-9d3a-2f6e8a1c4b90")

// UnmatchedEventID returns the event_id of the transfer.unmatched event of
// the transfer at logIndex of transaction txHash on network n.
func UnmatchedEventID(n paywatch.Network, txHash string, logIndex uint32) string {
	return uuid.NewSHA1(unmatchedEventNamespace, []byte(string(n)+"/"+txHash+"/"+strconv.FormatUint(uint64(logIndex), 10))).String()
}

// UnmatchedPayload is the body of a transfer.unmatched webhook.
type UnmatchedPayload struct {
	Event         string  `json:"event"`
	EventID       string  `json:"event_id"`
	Network       string  `json:"network"`
	Token         string  `json:"token"`
	TxHash        string  `json:"tx_hash"`
	LogIndex      uint32  `json:"log_index"`
	BlockNumber   uint64  `json:"block_number"`
	From          string  `json:"from"`
	To            string  `json:"to"`
	Amount        string  `json:"amount"`
	Confirmations int     `json:"confirmations"`
	Reason        string  `json:"reason"`
	RelatedID     *string `json:"related_payment_id"`
	SeenAt        string  `json:"seen_at"`
	Timestamp     string  `json:"timestamp"`
}

// reasonWords says why a transfer is unmatched, for people.
var reasonWords = map[string]string{
	store.ReasonNoPayment:      "no payment was open on this address",
	store.ReasonOtherToken:     "the payment on this address was for the other token",
	store.ReasonOtherNetwork:   "the payment on this address was on another network",
	store.ReasonAfterPaid:      "it arrived after the payment was paid",
	store.ReasonAfterCancelled: "it arrived after the payment was cancelled",
	store.ReasonAfterExpired:   "it arrived after the payment expired and its late window closed",
	store.ReasonNotTaken:       "no open payment on this address matched it",
	store.ReasonNoMemo:         "it carried no payment's memo (reference) on an address memo payments share",
}

// ReasonWords returns why a transfer is unmatched, in words.
func ReasonWords(reason string) string {
	if w, ok := reasonWords[reason]; ok {
		return w
	}
	return reason
}

// unmatchedBatch bounds the transfers one pass tells, and unmatchedPass
// its time.
const (
	unmatchedBatch = 200
	unmatchedPass  = 30 * time.Second
)

// Unmatched tells the unmatched transfers not told yet, each once: a
// transfer.unmatched event in the project's event log (sent as a webhook
// when the project opted in) and a chat message when chat notifications
// are on and the project has a chat. Several replicas may run it: the
// store tells each transfer under its row lock. The webhook and chat
// passes of the reconciler start the deliveries. It returns how many it
// told.
func (r *Reconciler) Unmatched(ctx context.Context) (int, error) {
	// A pass of its own length, so that a long first pass after an upgrade
	// does not hold up the webhook, mail and chat passes for long.
	ctx, cancel := context.WithTimeout(ctx, unmatchedPass)
	defer cancel()
	ts, err := r.Store.DueUnmatched(ctx, unmatchedBatch)
	if err != nil {
		return 0, err
	}
	told := 0
	for _, t := range ts {
		n, err := r.notice(t)
		if err == nil {
			var how store.UnmatchedTold
			var ok bool
			if how, ok, err = r.Store.TellUnmatched(ctx, t, n); err == nil && ok {
				told++
				r.logger().Info("unmatched funds", "network", t.Network, "txHash", t.TxHash, "logIndex", t.LogIndex,
					"amount", t.Amount.String(), "token", t.Token, "reason", t.Reason, "webhook", how.Webhook, "chat", how.Chat)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return told, err
			}
			// One transfer that cannot be told must not hold up the others.
			r.logger().Warn("telling an unmatched transfer failed; tried again next pass", "network", t.Network,
				"txHash", t.TxHash, "logIndex", t.LogIndex, "error", err)
		}
	}
	return told, nil
}

// notice writes what telling t says: the payload and the chat text.
func (r *Reconciler) notice(t store.ProjectTransfer) (store.UnmatchedNotice, error) {
	id := UnmatchedEventID(t.Network, t.TxHash, t.LogIndex)
	p := UnmatchedPayload{
		Event: string(store.EventTransferUnmatched), EventID: id, Network: string(t.Network), Token: string(t.Token),
		TxHash: t.TxHash, LogIndex: t.LogIndex, BlockNumber: t.BlockNumber, From: t.From, To: t.To,
		Amount: t.Amount.String(), Confirmations: t.Confirmations, Reason: t.Reason,
		SeenAt: t.SeenAt.UTC().Format(time.RFC3339Nano), Timestamp: time.Now().UTC().Format(time.RFC3339Nano),
	}
	if t.RelatedPaymentID != "" {
		p.RelatedID = &t.RelatedPaymentID
	}
	body, err := json.Marshal(p)
	if err != nil {
		return store.UnmatchedNotice{}, err
	}
	n := store.UnmatchedNotice{EventID: id, Payload: body}
	if r.ChatOn {
		n.ChatText = telegram.Text(telegram.Notification{
			Project: t.ProjectName, Event: string(store.EventTransferUnmatched), Amount: t.Amount.String(),
			Token: string(t.Token), Network: string(t.Network), To: t.To, Reason: ReasonWords(t.Reason),
			PaymentID: t.RelatedPaymentID, TxHash: t.TxHash, ExplorerTxURL: paywatch.ExplorerTxURL(t.Network, t.TxHash),
		})
	}
	return n, nil
}
