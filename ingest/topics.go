package ingest

import (
	"context"
	"strings"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
)

// Recorder is the write side the commerce receiver drives: one command per
// kind of state a topic changes.
type Recorder interface {
	DeliveryRecorder
	RecordCustomer(ctx context.Context, cmd commands.RecordCustomer, meta commands.Meta) (commands.Result, error)
	RecordScopesUpdate(ctx context.Context, cmd commands.RecordScopesUpdate, meta commands.Meta) (commands.Result, error)
	RecordOrder(ctx context.Context, cmd commands.RecordOrder, meta commands.Meta) (commands.Result, error)
	RecordRefund(ctx context.Context, cmd commands.RecordRefund, meta commands.Meta) (commands.Result, error)
	RecordProduct(ctx context.Context, cmd commands.RecordProduct, meta commands.Meta) (commands.Result, error)
	DeleteProduct(ctx context.Context, cmd commands.DeleteProduct, meta commands.Meta) (commands.Result, error)
	RecordInventoryLevel(ctx context.Context, cmd commands.RecordInventoryLevel, meta commands.Meta) (commands.Result, error)
	RecordCart(ctx context.Context, cmd commands.RecordCart, meta commands.Meta) (commands.Result, error)
	RecordCheckout(ctx context.Context, cmd commands.RecordCheckout, meta commands.Meta) (commands.Result, error)
	RecordSubscriptionContract(ctx context.Context, cmd commands.RecordSubscriptionContract, meta commands.Meta) (commands.Result, error)
	RecordBillingAttempt(ctx context.Context, cmd commands.RecordBillingAttempt, meta commands.Meta) (commands.Result, error)
	RecordTheme(ctx context.Context, cmd commands.RecordTheme, meta commands.Meta) (commands.Result, error)
	UninstallApp(ctx context.Context, cmd commands.UninstallApp, meta commands.Meta) (commands.Result, error)
	UpdateAppSubscription(ctx context.Context, cmd commands.UpdateAppSubscription, meta commands.Meta) (commands.Result, error)
	RecordPrivacyRequest(ctx context.Context, cmd commands.RecordPrivacyRequest, meta commands.Meta) (commands.Result, error)
}

// mapper turns one verified delivery of a topic into its command.
type mapper func(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error)

// topicMappers maps every commerce topic the service subscribes to. A topic
// missing here is recorded as unhandled (never dropped).
var topicMappers = map[string]mapper{
	shopify.TopicCustomersCreate:             mapCustomer,
	shopify.TopicCustomersUpdate:             mapCustomer,
	shopify.TopicOrdersCreate:                mapOrder,
	shopify.TopicOrdersUpdated:               mapOrder,
	shopify.TopicOrdersPaid:                  mapOrder,
	shopify.TopicOrdersFulfilled:             mapOrder,
	shopify.TopicRefundsCreate:               mapRefund,
	shopify.TopicProductsCreate:              mapProduct,
	shopify.TopicProductsUpdate:              mapProduct,
	shopify.TopicProductsDelete:              mapProductDeletion,
	shopify.TopicInventoryLevelsUpdate:       mapInventoryLevel,
	shopify.TopicCartsCreate:                 mapCart,
	shopify.TopicCartsUpdate:                 mapCart,
	shopify.TopicCheckoutsCreate:             mapCheckout,
	shopify.TopicCheckoutsUpdate:             mapCheckout,
	shopify.TopicSubscriptionContractsCreate: mapSubscriptionContract,
	shopify.TopicSubscriptionContractsUpdate: mapSubscriptionContract,
	shopify.TopicBillingAttemptsSuccess:      mapBillingAttempt,
	shopify.TopicBillingAttemptsFailure:      mapBillingAttempt,
	shopify.TopicThemesPublish:               mapTheme,
	shopify.TopicThemesUpdate:                mapTheme,
	shopify.TopicAppUninstalled:              mapUninstalled,
	shopify.TopicAppSubscriptionsUpdate:      mapAppSubscription,
	shopify.TopicAppScopesUpdate:             mapScopesUpdate,
	shopify.TopicCustomersDataRequest:        mapDataRequest,
	shopify.TopicCustomersRedact:             mapCustomerRedact,
	shopify.TopicShopRedact:                  mapShopRedact,
}

// MappedTopics lists the topics the commerce receiver maps to domain
// events.
func MappedTopics() []string {
	out := make([]string, 0, len(topicMappers))
	for t := range topicMappers {
		out = append(out, t)
	}
	return out
}

func delivered(d Delivery) commands.Delivered {
	return commands.Delivered{ShopID: d.ShopID, Topic: d.Topic, EventID: d.EventID, LikelyNew: strings.HasSuffix(d.Topic, "/create")}
}

func mapCustomer(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	profile, err := ParseCustomer(d.Body)
	if err != nil {
		return commands.Result{}, err
	}
	return rec.RecordCustomer(ctx, commands.RecordCustomer{ShopID: d.ShopID, Profile: profile, EventID: d.EventID}, d.Meta)
}

