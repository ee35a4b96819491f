package paywatch

// Plan is an account's subscription plan; it sets default limits.
type Plan string

// The plans of interface.md's "Plan limits" table.
const (
	PlanFree Plan = "free"
	PlanPro  Plan = "pro"
)

// ParsePlan validates a plan name.
func ParsePlan(s string) (Plan, error) {
	switch p := Plan(s); p {
	case PlanFree, PlanPro:
		return p, nil
	}
	return "", Errorf(EINVALID, "plan must be free or pro")
}

// Limits are an account's plan limits; counters are per account and shared
// across the account's projects.
type Limits struct {
	Projects                int64 `json:"projects"`
	Wallets                 int64 `json:"wallets"`
	PaymentLinks            int64 `json:"payment_links"`
	APICallsPerDay          int64 `json:"api_calls_per_day"`
	WebhooksPerDay          int64 `json:"webhooks_per_day"`
	ChatNotificationsPerDay int64 `json:"chat_notifications_per_day"`
}

// Unlimited is the override value that lifts a limit altogether.
const Unlimited = -1

// LimitOverrides are an operator's per-account replacements of plan limits;
// a nil field keeps the plan's value.
type LimitOverrides struct {
	Projects                *int64 `json:"projects,omitempty"`
	Wallets                 *int64 `json:"wallets,omitempty"`
	PaymentLinks            *int64 `json:"payment_links,omitempty"`
	APICallsPerDay          *int64 `json:"api_calls_per_day,omitempty"`
	WebhooksPerDay          *int64 `json:"webhooks_per_day,omitempty"`
	ChatNotificationsPerDay *int64 `json:"chat_notifications_per_day,omitempty"`
}

// PlanLimits returns the default limits of a plan (unknown plans get free's).
func PlanLimits(p Plan) Limits {
	if p == PlanPro {
		return Limits{Projects: 3, Wallets: 3, PaymentLinks: 25, APICallsPerDay: 5000, WebhooksPerDay: 1000, ChatNotificationsPerDay: 1000}
	}
	return Limits{Projects: 1, Wallets: 1, PaymentLinks: 3, APICallsPerDay: 500, WebhooksPerDay: 50, ChatNotificationsPerDay: 50}
}

// EffectiveLimits applies an account's overrides to its plan's limits.
func EffectiveLimits(p Plan, o LimitOverrides) Limits {
	l := PlanLimits(p)
	apply := func(dst *int64, v *int64) {
		if v != nil {
			*dst = *v
		}
	}
	apply(&l.Projects, o.Projects)
	apply(&l.Wallets, o.Wallets)
	apply(&l.PaymentLinks, o.PaymentLinks)
	apply(&l.APICallsPerDay, o.APICallsPerDay)
	apply(&l.WebhooksPerDay, o.WebhooksPerDay)
	apply(&l.ChatNotificationsPerDay, o.ChatNotificationsPerDay)
	return l
}
