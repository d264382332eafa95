package readapi

import (
	"context"
	"slices"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/customers"
)

const customersProjector = customers.Name

func isNotFound(err error) bool { return err != nil && domain.ErrorCode(err) == domain.CodeNotFound }

// Relation is a relation of a resource type that `include` can embed, as
// in JSON:API compound documents: the response gets a top-level `included`
// array with every related resource once, and the relationship gets
// `data` ({type, id}, or an array of them for a to-many relation) beside
// its `links.related`.
type Relation struct {
	// Name is the include value and the relationship's name.
	Name string
	// ToMany makes the relationship's data an array (empty when the
	// resource has none).
	ToMany bool
	// Key returns what the related resources of res hang from, "" when it
	// has none: the related resource's id for a to-one relation, res's own
	// id for a to-many one.
	Key func(res httpapi.Resource) string
	// Load reads the related resources of every key of a page in one read
	// and returns them by key; a key without any is left out.
	Load func(ctx context.Context, keys []string) (map[string][]httpapi.Resource, error)
	// Projector names the read model Load reads, for X-Wait-For-Position
	// ("" when it is the endpoint's own).
	Projector string
}

// relationNames are the include values rels allow.
func relationNames(rels []Relation) []string {
	out := make([]string, len(rels))
	for i, rel := range rels {
		out[i] = rel.Name
	}
	return out
}

// includeProjectors are the read models the requested relations read,
// beside projector's.
func includeProjectors(projector string, include []string, rels []Relation) []string {
	out := []string{projector}
	for _, rel := range rels {
		if rel.Projector != "" && slices.Contains(include, rel.Name) && !slices.Contains(out, rel.Projector) {
			out = append(out, rel.Projector)
		}
	}
	return out
}

// embed loads the relations named in include for items (one Load per
// relation for the whole page), sets each item's relationship data and
// returns the related resources, each once, in the order first met. It
// returns nil when include is empty (no `included` member), an empty slice
// when nothing related was found.
func embed(ctx context.Context, include []string, rels []Relation, items []httpapi.Resource) ([]httpapi.Resource, error) {
	if len(include) == 0 {
		return nil, nil
	}
	out := []httpapi.Resource{}
	seen := map[httpapi.ResourceID]bool{}
	for _, rel := range rels {
		if !slices.Contains(include, rel.Name) {
			continue
		}
		keys := make([]string, 0, len(items))
		for _, it := range items {
			if k := rel.Key(it); k != "" && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		related := map[string][]httpapi.Resource{}
		if len(keys) > 0 {
			var err error
			if related, err = rel.Load(ctx, keys); err != nil {
				return nil, err
			}
		}
		for i := range items {
			k := rel.Key(items[i])
			if k == "" {
				continue
			}
			ids := make([]httpapi.ResourceID, 0, len(related[k]))
			for _, res := range related[k] {
				id := httpapi.ResourceID{Type: res.Type, ID: res.ID}
				ids = append(ids, id)
				if !seen[id] {
					seen[id] = true
					out = append(out, res)
				}
			}
			link, ok := items[i].Relationships[rel.Name]
			if !ok {
				continue
			}
			switch {
			case rel.ToMany:
				link.Data = ids
			case len(ids) == 1:
				link.Data = ids[0]
			default:
				continue // not found: the link stays, without data
			}
			items[i].Relationships[rel.Name] = link
		}
	}
	return out, nil
}

// customerRelation embeds the customer an order or an enrollment belongs
// to, with key giving that customer's id: one read of the page's distinct
// customers. An order may arrive before its customer's profile: such a
// customer is absent.
func customerRelation(finder CustomerFinder, shop string, now func() time.Time, key func(httpapi.Resource) string) Relation {
	return Relation{
		Name: "customer", Key: key, Projector: customersProjector,
		Load: func(ctx context.Context, ids []string) (map[string][]httpapi.Resource, error) {
			found, err := finder.GetMany(ctx, shop, ids)
			if err != nil {
				return nil, err
			}
			out := make(map[string][]httpapi.Resource, len(found))
			at := now()
			for id, c := range found {
				out[id] = []httpapi.Resource{CustomerResource(c, at)}
			}
			return out, nil
		},
	}
}
