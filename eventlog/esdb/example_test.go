package esdb_test

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/esdb"
)

// Open a log on a node, append with an expectation, and follow the log from
// a checkpoint. (Needs a server, so it is compiled but not run.)
func ExampleOpen() {
	ctx := context.Background()
	l, err := esdb.Open(ctx, esdb.Config{
		URL:            "esdb://127.0.0.1:2113?tls=false",
		ResubscribeMin: 100 * time.Millisecond,
		ResubscribeMax: 10 * time.Second,
	})
	if err != nil {
		fmt.Println("open:", err) // matches eventlog.ErrUnavailable when the node is down
		return
	}
	defer l.Close()

	res, err := l.Append(ctx, "customer-cus_1", eventlog.NoStream(), eventlog.EventData{
		ID: uuid.New(), Type: "CustomerCreated", SchemaVersion: 1,
		ShopID: "shop_1", OccurredAt: time.Now(), Data: []byte(`{}`),
		Metadata: eventlog.Metadata{CorrelationID: "req_1", Actor: "tok_1", Source: "api"},
	})
	if err != nil {
		fmt.Println("append:", err)
		return
	}
	fmt.Println("appended at revision", res.NextExpectedRevision)

	var checkpoint eventlog.Position // a projector's stored checkpoint
	sub, err := l.Subscribe(ctx, checkpoint)
	if err != nil {
		fmt.Println("subscribe:", err)
		return
	}
	defer sub.Close()
	for e := range sub.Events() {
		fmt.Println(e.StreamID, e.Revision, e.Type)
		checkpoint = e.Position
	}
	if err := sub.Err(); err != nil {
		fmt.Println("subscription ended:", err)
	}
}
