package scheduler

import (
	"slices"

	"github.com/sluicehq/sluice/gres"
)

// Device claims: how the backfill plan keeps whole-GPU bookings and share
// bookings of one node apart (see backfill_shares.go for the counts they
// complete). gres/gpu counts the devices free whole and gres/shard the
// most free shards of one device, and each booking takes from its own
// count; without more, a whole-GPU booking and a shard booking could both
// be promised a node's last whole-free GPU for the same time, and the cycle
// would refuse the second. So the profile has one more dimension, beyond
// the registry's TRES and never reported: the node's claim. On a node that
// shares devices it is
//
//	claimUnit × (devices free whole) + (the most free shares of one device with shares in use)
//
// (the second term only where the node offers one sharing GRES, else 0),
// and a job asking for g whole devices and k shares per node claims
// claimUnit×g + k. claimUnit exceeds any share count, so whole bookings
// fit as long as their devices are free whole and the share bookings with
// them fit the shared device with the most room; once the share bookings
// overlapping them need more, they are taken to hold a device free whole,
// which whole bookings then cannot have.
//
// The share term follows the most free shares of a device in use only
// while the node has no device free whole; from the first state with one
// it is held, and from the first end that makes a device with shares in
// use now free whole it is 0. The whole term follows the running jobs'
// ends exactly (the same replay gives each job what its end frees). A
// booking keeps one device for its whole span, but the plan does not say
// which, so the term must never let a booking that takes a whole-free
// device at its start count against a part-used device's free shares
// later (the term grew), nor one that starts on a part-used device
// (ChooseShares prefers those) keep counting against free shares once that
// device is free whole in the plan. Held, the term never grows; while no
// device is free whole a booking can only start on a part-used device;
// until the first such end every device shared now stays shared; so a
// booking within the term fits a device shared throughout its span, and
// any other share booking takes from a whole-free device's unit for its
// whole span. Otherwise a lower-priority share job started now on a
// whole-free GPU could take the GPU a higher-priority reservation counts
// on (TestBackfillShareJobDoesNotDelayReservation).
// The price: share bookings after such an end, or once a device is free
// whole, are planned as if on devices free whole. Every other node (no
// shared devices, or counted GRES only) has an unlimited claim, so the dimension changes nothing there;
// a cluster where no node shares devices has no claim dimension at all.
//
// What the claim does not cover (the plan stays a count there): devices a
// GRESPerJob spread or a per-task count adds beyond the per-node minimum,
// and nodes whose shared devices offer different share counts, where the
// device with the most shares may be the one a whole booking takes.

// claimUnit is what one whole device claims: more than any device's
// share count.
const claimUnit = gres.MaxShares + 1

// claimUnlimited is the claim of a node that shares no device.
const claimUnlimited = int64(1) << 50

// refreshClaim recomputes the claim dimension: one past the registry's
// TRES when some node shares devices, none otherwise. A change makes the
// cached share views and profile uses stale (and, through the claim the
// kept profile was built with, the kept profile).
func (s *Scheduler) refreshClaim() {
	c1 := 0
	for i := range s.nodes {
		if s.nodes[i].sharesDevices() {
			c1 = s.reg.Len() + 1
			break
		}
	}
	var ids []gres.ID
	if c1 > 0 {
		for i := range s.nodes {
			for _, d := range s.nodes[i].devTRES {
				if !slices.Contains(ids, d[0]) {
					ids = append(ids, d[0])
				}
			}
		}
		slices.Sort(ids)
	}
	if c1 != s.claim1 || !slices.Equal(ids, s.claimIDs) {
		s.claim1, s.claimIDs = c1, ids
		s.shareGen++
		s.claimEpoch++ // the jobs' claimed requests are stale
	}
}

// claimedPerNode is job x's per-node request as the backfill plan counts
// it: bfMin, with its device claim when the profile has a claim dimension
// and the job asks for devices or shares.
func (s *Scheduler) claimedPerNode(x *job) gres.Vector {
	c1 := s.claim1
	if c1 == 0 {
		return x.bfMin
	}
	if x.bfClaimEpoch == s.claimEpoch && sameVector(x.bfClaimOf, x.bfMin) {
		return x.bfClaimed
	}
	var claim int64
	for _, id := range s.claimIDs {
		claim += x.bfMin.At(id) * claimUnit
	}
	for _, name := range shareNames {
		if id, ok := s.reg.Lookup(deviceTRES(name, "")); ok {
			claim += x.bfMin.At(id)
		}
	}
	out := x.bfMin
	if claim > 0 {
		out = make(gres.Vector, max(len(x.bfMin), c1))
		copy(out, x.bfMin)
		out[c1-1] = min(claim, gres.MaxCount)
	}
	x.bfClaimed, x.bfClaimOf, x.bfClaimEpoch = out, x.bfMin, s.claimEpoch
	return out
}

// sameVector reports whether a and b are the same slice.
func sameVector(a, b gres.Vector) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// withClaim returns v long enough to hold the claim dimension.
func (s *Scheduler) withClaim(v gres.Vector) gres.Vector {
	if s.claim1 == 0 || len(v) >= s.claim1 {
		return v
	}
	out := make(gres.Vector, s.claim1)
	copy(out, v)
	return out
}
