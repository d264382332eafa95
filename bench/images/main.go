// Command images measures the image operations over real HTTP against the
// cgp binary (issue 19, "Figures"): it starts the binary on a fresh data
// directory with ONNX Runtime and the ISNet model, makes an enterprise shop
// and an image-API key, and then
//
//  1. removes the background of a synthetic 1024×1024 product photo (PNG),
//     one request at a time with Prefer: wait=30, N times (after one
//     warm-up request that loads the session, not counted): the latency
//     per request as the client sees it (p50, p99) and the engine's run_ms
//     the server reports (median);
//  2. reads the server's peak resident memory (VmHWM of /proc/PID/status)
//     after the background removals, and samples VmRSS every 100 ms as a
//     cross-check;
//  3. submits M background removals at once without waiting, polls until
//     all finished and reports the operations per minute with the worker
//     pool saturated (M / elapsed minutes, from the first submission to
//     the last finish seen);
//  4. upscales a synthetic 1000×1000 texture (PNG) ×2 and ×4, one request
//     at a time with Prefer: wait=30, N times each: p50 over HTTP and the
//     engine's run_ms (median).
//
// Each run starts its own server; with more than one run, the figures are
// the medians of the runs.
//
//	go run ./bench/images -bin bin/cgp -bg 20 -saturate 12 -upscales 10 -workers 2 -runs 1
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
)

// options are the command line.
type options struct {
	bin, ortLib, model string
	bg, saturate       int
	upscales           int
	workers, runs      int
	bgSize, upSize     int
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/cgp", "path of the cgp binary (go build -o bin/cgp ./cmd/cgp)")
	flag.StringVar(&o.ortLib, "onnxruntime-lib", ".cache/models/libonnxruntime.so.1.24.3", "ONNX Runtime's shared library (make models)")
	flag.StringVar(&o.model, "bgremove-model", ".cache/models/isnet-small.onnx", "the background-removal model (make models)")
	flag.IntVar(&o.bg, "bg", 20, "sequential background removals measured (after one warm-up)")
	flag.IntVar(&o.saturate, "saturate", 12, "background removals submitted at once for the saturated throughput")
	flag.IntVar(&o.upscales, "upscales", 10, "sequential upscales measured per scale (×2 and ×4)")
	flag.IntVar(&o.workers, "workers", 2, "--image-workers of the server")
	flag.IntVar(&o.runs, "runs", 1, "runs, each on a fresh server and data directory; medians are reported")
	flag.IntVar(&o.bgSize, "bg-size", 1024, "side of the background-removal picture, pixels")
	flag.IntVar(&o.upSize, "upscale-size", 1000, "side of the upscaled picture, pixels")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

// result is one run's measurements.
type result struct {
	warmup     time.Duration
	bgLat      benchkit.Durations
	bgRun      []float64 // run_ms of the sequential removals
	hwm        int64     // VmHWM after the background removals
	sampledRSS int64     // largest VmRSS sampled every 100 ms meanwhile
	idleRSS    int64     // VmRSS after start, before any operation
	satElapsed time.Duration
	satRun     []float64
	upLat      map[int]benchkit.Durations
	upRun      map[int][]float64
	finalHWM   int64
	errorLines int64
}

func run(o options) error {
	for _, p := range []*string{&o.bin, &o.ortLib, &o.model} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return err
		}
		*p = abs
	}
	photo, err := encodePNG(productPhoto(o.bgSize))
	if err != nil {
		return err
	}
	tex, err := encodePNG(texture(o.upSize, o.upSize))
	if err != nil {
		return err
	}
	fmt.Printf("background removal: %d×%d PNG product photo, %d KB; upscale: %d×%d PNG texture, %d KB\n",
		o.bgSize, o.bgSize, len(photo)>>10, o.upSize, o.upSize, len(tex)>>10)
	var rs []result
	for i := range o.runs {
		fmt.Printf("run %d:\n", i+1)
		r, err := once(o, photo, tex)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	summary(o, rs)
	return nil
}

