package scheduler

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzScheduler and TestFuzzSchedulerEvents drive the scheduler's event
// API with random clusters and random, often hostile, events, and check
// after every call that nothing panicked, that a failed call changed no
// observable state, that the same events give the same answers, and that
// no CPU or device is held twice nor more allocated than exists (see
// fzRun.step and fzInvariants). A failure is shrunk to a short sequence
// and printed as Go code.
//
//	go test ./scheduler -run TestFuzzSchedulerEvents -long     # 1,000,000 events
//	SLUICE_FUZZ_EVENTS=200000 go test ./scheduler -run TestFuzzSchedulerEvents
//	go test ./scheduler -run '^$' -fuzz FuzzScheduler          # coverage-guided

var fzLong = flag.Bool("long", false, "TestFuzzSchedulerEvents: run 1,000,000 events (SLUICE_FUZZ_EVENTS=N sets the count)")

// fzRunEvents bounds one run (one cluster) of the seeded driver; fzShortEvents
// is the default total.
const (
	fzRunEvents   = 400
	fzShortEvents = 3000
	fzLongEvents  = 1_000_000
	// fzShrinkReplays bounds the replays spent shrinking one failure.
	fzShrinkReplays = 1500
)

// fzDrive runs up to maxEvents events drawn from src on cluster c (until a
// byte source is exhausted), and returns the run and its first failure.
// After an event fails, the next one is a Schedule at the last good time,
// so that the next cycle's decisions of the twins are compared.
func fzDrive(src *fzSource, c fzCluster, maxEvents int) (*fzRun, *fzFailure, error) {
	r, err := newFzRun(c)
	if err != nil {
		return nil, nil, err
	}
	g := newFzGen(src, c)
	r.gen = g
	for n := 0; n < maxEvents && !src.exhausted(); n++ {
		var op fzOp
		if r.failed && r.ops[len(r.ops)-1].Kind != fkSchedule {
			op = fzOp{Kind: fkSchedule, At: g.last}
		} else {
			op = g.next()
		}
		if f := r.step(op); f != nil {
			return r, f, nil
		}
	}
	return r, nil, nil
}

// fzReplay applies ops to a fresh pair of twins on c and returns the run
// and its first failure (nil run: c is not a valid cluster).
func fzReplay(c fzCluster, ops []fzOp) (*fzRun, *fzFailure) {
	r, err := newFzRun(c)
	if err != nil {
		return nil, nil
	}
	for _, op := range ops {
		if f := r.step(op); f != nil {
			return r, f
		}
	}
	return r, nil
}

// fzShrink looks for a shorter event sequence, and a simpler cluster, that
// still fail with key, replaying at most budget times (a count, not a
// time, so that a reproduction does not depend on the machine's speed).
func fzShrink(c fzCluster, ops []fzOp, key string, budget int) (fzCluster, []fzOp) {
	left := func() bool { return budget > 0 }
	fails := func(c fzCluster, ops []fzOp) ([]fzOp, bool) {
		budget--
		r, f := fzReplay(c, ops)
		if r == nil || f == nil || f.Key != key {
			return nil, false
		}
		return ops[:f.Step+1], true
	}
	ddmin := func(c fzCluster, ops []fzOp) []fzOp {
		for chunk := len(ops) / 2; chunk >= 1 && left(); chunk /= 2 {
			for i := 0; i < len(ops) && left(); {
				try := slices.Concat(ops[:i], ops[min(i+chunk, len(ops)):])
				if got, ok := fails(c, try); ok {
					ops = got
					continue
				}
				i += chunk
			}
		}
		return ops
	}
	ops = ddmin(c, slices.Clone(ops))
	simpler := []func(*fzCluster){
		func(c *fzCluster) { c.Backfill, c.Resolution = 0, 0 },
		func(c *fzCluster) { c.Resolution = 0 },
		func(c *fzCluster) { c.Priority = false },
		func(c *fzCluster) { c.Policy = false },
		func(c *fzCluster) { c.PreemptType = 0 },
		func(c *fzCluster) { c.MinJobAge = 0 },
		func(c *fzCluster) { c.EstimateInterval = 0 },
		func(c *fzCluster) { c.Parts = fzOnlyDefault(c.Parts) },
		func(c *fzCluster) { c.Parts = fzPlainParts(c.Parts) },
		func(c *fzCluster) { c.Nodes, c.Parts = fzDropLastNode(c.Nodes, c.Parts) },
		func(c *fzCluster) { c.Nodes, c.Parts = fzDropLastNode(c.Nodes, c.Parts) },
		func(c *fzCluster) { c.Nodes, c.Parts = fzDropLastNode(c.Nodes, c.Parts) },
		func(c *fzCluster) { c.Nodes = fzPlainNodes(c.Nodes) },
	}
	for _, f := range simpler {
		if !left() {
			break
		}
		try := fzCloneCluster(c)
		f(&try)
		if got, ok := fails(try, ops); ok {
			c, ops = try, got
		}
	}
	return c, ddmin(c, ops)
}

func fzCloneCluster(c fzCluster) fzCluster {
	c.Nodes = slices.Clone(c.Nodes)
	c.Parts = slices.Clone(c.Parts)
	for i := range c.Parts {
		c.Parts[i].Nodes = slices.Clone(c.Parts[i].Nodes)
	}
	return c
}

