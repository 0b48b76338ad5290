package backfill

import (
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
)

// AddNode appends one node to the profile, as index NumNodes() before the
// call: a node that joins the cluster (scontrol create nodename) without
// rebuilding the profile. It holds no entry, so its free resources are
// the same at every time from the origin on: ns.Free, or its whole
// ns.Capacity when Free is nil. The profile then answers every query as
// one built by NewProfile with the node in its list from the start and
// the same running jobs, reservations and blocks.
//
// A clone taken before the call does not see the node. The cost is one
// pass over the summaries (one per grid slot holding a change point) and
// a copy of the capacity array, not a rebuild.
//
// It fails, leaving p unchanged, when a capacity or free count is out of
// range, Free exceeds Capacity, or the node has a resource the profile
// tracks on no node (its dimensions are fixed when it is built: build a
// new profile then).
func (p *Profile) AddNode(ns NodeState) error {
	i := p.n
	for j, v := range ns.Capacity {
		if v < 0 || v > gres.MaxCount {
			return fmt.Errorf("%w: node %d: Capacity of TRES %d is %d, want [0, %d]", ErrInvalidNode, i, j, v, gres.MaxCount)
		}
		if v > 0 && !p.isActive(gres.ID(j)) {
			return fmt.Errorf("%w: node %d: TRES %d is on no node of the profile, whose dimensions are fixed when it is built",
				ErrInvalidNode, i, j)
		}
	}
	a := p.a
	capI := make([]int64, a)
	for x, id := range p.active {
		capI[x] = ns.Capacity.At(id)
	}
	free := slices.Clone(capI)
	if ns.Free != nil {
		ok, err := p.project(ns.Free, free)
		if err != nil {
			return fmt.Errorf("%w: node %d: Free: %w", ErrInvalidNode, i, err)
		}
		if !ok || !fitsIn(capI, free) {
			return fmt.Errorf("%w: node %d: Free %v exceeds Capacity %v", ErrInvalidNode, i, ns.Free, ns.Capacity)
		}
	}

	// Nothing fails from here on. caps is shared with clones: always a
	// new array, never an append into spare capacity a clone could see.
	p.caps = append(p.caps[:len(p.caps):len(p.caps)], capI...)
	p.tls = append(p.tls, &timeline{owner: p.cow, times: []int64{p.origin}, free: free})
	p.n++
	p.width = max(p.width, len(ns.Capacity))
	p.growSummaries(i, free, equalVec(free, capI))
	// The scratch buffers are sized for the old node count.
	p.sc = nil
	return nil
}

// growSummaries widens every summary to the new node count after node i
// (the last one, with free amounts free at every time) was appended: the
// node idle in each when idle, its block's maximum raised to free (a new
// block's is free itself). A summary shared with a clone is replaced, one
// p owns changed in place.
func (p *Profile) growSummaries(i int, free []int64, idle bool) {
	a, nb := p.a, p.nblocks()
	b := i / blockBits
	var all []*summary
	p.sums.Ascend(func(sm *summary) bool {
		all = append(all, sm)
		return true
	})
	for _, sm := range all {
		idleSet := topology.NewNodeSet(p.n)
		idleSet.UnionWith(sm.idle)
		if idle {
			idleSet.Add(i)
		}
		bmax := sm.bmax
		if sm.owner != p.cow || len(bmax) < nb*a {
			// Shared with a clone, or a new block: a new array.
			bmax = make([]int64, nb*a)
			copy(bmax, sm.bmax)
			if len(sm.bmax) < len(bmax) {
				copy(bmax[b*a:(b+1)*a], free)
			}
		}
		bm := bmax[b*a : (b+1)*a]
		for x, v := range free {
			bm[x] = max(bm[x], v)
		}
		if sm.owner == p.cow {
			sm.idle, sm.bmax = idleSet, bmax
			continue
		}
		p.sums.ReplaceOrInsert(&summary{t: sm.t, owner: p.cow, idle: idleSet, bmax: bmax})
	}
}
