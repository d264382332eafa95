package writeapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/platform"
	"github.com/cgp-platform/cgp/platformapi"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/readapi"
)

// Catalog serves the product and inventory writes.
type Catalog struct {
	idem     func(http.Handler) http.Handler
	cmds     *commands.Handler
	auth     *auth.Authenticator
	q        *commerce.Queries
	wait     readapi.Waiter
	platform Platform
}

// NewCatalog returns the product and inventory write handlers. idem wraps
// every write in Idempotency-Key handling (inside authentication, so keys
// are scoped to the token). A change of a product the platform owns is
// pushed to it through p (see handleProductPatch).
func NewCatalog(cmds *commands.Handler, a *auth.Authenticator, idem func(http.Handler) http.Handler, q *commerce.Queries, wait readapi.Waiter,
	p Platform) *Catalog {
	return &Catalog{cmds: cmds, auth: a, idem: idem, q: q, wait: wait, platform: p}
}

// Routes registers the product and inventory writes.
func (c *Catalog) Routes(r *mux.Router) {
	write := func(h http.HandlerFunc) http.Handler {
		return httpapi.Stable(c.auth.Require(domain.ScopeProductsWrite, c.idem(h)))
	}
	r.Handle("/api/v1/products", write(c.handleProductCreate)).Methods(http.MethodPost)
	r.Handle("/api/v1/products/{id}", write(c.handleProductPatch)).Methods(http.MethodPatch)
	r.Handle("/api/v1/inventory", write(c.handleInventoryPatch)).Methods(http.MethodPatch)
}

type variantBody struct {
	SKU   string      `json:"sku"`
	Price json.Number `json:"price"`
}

type productCreateBody struct {
	Title       string        `json:"title"`
	Handle      string        `json:"handle"`
	Status      string        `json:"status"`
	Vendor      string        `json:"vendor"`
	ProductType string        `json:"product_type"`
	Tags        []string      `json:"tags"`
	Variants    []variantBody `json:"variants"`
}

func (b productCreateBody) draft() (domain.ProductDraft, error) {
	d := domain.ProductDraft{Title: b.Title, Handle: b.Handle, Status: b.Status, Vendor: b.Vendor, ProductType: b.ProductType, Tags: b.Tags}
	for i, v := range b.Variants {
		field := "variants[" + strconv.Itoa(i) + "].price"
		if v.Price == "" {
			return d, httpapi.ValidationFailed(field, "price is required")
		}
		price, err := domain.ParseAmount(string(v.Price))
		if err != nil {
			return d, httpapi.ValidationFailed(field, "price must be a decimal amount such as 19.90")
		}
		d.Variants = append(d.Variants, domain.VariantDraft{SKU: v.SKU, Price: price})
	}
	return d, nil
}

// handleProductCreate creates a product the service owns and answers 201
// with it, built from the command's result.
func (c *Catalog) handleProductCreate(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body productCreateBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	d, err := body.draft()
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	res, ev, err := c.cmds.CreateProduct(r.Context(), commands.CreateProduct{ShopID: p.ShopID, Draft: d}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	prod := &commerce.Product{ID: ev.ProductID, ShopID: ev.ShopID, Title: ev.Title, Handle: ev.Handle, Status: ev.Status,
		Vendor: ev.Vendor, ProductType: ev.ProductType, Tags: ev.Tags, Variants: ev.Variants, CreatedAt: ev.CreatedAt, UpdatedAt: ev.CreatedAt}
	w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(res.Position, 10))
	httpapi.WriteResource(w, r, http.StatusCreated, readapi.ProductResource(prod))
}

type productPatchBody struct {
	Title       *string            `json:"title"`
	Status      *string            `json:"status"`
	Vendor      *string            `json:"vendor"`
	ProductType *string            `json:"product_type"`
	Tags        *[]string          `json:"tags"`
	Variants    []variantPatchBody `json:"variants"`
}

// variantPatchBody changes one variant: its price, compare-at price (null
// removes it) and SKU. Amounts are decimal numbers or strings ("19.90").
type variantPatchBody struct {
	ID             string        `json:"id"`
	Price          optionalMoney `json:"price"`
	CompareAtPrice optionalMoney `json:"compare_at_price"`
	SKU            *string       `json:"sku"`
}

// optionalMoney is an amount member that may be absent, null, a number or
// a string; it is checked by parseMoney, so any malformed value gets a
// 422 naming its field.
type optionalMoney struct {
	set bool
	raw json.RawMessage
}

// UnmarshalJSON implements json.Unmarshaler.
func (o *optionalMoney) UnmarshalJSON(b []byte) error {
	o.set, o.raw = true, append(json.RawMessage(nil), b...)
	return nil
}

func (o optionalMoney) null() bool { return o.set && string(o.raw) == "null" }

// changes turns the body into the command's changes, with a 422 naming
// the field of a malformed amount.
func (b productPatchBody) changes() (domain.ProductChanges, error) {
	c := domain.ProductChanges{Title: b.Title, Status: b.Status, Vendor: b.Vendor, ProductType: b.ProductType, Tags: b.Tags}
	for i, v := range b.Variants {
		field := "variants[" + strconv.Itoa(i) + "]."
		vp := domain.VariantPatch{ID: v.ID, SKU: v.SKU, ClearCompareAtPrice: v.CompareAtPrice.null()}
		if v.Price.set {
			a, err := parseMoney(field+"price", v.Price.raw)
			if err != nil {
				return c, err
			}
			vp.Price = &a
		}
		if v.CompareAtPrice.set && !v.CompareAtPrice.null() {
			a, err := parseMoney(field+"compare_at_price", v.CompareAtPrice.raw)
			if err != nil {
				return c, err
			}
			vp.CompareAtPrice = &a
		}
		c.Variants = append(c.Variants, vp)
	}
	return c, nil
}

