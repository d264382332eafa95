package customers

import (
	"database/sql"
	"encoding/json"
	"sort"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections"
)

// The batch fold: the events of one store transaction are folded in
// memory into the rows they change (each loaded once, by key) and each
// changed row is written once (store.go). fold is pure: rows in, events
// in, changed rows out.

// customer is a row of customers.
type customer struct {
	ID, Shop, ExternalID                 string
	Email, FirstName, LastName, Phone    sql.NullString
	AcceptsMarketing                     bool
	State, Currency                      string
	OrdersCount, TotalSpent, LastOrderAt int64
	Tags, PlatformTags                   string
	PlatformCreatedAt, CreatedAt         int64
	UpdatedAt                            int64
	Redacted                             bool
	Version                              int64
	ProfileOrdersCount, ProfileSpent     int64
	Stage                                string
}

// order is a row of customer_orders.
type order struct {
	ID, Shop, Customer string
	Total, Refunded    int64
	Cancelled          bool
	OrderedAt, Version int64
}

// refund is a row of customer_refunds.
type refund struct {
	ID, Order string
	Amount    int64
}

// rows are the rows a batch reads, as loaded before it: every customer
// and order its events name (keys), and every order of those customers
// (or of the customers those orders belong to), so that a customer's
// figures can be computed from its orders.
type rows struct {
	customers map[string]*customer // present rows only
	orders    map[string]*order
	refunds   map[string]bool        // refund ids present
	refunded  map[string]int64       // order id: the sum of its refunds present
	consents  map[string]*consentRow // by consentKey
}

func newRows() *rows {
	return &rows{customers: map[string]*customer{}, orders: map[string]*order{},
		refunds: map[string]bool{}, refunded: map[string]int64{}, consents: map[string]*consentRow{}}
}

// changes are the rows a batch wrote, each once, in key order.
type changes struct {
	customers []customer
	orders    []order
	refunds   []refund
	consents  []consentRow
	// erasedConsents are the customers (with their shop) whose consent
	// rows are deleted before consents are written.
	erasedConsents map[string]string
}

// keySet names the rows a batch reads: orders (with those of refunds),
// customers and refunds; the customers of those orders are added once the
// orders are loaded.
type keySet struct {
	orders, customers, refunds []string
	// consents are the customers whose consent rows the batch reads.
	consents []string
}

// keys returns the keys events name.
func keys(events []projections.DecodedEvent) keySet {
	var k keySet
	seenO, seenC := map[string]bool{}, map[string]bool{}
	orders, customers := &k.orders, &k.customers
	addO := func(id string) {
		if id != "" && !seenO[id] {
			seenO[id] = true
			*orders = append(*orders, id)
		}
	}
	addC := func(id string) {
		if id != "" && !seenC[id] {
			seenC[id] = true
			*customers = append(*customers, id)
		}
	}
	seenK := map[string]bool{}
	addK := func(id string) {
		if id != "" && !seenK[id] {
			seenK[id] = true
			k.consents = append(k.consents, id)
		}
	}
	for _, e := range events {
		switch ev := e.Decoded.Event.(type) {
		case *domain.CustomerCreated:
			addC(ev.CustomerID)
			addK(ev.CustomerID)
		case *domain.CustomerUpdated:
			addC(ev.CustomerID)
			addK(ev.CustomerID)
		case *domain.CustomerConsentChanged:
			addK(ev.CustomerID)
		case *domain.CustomerTagsSet:
			addC(ev.CustomerID)
		case *domain.CustomerErased:
			addC(ev.CustomerID)
			addC(ev.MessagingCustomerID)
		case *domain.OrderRecorded:
			addO(ev.OrderID)
			addC(ev.CustomerID)
		case *domain.RefundRecorded:
			addO(ev.OrderID)
			k.refunds = append(k.refunds, ev.RefundID)
		}
	}
	return k
}

// folding is a batch being folded over rows.
type folding struct {
	r                 *rows
	atRisk, churned   int64
	dirtyC, dirtyO    map[string]bool
	refresh           map[string]bool
	newRefunds        []refund
	dirtyK            map[string]bool   // consent rows changed, by consentKey
	erasedK           map[string]string // customers whose consent rows are erased: their shop
	customersOfOrders map[string][]*order
}

