package domain

import (
	"fmt"
	"time"
)

// creditEvents lists the AI credits ledger's event types: a shop's monthly
// ledger (reserved, consumed, released) and its operator budget override.
func creditEvents() []EventSpec {
	return []EventSpec{
		{Name: "CreditsReserved", Version: 1, New: func() Event { return &CreditsReserved{} }},
		{Name: "CreditsConsumed", Version: 1, New: func() Event { return &CreditsConsumed{} }},
		{Name: "CreditsReleased", Version: 1, New: func() Event { return &CreditsReleased{} }},
		{Name: "CreditBudgetSet", Version: 1, New: func() Event { return &CreditBudgetSet{} }},
	}
}

// The kinds of image operation that spend AI credits.
const (
	CreditKindBackgroundRemoval = "background_removal"
	CreditKindUpscale           = "upscale"
	CreditKindLifestyleScene    = "lifestyle_scene"
)

// CreditKinds lists the operation kinds a reservation may carry.
func CreditKinds() []string {
	return []string{CreditKindBackgroundRemoval, CreditKindUpscale, CreditKindLifestyleScene}
}

// MaxCreditBudget bounds an operator's monthly override (and one
// reservation), far above any plan's budget.
const MaxCreditBudget = 10_000_000

// PlanAICredits is the monthly AI credit budget of each plan (issue 19,
// DESIGN.md §7). Each call returns a new map.
func PlanAICredits() map[Plan]int {
	return map[Plan]int{
		PlanStarter: 0, PlanGrowth: 100, PlanPro: 500, PlanProPlus: 2000,
		PlanAgency: 5000, PlanEnterprise: 20000,
	}
}

// CreditMonth is the billing month holding t: its UTC calendar month as
// "YYYY-MM".
func CreditMonth(t time.Time) string { return t.UTC().Format("2006-01") }

// CreditMonthStart parses a billing month "YYYY-MM" into its first instant
// (UTC).
func CreditMonthStart(month string) (time.Time, error) {
	t, err := time.Parse("2006-01", month)
	if err != nil {
		return time.Time{}, Invalid("month", "the month must be YYYY-MM")
	}
	return t.UTC(), nil
}

// CreditsResetAt is when the budget of the month holding t starts again:
// the next UTC calendar month's first instant.
func CreditsResetAt(t time.Time) time.Time {
	y, m, _ := t.UTC().Date()
	return time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
}

// CreditsStream is the ledger stream of a shop's billing month.
func CreditsStream(shopID, month string) string { return "credits-" + shopID + "-" + month }

// CreditBudgetStream is the stream of a shop's budget override.
func CreditBudgetStream(shopID string) string { return "creditbudget-" + shopID }

// CreditsReserved: credits were set aside for an accepted operation. Budget
// is the month's budget the reservation was decided against.
type CreditsReserved struct {
	ShopID      string    `json:"shop_id"`
	Month       string    `json:"month"`
	OperationID string    `json:"operation_id"`
	Kind        string    `json:"kind"`
	Credits     int       `json:"credits"`
	Budget      int       `json:"budget"`
	At          time.Time `json:"at"`
}

// EventType implements Event.
func (CreditsReserved) EventType() string { return "CreditsReserved" }

// CreditsConsumed: the operation succeeded; its reserved credits are spent.
type CreditsConsumed struct {
	ShopID      string    `json:"shop_id"`
	Month       string    `json:"month"`
	OperationID string    `json:"operation_id"`
	Kind        string    `json:"kind"`
	Credits     int       `json:"credits"`
	At          time.Time `json:"at"`
}

// EventType implements Event.
func (CreditsConsumed) EventType() string { return "CreditsConsumed" }

// CreditsReleased: the operation failed or was abandoned; its reserved
// credits are available again.
type CreditsReleased struct {
	ShopID      string    `json:"shop_id"`
	Month       string    `json:"month"`
	OperationID string    `json:"operation_id"`
	Kind        string    `json:"kind"`
	Credits     int       `json:"credits"`
	Reason      string    `json:"reason"`
	At          time.Time `json:"at"`
}

// EventType implements Event.
func (CreditsReleased) EventType() string { return "CreditsReleased" }

// CreditBudgetSet: an operator set a shop's monthly budget; Monthly nil
// returns the shop to its plan's budget.
type CreditBudgetSet struct {
	ShopID  string    `json:"shop_id"`
	Monthly *int      `json:"monthly"`
	At      time.Time `json:"at"`
}