func mapScopesUpdate(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	up, err := shopify.ParseScopesUpdate(d.Body)
	if err != nil {
		return commands.Result{}, err
	}
	return rec.RecordScopesUpdate(ctx, commands.RecordScopesUpdate{ShopID: d.ShopID, Granted: up.Current,
		Previous: up.Previous, UpdatedAt: up.UpdatedAt, EventID: d.EventID}, d.Meta)
}

func orderLines(items []shopify.LineItem, shopID string) []domain.OrderLine {
	if len(items) == 0 {
		return nil
	}
	out := make([]domain.OrderLine, len(items))
	for i, li := range items {
		out[i] = domain.OrderLine{LineID: li.ID, VariantID: li.VariantID, SKU: li.SKU, Title: li.Title,
			Quantity: li.Quantity, Price: li.Price}
		if li.ProductID != "" {
			out[i].ProductID = domain.ProductIDFromExternal(shopID, li.ProductID)
		}
	}
	return out
}

func mapOrder(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	o, err := shopify.ParseOrder(d.Body)
	if err != nil {
		return commands.Result{}, err
	}
	var notes map[string]string
	for _, na := range o.NoteAttributes {
		if notes == nil {
			notes = make(map[string]string, len(o.NoteAttributes))
		}
		notes[na.Name] = na.Value
	}
	snap := domain.OrderSnapshot{
		ExternalID: o.ID, Name: o.Name, FinancialStatus: o.FinancialStatus, FulfillmentStatus: o.FulfillmentStatus,
		Currency: o.Currency, TotalPrice: o.TotalPrice, SubtotalPrice: o.SubtotalPrice, TotalTax: o.TotalTax,
		TotalDiscounts: o.TotalDiscounts, Lines: orderLines(o.LineItems, d.ShopID), SourceName: o.SourceName,
		DiscountCodes: o.DiscountCodes, Tags: o.Tags, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt,
		ProcessedAt: o.ProcessedAt, CancelledAt: o.CancelledAt,
		Attribution: domain.NewAttribution(o.LandingSite, o.ReferringSite),
		Email:       o.Email, NoteAttributes: notes,
	}
	return rec.RecordOrder(ctx, commands.RecordOrder{Delivered: delivered(d), CustomerExternalID: o.CustomerID, Snapshot: snap}, d.Meta)
}

func mapRefund(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	r, err := shopify.ParseRefund(d.Body)
	if err != nil {
		return commands.Result{}, err
	}
	ev := domain.RefundRecorded{ExternalID: r.ID, CreatedAt: r.CreatedAt}
	var fromTransactions, fromLines domain.Amount
	hasTransactions := false
	for _, t := range r.Transactions {
		if t.Kind == "refund" && t.Status == "success" {
			fromTransactions += t.Amount
			hasTransactions = true
		}
	}
	for _, l := range r.LineItems {
		ev.Lines = append(ev.Lines, domain.RefundLine{LineID: l.LineItemID, Quantity: l.Quantity, Subtotal: l.Subtotal})
		fromLines += l.Subtotal
	}
	ev.Amount = fromLines
	if hasTransactions {
		ev.Amount = fromTransactions
	}
	return rec.RecordRefund(ctx, commands.RecordRefund{Delivered: delivered(d), OrderExternalID: r.OrderID, Refund: ev}, d.Meta)
}

