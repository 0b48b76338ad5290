package scheduler

import (
	"slices"

	"github.com/sluicehq/sluice/backfill"
)

// Promises behind shared GPUs. The backfill plan counts shared GPUs
// exactly over the running jobs but conservatively between its own
// bookings (backfill_shares.go): a booking for shard:k or mps:k takes k
// from the most free shares of one device, however many other devices of
// the node have room. Once the booked job runs, the profile counts it
// exactly, which may leave more room than its booking did.
//
// Why a later planned start stays a promise when no job placed before it
// in the plan (this cycle's starts included) booked shares on a node
// that shares devices. Under exact run times nothing new is submitted
// and every job ends at its time limit, so the next plan sees the same
// queue order and the same running jobs, whose profile use is exact. The
// planner places jobs in that order, each against the running jobs and
// the bookings of the jobs placed before it. By induction over the
// order: the first job sees exactly what it saw before and is placed
// where it was; when it starts, its running use equals its booking (a
// whole-device booking takes the devices free whole and its claim, which
// is what running there holds; a node without shared devices is counted
// as it is), so the jobs after it see what they saw before too. The
// induction breaks only at a booking whose running use differs from it:
// a share booking on a node that shares devices, whose job, once
// running, may free more room than its booking held. Then a job after it
// may move earlier, onto nodes (and off others) where later jobs were
// booked, and any job after that booking may start later than planned —
// whatever its own nodes, since moved jobs cascade. So such a job's start
// after now is labelled an estimate (Estimate.Bound and a later
// Counterfactual.Bound are false, NotPromised says why).
//
// A start now waits for no later plan, only for the next pass at this
// instant, which sees what this plan saw but for the jobs this plan
// started: they run now, counted exactly. So a start now is a promise
// unless a job placed before it that the plan started booked shares on a
// node that shares devices: then the next pass may place the jobs ahead
// elsewhere (earlier, into the room the booking over-counted) and take
// the nodes the start needs. An on-demand plan (Explain's own) started
// nothing yet: the next pass makes that very plan, its starts included.

// sharesPlannedNote is Estimate.NotPromised for a start behind a share
// booking.
const sharesPlannedNote = "shared GPUs planned conservatively: a job ahead booked GPU shards or MPS shares on a node that shares GPUs; it may start earlier, or be displaced by jobs that start earlier"

// sharesBookedBefore reports whether one of the plan entries es[:k]
// (placement order) books shares (gres/shard, gres/mps) on a node that
// shares devices, a start now or a reservation (any), and whether one of
// them is a start now (started). A heterogeneous job's entry counts when
// one of its components' nodes shares devices.
func (s *Scheduler) sharesBookedBefore(es []backfill.Entry, k int) (any, started bool) {
	if s.claim1 == 0 {
		return false, false // no node shares devices
	}
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
			books = s.asksShares(x) && s.anySharing(e.Nodes)
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