// fold applies events (none of them ShopErased) to r and returns the rows
// they changed. Customers' figures and stages are computed at the at-risk
// and churned boundaries given (microseconds).
func fold(r *rows, events []projections.DecodedEvent, atRisk, churned int64) changes {
	f := &folding{r: r, atRisk: atRisk, churned: churned,
		dirtyC: map[string]bool{}, dirtyO: map[string]bool{}, refresh: map[string]bool{},
		dirtyK: map[string]bool{}, erasedK: map[string]string{}}
	for i := range events {
		cases.Apply(f, &events[i])
	}
	f.refreshAll()
	var ch changes
	for _, id := range sortedKeys(f.dirtyC) {
		if c, ok := r.customers[id]; ok {
			ch.customers = append(ch.customers, *c)
		}
	}
	for _, id := range sortedKeys(f.dirtyO) {
		ch.orders = append(ch.orders, *r.orders[id])
	}
	ch.refunds = f.newRefunds
	for _, k := range sortedKeys(f.dirtyK) {
		ch.consents = append(ch.consents, *r.consents[k])
	}
	if len(f.erasedK) > 0 {
		ch.erasedConsents = f.erasedK
	}
	return ch
}

// cases are the fold of each event type it folds; ShopErased, which
// deletes rows by shop, is applied between folds (applyBatch).
var cases = projections.NewCases(
	projections.On(func(f *folding, ev *domain.CustomerErased, e *projections.DecodedEvent) {
		// The personal data of an erased customer's profile (and of the
		// profile of the messaging identity of its phone) is nulled and
		// the row marked redacted; the figures and tags stay, they are
		// the shop's.
		for _, id := range []string{ev.CustomerID, ev.MessagingCustomerID} {
			f.eraseConsent(ev.ShopID, id)
			c, ok := f.r.customers[id]
			if !ok || c.Shop != ev.ShopID {
				continue
			}
			c.Email, c.FirstName, c.LastName, c.Phone = sql.NullString{}, sql.NullString{}, sql.NullString{}, sql.NullString{}
			c.Redacted = true
			c.Version = max(c.Version, int64(e.Position))
			f.dirtyC[id] = true
		}
	}),
	projections.On(func(f *folding, ev *domain.CustomerCreated, e *projections.DecodedEvent) {
		f.upsertProfile(ev.CustomerID, ev.ShopID, &ev.CustomerProfile, e)
		f.profileConsent(ev.ShopID, ev.CustomerID, &ev.CustomerProfile, e)
	}),
	projections.On(func(f *folding, ev *domain.CustomerUpdated, e *projections.DecodedEvent) {
		if !ev.Stale { // else kept in the log, older than the profile shown
			f.upsertProfile(ev.CustomerID, ev.ShopID, &ev.CustomerProfile, e)
			f.profileConsent(ev.ShopID, ev.CustomerID, &ev.CustomerProfile, e)
		}
	}),
	projections.On(func(f *folding, ev *domain.CustomerConsentChanged, e *projections.DecodedEvent) {
		f.consentCandidate(ev.ShopID, ev.CustomerID, ev.Channel, ev.State, ev.Source, ev.MessageID, ev.At, int64(e.Position))
	}),
	projections.On(func(f *folding, ev *domain.CustomerTagsSet, e *projections.DecodedEvent) {
		pos := int64(e.Position)
		c, ok := f.r.customers[ev.CustomerID]
		if !ok || c.Shop != ev.ShopID || c.Version >= pos {
			return
		}
		tags, _ := json.Marshal(ev.Tags)
		c.Tags, c.UpdatedAt, c.Version = string(tags), e.OccurredAt.UnixMicro(), pos
		f.dirtyC[c.ID] = true
	}),
	projections.On(func(f *folding, ev *domain.OrderRecorded, e *projections.DecodedEvent) {
		f.applyOrder(ev, int64(e.Position))
	}),
	projections.On(func(f *folding, ev *domain.RefundRecorded, _ *projections.DecodedEvent) { f.applyRefund(ev) }),
)

// handledTypes are the event types the projector folds.
var handledTypes = append(cases.Types(), "ShopErased")

func nullString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

func (f *folding) upsertProfile(id, shop string, p *domain.CustomerProfile, e *projections.DecodedEvent) {
	pos, at, redacted := int64(e.Position), e.OccurredAt.UnixMicro(), len(e.Redacted) > 0
	platformTags, _ := json.Marshal(nonNil(p.PlatformTags))
	var platformCreated int64
	created := at
	if !p.PlatformCreated.IsZero() {
		platformCreated = p.PlatformCreated.UnixMicro()
		created = platformCreated
	}
	f.refresh[id] = true
	c, ok := f.r.customers[id]
	if !ok {
		// created_at never changes afterwards; tags start as the
		// platform's and only the admin API changes them.
		c = &customer{ID: id, Shop: shop, ExternalID: p.ExternalID, Tags: string(platformTags), CreatedAt: created}
		f.r.customers[id] = c
	} else if c.Version >= pos {
		return
	}
	c.Email, c.FirstName, c.LastName, c.Phone = nullString(p.Email), nullString(p.FirstName), nullString(p.LastName), nullString(p.Phone)
	c.AcceptsMarketing, c.State, c.Currency = p.AcceptsMarketing, p.State, p.Currency
	c.ProfileOrdersCount, c.ProfileSpent = int64(p.OrdersCount), int64(p.TotalSpent)
	c.PlatformTags, c.PlatformCreatedAt = string(platformTags), platformCreated
	c.UpdatedAt, c.Redacted, c.Version = at, c.Redacted || redacted, pos
	f.dirtyC[id] = true
}

