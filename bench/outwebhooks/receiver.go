package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
)

// receiver is the subscribers' endpoint, in the bench process: it answers
// at once (200, or 503 while failing is set), verifies each delivery's
// signature as a real receiver would (HMAC-SHA256 of the raw body under
// the subscription's secret, compared in constant time), and records per
// subscription and event id when it first arrived and how often.
// Deliveries are posted to /s/{i} (subscription i of the live run) and
// /d/{i} (of the drain); /baseline takes the bare loop's posts.
type receiver struct {
	base    string
	srv     *http.Server
	failing atomic.Bool

	mu       sync.Mutex
	secrets  map[string][]byte // path → secret
	first    map[string]time.Time
	count    map[string]int
	lags     benchkit.Durations // receive time − created_at, first receipts
	times    []time.Time        // every receipt (duplicates too)
	badSig   int
	bodySize int

	baseline atomic.Int64
}

func newReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{base: "http://" + ln.Addr().String()}
	r.reset()
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *receiver) close() { r.srv.Close() }

// reset forgets every receipt and secret.
func (r *receiver) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets, r.first, r.count = map[string][]byte{}, map[string]time.Time{}, map[string]int{}
	r.lags, r.times, r.badSig = nil, nil, 0
}

// subscribe sets the secret deliveries to path are signed with.
func (r *receiver) subscribe(path, secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets[path] = []byte(secret)
}

func verify(secret, body []byte, header string) bool {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	want := mac.Sum(nil)
	ok := false
	for _, v := range strings.Split(header, ",") {
		h, found := strings.CutPrefix(strings.TrimSpace(v), "sha256=")
		if !found {
			continue
		}
		got, err := hex.DecodeString(h)
		if err == nil && hmac.Equal(got, want) {
			ok = true
		}
	}
	return ok
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	now := time.Now()
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if req.URL.Path == "/baseline" {
		if !verify(baselineSecret, body, req.Header.Get("X-Service-Signature")) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		r.baseline.Add(1)
		w.WriteHeader(http.StatusOK)
		return
	}
	if r.failing.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	r.mu.Lock()
	secret, ok := r.secrets[req.URL.Path]
	r.mu.Unlock()
	if !ok || !verify(secret, body, req.Header.Get("X-Service-Signature")) {
		r.mu.Lock()
		r.badSig++
		r.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var m struct {
		ID        string    `json:"id"`
		CreatedAt time.Time `json:"created_at"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.ID == "" || m.ID != req.Header.Get("X-Service-Event-Id") {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	key := req.URL.Path + " " + m.ID
	r.mu.Lock()
	r.times = append(r.times, now)
	r.count[key]++
	if r.count[key] == 1 {
		r.first[key] = now
		r.lags = append(r.lags, now.Sub(m.CreatedAt))
	}
	r.bodySize = len(body)
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// tally is what the receiver got for paths starting with prefix.
type tally struct {
	distinct, duplicates int
	last                 time.Time
}

func (r *receiver) tally(prefix string) tally {
	r.mu.Lock()
	defer r.mu.Unlock()
	var t tally
	for k, n := range r.count {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		t.distinct++
		t.duplicates += n - 1
		if f := r.first[k]; f.After(t.last) {
			t.last = f
		}
	}
	return t
}

// between counts the receipts in [from, to).
func (r *receiver) between(from, to time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, t := range r.times {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

// waitFor waits until want distinct deliveries under prefix arrived, or
// none arrived for stall; it returns the tally then.
func (r *receiver) waitFor(prefix string, want int, stall time.Duration) tally {
	lastN, lastChange := -1, time.Now()
	for {
		t := r.tally(prefix)
		if t.distinct >= want {
			return t
		}
		if t.distinct != lastN {
			lastN, lastChange = t.distinct, time.Now()
		} else if time.Since(lastChange) > stall {
			return t
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func subPath(prefix string, i int) string { return prefix + strconv.Itoa(i) }
