package scheduler

import (
	"slices"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/topology"
)

// Promises and shared GPUs. The backfill plan counts the devices of a
// node that shares them (gres/shard, gres/mps) exactly over the running
// jobs but only approximately between its own bookings
// (backfill_shares.go, backfill_claims.go): a share booking takes its
// shares from the most free shares of one device, however many other
// devices have room (pessimistic), while the device claim lets a share
// booking count against the shares of a partly used device at one time
// and a device free whole at another, though a running job keeps the
// device it started on (optimistic). The cycle, placing a job now, also
// ranks a sharing node by its plain counts, not the plan's.
//
// Why a start after now stays a promise, under exact run times (nothing
// new submitted, every job ends at its time limit), when (a) the job's
// planned nodes share no devices, (b) no job placed before it in the
// plan holds a reservation and may run on a node that shares devices,
// and (c) no job placed before it that this plan starts books shares on
// such a node. Every later plan sees the same queue order; running jobs
// are counted exactly. The planner places jobs in that order, each
// against the running jobs and the bookings placed before it. By (b) the
// jobs ahead with a reservation run on nodes counted exactly, so they are
// placed as before and, at their start, the cycle gives them what they
// were booked (the plan's own start at its time, or the main pass on the
// same exact counts); by (c) the jobs ahead this plan starts run now as
// booked. So by induction over the order the profile the job meets is
// the one it met, but for what lower-priority jobs do: they are placed
// after it and cannot take its room except through a count that is not
// exact — on a node that shares devices, which by (a) it does not use.
// It therefore starts as planned. Without (a), a lower-priority share job
// backfilled now may hold a device the plan counted as free later; without
// (b), a job ahead may move (earlier, into room a share booking
// over-counted, or to another node the cycle ranks first) and take the
// job's nodes; without (c), the next pass sees the started share job
// exactly and may place the jobs ahead elsewhere. Such a start is
// labelled an estimate: Estimate.Bound and Counterfactual.Bound false,
// NotPromised saying why.
//
// A start now waits for no later plan, only for the next pass at this
// instant, which sees what this plan saw but for the jobs this plan
// started: they run now, counted exactly. The jobs after it start after
// it. So a start now is a promise under (c) alone. An on-demand plan
// (Explain's own) started nothing yet: the next pass makes that very
// plan, its starts included, so (c) holds there.

// sharesPlannedNote is NotPromised for a start that breaks (a), (b) or
// (c) above.
const sharesPlannedNote = "shared GPUs are planned approximately: the job, or a job ahead of it, is planned on nodes that share GPUs (shards/MPS); it may start earlier, or be displaced by jobs that start earlier"

// sharesBookedBefore reports whether one of the plan entries es[:k]
// (placement order) breaks (b) or (c) above (any): a reservation of a job
// that may run on a node that shares devices, or a start now booking
// shares on such a node; and whether one of them is such a start now
// (started: (c)). A heterogeneous job's entry counts when one of its
// components' nodes shares devices.
func (s *Scheduler) sharesBookedBefore(es []backfill.Entry, k int) (any, started bool) {
	if s.claim1 == 0 {
		return false, false // no node shares devices
	}
	var sharing topology.NodeSet // built on the first reservation met
	for i := range es[:min(k, len(es))] {
		e := &es[i]
		if e.Status != backfill.StatusStart && e.Status != backfill.StatusReserved {
			continue // only these hold resources in the plan
		}
		books := false
		if len(e.Components) > 0 {
			for c := range e.Components {
				books = books || s.anySharing(e.Components[c].Nodes)
			}
		} else if x := s.jobs[JobID(e.ID)]; x != nil {
			if e.Status == backfill.StatusStart {
				books = s.asksShares(x) && s.anySharing(e.Nodes)
			} else {
				if sharing.Len() == 0 {
					sharing = s.sharingNodes()
				}
				books = x.shape.capable.Intersects(sharing)
			}
		}
		if books {
			any = true
			if e.Status == backfill.StatusStart {
				return true, true
			}
		}
	}
	return any, false
}

// asksShares reports whether job x asks for gres/shard or gres/mps per
// node, as the backfill plan counts it.
func (s *Scheduler) asksShares(x *job) bool {
	for _, name := range shareNames {
		if id, ok := s.reg.Lookup(deviceTRES(name, "")); ok && x.bfMin.At(id) > 0 {
			return true
		}
	}
	return false
}

// sharingNodes is the set of nodes that share devices (a job whose
// capable nodes meet it may run on one): built once per
// sharesBookedBefore, so that each reservation ahead costs a word-wise
// intersection, not a scan of its capable nodes.
func (s *Scheduler) sharingNodes() topology.NodeSet {
	out := topology.NewNodeSet(max(len(s.nodes), 1))
	for i := range s.nodes {
		if s.nodes[i].sharesDevices() {
			out.Add(i)
		}
	}
	return out
}

// anySharing reports whether one of nodes shares devices.
func (s *Scheduler) anySharing(nodes []int) bool {
	return slices.ContainsFunc(nodes, func(i int) bool { return i >= 0 && i < len(s.nodes) && s.nodes[i].sharesDevices() })
}

// keptSharesAhead is sharesBookedBefore for the jobs placed before job j
// in the last backfill plan (all of them when j is not in it); both true
// without a last plan while some node shares devices.
func (s *Scheduler) keptSharesAhead(j *job) (any, started bool) {
	if s.claim1 == 0 {
		return false, false
	}
	if s.bf == nil || s.bf.plan == nil {
		return true, true
	}
	es := s.bf.plan.Entries
	k := slices.IndexFunc(es, func(e backfill.Entry) bool { return JobID(e.ID) == j.ID })
	if k < 0 {
		k = len(es)
	}
	return s.sharesBookedBefore(es, k)
}