func mapProduct(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	p, err := shopify.ParseProduct(d.Body)
	if err != nil {
		return commands.Result{}, err
	}
	snap := domain.ProductSnapshot{ExternalID: p.ID, Title: p.Title, Handle: p.Handle, Status: p.Status,
		Vendor: p.Vendor, ProductType: p.ProductType, Tags: p.Tags, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	for _, v := range p.Variants {
		snap.Variants = append(snap.Variants, domain.Variant{VariantID: v.ID, SKU: v.SKU, Price: v.Price,
			InventoryItemID: v.InventoryItemID, InventoryQuantity: v.InventoryQuantity})
	}
	return rec.RecordProduct(ctx, commands.RecordProduct{Delivered: delivered(d), Snapshot: snap}, d.Meta)
}

func mapProductDeletion(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	p, err := shopify.ParseProductDeletion(d.Body)
	if err != nil {
		return commands.Result{}, err
	}
	return rec.DeleteProduct(ctx, commands.DeleteProduct{Delivered: delivered(d), ExternalID: p.ID, DeletedAt: d.TriggeredAt}, d.Meta)
}

func mapInventoryLevel(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	l, err := shopify.ParseInventoryLevel(d.Body)
	if err != nil {
		return commands.Result{}, err
	}
	return rec.RecordInventoryLevel(ctx, commands.RecordInventoryLevel{Delivered: delivered(d),
		InventoryItemID: l.InventoryItemID, LocationID: l.LocationID, Available: l.Available, UpdatedAt: l.UpdatedAt}, d.Meta)
}

func mapCart(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	c, err := shopify.ParseCart(d.Body)
	if err != nil {
		return commands.Result{}, err
	}
	cart := domain.CartRecorded{CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	for _, li := range c.LineItems {
		line := domain.CartLine{VariantID: li.VariantID, SKU: li.SKU, Title: li.Title, Quantity: li.Quantity,
			Price: li.Price, LinePrice: li.LinePrice}
		if li.ProductID != "" {
			line.ProductID = domain.ProductIDFromExternal(d.ShopID, li.ProductID)
		}
		cart.Lines = append(cart.Lines, line)
		cart.Total += li.LinePrice
	}
	return rec.RecordCart(ctx, commands.RecordCart{Delivered: delivered(d), Token: c.ID, Cart: cart}, d.Meta)
}

func mapCheckout(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	c, err := shopify.ParseCheckout(d.Body)
	if err != nil {
		return commands.Result{}, err
	}
	snap := domain.CheckoutSnapshot{ExternalID: c.ID, TotalPrice: c.TotalPrice, Currency: c.Currency,
		Lines: orderLines(c.LineItems, d.ShopID), CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		CompletedAt: c.CompletedAt, Attribution: domain.NewAttribution(c.LandingSite, c.ReferringSite),
		Email: c.Email, RecoveryURL: c.AbandonedCheckoutURL}
	return rec.RecordCheckout(ctx, commands.RecordCheckout{Delivered: delivered(d), CustomerExternalID: c.CustomerID,
		CartToken: c.CartToken, Token: c.Token, Snapshot: snap}, d.Meta)
}

func mapSubscriptionContract(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	s, err := shopify.ParseSubscriptionContract(d.Body)
	if err != nil {
		return commands.Result{}, err
	}
	return rec.RecordSubscriptionContract(ctx, commands.RecordSubscriptionContract{Delivered: delivered(d),
		ExternalID: s.ID, CustomerExternalID: s.CustomerID, OriginOrderExternalID: s.OriginOrderID, Status: s.Status,
		Interval: s.BillingPolicy.Interval, IntervalCount: s.BillingPolicy.IntervalCount, Currency: s.CurrencyCode}, d.Meta)
}

func mapBillingAttempt(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	a, err := shopify.ParseBillingAttempt(d.Body)
	if err != nil {
		return commands.Result{}, err
	}
	return rec.RecordBillingAttempt(ctx, commands.RecordBillingAttempt{Delivered: delivered(d),
		ContractExternalID: a.SubscriptionContractID, AttemptExternalID: a.ID,
		Success: d.Topic == shopify.TopicBillingAttemptsSuccess, OrderExternalID: a.OrderID,
		ErrorCode: a.ErrorCode, ErrorMessage: a.ErrorMessage, AttemptedAt: d.TriggeredAt}, d.Meta)
}

func mapTheme(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	t, err := shopify.ParseTheme(d.Body)
	if err != nil {
		return commands.Result{}, err
	}
	if !t.IsMain() {
		return commands.Result{}, Ignore{Detail: "theme role " + t.Role + " is not the main theme"}
	}
	return rec.RecordTheme(ctx, commands.RecordTheme{Delivered: delivered(d), ExternalID: t.ID, Name: t.Name,
		Role: t.Role, UpdatedAt: t.UpdatedAt}, d.Meta)
}

func mapUninstalled(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	if _, err := shopify.ParseAppUninstalled(d.Body); err != nil {
		return commands.Result{}, err
	}
	return rec.UninstallApp(ctx, commands.UninstallApp{Delivered: delivered(d), At: d.TriggeredAt}, d.Meta)
}

func mapAppSubscription(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	s, err := shopify.ParseAppSubscription(d.Body)
	if err != nil {
		return commands.Result{}, err
	}
	return rec.UpdateAppSubscription(ctx, commands.UpdateAppSubscription{Delivered: delivered(d),
		SubscriptionID: s.AdminGraphQLAPIID, Name: s.Name, Status: s.Status, UpdatedAt: s.UpdatedAt}, d.Meta)
}

func mapDataRequest(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	r, err := shopify.ParseDataRequest(d.Body)
	if err != nil {
		return commands.Result{}, err
	}
	return rec.RecordPrivacyRequest(ctx, commands.RecordPrivacyRequest{Delivered: delivered(d), RequestID: r.DataRequestID,
		CustomerExternalID: r.Customer.ID, Email: r.Customer.Email, Phone: r.Customer.Phone, Orders: r.OrdersRequested}, d.Meta)
}

func mapCustomerRedact(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	r, err := shopify.ParseCustomerRedact(d.Body)
	if err != nil {
		return commands.Result{}, err
	}
	return rec.RecordPrivacyRequest(ctx, commands.RecordPrivacyRequest{Delivered: delivered(d),
		CustomerExternalID: r.Customer.ID, Email: r.Customer.Email, Phone: r.Customer.Phone, Orders: r.OrdersToRedact}, d.Meta)
}

func mapShopRedact(ctx context.Context, rec Recorder, d Delivery) (commands.Result, error) {
	if _, err := shopify.ParseShopRedact(d.Body); err != nil {
		return commands.Result{}, err
	}
	return rec.RecordPrivacyRequest(ctx, commands.RecordPrivacyRequest{Delivered: delivered(d)}, d.Meta)
}
