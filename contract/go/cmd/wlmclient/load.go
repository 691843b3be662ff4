// The load of wlmclient submit: keyed jobs, one SubmitJob call each, a given
// number of calls in flight on one connection, the way a Go client without
// batching (the original virtual kubelet) sends them. bench/redbox_submit.py
// drives it so that a single-call arm's client costs what a compiled client
// costs, as the bare slurmrestd arm's plain HTTP client does.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"wlmvk/contract/api"
)

// newKey is a fresh idempotency key: 16 random bytes in hex, as a UUID's.
func newKey() string {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(raw[:])
}

// submitMany sends count keyed jobs, concurrency calls in flight; the job ids
// in the order they were answered, or the first error.
func submitMany(ctx context.Context, c api.WorkloadManagerClient, script, partition string, count, concurrency int) ([]int64, error) {
	var (
		left  atomic.Int64
		mu    sync.Mutex
		ids   = make([]int64, 0, count)
		first error
		wg    sync.WaitGroup
	)
	left.Store(int64(count))
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				got, err := c.SubmitJob(ctx, &api.SubmitJobRequest{Script: script, Partition: partition, IdempotencyKey: newKey()})
				mu.Lock()
				if err != nil && first == nil {
					first = err
				} else if err == nil {
					ids = append(ids, got.GetJobId())
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return ids, first
}

// loadFlow reads "COUNT CONCURRENCY" lines from in and answers each with one
// line: the job ids as a JSON array, or an error line (and exit 1).
func loadFlow(ctx context.Context, c api.WorkloadManagerClient, in io.Reader, script, partition string) {
	emit("ready", line{})
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		var count, concurrency int
		if _, err := fmt.Sscan(lines.Text(), &count, &concurrency); err != nil || count < 0 || concurrency < 1 {
			fail("load", fmt.Errorf("want COUNT CONCURRENCY, got %q", lines.Text()))
		}
		ids, err := submitMany(ctx, c, script, partition, count, concurrency)
		if err != nil {
			fail("submit", err)
		}
		if err := out.Encode(ids); err != nil {
			fmt.Fprintln(os.Stderr, "wlmclient: writing output:", err)
			os.Exit(1)
		}
	}
}
