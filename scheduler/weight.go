package scheduler

import (
	"slices"
	"strconv"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/topology"
)

// Node weights (Slurm's node Weight): among the nodes that can hold a
// job, the lightest are allocated first, then the lowest index. The main
// pass's first-fit placement, a --gpus total's spread, the backfill
// plan's node choice and a reservation's node choice all follow that
// order. With a topology the least-spread choice (topology.Graph) decides
// instead and weights are not consulted, and a caller's own
// backfill.Config.Chooser replaces the weight order in the plan.

// MaxNodeWeight is the largest node Weight: Slurm keeps weights in 32
// bits, all bits set meaning INFINITE.
const MaxNodeWeight = 1<<32 - 2

// weight returns the node's Weight, 1 when unset.
func (nc *NodeConfig) weight() int64 { return max(int64(nc.Weight), 1) }

// refreshWeightTiers groups the live nodes by weight, lightest first, in
// s.tiers; nil when every live node weighs the same (the order is then the
// index order, with no cost).
func (s *Scheduler) refreshWeightTiers() {
	ws := make([]int64, 0, 4)
	for i := range s.nodes {
		if !s.nodes[i].removed {
			if w := s.nodes[i].cfg.weight(); !slices.Contains(ws, w) {
				ws = append(ws, w)
			}
		}
	}
	s.tierGen++
	s.tierKey = "weights " + strconv.FormatUint(s.tierGen, 10)
	if len(ws) < 2 {
		s.tiers = nil
		return
	}
	slices.Sort(ws)
	s.tiers = make([]topology.NodeSet, len(ws))
	for k := range s.tiers {
		s.tiers[k] = topology.NewNodeSet(len(s.nodes))
	}
	for i := range s.nodes {
		if !s.nodes[i].removed {
			k, _ := slices.BinarySearch(ws, s.nodes[i].cfg.weight())
			s.tiers[k].Add(i)
		}
	}
}

// byWeight calls f for the members of set in allocation order: lightest
// first, then by index, until f returns false.
func (s *Scheduler) byWeight(set topology.NodeSet, f func(i int) bool) {
	if s.tiers == nil {
		for i := set.Next(0); i >= 0; i = set.Next(i + 1) {
			if !f(i) {
				return
			}
		}
		return
	}
	for _, t := range s.tiers {
		for i := set.Next(0); i >= 0; i = set.Next(i + 1) {
			if t.Has(i) && !f(i) {
				return
			}
		}
	}
}

// firstByWeight returns the first n members of set in allocation order
// (fewer when set has fewer).
func (s *Scheduler) firstByWeight(set topology.NodeSet, n int) []int {
	out := make([]int, 0, n)
	if n <= 0 {
		return out
	}
	s.byWeight(set, func(i int) bool {
		out = append(out, i)
		return len(out) < n
	})
	return out
}

// weightChooser returns the backfill node chooser that picks in
// allocation order, with its cache key, or nil when weights do not
// decide (all equal, a topology, or the caller's own chooser).
func (s *Scheduler) weightChooser() (backfill.NodeChooser, string) {
	if s.tiers == nil || s.graph != nil || s.bf == nil || s.bf.customChooser {
		return nil, ""
	}
	if s.tierChooser == nil {
		s.tierChooser = s.chooseByWeight // one method value, not one per job
	}
	return s.tierChooser, s.tierKey
}

// chooseByWeight is the weight order's backfill.NodeChooser: the first n
// candidates lightest first, or nil when there are fewer.
func (s *Scheduler) chooseByWeight(cand topology.NodeSet, n int) []int {
	if out := s.firstByWeight(cand, n); len(out) == n {
		return out
	}
	return nil
}
