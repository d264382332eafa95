package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	_ "github.com/mattn/go-sqlite3"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
	"github.com/cgp-platform/cgp/eventlog"
)

// dupPlan plans total posts of which fraction repeat another post's
// delivery (same webhook id, same body): it returns the number of unique
// deliveries and, for each post in the order they are started, the index of
// the unique delivery it sends. The repeats fall on two thirds as many
// deliveries as there are repeats, drawn at random, so that most repeated
// deliveries are sent twice or three times and some more often.
func dupPlan(total int, fraction float64, seed uint64) (unique int, posts []int) {
	repeats := int(math.Round(float64(total) * fraction))
	unique = total - repeats
	if unique < 1 {
		return 0, nil
	}
	r := rand.New(rand.NewPCG(seed, 0xd0b5))
	repeated := r.Perm(unique)[:min(unique, max(1, repeats*2/3))]
	posts = make([]int, 0, total)
	for i := range unique {
		posts = append(posts, i)
	}
	for range repeats {
		posts = append(posts, repeated[r.IntN(len(repeated))])
	}
	r.Shuffle(len(posts), func(i, j int) { posts[i], posts[j] = posts[j], posts[i] })
	return unique, posts
}

// dupResult is the outcome of the duplicates scenario.
type dupResult struct {
	posts, unique, repeated, maxCopies int
	ok, non2xx, transport              int
	overlapping                        int // repeated deliveries with two copies in flight at once
	samePosition                       int // repeated deliveries whose copies were all answered with one position
	lat                                benchkit.Durations
	copies                             []int // posts of each unique delivery
	log                                logCheck
}

// pass reports whether every post was acknowledged and every unique
// delivery is in the log exactly once.
func (d dupResult) pass() bool {
	return d.ok == d.posts && d.log.exactlyOnce()
}

type postOutcome struct {
	status     int
	start, end time.Time
	position   string
}

// runDups posts cfg.dupTotal deliveries at once, cfg.dupFraction of them
// repeats, to a fresh server, stops it and checks its log.
func runDups(cfg config, gen generator) (dupResult, error) {
	unique, plan := dupPlan(cfg.dupTotal, cfg.dupFraction, gen.seed)
	if unique == 0 {
		return dupResult{}, fmt.Errorf("-dups-total %d with -dups-fraction %v leaves no unique delivery", cfg.dupTotal, cfg.dupFraction)
	}
	ds := gen.deliveries(0, unique)
	in, err := startCGP(cfg, gen)
	if err != nil {
		return dupResult{}, err
	}
	defer in.close()
	tr := &http.Transport{MaxIdleConns: len(plan), MaxIdleConnsPerHost: len(plan), IdleConnTimeout: time.Minute}
	c := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	defer c.CloseIdleConnections()
	// Open the connections first, so that the posts start together
	// instead of queueing behind a storm of connection set-ups.
	together(len(plan), func(int) {
		if resp, err := c.Get(in.srv.Base + "/healthz"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	})
	out := make([]postOutcome, len(plan))
	t := in.target()
	together(len(plan), func(k int) {
		out[k] = postOne(c, t, ds[plan[k]])
	})
	if err := in.stop(); err != nil {
		return dupResult{}, err
	}
	res := summarise(plan, out, unique)
	if res.log, err = checkLog(in.eventsDB(), in.tenant.ShopID, ds); err != nil {
		return dupResult{}, err
	}
	return res, nil
}

// together runs fn(0) … fn(n-1) on n goroutines released at once, and
// waits for them.
func together(n int, fn func(k int)) {
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	for k := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-release
			fn(k)
		}()
	}
	ready.Wait()
	close(release)
	done.Wait()
}