// applyOrder keeps an order of a customer; the customer's figures (and
// those of a customer the order moved away from) are refreshed.
func (f *folding) applyOrder(ev *domain.OrderRecorded, pos int64) {
	if ev.Stale {
		return
	}
	o, ok := f.r.orders[ev.OrderID]
	var previous string
	if ok {
		previous = o.Customer
	}
	if ev.CustomerID == "" && previous == "" {
		return // a guest order: no customer to count it for
	}
	orderedAt := ev.CreatedAt
	if orderedAt.IsZero() {
		orderedAt = ev.ProcessedAt
	}
	if !ok {
		o = &order{ID: ev.OrderID, Shop: ev.ShopID, Refunded: f.r.refunded[ev.OrderID]}
		f.r.orders[ev.OrderID] = o
	}
	if !ok || o.Version < pos {
		o.Customer, o.Total, o.Cancelled, o.OrderedAt, o.Version = ev.CustomerID, int64(ev.TotalPrice), !ev.CancelledAt.IsZero(), orderedAt.UnixMicro(), pos
		f.dirtyO[o.ID] = true
	}
	if previous != "" && previous != ev.CustomerID {
		f.refresh[previous] = true
	}
	if ev.CustomerID != "" {
		f.refresh[ev.CustomerID] = true
	}
}

// applyRefund keeps a refund and lowers its order's customer's total.
func (f *folding) applyRefund(ev *domain.RefundRecorded) {
	if !f.r.refunds[ev.RefundID] {
		f.r.refunds[ev.RefundID] = true
		f.r.refunded[ev.OrderID] += int64(ev.Amount)
		f.newRefunds = append(f.newRefunds, refund{ID: ev.RefundID, Order: ev.OrderID, Amount: int64(ev.Amount)})
	}
	o, ok := f.r.orders[ev.OrderID]
	if !ok {
		return // the order is not here yet (or is a guest's): it picks the refund up when it comes
	}
	if o.Refunded != f.r.refunded[ev.OrderID] {
		o.Refunded = f.r.refunded[ev.OrderID]
		f.dirtyO[o.ID] = true
	}
	if o.Customer != "" {
		f.refresh[o.Customer] = true
	}
}

// refreshAll sets the figures and stage of every customer the batch
// refreshes from its orders (cancelled ones do not count; refunds lower
// the total), or from its profile when none of its orders was received.
func (f *folding) refreshAll() {
	if len(f.refresh) == 0 {
		return
	}
	byCustomer := map[string][]*order{}
	for _, o := range f.r.orders {
		if f.refresh[o.Customer] {
			byCustomer[o.Customer] = append(byCustomer[o.Customer], o)
		}
	}
	for id := range f.refresh {
		c, ok := f.r.customers[id]
		if !ok {
			continue
		}
		os := byCustomer[id]
		var live, spent, last int64
		for _, o := range os {
			if o.Cancelled {
				continue
			}
			live++
			spent += o.Total - o.Refunded
			last = max(last, o.OrderedAt)
		}
		if len(os) == 0 {
			live, spent = c.ProfileOrdersCount, c.ProfileSpent
		}
		stage := stageOf(live, last, f.atRisk, f.churned)
		if c.OrdersCount != live || c.TotalSpent != spent || c.LastOrderAt != last || c.Stage != stage {
			c.OrdersCount, c.TotalSpent, c.LastOrderAt, c.Stage = live, spent, last, stage
			f.dirtyC[id] = true
		}
	}
}

// stageOf is stageExpr in Go.
func stageOf(orders, last, atRisk, churned int64) string {
	switch {
	case orders <= 0:
		return domain.StageProspect
	case last != 0 && last < churned:
		return domain.StageChurned
	case last != 0 && last < atRisk:
		return domain.StageAtRisk
	case orders >= domain.LoyalMinOrders:
		return domain.StageLoyal
	case orders == 1:
		return domain.StageNew
	}
	return domain.StageActive
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
