package eventbus_test

import (
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"

	"github.com/cgp-platform/cgp/eventbus"
	"github.com/cgp-platform/cgp/eventlog/sqlite"
)

var pubsubFull = flag.Bool("pubsub-full", false, "run the watermill conformance suite at its full sizes")

// openLog opens a real SQLite event log in a temporary directory.
func openLog(t testing.TB) *sqlite.Log {
	t.Helper()
	l, err := sqlite.Open(sqlite.Config{Path: filepath.Join(t.TempDir(), "events.db")})
	if err != nil {
		t.Fatalf("open event log: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close event log: %v", err)
		}
	})
	return l
}

// TestPubSub runs watermill's conformance suite over the SQLite event log.
// One log is shared by every sub-test (each uses its own stream topic), and
// every constructor call makes a new Publisher and Subscriber over it, as
// separate processes sharing the file would.
//
// Features: the subscriber delivers in log order with ack gating
// (GuaranteedOrder), the log keeps messages across subscriber instances
// (Persistent), and a subscriber without a checkpoint reads the topic from
// the start (NewSubscriberReceivesOldMessages). Delivery is at least once,
// there are no consumer groups (projectors keep their own checkpoints), and
// message contexts are not carried through the log.
func TestPubSub(t *testing.T) {
	log := openLog(t)
	constructor := func(t *testing.T) (message.Publisher, message.Subscriber) {
		pub, err := eventbus.NewPublisher(eventbus.PublisherConfig{Log: log})
		if err != nil {
			t.Fatal(err)
		}
		sub, err := eventbus.NewSubscriber(eventbus.SubscriberConfig{Log: log, NackBackoff: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return pub, sub
	}
	tests.TestPubSub(t, tests.Features{
		GuaranteedOrder:                  true,
		Persistent:                       true,
		NewSubscriberReceivesOldMessages: true,
		// The full sizes (5,000 messages read by 50 subscribers, each
		// scanning the whole shared log) take about 40 s on two cores under
		// -race; the short sizes exercise the same paths. Run them with
		// go test ./eventbus -run TestPubSub -args -pubsub-full.
		ForceShort: !*pubsubFull,
	}, constructor, func(t *testing.T, _ string) (message.Publisher, message.Subscriber) {
		return constructor(t)
	})
}