// once runs every measurement on a fresh server and data directory.
func once(o options, photo, tex []byte) (result, error) {
	r := result{upLat: map[int]benchkit.Durations{}, upRun: map[int][]float64{}}
	dir, err := os.MkdirTemp("", "cgp-images-bench-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	tn, err := benchkit.NewTenant(o.bin, dir, "Bench", "images-bench.example.com", "bench-secret-0123456789abcdef", "enterprise")
	if err != nil {
		return r, err
	}
	mint, err := benchkit.CLI(o.bin, dir, "image-keys", "mint", "--shop", tn.ShopID, "--scopes", "images:read,images:write")
	if err != nil {
		return r, err
	}
	key, _ := mint["token"].(string)
	if key == "" {
		return r, errors.New("image-keys mint: no token in the output")
	}
	// The per-token rate limit is lifted (the saturated phase polls every
	// operation), and the daily decision-intelligence run is off: neither
	// is what this measures.
	var logged sync.Mutex
	var errorLogs []string
	onLine := func(line []byte) {
		var m struct{ Level, Message, Error string }
		if json.Unmarshal(line, &m) == nil && m.Level == "error" {
			logged.Lock()
			if len(errorLogs) < 5 {
				errorLogs = append(errorLogs, m.Message+": "+m.Error)
			}
			logged.Unlock()
		}
	}
	srv, err := benchkit.StartWatching(o.bin, dir, onLine, "--onnxruntime-lib", o.ortLib, "--bgremove-model", o.model,
		"--image-workers", strconv.Itoa(o.workers), "--rate-limit-enterprise", "10000000", "--di-daily-at", "off")
	if err != nil {
		return r, err
	}
	defer func() { _ = srv.Stop() }()
	b := &bench{base: srv.Base, key: key, client: benchkit.Client(0, 5*time.Minute)}
	r.idleRSS, _ = srv.RSS()

	// The server's resident memory, sampled every 100 ms during the
	// background removals.
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, err := srv.RSS(); err == nil {
				r.sampledRSS = max(r.sampledRSS, rss)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	stopSampling := func() {
		if stop != nil {
			close(stop)
			sampler.Wait()
			stop = nil
		}
	}
	defer stopSampling()

	// 1. Sequential background removals, after one warm-up.
	const bgPath = "/api/v1/images/background-removals"
	t0 := time.Now()
	if _, err := b.waited(bgPath, photo); err != nil {
		return r, fmt.Errorf("warm-up: %w", err)
	}
	r.warmup = time.Since(t0)
	fmt.Printf("  warm-up background removal (loads the session): %.2f s\n", r.warmup.Seconds())
	for range o.bg {
		t0 := time.Now()
		op, err := b.waited(bgPath, photo)
		if err != nil {
			return r, err
		}
		r.bgLat = append(r.bgLat, time.Since(t0))
		r.bgRun = append(r.bgRun, op.runMS)
	}
	fmt.Printf("  background removal ×%d, sequential: p50 %.2f s, p99 %.2f s, max %.2f s; run_ms median %.0f\n",
		o.bg, r.bgLat.P(50).Seconds(), r.bgLat.P(99).Seconds(), r.bgLat.Max().Seconds(), benchkit.Median(r.bgRun))

	// 3. Saturated: M at once, then poll until all finished.
	t0 = time.Now()
	ids := make([]string, o.saturate)
	errs := make([]error, o.saturate)
	var wg sync.WaitGroup
	for i := range o.saturate {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, op, err := b.post(bgPath, photo, 0)
			if err == nil && st != http.StatusAccepted {
				err = fmt.Errorf("submit: %d", st)
			}
			ids[i], errs[i] = op.id, err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return r, err
	}
	submitted := time.Since(t0)
	pending := map[string]bool{}
	for _, id := range ids {
		pending[id] = true
	}
	for len(pending) > 0 {
		if time.Since(t0) > time.Duration(o.saturate)*2*time.Minute {
			return r, fmt.Errorf("saturated: %d operations not finished after %v", len(pending), time.Since(t0))
		}
		time.Sleep(100 * time.Millisecond)
		for id := range pending {
			op, err := b.get(id)
			if err != nil {
				return r, err
			}
			if op.finished() {
				if op.status != "succeeded" {
					return r, fmt.Errorf("saturated: operation %s %s", id, op.status)
				}
				delete(pending, id)
				r.satRun = append(r.satRun, op.runMS)
			}
		}
	}
	r.satElapsed = time.Since(t0)
	fmt.Printf("  background removal ×%d at once (%d workers): submitted in %.2f s, all finished in %.1f s = %.2f ops/min; run_ms median %.0f\n",
		o.saturate, o.workers, submitted.Seconds(), r.satElapsed.Seconds(), float64(o.saturate)/r.satElapsed.Minutes(), benchkit.Median(r.satRun))

	// 2. Peak memory over the background removals.
	stopSampling()
	if r.hwm, err = vmHWM(srv.Pid()); err != nil {
		return r, err
	}
	fmt.Printf("  server memory: VmRSS idle %.0f MiB, VmHWM after the background removals %.0f MiB, largest VmRSS sampled %.0f MiB\n",
		mib(r.idleRSS), mib(r.hwm), mib(r.sampledRSS))

	// 4. Upscales.
	for _, scale := range []int{2, 4} {
		path := "/api/v1/images/upscales?scale=" + strconv.Itoa(scale)
		for range o.upscales {
			t0 := time.Now()
			op, err := b.waited(path, tex)
			if err != nil {
				return r, err
			}
			r.upLat[scale] = append(r.upLat[scale], time.Since(t0))
			r.upRun[scale] = append(r.upRun[scale], op.runMS)
		}
		fmt.Printf("  upscale ×%d ×%d, sequential: p50 %.0f ms, max %.0f ms; run_ms median %.0f\n", scale, o.upscales,
			benchkit.Ms(r.upLat[scale].P(50)), benchkit.Ms(r.upLat[scale].Max()), benchkit.Median(r.upRun[scale]))
	}
	r.finalHWM, _ = vmHWM(srv.Pid())
	r.errorLines = srv.ErrorLines.Load()
	logged.Lock()
	for _, l := range errorLogs {
		fmt.Printf("  server error log: %s\n", l)
	}
	logged.Unlock()
	return r, nil
}

type bench struct {
	base, key string
	client    *http.Client
}

// operation is what the bench reads of an image operation.
type operation struct {
	id, status string
	runMS      float64 // -1 when the server did not report it
}

func (o operation) finished() bool { return o.status == "succeeded" || o.status == "failed" }

// decode reads an image operation resource.
func decode(body []byte) (operation, error) {
	var doc struct {
		Data struct {
			ID         string `json:"id"`
			Attributes struct {
				Status  string `json:"status"`
				Timings struct {
					RunMS *float64 `json:"run_ms"`
				} `json:"timings"`
			} `json:"attributes"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return operation{}, fmt.Errorf("decode operation: %w: %.200s", err, body)
	}
	op := operation{id: doc.Data.ID, status: doc.Data.Attributes.Status, runMS: -1}
	if doc.Data.Attributes.Timings.RunMS != nil {
		op.runMS = *doc.Data.Attributes.Timings.RunMS
	}
	if op.id == "" || op.status == "" {
		return op, fmt.Errorf("no operation in %.200s", body)
	}
	return op, nil
}

// post submits a picture to path (with Prefer: wait=wait when wait > 0)
// and returns the answer's status and operation.
func (b *bench) post(path string, pic []byte, wait int) (int, operation, error) {
	req, err := http.NewRequest(http.MethodPost, b.base+path, bytes.NewReader(pic))
	if err != nil {
		return 0, operation{}, err
	}
	req.Header.Set("Content-Type", "image/png")
	req.Header.Set("X-API-Key", b.key)
	if wait > 0 {
		req.Header.Set("Prefer", "wait="+strconv.Itoa(wait))
	}
	st, body, err := b.do(req)
	if err != nil {
		return st, operation{}, err
	}
	if st != http.StatusOK && st != http.StatusAccepted {
		return st, operation{}, fmt.Errorf("POST %s: %d %.300s", path, st, body)
	}
	op, err := decode(body)
	return st, op, err
}

// get reads an operation.
func (b *bench) get(id string) (operation, error) {
	req, err := http.NewRequest(http.MethodGet, b.base+"/api/v1/images/"+id, nil)
	if err != nil {
		return operation{}, err
	}
	req.Header.Set("X-API-Key", b.key)
	st, body, err := b.do(req)
	if err != nil {
		return operation{}, err
	}
	if st != http.StatusOK {
		return operation{}, fmt.Errorf("GET /api/v1/images/%s: %d %.300s", id, st, body)
	}
	return decode(body)
}

func (b *bench) do(req *http.Request) (int, []byte, error) {
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// waited submits a picture with Prefer: wait=30 and, should it still run
// then, polls it every 100 ms until it finished; it must succeed. The
// run_ms is read from the operation once finished (a GET when the answer
// did not carry it).
func (b *bench) waited(path string, pic []byte) (operation, error) {
	_, op, err := b.post(path, pic, 30)
	if err != nil {
		return op, err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for !op.finished() {
		if time.Now().After(deadline) {
			return op, fmt.Errorf("operation %s still %s", op.id, op.status)
		}
		time.Sleep(100 * time.Millisecond)
		if op, err = b.get(op.id); err != nil {
			return op, err
		}
	}
	if op.runMS < 0 {
		if op, err = b.get(op.id); err != nil {
			return op, err
		}
	}
	if op.status != "succeeded" {
		return op, fmt.Errorf("operation %s %s", op.id, op.status)
	}
	return op, nil
}

// vmHWM returns the peak resident memory (VmHWM) of process pid in bytes.
func vmHWM(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:"))
		if !ok {
			continue
		}
		fs := bytes.Fields(rest)
		if len(fs) == 0 {
			break
		}
		kb, err := strconv.ParseInt(string(fs[0]), 10, 64)
		if err != nil {
			return 0, err
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// summary prints the medians of the runs as a Markdown table.
func summary(o options, rs []result) {
	med := func(f func(result) float64) float64 { return benchkit.MedianOf(rs, f) }
	fmt.Printf("\n| measurement (median of %d runs; --image-workers %d) | value |\n|---|---|\n", len(rs), o.workers)
	fmt.Printf("| background removal %d×%d, warm-up (first request, loads the session) | %.2f s |\n", o.bgSize, o.bgSize,
		med(func(r result) float64 { return r.warmup.Seconds() }))
	fmt.Printf("| background removal %d×%d over HTTP, sequential, p50 of %d | %.2f s |\n", o.bgSize, o.bgSize, o.bg,
		med(func(r result) float64 { return r.bgLat.P(50).Seconds() }))
	fmt.Printf("| background removal, p99 of %d (nearest rank: the %s) | %.2f s |\n", o.bg, p99Rank(o.bg),
		med(func(r result) float64 { return r.bgLat.P(99).Seconds() }))
	fmt.Printf("| background removal, max of %d | %.2f s |\n", o.bg,
		med(func(r result) float64 { return r.bgLat.Max().Seconds() }))
	fmt.Printf("| background removal, server run_ms (median) | %.0f ms |\n",
		med(func(r result) float64 { return benchkit.Median(r.bgRun) }))
	fmt.Printf("| server peak RSS (VmHWM) after the background removals | %.0f MiB |\n",
		med(func(r result) float64 { return mib(r.hwm) }))
	fmt.Printf("| server largest VmRSS sampled every 100 ms | %.0f MiB |\n",
		med(func(r result) float64 { return mib(r.sampledRSS) }))
	fmt.Printf("| server VmRSS idle, before any operation | %.0f MiB |\n",
		med(func(r result) float64 { return mib(r.idleRSS) }))
	fmt.Printf("| background removals saturated: %d at once, %d workers | %.2f ops/min (%.1f s) |\n", o.saturate, o.workers,
		med(func(r result) float64 { return float64(o.saturate) / r.satElapsed.Minutes() }),
		med(func(r result) float64 { return r.satElapsed.Seconds() }))
	fmt.Printf("| background removal saturated, server run_ms (median) | %.0f ms |\n",
		med(func(r result) float64 { return benchkit.Median(r.satRun) }))
	for _, s := range []int{2, 4} {
		fmt.Printf("| upscale ×%d of %d×%d over HTTP, sequential, p50 of %d | %.0f ms |\n", s, o.upSize, o.upSize, o.upscales,
			med(func(r result) float64 { return benchkit.Ms(r.upLat[s].P(50)) }))
		fmt.Printf("| upscale ×%d, server run_ms (median) | %.0f ms |\n", s,
			med(func(r result) float64 { return benchkit.Median(r.upRun[s]) }))
	}
	fmt.Printf("| server VmHWM at the end (after the upscales) | %.0f MiB |\n",
		med(func(r result) float64 { return mib(r.finalHWM) }))
	if n := med(func(r result) float64 { return float64(r.errorLines) }); n > 0 {
		fmt.Printf("\nserver logged error lines (median %.0f)\n", n)
	}
}

// p99Rank names the sample the nearest-rank p99 of n samples is.
func p99Rank(n int) string {
	i := int(float64(n-1) * 0.99)
	if i == n-1 {
		return "max"
	}
	return strconv.Itoa(i+1) + "th of " + strconv.Itoa(n)
}
