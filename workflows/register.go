package workflows

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Register registers the payment and webhook workflows and their
// activities on a worker under their explicit names, so that renaming a Go
// function never breaks a running workflow. a is usually an
// *activities.Activities.
func Register(r worker.Registry, a Activities) {
	r.RegisterWorkflowWithOptions(PaymentWorkflow, workflow.RegisterOptions{Name: PaymentWorkflowName})
	r.RegisterWorkflowWithOptions(WebhookWorkflow, workflow.RegisterOptions{Name: WebhookWorkflowName})
	r.RegisterWorkflowWithOptions(MailWorkflow, workflow.RegisterOptions{Name: MailWorkflowName})
	r.RegisterWorkflowWithOptions(ChatWorkflow, workflow.RegisterOptions{Name: ChatWorkflowName})
	r.RegisterWorkflowWithOptions(TelegramPollerWorkflow, workflow.RegisterOptions{Name: TelegramPollerWorkflowName})
	for name, fn := range map[string]any{
		ActivitySavePaymentState:     a.SavePaymentState,
		ActivitySelectNetwork:        a.SelectNetwork,
		ActivityReleaseAddress:       a.ReleaseAddress,
		ActivityLoadAssignment:       a.LoadAssignment,
		ActivityCheckTransfers:       a.CheckTransfers,
		ActivityFinalCheck:           a.FinalCheck,
		ActivityVerifyTxHash:         a.VerifyTxHash,
		ActivityClaimTxHash:          a.ClaimTxHash,
		ActivityQueueWebhook:         a.QueueWebhook,
		ActivitySendWebhook:          a.SendWebhook,
		ActivityRecordWebhookAttempt: a.RecordWebhookAttempt,
		ActivityDeliverWebhook:       a.DeliverWebhook,
		ActivitySendMail:             a.SendMail,
		ActivitySendChat:             a.SendChat,
		ActivityFailChat:             a.FailChat,
		ActivityPollTelegram:         a.PollTelegram,
	} {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}

// Custom search attributes of payment workflows, all Keyword, so operators
// can filter payments in the Temporal Web UI (for example
// PaymentStatus = "confirming" AND Network = "TRC20").
var (
	// SearchAttrPaymentStatus is the payment's current status.
	SearchAttrPaymentStatus = temporal.NewSearchAttributeKeyKeyword("PaymentStatus")
	// SearchAttrProjectSlug is the slug of the payment's project.
	SearchAttrProjectSlug = temporal.NewSearchAttributeKeyKeyword("ProjectSlug")
	// SearchAttrNetwork is the selected network ("" until selected).
	SearchAttrNetwork = temporal.NewSearchAttributeKeyKeyword("Network")
	// SearchAttrToken is the selected token ("" until selected).
	SearchAttrToken = temporal.NewSearchAttributeKeyKeyword("Token")
	// SearchAttrExternalRef is the merchant's customer identifier.
	SearchAttrExternalRef = temporal.NewSearchAttributeKeyKeyword("ExternalRef")
	// SearchAttrExternalOrderID is the merchant's order identifier.
	SearchAttrExternalOrderID = temporal.NewSearchAttributeKeyKeyword("ExternalOrderId")
)

// SearchAttributes lists the custom search attributes EnsureSearchAttributes
// registers, with their types.
var SearchAttributes = map[string]enumspb.IndexedValueType{
	SearchAttrPaymentStatus.GetName():   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	SearchAttrProjectSlug.GetName():     enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	SearchAttrNetwork.GetName():         enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	SearchAttrToken.GetName():           enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	SearchAttrExternalRef.GetName():     enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	SearchAttrExternalOrderID.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD,
}

// EnsureSearchAttributes registers SearchAttributes in namespace, leaving
// alone those already registered (so every process may call it at start),
// and returns once the server accepts them, or fails after
// searchAttributesTimeout.
// Call it before starting a worker or answering requests: a Temporal
// service that still has the namespace without them fails every payment
// workflow task with BadSearchAttributes until its cache catches up.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	ops := c.OperatorService()
	have, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range SearchAttributes {
		if _, ok := have.GetCustomAttributes()[name]; !ok {
			missing[name] = typ
		}
	}
	if len(missing) == 0 {
		return waitSearchAttributes(ctx, c, namespace, time.Time{})
	}
	_, err = ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("add search attributes: %w", err)
	}
	return waitSearchAttributes(ctx, c, namespace, time.Now())
}

// searchAttributesTimeout bounds how long EnsureSearchAttributes waits for
// the server to accept the search attributes.
const searchAttributesTimeout = 30 * time.Second

// namespaceCacheRefresh is Temporal's default
// system.namespaceCacheRefreshInterval: every service re-reads a
// namespace, and so its search attributes, at most this long after a
// change, unless it reads them through on every use
// (system.forceSearchAttributesCacheRefreshOnRead, as the embedded server
// and Temporal's dev server do).
const namespaceCacheRefresh = 2 * time.Second

// waitSearchAttributes polls until the namespace lists every key of
// SearchAttributes and a visibility query naming them all is accepted,
// which is when the frontend maps them. When added is set (they were
// registered then), it also waits until one namespace cache refresh has
// passed since, because the history service, which checks the attributes
// a workflow upserts, refreshes on its own timer and no client call
// observes it.
func waitSearchAttributes(ctx context.Context, c client.Client, namespace string, added time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, searchAttributesTimeout)
	defer cancel()
	names := slices.Sorted(maps.Keys(SearchAttributes))
	terms := make([]string, len(names))
	for i, n := range names {
		terms[i] = n + " = ''"
	}
	query := strings.Join(terms, " AND ")
	var last error
	for {
		last = searchAttributesVisible(ctx, c, namespace, names, query)
		if last == nil && (added.IsZero() || time.Since(added) >= namespaceCacheRefresh) {
			return nil
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = ctx.Err()
			}
			return fmt.Errorf("search attributes %s of namespace %s not usable after %s: %w",
				strings.Join(names, ", "), namespace, searchAttributesTimeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// searchAttributesVisible reports why the search attributes are not usable
// yet, or nil once they are.
func searchAttributesVisible(ctx context.Context, c client.Client, namespace string, names []string, query string) error {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	for _, n := range names {
		if have.GetCustomAttributes()[n] != SearchAttributes[n] {
			return fmt.Errorf("search attribute %s is not listed yet", n)
		}
	}
	if _, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: query}); err != nil {
		return fmt.Errorf("visibility query on the search attributes: %w", err)
	}
	return nil
}
