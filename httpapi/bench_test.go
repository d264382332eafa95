package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/httpapi"
)

func BenchmarkCursorEncode(b *testing.B) {
	c := mustCodec(b, testKey(1))
	pos := position{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), ID: "cus_0123456789abcdefABCDEF01"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Encode(customersQuery, pos); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCursorDecode(b *testing.B) {
	c := mustCodec(b, testKey(1))
	s, err := c.Encode(customersQuery, position{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), ID: "cus_0123456789abcdefABCDEF01"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var p position
		if err := c.Decode(s, customersQuery, &p); err != nil {
			b.Fatal(err)
		}
	}
}

type benchCustomer struct {
	Email          *string   `json:"email"`
	FirstName      *string   `json:"first_name"`
	LastName       *string   `json:"last_name"`
	LifecycleStage string    `json:"lifecycle_stage"`
	TotalSpent     float64   `json:"total_spent"`
	OrdersCount    int       `json:"orders_count"`
	Tags           []string  `json:"tags"`
	CreatedAt      time.Time `json:"created_at"`
}

func BenchmarkWriteList100(b *testing.B) {
	email, first, last := "someone@example.com", "Jane", "Doe"
	items := make([]httpapi.Resource, 100)
	for i := range items {
		id := fmt.Sprintf("cus_%024d", i)
		items[i] = httpapi.Resource{ID: id, Type: "customer",
			Attributes: benchCustomer{Email: &email, FirstName: &first, LastName: &last, LifecycleStage: "loyal",
				TotalSpent: 1234.5, OrdersCount: 7, Tags: []string{"vip", "newsletter"}, CreatedAt: time.Unix(1700000000, 0).UTC()},
			Relationships: map[string]httpapi.Relationship{"orders": httpapi.RelatedLink("/api/v1/customers/" + id + "/orders")},
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/api/v1/customers?limit=100&filter[lifecycle_stage]=loyal", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		httpapi.WriteList(rec, req, items, httpapi.Page{NextCursor: "AXsicSI6IkcxS1BvaU1qNmFvIiwicCI6eyJzIjoiMTIwLjUwIiwiaSI6ImN1c19YIn19msdRqP6XI0fxgmuxyGWwXw", HasNext: true})
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
		b.SetBytes(int64(rec.Body.Len()))
	}
}
