package paywatch

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPlanLimits(t *testing.T) {
	assert.Equal(t, Limits{1, 1, 3, 500, 50, 50}, PlanLimits(PlanFree))
	assert.Equal(t, Limits{3, 3, 25, 5000, 1000, 1000}, PlanLimits(PlanPro))
	calls := int64(100000)
	zero := int64(0)
	l := EffectiveLimits(PlanFree, LimitOverrides{APICallsPerDay: &calls, Projects: &zero})
	assert.Equal(t, int64(100000), l.APICallsPerDay)
	assert.Equal(t, int64(0), l.Projects, "an override of 0 is honoured, not mistaken for unset")
	assert.Equal(t, int64(50), l.WebhooksPerDay)
	_, err := ParsePlan("enterprise")
	assert.EqualError(t, err, "plan must be free or pro")
}
