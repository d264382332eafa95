package platformapi

import (
	"context"
	"strings"

	"github.com/cgp-platform/cgp/domain"
)

// UpdateProduct is a change of a product on the platform: the fields set
// change (productUpdate), and the variants listed change their prices and
// SKUs (productVariantsBulkUpdate).
type UpdateProduct struct {
	// ProductID is the platform's id of the product (numeric or a GID).
	ProductID string
	Title     *string
	// Status is active, draft or archived (sent as the platform's
	// ProductStatus enum).
	Status      *string
	Vendor      *string
	ProductType *string
	Tags        *[]string
	Variants    []UpdateVariant
}

// UpdateVariant is a change of one variant: only the fields set change;
// ClearCompareAtPrice removes the compare-at price.
type UpdateVariant struct {
	// VariantID is the platform's id of the variant (numeric or a GID).
	VariantID           string
	Price               *domain.Amount
	CompareAtPrice      *domain.Amount
	ClearCompareAtPrice bool
	SKU                 *string
}

// productFields reports whether the change touches the product itself.
func (u UpdateProduct) productFields() bool {
	return u.Title != nil || u.Status != nil || u.Vendor != nil || u.ProductType != nil || u.Tags != nil
}

const productUpdateMutation = `mutation productUpdate($product: ProductUpdateInput!) {
  productUpdate(product: $product) {
    product { id updatedAt }
    userErrors { field message }
  }
}`

const variantsBulkUpdateMutation = `mutation productVariantsBulkUpdate($productId: ID!, $variants: [ProductVariantsBulkInput!]!) {
  productVariantsBulkUpdate(productId: $productId, variants: $variants) {
    productVariants { id }
    userErrors { field message code }
  }
}`

// UpdateProduct pushes a product change to the platform: productUpdate
// when a product field changes, then productVariantsBulkUpdate when
// variants change. The mutations' userErrors are an *Error with
// UserErrors; when the product's fields went through and its variants
// were refused, the error says so (the product change stands on the
// platform).
func (c *Client) UpdateProduct(ctx context.Context, shop, accessToken string, in UpdateProduct) error {
	id := GID("Product", in.ProductID)
	if in.productFields() {
		p := map[string]any{"id": id}
		if in.Title != nil {
			p["title"] = *in.Title
		}
		if in.Status != nil {
			p["status"] = strings.ToUpper(*in.Status)
		}
		if in.Vendor != nil {
			p["vendor"] = *in.Vendor
		}
		if in.ProductType != nil {
			p["productType"] = *in.ProductType
		}
		if in.Tags != nil {
			p["tags"] = append([]string{}, *in.Tags...)
		}
		var out struct {
			ProductUpdate *struct {
				UserErrors []UserError `json:"userErrors"`
			} `json:"productUpdate"`
		}
		if err := c.GraphQL(ctx, shop, accessToken, productUpdateMutation, map[string]any{"product": p}, &out); err != nil {
			return err
		}
		if out.ProductUpdate == nil {
			return badResponse("productUpdate returned nothing")
		}
		if err := UserErrors(out.ProductUpdate.UserErrors); err != nil {
			return err
		}
	}
	if len(in.Variants) == 0 {
		return nil
	}
	vs := make([]map[string]any, len(in.Variants))
	for i, v := range in.Variants {
		m := map[string]any{"id": GID("ProductVariant", v.VariantID)}
		if v.Price != nil {
			m["price"] = v.Price.String()
		}
		switch {
		case v.ClearCompareAtPrice:
			m["compareAtPrice"] = nil
		case v.CompareAtPrice != nil:
			m["compareAtPrice"] = v.CompareAtPrice.String()
		}
		if v.SKU != nil {
			m["inventoryItem"] = map[string]any{"sku": *v.SKU}
		}
		vs[i] = m
	}
	var out struct {
		Bulk *struct {
			UserErrors []UserError `json:"userErrors"`
		} `json:"productVariantsBulkUpdate"`
	}
	if err := c.GraphQL(ctx, shop, accessToken, variantsBulkUpdateMutation, map[string]any{"productId": id, "variants": vs}, &out); err != nil {
		return err
	}
	if out.Bulk == nil {
		return badResponse("productVariantsBulkUpdate returned nothing")
	}
	return UserErrors(out.Bulk.UserErrors)
}
