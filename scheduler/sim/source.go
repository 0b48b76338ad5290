package sim

import "time"

// Window returns a Source that skips the first skip jobs of src and then
// yields at most limit jobs (limit ≤ 0 means all the rest). It stops
// reading src once the limit is reached, so a long trace is not read to
// its end. Negative skip counts as zero.
func Window(src Source, skip, limit int) Source {
	return &window{src: src, skip: skip, limit: limit}
}

type window struct {
	src         Source
	skip, limit int
	n           int
}

// Next skips what is left to skip, then returns the next job until the limit.
func (w *window) Next() (Job, bool, error) {
	for ; w.skip > 0; w.skip-- {
		if _, ok, err := w.src.Next(); !ok || err != nil {
			return Job{}, false, err
		}
	}
	if w.limit > 0 && w.n >= w.limit {
		return Job{}, false, nil
	}
	j, ok, err := w.src.Next()
	if ok {
		w.n++
	}
	return j, ok, err
}

// ExactEstimates returns a Source that gives each job exact run-time
// estimates, those of the scheduling literature: its time limit is its
// run time (at least one second), so the scheduler plans with perfect
// knowledge and every job ends exactly at its limit, neither killed
// earlier nor running longer.
//
// The workload stays the one the source's limits allow: a job whose run
// time is over its time limit (a trace job that overran its request; with
// its own limit it is ended at it, TIMEOUT) runs only up to that limit,
// so that a replay with exact estimates does exactly the same work as the
// replay with the source's limits and the two differ only in what the
// scheduler knew. A job without a time limit (0: the partition's) keeps
// its run time.
func ExactEstimates(src Source) Source { return exact{src} }

type exact struct{ src Source }

// Next returns the next job with its run time cut to its time limit and
// its time limit set to that run time.
func (e exact) Next() (Job, bool, error) {
	j, ok, err := e.src.Next()
	if ok {
		if lim := j.Spec.TimeLimit; lim > 0 && j.Runtime > lim {
			j.Runtime = lim
		}
		j.Spec.TimeLimit = max(j.Runtime, time.Second)
	}
	return j, ok, err
}
