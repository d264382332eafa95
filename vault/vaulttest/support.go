package vaulttest

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/vault"
)

// WaitFor polls cond every millisecond until it holds, and fails t when it
// has not held within 10 s: for tests that must wait for a state they
// cannot be told about, without sleeping. what says what is awaited.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		<-tick.C
	}
}

// Answer is what one DataKey call started by CreateAll returned.
type Answer struct {
	Key []byte
	Err error
}

// CreateAll starts one v.DataKey(ctx, shop, subject, true) per subject,
// each in a goroutine that exits after its call, and returns their answers'
// channels, in the order of subjects; each channel receives one Answer.
func CreateAll(ctx context.Context, v vault.Vault, shop string, subjects []string) []chan Answer {
	out := make([]chan Answer, len(subjects))
	for i, s := range subjects {
		out[i] = make(chan Answer, 1)
		go func() { // exits after one call
			k, err := v.DataKey(ctx, shop, s, true)
			out[i] <- Answer{k, err}
		}()
	}
	return out
}

// CollectKeys receives the answer of every channel CreateAll returned for
// subjects, in order, and returns each subject's key. It fails t when a
// call failed or when two calls for one subject got different keys.
func CollectKeys(t testing.TB, subjects []string, answers []chan Answer) map[string][]byte {
	t.Helper()
	keys := map[string][]byte{}
	for i, ch := range answers {
		a := <-ch
		if a.Err != nil {
			t.Fatalf("%s: %v", subjects[i], a.Err)
		}
		if prev, ok := keys[subjects[i]]; ok && !bytes.Equal(prev, a.Key) {
			t.Fatalf("%s: two callers got different keys", subjects[i])
		}
		keys[subjects[i]] = a.Key
	}
	return keys
}

// CheckKeys fails t unless v, asked without create, returns keys[s] for
// every subject s of shop: the keys the callers got are the stored ones.
func CheckKeys(t testing.TB, v vault.Vault, shop string, keys map[string][]byte) {
	t.Helper()
	for s, k := range keys {
		got, err := v.DataKey(context.Background(), shop, s, false)
		if err != nil || !bytes.Equal(got, k) {
			t.Fatalf("%s/%s: stored key differs from the one returned (%v)", shop, s, err)
		}
	}
}

// SameKey calls get from n goroutines released together, caller i passing
// i, waits for them all, and fails t unless every call returned the same
// key without error; it returns that key. Each goroutine exits after its
// call.
func SameKey(t testing.TB, n int, get func(i int) ([]byte, error)) []byte {
	t.Helper()
	keys := make([][]byte, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { // exits after one call
			defer wg.Done()
			<-start
			keys[i], errs[i] = get(i)
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("caller %d got another key than caller 0", i)
		}
	}
	return keys[0]
}
