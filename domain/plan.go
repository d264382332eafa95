package domain

// Plan is a shop's subscription tier.
type Plan string

// The plans, lowest first.
const (
	PlanStarter    Plan = "starter"
	PlanGrowth     Plan = "growth"
	PlanPro        Plan = "pro"
	PlanProPlus    Plan = "pro_plus"
	PlanAgency     Plan = "agency"
	PlanEnterprise Plan = "enterprise"
)

var planRank = map[Plan]int{
	PlanStarter: 1, PlanGrowth: 2, PlanPro: 3, PlanProPlus: 4, PlanAgency: 5, PlanEnterprise: 6,
}

// ParsePlan validates a plan name.
func ParsePlan(s string) (Plan, error) {
	p := Plan(s)
	if _, ok := planRank[p]; !ok {
		return "", Invalid("plan", "unknown plan %q (one of starter, growth, pro, pro_plus, agency, enterprise)", s)
	}
	return p, nil
}

// AtLeast reports whether p is the same tier as min or higher.
func (p Plan) AtLeast(min Plan) bool { return planRank[p] >= planRank[min] && planRank[p] > 0 }

// HasAPIAccess reports whether the plan includes the admin API and its keys
// (agency and enterprise).
func (p Plan) HasAPIAccess() bool { return p == PlanAgency || p == PlanEnterprise }

// HasMasterTokens reports whether the plan includes programmatic key
// management with a master token (enterprise).
func (p Plan) HasMasterTokens() bool { return p == PlanEnterprise }
