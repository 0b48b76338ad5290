package backfill

import (
	"fmt"

	"github.com/sluicehq/sluice/topology"
)

// A matching OR (Slurm's --constraint="[a|b]") asks that all of a job's
// nodes share one alternative. Rather than a chooser that tries the
// alternatives at every time the sweep reaches — which must read every
// candidate at every step — each alternative is an allowed set of its
// own: the request is searched once per alternative, each search the
// ordinary one (the default chooser stops at the lowest feasible nodes,
// the shape cache serves jobs of the same shape and alternative), and the
// earliest start wins, the first alternative listed on equal starts. That
// is the choice a chooser trying the alternatives in order at each time
// would make: at the earliest time any alternative fits, the first that
// fits then.

// altRank orders the outcomes of one request's alternatives: a fit first
// (the earliest), then beyond the latest start, then never.
func altRank(st FitStatus) int {
	switch st {
	case FitFound:
		return 0
	case FitBeyondLatest:
		return 1
	}
	return 2
}

// checkAlternatives validates a request's alternative sets and its
// allowed set (length 0: every node) against a profile of n nodes.
func checkAlternatives(alts []topology.NodeSet, allowed topology.NodeSet, n int) error {
	for k, a := range alts {
		if a.Len() != n {
			return fmt.Errorf("%w: Alternatives[%d] has length %d, want the profile's %d nodes", ErrInvalidRequest, k, a.Len(), n)
		}
	}
	if allowed.Len() != 0 && allowed.Len() != n {
		return fmt.Errorf("%w: Allowed has length %d, want %d", ErrInvalidRequest, allowed.Len(), n)
	}
	return nil
}

// intersectInto sets dst to allowed ∩ alt (alt alone when allowed has
// length 0: every node).
func intersectInto(dst, allowed, alt topology.NodeSet) {
	dst.CopyFrom(alt)
	if allowed.Len() != 0 {
		dst.IntersectWith(allowed)
	}
}

// earliestAlternative is EarliestFit for a request with Alternatives: the
// earliest fit over the alternatives, the first listed on equal starts;
// when none fits, the best failure (beyond the latest start before never).
func (p *Profile) earliestAlternative(r Request) (Fit, error) {
	if err := checkAlternatives(r.Alternatives, r.Allowed, p.n); err != nil {
		return Fit{}, err
	}
	alts, allowed := r.Alternatives, r.Allowed
	r.Alternatives = nil
	best := Fit{Status: FitNever}
	r.Allowed = topology.NewNodeSet(p.n) // each alternative's in turn: a Fit holds no set
	for _, a := range alts {
		intersectInto(r.Allowed, allowed, a)
		f, err := p.EarliestFit(r)
		if err != nil {
			return Fit{}, err
		}
		if altRank(f.Status) < altRank(best.Status) || f.Status == FitFound && best.Status == FitFound && f.Start.Before(best.Start) {
			best = f
		}
	}
	return best, nil
}

// planAlternatives plans plain job j with Alternatives: each alternative
// is searched as j within Allowed ∩ it (find, into a copy of e; after a
// fit, only for a start before it), and j is planned in the best one —
// the earliest start, the first listed on equal starts; when none fits,
// the first with the best failure. A winner searched last (a start now,
// or the last alternative) is placed from its own search; one that a
// later alternative's search came after (the query is reused) is asked
// again through planJob, answered from the shape cache where the job's
// shape is cached.
func (r *run) planAlternatives(j *Job, e *Entry) error {
	p := r.p
	if err := checkAlternatives(j.Alternatives, j.Allowed, p.n); err != nil {
		return fmt.Errorf("job %d: %w", j.ID, err)
	}
	alt := *j
	alt.Alternatives = nil
	var best topology.NodeSet
	bestRank, bestT := 3, int64(0)
	var f jobFit     // the last alternative's search
	var fe Entry     // e as that search left it
	lastWon := false // whether that alternative is the best
	for _, a := range j.Alternatives {
		if bestRank == 0 && bestT <= p.origin {
			break // a start now: no later alternative starts sooner
		}
		if f.ghost {
			p.ghostOff(f.q)
		}
		alt.Allowed = r.altSet(j.Allowed, a)
		// After a fit at bestT, a later alternative only matters if it
		// starts before it: its search may stop there.
		latest := r.latest
		if bestRank == 0 {
			latest = min(latest, bestT-1)
		}
		fe = *e
		var err error
		f, err = r.find(&alt, &fe, latest)
		if err != nil {
			return err
		}
		rank := 2
		if !f.settled {
			rank = altRank(f.res.st)
		}
		lastWon = rank < bestRank || rank == 0 && bestRank == 0 && f.res.t < bestT
		if lastWon {
			best, bestRank, bestT = alt.Allowed, rank, f.res.t
		}
	}
	if lastWon {
		// The query still holds the winner's search: place it as planJob
		// would after asking it again.
		r.plan.Stats.Tested++
		*e = fe
		return r.place(&alt, e, f)
	}
	if f.ghost {
		p.ghostOff(f.q)
	}
	alt.Allowed = best
	return r.planJob(&alt, e)
}

// altSet is allowed ∩ alt as a set the pass keeps (registered with
// setIndex, so that jobs of the same partition and alternative share it
// and their shape), or a fresh set when the pass has seen too many.
func (r *run) altSet(allowed, alt topology.NodeSet) topology.NodeSet {
	if r.altTmp.Len() != r.p.n {
		r.altTmp = topology.NewNodeSet(r.p.n)
	}
	intersectInto(r.altTmp, allowed, alt)
	if k := r.setByContent(r.altTmp); k >= 0 { // scratch storage: by content
		return r.sets[k]
	}
	return r.altTmp.Clone()
}