// EventType implements Event.
func (CreditBudgetSet) EventType() string { return "CreditBudgetSet" }

// CreditBudget is the aggregate of a shop's budget override.
type CreditBudget struct {
	// Monthly is the operator's override; nil: the plan's budget.
	Monthly *int
}

// Apply folds an event.
func (b *CreditBudget) Apply(e Event) {
	if ev, ok := e.(*CreditBudgetSet); ok {
		b.Monthly = ev.Monthly
	}
}

// Budget is the monthly budget in force for a shop on plan.
func (b *CreditBudget) Budget(plan Plan) int {
	if b.Monthly != nil {
		return *b.Monthly
	}
	return PlanAICredits()[plan]
}

// Set decides an override (nil: back to the plan's): nil when it is the
// override in force, a validation error (field "monthly") outside
// 0..MaxCreditBudget.
func (b *CreditBudget) Set(shopID string, monthly *int, now time.Time) (*CreditBudgetSet, error) {
	if monthly != nil && (*monthly < 0 || *monthly > MaxCreditBudget) {
		return nil, Invalid("monthly", "the monthly budget must be from 0 to %d credits", MaxCreditBudget)
	}
	switch {
	case monthly == nil && b.Monthly == nil:
		return nil, nil
	case monthly != nil && b.Monthly != nil && *monthly == *b.Monthly:
		return nil, nil
	}
	var v *int
	if monthly != nil {
		n := *monthly
		v = &n
	}
	return &CreditBudgetSet{ShopID: shopID, Monthly: v, At: now.UTC()}, nil
}

// Credit reservation states.
const (
	CreditsOpen     = "reserved"
	CreditsSpent    = "consumed"
	CreditsReturned = "released"
)

// CreditReservation is one operation's reservation in a ledger.
type CreditReservation struct {
	Kind    string
	Credits int
	State   string // CreditsOpen, CreditsSpent or CreditsReturned
}

// CreditLedger is the aggregate of a shop's billing month: the credits
// used (consumed) and reserved (open reservations), and each operation's
// reservation.
type CreditLedger struct {
	Used, Reserved int
	Operations     map[string]*CreditReservation
}

// Apply folds an event.
func (l *CreditLedger) Apply(e Event) {
	if l.Operations == nil {
		l.Operations = map[string]*CreditReservation{}
	}
	switch ev := e.(type) {
	case *CreditsReserved:
		l.Operations[ev.OperationID] = &CreditReservation{Kind: ev.Kind, Credits: ev.Credits, State: CreditsOpen}
		l.Reserved += ev.Credits
	case *CreditsConsumed:
		if op := l.Operations[ev.OperationID]; op != nil && op.State == CreditsOpen {
			op.State = CreditsSpent
			l.Reserved -= ev.Credits
			l.Used += ev.Credits
		}
	case *CreditsReleased:
		if op := l.Operations[ev.OperationID]; op != nil && op.State == CreditsOpen {
			op.State = CreditsReturned
			l.Reserved -= ev.Credits
		}
	}
}

// Remaining is what budget leaves after the used and reserved credits,
// never below zero.
func (l *CreditLedger) Remaining(budget int) int {
	return max(0, budget-l.Used-l.Reserved)
}

// CreditShortfall is the cause of a CodeCreditsExhausted error: what is left
// of the month's budget and when it starts again.
type CreditShortfall struct {
	Remaining int
	ResetsAt  time.Time
}

func (s *CreditShortfall) Error() string {
	return fmt.Sprintf("%d credits remaining until %s", s.Remaining, s.ResetsAt.Format(time.RFC3339))
}

// CreditsExhausted reports a reservation the month's budget cannot take.
// Its cause is a *CreditShortfall (use errors.As).
func CreditsExhausted(remaining int, resetsAt time.Time) *Error {
	return &Error{Code: CodeCreditsExhausted, Message: "the shop's AI credits for this month are used up",
		Err: &CreditShortfall{Remaining: remaining, ResetsAt: resetsAt}}
}

