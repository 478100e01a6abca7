package main

// The `bench` mode of sdkecho, for the fabric benchmark (bench/fabric.ts):
//
//	sdkecho bench <identity.json> <service> <seconds> <concurrency>
//
// authenticates, makes one warm-up dial (not counted: it fetches the service, the session and opens the edge router
// connection), then runs <concurrency> loops for <seconds>, each dialing over and over: Dial, write one line, read
// the first byte of the echo (must be 'e' of "echo:"), close. The time from the start of Dial to that first byte
// is one sample ("dial to first byte"). No loop starts a dial after the time is up; dials under way finish. Prints
// one JSON line and exits 0 (also when dials failed: the errors are in the line; firstError names the first one):
//
//	{"dials":N,"perSecond":X,"p50Ms":X,"p99Ms":X,"errors":N,"firstError":"..."}
//
// perSecond = successful dials ÷ the wall time from the first measured dial's start to the last one's end.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/openziti/sdk-golang/ziti"
)

// oneDial dials, writes a line, reads the echo's first byte and closes; returns the time to that byte.
func oneDial(ctx ziti.Context, service string) (time.Duration, error) {
	started := time.Now()
	conn, err := ctx.Dial(service)
	if err != nil {
		return 0, fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("bench\n")); err != nil {
		return 0, fmt.Errorf("write: %w", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	first := make([]byte, 1)
	if _, err := io.ReadFull(conn, first); err != nil {
		return 0, fmt.Errorf("read: %w", err)
	}
	elapsed := time.Since(started)
	if first[0] != 'e' {
		return 0, fmt.Errorf("first byte %q, want 'e'", first[0])
	}
	return elapsed, nil
}

// percentileMs is the nearest-rank percentile of ascending durations, in milliseconds (0 when empty).
func percentileMs(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100+0.999999999) - 1
	if rank < 0 {
		rank = 0
	}
	if rank >= len(sorted) {
		rank = len(sorted) - 1
	}
	return float64(sorted[rank].Microseconds()) / 1000
}

func benchDials(identityFile, service string, seconds, concurrency int) {
	ctx := context(identityFile)
	if err := ctx.Authenticate(); err != nil {
		fail("authenticate: %v", err)
	}
	if _, err := oneDial(ctx, service); err != nil {
		fail("warm-up %v", err)
	}
	var (
		mu         sync.Mutex
		samples    []time.Duration
		errors     int
		firstError string
		lastEnd    time.Time
		wg         sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(time.Duration(seconds) * time.Second)
	for i := 0; i < concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				d, err := oneDial(ctx, service)
				mu.Lock()
				if err != nil {
					errors++
					if firstError == "" {
						firstError = err.Error()
					}
				} else {
					samples = append(samples, d)
				}
				lastEnd = time.Now()
				mu.Unlock()
				if err != nil {
					// A failing network must not turn the loop into a busy spin.
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	sort.Slice(samples, func(a, b int) bool { return samples[a] < samples[b] })
	wall := lastEnd.Sub(start).Seconds()
	perSecond := 0.0
	if wall > 0 {
		perSecond = float64(len(samples)) / wall
	}
	out, _ := json.Marshal(struct {
		Dials      int     `json:"dials"`
		PerSecond  float64 `json:"perSecond"`
		P50Ms      float64 `json:"p50Ms"`
		P99Ms      float64 `json:"p99Ms"`
		Errors     int     `json:"errors"`
		FirstError string  `json:"firstError,omitempty"`
	}{len(samples), perSecond, percentileMs(samples, 50), percentileMs(samples, 99), errors, firstError})
	fmt.Println(string(out))
	ctx.Close()
}

// benchMain parses `bench <identity.json> <service> <seconds> <concurrency>` (os.Args from index 2).
func benchMain(args []string) {
	if len(args) != 4 {
		fail("usage: sdkecho bench <identity.json> <service> <seconds> <concurrency>")
	}
	seconds, err := strconv.Atoi(args[2])
	if err != nil || seconds < 1 {
		fail("seconds: a positive integer, got %q", args[2])
	}
	concurrency, err := strconv.Atoi(args[3])
	if err != nil || concurrency < 1 {
		fail("concurrency: a positive integer, got %q", args[3])
	}
	benchDials(args[0], args[1], seconds, concurrency)
	os.Exit(0)
}
