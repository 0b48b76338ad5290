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

// ExactEstimates returns a Source that replaces each job's time limit with
// its actual run time (at least one second), the "exact estimates" of the
// scheduling literature: the scheduler plans with perfect knowledge and no
// job reaches its limit early or is killed by it.
func ExactEstimates(src Source) Source { return exact{src} }

type exact struct{ src Source }

// Next returns the next job with its time limit set to its run time.
func (e exact) Next() (Job, bool, error) {
	j, ok, err := e.src.Next()
	if ok {
		j.Spec.TimeLimit = max(j.Runtime, time.Second)
	}
	return j, ok, err
}