// parseMoney parses an amount of money, a JSON number or string: a
// decimal with at most two decimal places, not negative.
func parseMoney(field string, raw json.RawMessage) (domain.Amount, error) {
	bad := httpapi.ValidationFailed(field, "must be an amount of money such as 19.90 (at most two decimals, not negative)")
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return 0, bad
		}
		s = string(n)
	}
	_, frac, _ := strings.Cut(s, ".")
	a, err := domain.ParseAmount(s)
	if err != nil || len(frac) > 2 || strings.ContainsAny(s, "eE+-") {
		return 0, bad
	}
	return a, nil
}

// handleProductPatch changes a product. It answers with the product as the
// read model shows it once the projection caught up with the command
// (bounded by httpapi.MaxWait); if the projection is slower, with the row
// as it was and the command's changes applied. The change is recorded
// first; a product the platform owns is then pushed to it, and
// data.meta.platform_sync says how that went (see pushProduct): the
// recorded change stands whatever the platform answers.
func (c *Catalog) handleProductPatch(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body productPatchBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	id := mux.Vars(r)["id"]
	changes, err := body.changes()
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	res, ev, err := c.cmds.UpdateProduct(r.Context(), commands.UpdateProduct{ShopID: p.ShopID, ProductID: id, Changes: changes}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	sync := c.pushProduct(r.Context(), p.ShopID, ev)
	readapi.ServeWritten(w, r, c.wait, commerce.Name, res.Position, http.StatusOK,
		func(ctx context.Context) (*commerce.Product, error) { return c.q.Product(ctx, p.ShopID, id) },
		func(prod *commerce.Product) { applyChanges(prod, body, ev) },
		func(prod *commerce.Product) httpapi.Resource {
			res := readapi.ProductResource(prod)
			if res.Meta == nil {
				res.Meta = map[string]any{}
			}
			res.Meta["platform_sync"] = sync
			return res
		})
}

// applyChanges shows a validated change on a read-model row that has not
// caught up with it yet.
func applyChanges(p *commerce.Product, b productPatchBody, ev *domain.ProductUpdated) {
	for dst, src := range map[*string]*string{&p.Title: b.Title, &p.Status: b.Status, &p.Vendor: b.Vendor, &p.ProductType: b.ProductType} {
		if src != nil {
			*dst = strings.TrimSpace(*src)
		}
	}
	if b.Tags != nil {
		p.Tags, _ = domain.NormalizeTags(*b.Tags) // validated by the command already
	}
	if ev != nil {
		commerce.ApplyVariantChanges(p.Variants, ev.Variants)
	}
}

// Statuses of a product change's push to the platform
// (data.meta.platform_sync.status).
const (
	SyncPushed     = "pushed"
	SyncNotPushed  = "not_pushed"
	SyncPushFailed = "push_failed"
)

// pushProduct pushes a recorded product change to the platform and says
// how it went: pushed; not_pushed with a reason (not_platform_product: the
// API created it; platform_not_connected: the shop has no session;
// platform_scope_missing: the shop did not grant write_products, with the
// re-authorisation link); push_failed with the error the platform's
// failure maps to (its code, message and details, user_errors included).
// The platform's products/update webhook brings its state back.
func (c *Catalog) pushProduct(ctx context.Context, shopID string, ev *domain.ProductUpdated) map[string]any {
	if ev.ExternalID == "" || c.platform == nil {
		return map[string]any{"status": SyncNotPushed, "reason": "not_platform_product"}
	}
	s, err := connect(ctx, c.platform, shopID, PlatformScopeProducts)
	var he *httpapi.Error
	if err != nil && errors.As(err, &he) && (he.Code == platform.CodeNotConnected || he.Code == platform.CodeScopeMissing) {
		out := map[string]any{"status": SyncNotPushed, "reason": he.Code, "reauthorize_url": he.Details["reauthorize_url"]}
		if he.Code == platform.CodeScopeMissing {
			out["platform_scope"] = PlatformScopeProducts
		}
		return out
	}
	if err == nil {
		in := platformapi.UpdateProduct{ProductID: ev.ExternalID, Title: ev.Title, Status: ev.Status, Vendor: ev.Vendor,
			ProductType: ev.ProductType, Tags: ev.Tags}
		for _, v := range ev.Variants {
			in.Variants = append(in.Variants, platformapi.UpdateVariant{VariantID: v.VariantID, Price: v.Price, CompareAtPrice: v.CompareAtPrice,
				ClearCompareAtPrice: v.CompareAtPriceCleared, SKU: v.SKU})
		}
		if err = c.platform.UpdateProduct(ctx, s, in); err == nil {
			return map[string]any{"status": SyncPushed}
		}
		err = platform.HTTPError(err, c.platform.Reauthorize(ctx, shopID))
	}
	failure := map[string]any{"code": "internal_error", "message": "the push to the platform failed"}
	if errors.As(err, &he) {
		failure = map[string]any{"code": he.Code, "message": he.Message, "details": he.Details}
	} else {
		httpapi.Logger(ctx).Error().Err(err).Str("shop_id", shopID).Msg("push a product change to the platform")
	}
	return map[string]any{"status": SyncPushFailed, "error": failure}
}
