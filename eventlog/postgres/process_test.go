package postgres_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/postgres"
)

// The helper-process pattern: the test binary re-executes itself with these
// variables set, and TestMain runs the helper instead of the tests.
const (
	helperModeEnv   = "CGP_EVENTLOG_POSTGRES_HELPER"
	helperSchemaEnv = "CGP_EVENTLOG_POSTGRES_HELPER_SCHEMA"
	helperCountEnv  = "CGP_EVENTLOG_POSTGRES_HELPER_COUNT"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperModeEnv); mode != "" {
		os.Exit(runHelper(mode, os.Getenv(helperSchemaEnv), os.Getenv(helperCountEnv)))
	}
	os.Exit(m.Run())
}

// runHelper is the child process. Mode "append" appends count events one by
// one to a stream of its own; mode "burst" appends from 32 goroutines until
// killed (or count events, a safety bound). Both print "ack <id>" on stdout
// for every acknowledged event, after Append returned.
func runHelper(mode, schema, countText string) int {
	count, err := strconv.Atoi(countText)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: bad count:", err)
		return 2
	}
	l, err := postgres.Open(context.Background(), postgres.Config{URL: testURL(), Schema: schema})
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
func startHelper(t *testing.T, mode, schema string, count int) (*exec.Cmd, <-chan uuid.UUID) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		helperModeEnv+"="+mode, helperSchemaEnv+"="+schema, helperCountEnv+"="+strconv.Itoa(count))
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

// A subscription sees the appends of another process. Its poll interval
// is an hour, so only the notification can have woken it.
func TestSubscriptionSeesOtherProcess(t *testing.T) {
	schema := newSchema(t)
	l := openLog(t, postgres.Config{Schema: schema, PollInterval: time.Hour})
	sub, err := l.Subscribe(context.Background(), 0)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	defer sub.Close()

	const count = 5
	cmd, acks := startHelper(t, "append", schema, count)
	acked := map[uuid.UUID]bool{}
	seen := map[uuid.UUID]bool{}
	overall := time.NewTimer(30 * time.Second)
	defer overall.Stop()
	for len(seen) < count {
		select {
		case id, ok := <-acks:
			if !ok {
				acks = nil
				continue
			}
			acked[id] = true
		case e, ok := <-sub.Events():
			if !ok {
				t.Fatalf("subscription ended: %v", sub.Err())
			}
			if e.Type != "HelperAppended" || seen[e.ID] {
				t.Fatalf("unexpected event %s (%s)", e.ID, e.Type)
			}
			seen[e.ID] = true
		case <-overall.C:
			t.Fatalf("saw %d of %d events of the other process", len(seen), count)
		}
	}
	if acks != nil {
		for id := range acks { // drain the output before Wait
			acked[id] = true
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	for id := range acked {
		if !seen[id] {
			t.Errorf("acknowledged event %s was not delivered", id)
		}
	}
}

// Two processes append to one schema at once; one is killed mid-burst.
// Every acknowledged event of either is in the log exactly once, the
// positions have no gap, the chains hold, and the survivor goes on.
func TestAcknowledgedAppendsSurviveSIGKILL(t *testing.T) {
	schema := newSchema(t)
	l := openLog(t, postgres.Config{Schema: schema}) // creates the schema first

	const killAfter = 2000
	cmd, acks := startHelper(t, "burst", schema, 10_000_000)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var (
		mu      sync.Mutex
		ours    = map[uuid.UUID]bool{}
		wg      sync.WaitGroup
		ourErrs = make(chan error, 8)
	)
	for a := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				e := newEvent("ParentAppended")
				if _, err := l.Append(context.Background(), fmt.Sprintf("parent-%d-%d", a, i/100), eventlog.Any(), e); err != nil {
					ourErrs <- err
					return
				}
				mu.Lock()
				ours[e.ID] = true
				mu.Unlock()
			}
		}()
	}
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
	// The survivor goes on appending after the kill.
	mu.Lock()
	before := len(ours)
	mu.Unlock()
	if _, err := l.Append(context.Background(), "after-kill", eventlog.NoStream(), newEvent("A")); err != nil {
		t.Fatalf("append after the kill: %v", err)
	}
	stop()
	wg.Wait()
	close(ourErrs)
	if err := <-ourErrs; err != nil {
		t.Fatalf("the surviving process's append: %v", err)
	}

	all := readAll(t, l)
	found := make(map[uuid.UUID]int, len(all))
	v := eventlog.NewChainVerifier()
	for i := range all {
		found[all[i].ID]++
		if all[i].Position != uint64(i+1) {
			t.Fatalf("event %d at position %d: a gap", i, all[i].Position)
		}
		if err := v.Check(&all[i]); err != nil {
			t.Errorf("chain after the kill: %v", err)
		}
	}
	for _, set := range []map[uuid.UUID]bool{acked, ours} {
		for id := range set {
			if found[id] != 1 {
				t.Errorf("acknowledged event %s found %d times", id, found[id])
			}
		}
	}
	t.Logf("%d acknowledged by the killed process, %d by the survivor (%d before the kill), %d in the log",
		len(acked), len(ours), before, len(all))
}
