package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/sqlite"
)

// The helper-process pattern: the test binary re-executes itself with these
// variables set, and TestMain runs the helper instead of the tests.
const (
	helperModeEnv  = "CGP_EVENTLOG_SQLITE_HELPER"
	helperPathEnv  = "CGP_EVENTLOG_SQLITE_HELPER_PATH"
	helperCountEnv = "CGP_EVENTLOG_SQLITE_HELPER_COUNT"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperModeEnv); mode != "" {
		os.Exit(runHelper(mode, os.Getenv(helperPathEnv), os.Getenv(helperCountEnv)))
	}
	os.Exit(m.Run())
}

// runHelper is the child process. Mode "append" appends count events one by
// one to a stream of its own; mode "burst" appends from 32 goroutines until
// killed (or count events, a safety bound). Both print "ack <id>" on stdout
// for every acknowledged event, after Append returned.
func runHelper(mode, path, countText string) int {
	count, err := strconv.Atoi(countText)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: bad count:", err)
		return 2
	}
	l, err := sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: open:", err)
		return 1
	}
	defer l.Close()
	var mu sync.Mutex
	ack := func(id uuid.UUID) {
		mu.Lock()
		defer mu.Unlock()
		// One write per line, shorter than PIPE_BUF: atomic on the pipe.
		_, _ = os.Stdout.WriteString("ack " + id.String() + "\n")
	}
	appenders := 1
	if mode == "burst" {
		appenders = 32
	}
	payload := make([]byte, 1024)
	var wg sync.WaitGroup
	failed := make(chan error, appenders)
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < count/appenders; i++ {
				e := eventlog.EventData{
					ID: uuid.New(), Type: "HelperAppended", SchemaVersion: 1, ShopID: "shop_helper",
					OccurredAt: time.Now().UTC(), Data: payload,
				}
				stream := fmt.Sprintf("helper-%d-%d-%d", os.Getpid(), a, i/100)
				if _, err := l.Append(context.Background(), stream, eventlog.Any(), e); err != nil {
					failed <- err
					return
				}
				ack(e.ID)
			}
		}()
	}
	wg.Wait()
	close(failed)
	if err := <-failed; err != nil {
		fmt.Fprintln(os.Stderr, "helper: append:", err)
		return 1
	}
	return 0
}

// startHelper starts the child process and returns it with a channel of the
// acknowledged ids it prints (closed at the end of its output).
func startHelper(t *testing.T, mode, path string, count int) (*exec.Cmd, <-chan uuid.UUID) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		helperModeEnv+"="+mode, helperPathEnv+"="+path, helperCountEnv+"="+strconv.Itoa(count))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("stdout pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	acks := make(chan uuid.UUID, 1024)
	go func() { // exits at the end of the child's output
		defer close(acks)
		readAcks(t, out, acks)
	}()
	return cmd, acks
}

func readAcks(t *testing.T, out io.Reader, acks chan<- uuid.UUID) {
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		text, ok := strings.CutPrefix(sc.Text(), "ack ")
		if !ok {
			t.Errorf("helper printed %q", sc.Text())
			continue
		}
		id, err := uuid.Parse(text)
		if err != nil {
			t.Errorf("helper printed a bad id %q: %v", text, err)
			continue
		}
		acks <- id
	}
}

func TestSubscriptionSeesOtherProcessWithinOneSecond(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	l := openLog(t, sqlite.Config{Path: path})
	sub, err := l.Subscribe(context.Background(), 0)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	defer sub.Close()

	const count = 5
	cmd, acks := startHelper(t, "append", path, count)
	ackedAt := map[uuid.UUID]time.Time{}
	seen := map[uuid.UUID]bool{}
	overall := time.NewTimer(30 * time.Second)
	defer overall.Stop()
	for len(seen) < count {
		// Fail when the oldest acknowledged event is not seen within 1 s.
		var (
			late  <-chan time.Time
			timer *time.Timer
		)
		if oldest, ok := oldestAck(ackedAt); ok {
			timer = time.NewTimer(max(time.Until(oldest.Add(time.Second)), 0))
			late = timer.C
		}
		select {
		case id, ok := <-acks:
			if !ok {
				acks = nil
				break
			}
			if !seen[id] {
				ackedAt[id] = time.Now()
			}
		case e, ok := <-sub.Events():
			if !ok {
				t.Fatalf("subscription ended: %v", sub.Err())
			}
			if e.Type != "HelperAppended" || seen[e.ID] {
				t.Fatalf("unexpected event %s (%s)", e.ID, e.Type)
			}
			seen[e.ID] = true
			delete(ackedAt, e.ID)
		case <-late:
			t.Fatalf("an event appended by another process was not delivered within 1 s of its acknowledgement (%d of %d seen)", len(seen), count)
		case <-overall.C:
			t.Fatalf("saw %d of %d events of the other process", len(seen), count)
		}
		if timer != nil {
			timer.Stop()
		}
	}
	if acks != nil {
		for range acks { // drain the output before Wait
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
}

func oldestAck(acked map[uuid.UUID]time.Time) (time.Time, bool) {
	var oldest time.Time
	for _, at := range acked {
		if oldest.IsZero() || at.Before(oldest) {
			oldest = at
		}
	}
	return oldest, !oldest.IsZero()
}

func TestAcknowledgedAppendsSurviveSIGKILL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	// Create the file first so the child does not race the schema creation.
	l, err := sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	const killAfter = 5000
	cmd, acks := startHelper(t, "burst", path, 10_000_000)
	acked := map[uuid.UUID]bool{}
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	killed := false
	for acks != nil {
		select {
		case id, ok := <-acks:
			if !ok {
				acks = nil
				continue
			}
			acked[id] = true
			if len(acked) == killAfter && !killed {
				// Mid-burst: 32 appenders are queued or committing.
				if err := cmd.Process.Kill(); err != nil {
					t.Fatalf("kill helper: %v", err)
				}
				killed = true
			}
		case <-deadline.C:
			_ = cmd.Process.Kill()
			t.Fatalf("helper acknowledged %d events within 60 s, want %d", len(acked), killAfter)
		}
	}
	if err := cmd.Wait(); err == nil || !killed {
		t.Fatalf("helper ended on its own (%v), want it killed mid-burst", err)
	}

	l = openLog(t, sqlite.Config{Path: path})
	all := readAll(t, l)
	found := make(map[uuid.UUID]int, len(all))
	v := eventlog.NewChainVerifier()
	for i := range all {
		found[all[i].ID]++
		if err := v.Check(&all[i]); err != nil {
			t.Errorf("chain after the crash: %v", err)
		}
	}
	for id := range acked {
		if found[id] != 1 {
			t.Errorf("acknowledged event %s found %d times after SIGKILL", id, found[id])
		}
	}
	if len(all) < len(acked) {
		t.Errorf("log holds %d events, %d were acknowledged", len(all), len(acked))
	}
	t.Logf("%d acknowledged before SIGKILL, %d in the log after", len(acked), len(all))
	// The log still takes appends after recovery.
	if _, err := l.Append(context.Background(), "after-crash", eventlog.NoStream(), newEvent("A")); err != nil {
		t.Errorf("append after recovery: %v", err)
	}
}
