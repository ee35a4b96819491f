package workflows

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Register registers the payment workflow and its activities on a worker
// under their explicit names, so that renaming a Go function never breaks a
// running workflow. a is usually an *activities.Activities.
func Register(r worker.Registry, a Activities) {
	r.RegisterWorkflowWithOptions(PaymentWorkflow, workflow.RegisterOptions{Name: PaymentWorkflowName})
	for name, fn := range map[string]any{
		ActivitySavePaymentState: a.SavePaymentState,
		ActivitySelectNetwork:    a.SelectNetwork,
		ActivityReleaseAddress:   a.ReleaseAddress,
		ActivityCheckTransfers:   a.CheckTransfers,
		ActivityFinalCheck:       a.FinalCheck,
		ActivityVerifyTxHash:     a.VerifyTxHash,
		ActivityClaimTxHash:      a.ClaimTxHash,
		ActivityQueueWebhook:     a.QueueWebhook,
		ActivityDeliverWebhook:   a.DeliverWebhook,
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

// EnsureSearchAttributes registers SearchAttributes in namespace; attributes
// that are already registered are left alone, so every process may call it
// at start.
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
		return nil
	}
	_, err = ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("add search attributes: %w", err)
	}
	return nil
}