func fzOnlyDefault(ps []fzPart) []fzPart {
	for _, p := range ps {
		if p.Default {
			return []fzPart{p}
		}
	}
	return ps
}

func fzPlainParts(ps []fzPart) []fzPart {
	for i := range ps {
		p := &ps[i]
		ps[i] = fzPart{Nodes: p.Nodes, MaxTime: p.MaxTime, DefaultTime: p.DefaultTime, Tier: p.Tier, Default: p.Default}
	}
	return ps
}

func fzPlainNodes(ns []fzNode) []fzNode {
	for i := range ns {
		ns[i].Links, ns[i].Shards = false, 0
	}
	return ns
}

func fzDropLastNode(ns []fzNode, ps []fzPart) ([]fzNode, []fzPart) {
	if len(ns) <= 1 {
		return ns, ps
	}
	last := len(ns) - 1
	for i := range ps {
		if len(ps[i].Nodes) == 0 {
			continue
		}
		ps[i].Nodes = slices.DeleteFunc(ps[i].Nodes, func(k int) bool { return k == last })
		if len(ps[i].Nodes) == 0 {
			return ns, ps // would make the partition span every node
		}
	}
	return ns[:last], ps
}

// fzReport shrinks a failure (within budget replays) and writes it as a Go
// reproduction.
func fzReport(c fzCluster, ops []fzOp, f *fzFailure, budget int) string {
	c, ops = fzShrink(c, ops[:f.Step+1], f.Key, budget)
	r, last := fzReplay(c, ops)
	if last == nil { // cannot happen: fzShrink keeps failing sequences only
		last = f
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s\nreproduction (%d events; package scheduler):\n\n", last.Key, last.Msg, len(ops))
	cl := strings.ReplaceAll(fmt.Sprintf("%#v", c), "scheduler.", "")
	fmt.Fprintf(&b, "\tcfg, _ := fzConfig(%s)\n\ts, _ := New(cfg)\n\tt0 := fzEpoch\n", cl)
	for i, op := range ops {
		note := "ok"
		if r != nil && i < len(r.errs) && r.errs[i] != "" {
			note = "error: " + r.errs[i]
		}
		if i == last.Step {
			note = "FAILS: " + last.Key
		}
		fmt.Fprintf(&b, "\t%s // %.200s\n", op.goCode(), note)
	}
	return b.String()
}

// fzSeedInput returns n bytes of seeded noise: the seed corpus.
func fzSeedInput(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(rng.Uint32())
	}
	return out
}

// FuzzScheduler is the coverage-guided form: the input's first bytes draw
// the cluster, the rest the events. The seed corpus runs with go test.
func FuzzScheduler(f *testing.F) {
	for seed := range uint64(6) {
		f.Add(fzSeedInput(seed, 2500))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &fzSource{data: data}
		c := fzGenCluster(src)
		r, fail, err := fzDrive(src, c, 20_000)
		if err != nil {
			t.Fatalf("generated cluster %#v rejected: %v", c, err)
		}
		if fail != nil {
			t.Fatal(fzReport(c, r.ops, fail, fzShrinkReplays))
		}
	})
}

// fzEventCount is how many events TestFuzzSchedulerEvents runs.
func fzEventCount(t *testing.T) int {
	if v := os.Getenv("SLUICE_FUZZ_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("SLUICE_FUZZ_EVENTS=%q: want a count of events", v)
		}
		return n
	}
	if *fzLong {
		return fzLongEvents
	}
	return fzShortEvents
}

// TestFuzzSchedulerEvents runs the fuzzer's driver from a seeded PRNG: a
// fresh random cluster every fzRunEvents events, SLUICE_FUZZ_EVENTS events
// in all (default a few thousand; -long a million; SLUICE_FUZZ_SEED moves
// the seeds). Each distinct failure is reported once, shrunk, and the
// run goes on with the next cluster.
func TestFuzzSchedulerEvents(t *testing.T) {
	total := fzEventCount(t)
	var base uint64
	if v := os.Getenv("SLUICE_FUZZ_SEED"); v != "" {
		var err error
		if base, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("SLUICE_FUZZ_SEED=%q: %v", v, err)
		}
	}
	seen := map[string]int{}
	var order []string
	done, runs := 0, 0
	for seed := base; done < total; seed++ {
		src := &fzSource{rng: rand.New(rand.NewPCG(seed, 0xf022))}
		c := fzGenCluster(src)
		r, fail, err := fzDrive(src, c, min(fzRunEvents, total-done))
		if err != nil {
			t.Fatalf("seed %d: generated cluster %#v rejected: %v", seed, c, err)
		}
		done += len(r.ops)
		runs++
		if fail == nil {
			continue
		}
		if seen[fail.Key]++; seen[fail.Key] == 1 {
			order = append(order, fail.Key)
			t.Errorf("seed %d, event %d: %s", seed, fail.Step, fzReport(c, r.ops, fail, fzShrinkReplays))
		}
	}
	t.Logf("%d events on %d clusters; %d distinct failures", done, runs, len(order))
	for _, k := range order {
		t.Logf("%6d× %s", seen[k], k)
	}
}