func postOne(c *http.Client, t target, d benchkit.Delivery) postOutcome {
	var o postOutcome
	req, err := d.Request(context.Background(), t.url, t.domain)
	if err != nil {
		return o
	}
	o.start = time.Now()
	resp, err := c.Do(req)
	o.end = time.Now()
	if err != nil {
		return o
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	o.end = time.Now()
	o.status = resp.StatusCode
	o.position = resp.Header.Get("X-Event-Position")
	return o
}

// summarise counts the answers of the posts, and, per repeated delivery,
// whether copies were in flight together and answered with one position.
func summarise(plan []int, out []postOutcome, unique int) dupResult {
	res := dupResult{posts: len(plan), unique: unique}
	copies := make([][]postOutcome, unique)
	for k, o := range out {
		copies[plan[k]] = append(copies[plan[k]], o)
		switch {
		case o.status == 0:
			res.transport++
		case o.status >= 200 && o.status < 300:
			res.ok++
			res.lat = append(res.lat, o.end.Sub(o.start))
		default:
			res.non2xx++
		}
	}
	res.copies = make([]int, unique)
	for i, cs := range copies {
		res.copies[i] = len(cs)
		res.maxCopies = max(res.maxCopies, len(cs))
		if len(cs) < 2 {
			continue
		}
		res.repeated++
		if overlap(cs) {
			res.overlapping++
		}
		same := cs[0].position != ""
		for _, o := range cs[1:] {
			same = same && o.position == cs[0].position
		}
		if same {
			res.samePosition++
		}
	}
	return res
}

// overlap reports whether two of the posts were in flight at once.
func overlap(cs []postOutcome) bool {
	for i := range cs {
		for j := i + 1; j < len(cs); j++ {
			if cs[i].start.Before(cs[j].end) && cs[j].start.Before(cs[i].end) {
				return true
			}
		}
	}
	return false
}

// logCheck is what the event log holds of the scenario's deliveries.
type logCheck struct {
	unique   int            // unique deliveries sent
	once     int            // with exactly one event of the delivery's event id
	missing  int            // with none
	multiple int            // with more than one
	types    map[string]int // types of the events with a delivery's id
	streams  map[string]int // stream categories of those events
	// byActor counts, per unique delivery, the events whose metadata
	// names the delivery as their actor (webhook:<id>), whatever their id.
	byActor []int
	// derived counts the events naming one of the deliveries as actor
	// with another id than the delivery's (further events a mapping
	// derived from it).
	derived int
}

// actorRange returns the least and most events naming a delivery as
// their actor, over the deliveries sent once and over those sent more
// often: a delivery applied twice would show more events than any sent
// once.
func (d dupResult) actorRange() (onceMin, onceMax, repMin, repMax int) {
	onceMin, repMin = math.MaxInt, math.MaxInt
	for i, n := range d.log.byActor {
		if d.copies[i] > 1 {
			repMin, repMax = min(repMin, n), max(repMax, n)
		} else {
			onceMin, onceMax = min(onceMin, n), max(onceMax, n)
		}
	}
	if onceMin == math.MaxInt {
		onceMin = 0
	}
	if repMin == math.MaxInt {
		repMin = 0
	}
	return onceMin, onceMax, repMin, repMax
}

func (l logCheck) exactlyOnce() bool {
	return l.unique > 0 && l.once == l.unique && l.missing == 0 && l.multiple == 0
}

// checkLog reads the embedded event log at path read-only and counts, for
// each delivery, the events of the shop carrying its deterministic event
// id (eventlog.DeterministicID("commerce", shop, webhook id), the id the
// receiver gives the first event of a delivery), whatever their stream or
// type.
func checkLog(path, shopID string, ds []benchkit.Delivery) (logCheck, error) {
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_query_only=1&_busy_timeout=5000")
	if err != nil {
		return logCheck{}, fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	want := make(map[uuid.UUID]int, len(ds))
	actor := make(map[string]int, len(ds))
	for i, d := range ds {
		want[eventlog.DeterministicID("commerce", shopID, d.ID)] = i
		actor["webhook:"+d.ID] = i
	}
	rows, err := db.Query("SELECT event_id, stream, type, metadata FROM events WHERE shop_id = ?", shopID)
	if err != nil {
		return logCheck{}, fmt.Errorf("read %s: %w", path, err)
	}
	defer rows.Close()
	l := logCheck{unique: len(ds), types: map[string]int{}, streams: map[string]int{}, byActor: make([]int, len(ds))}
	counts := make([]int, len(ds))
	for rows.Next() {
		var id []byte
		var stream, typ, meta string
		if err := rows.Scan(&id, &stream, &typ, &meta); err != nil {
			return logCheck{}, fmt.Errorf("read %s: %w", path, err)
		}
		u, err := uuid.FromBytes(id)
		if err != nil {
			return logCheck{}, fmt.Errorf("read %s: event id: %w", path, err)
		}
		var m eventlog.Metadata
		if err := json.Unmarshal([]byte(meta), &m); err != nil {
			return logCheck{}, fmt.Errorf("read %s: metadata of event %s: %w", path, u, err)
		}
		i, ours := want[u]
		if ours {
			counts[i]++
			l.types[typ]++
			l.streams[category(stream)]++
		}
		if j, ok := actor[m.Actor]; ok {
			l.byActor[j]++
			if !ours {
				l.derived++
			}
		}
	}
	if err := rows.Err(); err != nil {
		return logCheck{}, fmt.Errorf("read %s: %w", path, err)
	}
	for _, n := range counts {
		switch {
		case n == 0:
			l.missing++
		case n == 1:
			l.once++
		default:
			l.multiple++
		}
	}
	return l, nil
}

// category is the part of a stream name before its first dash.
func category(stream string) string {
	c, _, _ := strings.Cut(stream, "-")
	return c
}