// Reserve decides a reservation of credits for an operation of kind in
// the month holding now: nil when the operation holds a reservation
// already (whatever its state: an operation is charged once); a validation
// error for an empty operation id, an unknown kind or credits outside
// 1..MaxCreditBudget; CreditsExhausted when budget minus the used and
// reserved credits is less than credits.
func (l *CreditLedger) Reserve(shopID, operationID, kind string, credits, budget int, now time.Time) (*CreditsReserved, error) {
	if operationID == "" || len(operationID) > 128 {
		return nil, Invalid("operation_id", "an operation id of 1 to 128 characters is required")
	}
	if !validCreditKind(kind) {
		return nil, Invalid("kind", "unknown operation kind %q (one of background_removal, upscale, lifestyle_scene)", kind)
	}
	if credits < 1 || credits > MaxCreditBudget {
		return nil, Invalid("credits", "credits must be from 1 to %d", MaxCreditBudget)
	}
	if _, ok := l.Operations[operationID]; ok {
		return nil, nil
	}
	if left := l.Remaining(budget); credits > left {
		return nil, CreditsExhausted(left, CreditsResetAt(now))
	}
	return &CreditsReserved{ShopID: shopID, Month: CreditMonth(now), OperationID: operationID, Kind: kind,
		Credits: credits, Budget: budget, At: now.UTC()}, nil
}

// Consume decides spending an operation's reservation: nil when it was
// consumed already; not found without a reservation; a conflict when it
// was released.
func (l *CreditLedger) Consume(shopID, month, operationID string, now time.Time) (*CreditsConsumed, error) {
	op, err := l.open(operationID, CreditsSpent)
	if op == nil || err != nil {
		return nil, err
	}
	return &CreditsConsumed{ShopID: shopID, Month: month, OperationID: operationID, Kind: op.Kind,
		Credits: op.Credits, At: now.UTC()}, nil
}

// Release decides returning an operation's reservation: nil when it was
// released already; not found without a reservation; a conflict when it
// was consumed.
func (l *CreditLedger) Release(shopID, month, operationID, reason string, now time.Time) (*CreditsReleased, error) {
	if len(reason) > 200 {
		return nil, Invalid("reason", "the reason must be at most 200 characters")
	}
	op, err := l.open(operationID, CreditsReturned)
	if op == nil || err != nil {
		return nil, err
	}
	return &CreditsReleased{ShopID: shopID, Month: month, OperationID: operationID, Kind: op.Kind,
		Credits: op.Credits, Reason: reason, At: now.UTC()}, nil
}

// open finds the open reservation of operationID: nil, nil when it already
// reached target (a repeat).
func (l *CreditLedger) open(operationID, target string) (*CreditReservation, error) {
	op := l.Operations[operationID]
	switch {
	case op == nil:
		return nil, NotFound("credit reservation")
	case op.State == target:
		return nil, nil
	case op.State != CreditsOpen:
		return nil, Conflict("the credit reservation is already %s", op.State)
	}
	return op, nil
}

func validCreditKind(kind string) bool {
	for _, k := range CreditKinds() {
		if k == kind {
			return true
		}
	}
	return false
}

// CreditThresholdAnomalies are the anomalies a month's consumption calls
// for: P2 ai_credits_low from 80 % of budget, P1 ai_credits_exhausted from
// 100 %. Their dedupe key and cause are "credits:<month>:80" and
// "credits:<month>:100", so each is raised at most once per shop and month
// however often it is asked for. A zero budget raises nothing: nothing can
// be consumed against it.
func CreditThresholdAnomalies(shopID, month string, used, budget int) []AnomalyDraft {
	if budget <= 0 {
		return nil
	}
	var out []AnomalyDraft
	res := []AnomalyResource{{Type: "shop", ID: shopID}}
	if used*100 >= budget*80 {
		key := "credits:" + month + ":80"
		out = append(out, AnomalyDraft{ShopID: shopID, Severity: SeverityP2, Kind: AnomalyAICreditsLow,
			Title:     "AI credits at 80 % of the monthly budget",
			Summary:   fmt.Sprintf("%d of %d AI credits used in %s.", used, budget, month),
			DedupeKey: key, Cause: key, Resources: res})
	}
	if used >= budget {
		key := "credits:" + month + ":100"
		out = append(out, AnomalyDraft{ShopID: shopID, Severity: SeverityP1, Kind: AnomalyAICreditsExhausted,
			Title:     "AI credits used up for the month",
			Summary:   fmt.Sprintf("%d of %d AI credits used in %s; image operations are refused until the next month.", used, budget, month),
			DedupeKey: key, Cause: key, Resources: res})
	}
	return out
}
