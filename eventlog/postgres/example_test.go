package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/postgres"
)

// Open a log in a schema of its own, append with an expected revision, see
// a conflict and read the stream back.
func Example() {
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "eventlog_example_" + hex.EncodeToString(b)
	l, err := postgres.Open(ctx, postgres.Config{URL: testURL(), Schema: schema})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dropSchema(schema)
	defer l.Close()

	created := eventlog.EventData{
		ID:            eventlog.DeterministicID("example", "cus_1", "created"),
		Type:          "CustomerCreated",
		SchemaVersion: 1,
		ShopID:        "shop_1",
		OccurredAt:    time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Data:          []byte(`{"customer_id":"cus_1"}`),
		Metadata:      eventlog.Metadata{CorrelationID: "req_1", Actor: "tok_1", Source: "api"},
	}
	res, err := l.Append(ctx, "customer-cus_1", eventlog.NoStream(), created)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("appended at revision", res.NextExpectedRevision, "position", res.Position)

	// The same delivery again is a no-op that returns the first result.
	again, err := l.Append(ctx, "customer-cus_1", eventlog.NoStream(), created)
	fmt.Println("repeat:", again == res, err)

	// A different event expecting no stream conflicts.
	other := created
	other.ID = eventlog.DeterministicID("example", "cus_1", "other")
	_, err = l.Append(ctx, "customer-cus_1", eventlog.NoStream(), other)
	var wrong *eventlog.WrongRevisionError
	fmt.Println("conflict:", errors.As(err, &wrong), wrong.Actual)

	evs, err := l.ReadStream(ctx, "customer-cus_1", 0, 10)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range evs {
		fmt.Println(e.Revision, e.Type, e.OccurredAt.Format(time.RFC3339), len(e.PrevHash), len(e.Hash))
	}
	// Output:
	// appended at revision 0 position 1
	// repeat: true <nil>
	// conflict: true 0
	// 0 CustomerCreated 2025-01-02T03:04:05Z 0 32
}

func dropSchema(schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testURL())
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
}
