package workflows

import (
	"context"
	"errors"
	"fmt"
	"go.temporal.io/sdk/converter"
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
	"google.golang.org/grpc/codes"
)

// Register registers the payment and webhook workflows and their
// activities on a worker under their explicit names, so that renaming a Go
// function never breaks a running workflow. a is usually an
// *activities.Activities.
func Register(r worker.Registry, a Activities, opts ...RegisterOption) {
	var o registerOptions
	for _, opt := range opts {
		opt(&o)
	}
	dc := o.dataConverter
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	for _, name := range []string{PaymentWorkflowName, LeanPaymentWorkflowName} {
		r.RegisterWorkflowWithOptions(paymentWorkflowWith(dc), workflow.RegisterOptions{Name: name})
	}
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
//
// A managed namespace (Temporal Cloud) refuses AddSearchAttributes; one
// of them registered with another type cannot be changed in place. Then it
// returns one error naming each attribute to add, rename or remove, with
// the tcld and temporal commands that do it.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	ops := c.OperatorService()
	have, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return listRefused(namespace, err)
	}
	p := searchAttributeProblem{namespace: namespace, wrong: map[string]enumspb.IndexedValueType{}}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range SearchAttributes {
		switch got, ok := have.GetCustomAttributes()[name]; {
		case !ok:
			missing[name] = typ
		case got != typ:
			p.wrong[name] = got
		}
	}
	var added time.Time
	if len(missing) > 0 {
		_, err = ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
			Namespace:        namespace,
			SearchAttributes: missing,
		})
		var exists *serviceerror.AlreadyExists
		if err != nil && !errors.As(err, &exists) {
			p.missing, p.refused = slices.Sorted(maps.Keys(missing)), err
		}
		added = time.Now()
	}
	if len(p.missing) > 0 || len(p.wrong) > 0 {
		return p
	}
	return waitSearchAttributes(ctx, c, namespace, added)
}

// searchAttributeProblem is why a namespace cannot have paywatch's search
// attributes without an operator: those missing that the server refused
// to add, those registered with another type, or a refused listing.
type searchAttributeProblem struct {
	namespace string
	// missing are the names of SearchAttributes the namespace lacks, sorted.
	missing []string
	// refused is the server's answer to adding them.
	refused error
	// wrong maps a name of SearchAttributes to the other type it has.
	wrong map[string]enumspb.IndexedValueType
	// listRefused is the server's answer to listing them; then missing
	// holds every name, since none could be checked.
	listRefused error
}

// Error is the one start-up message: every attribute, what is wrong with
// it, and the commands to run on Temporal Cloud (tcld; a managed namespace
// can add and rename search attributes, not remove them) and on a
// self-hosted server (the temporal CLI).
func (p searchAttributeProblem) Error() string {
	var b strings.Builder
	wrong := slices.Sorted(maps.Keys(p.wrong))
	add := slices.Sorted(slices.Values(append(slices.Clone(p.missing), wrong...)))
	if p.listRefused != nil {
		fmt.Fprintf(&b, "Temporal refused to list the search attributes of namespace %s (%s), so paywatch cannot check them: "+
			"check that the API key or certificate may use the namespace. paywatch needs:\n", p.namespace, grpcStatus(p.listRefused))
	} else {
		fmt.Fprintf(&b, "namespace %s does not have the search attributes paywatch needs:\n", p.namespace)
	}
	for _, name := range add {
		switch got, ok := p.wrong[name]; {
		case ok:
			fmt.Fprintf(&b, "  %s is %s, and must be %s: a search attribute's type cannot change, so rename it (Temporal Cloud) or remove it\n", name, got, SearchAttributes[name])
		case p.listRefused != nil:
			fmt.Fprintf(&b, "  %s (%s)\n", name, SearchAttributes[name])
		default:
			fmt.Fprintf(&b, "  %s (%s) is missing\n", name, SearchAttributes[name])
		}
	}
	switch {
	case p.refused != nil:
		fmt.Fprintf(&b, "Temporal refused to add them (%s). Run these, then start paywatch again. On Temporal Cloud:\n", grpcStatus(p.refused))
	case p.listRefused != nil:
		b.WriteString("Where they are missing, run these (naming only those), then start paywatch again. On Temporal Cloud:\n")
	default:
		b.WriteString("Run these, then start paywatch again. On Temporal Cloud:\n")
	}
	for _, name := range wrong {
		fmt.Fprintf(&b, "  tcld namespace search-attributes rename --namespace %s --existing-name %s --new-name %s%s\n", p.namespace, name, name, p.wrong[name])
	}
	fmt.Fprintf(&b, "  tcld namespace search-attributes add --namespace %s", p.namespace)
	for _, name := range add {
		fmt.Fprintf(&b, " --search-attribute \"%s=%s\"", name, SearchAttributes[name])
	}
	b.WriteString("\nOn a self-hosted server:\n")
	if len(wrong) > 0 {
		fmt.Fprintf(&b, "  temporal operator search-attribute remove --namespace %s", p.namespace)
		for _, name := range wrong {
			fmt.Fprintf(&b, " --name %s", name)
		}
		b.WriteString(" --yes\n")
	}
	fmt.Fprintf(&b, "  temporal operator search-attribute create --namespace %s", p.namespace)
	for _, name := range add {
		fmt.Fprintf(&b, " --name %s --type %s", name, SearchAttributes[name])
	}
	return b.String()
}

// Unwrap is the server's refusal.
func (p searchAttributeProblem) Unwrap() error {
	if p.listRefused != nil {
		return p.listRefused
	}
	return p.refused
}

// listRefused explains a failed ListSearchAttributes: a refusal names
// every search attribute, since paywatch cannot tell which are missing.
func listRefused(namespace string, err error) error {
	var notFound *serviceerror.NamespaceNotFound
	switch serviceerror.ToStatus(err).Code() {
	case codes.PermissionDenied, codes.Unauthenticated, codes.Unimplemented:
		return searchAttributeProblem{namespace: namespace, missing: slices.Sorted(maps.Keys(SearchAttributes)), listRefused: err}
	}
	if errors.As(err, &notFound) {
		return fmt.Errorf("namespace %s does not exist on this Temporal server (TEMPORAL_NAMESPACE): %w", namespace, err)
	}
	return fmt.Errorf("list the search attributes of namespace %s: %w", namespace, err)
}

// grpcStatus is an error of the Temporal API as "Code: message".
func grpcStatus(err error) string {
	st := serviceerror.ToStatus(err)
	return fmt.Sprintf("%s: %s", st.Code(), st.Message())
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
