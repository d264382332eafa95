package replay_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	eventsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
	"github.com/cgp-platform/cgp/replay"
)

// The lanes read the log together, and the reading waits for every lane:
// a lane that fails before it reads (its projector cannot run) stops the
// others, and the replay reports that failure instead of waiting forever.
func TestReplayLaneFailureStopsTheOthers(t *testing.T) {
	dir := t.TempDir()
	log, err := eventsqlite.Open(eventsqlite.Config{Path: filepath.Join(dir, "events.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	appendEvents(t, log, 3)
	broken := projections.Projector{Name: "broken", // no Handle: the lane's runtime refuses it
		Migrations: []readmodel.Migration{{Version: 1, SQL: `CREATE TABLE broken (x INTEGER)`}}}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // generous: a loaded machine
	defer cancel()
	_, err = replay.Run(ctx, replay.Config{Dir: dir, Log: log, Logger: zerolog.Nop(),
		Projectors: []projections.Projector{items(), broken}})
	if err == nil {
		t.Fatal("the replay succeeded with a projector that cannot run")
	}
	if errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "Handle is required") {
		t.Fatalf("replay error %v, want the broken lane's failure before the deadline", err)
	}
}
