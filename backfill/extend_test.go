package backfill

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestExtendMatchesPlan checks Extend against Plan of the whole list: a
// random prefix is planned, then the rest is added with Extend — at once,
// or after advancing the profile to a time before its next change and
// before any start the prefix's plan gave — and the entries, starts and
// timelines must equal those of one Plan over every job at that time.
func TestExtendMatchesPlan(t *testing.T) {
	forEachRandomProfile(t, 400, 100, 47, func(t *testing.T, rng *rand.Rand, p *Profile, m *naive) {
		res := m.res
		id := JobID(1000)
		pl, jobs := randomPlanInput(t, rng, p, &id)
		if rng.IntN(3) == 0 { // the per-group limits carry over too
			cfg := pl.Config()
			cfg.MaxJobUser, cfg.MaxJobPart, cfg.JobPartCountReserve = 1+rng.IntN(2), 1+rng.IntN(3), 1+rng.IntN(2)
			var err error
			pl, err = NewPlanner(cfg)
			require.NoError(t, err)
		}
		if rng.IntN(2) == 0 { // jobs tested for a start now only
			for x := range jobs {
				jobs[x].NoEstimate = rng.IntN(2) == 0
			}
		}
		cut := rng.IntN(len(jobs) + 1)

		part := p.Clone()
		first, err := pl.Plan(part, jobs[:cut])
		require.NoError(t, err)
		now := p.Now()
		if len(first.Starts) == 0 && pl.Config().MinAgeReserve == 0 && rng.IntN(2) == 0 {
			// Advance within the still stretch, if the prefix allows.
			limit := part.NextChange()
			ok := true
			for _, e := range first.Entries {
				switch e.Status {
				case StatusBeyondWindow:
					ok = false
				case StatusReserved, StatusEstimated:
					if limit.IsZero() || e.Start.Before(limit) {
						limit = e.Start
					}
				}
			}
			for _, j := range jobs[:cut] {
				// A begin time reached is a change too (the
				// search rounds a later one up to the grid).
				if j.Earliest.After(now) && (limit.IsZero() || j.Earliest.Before(limit)) {
					limit = j.Earliest
				}
			}
			if ok && (limit.IsZero() || limit.Sub(now) > time.Second) {
				span := 10 * time.Duration(res) * time.Second
				if !limit.IsZero() {
					span = limit.Sub(now) - time.Second
				}
				now = now.Add(time.Duration(1+rng.Int64N(int64(span/time.Second))) * time.Second)
				if rng.IntN(2) == 0 { // a Now with a fraction of a second
					now = now.Add(-time.Duration(1 + rng.Int64N(999_999_999)))
				}
				require.NoError(t, part.Advance(now))
			}
		}
		got, err := pl.Extend(part, first, jobs[cut:])
		require.NoError(t, err)

		whole := p.Clone()
		require.NoError(t, whole.Advance(now))
		want, err := pl.Plan(whole, jobs)
		require.NoError(t, err)

		requireSamePlan(t, want, got, whole, part)
	})
}

// TestExtendErrors checks Extend's own validation.
func TestExtendErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	p, _ := randomSetup(t, rng, 60)
	id := JobID(1000)
	pl, jobs := randomPlanInput(t, rng, p, &id)
	_, err := pl.Extend(p, nil, jobs)
	require.ErrorIs(t, err, ErrInvalidConfig)
	first, err := pl.Plan(p, jobs[:1])
	require.NoError(t, err)
	_, err = pl.Extend(p, first, jobs[:1])
	require.ErrorIs(t, err, ErrDuplicateID, "a job of the earlier plan again")
}

// requireSamePlan checks that two plans agree (entries, starts, stats but
// the search count, which depends on what the shape cache knew) and that
// the profiles they were made on ended the same.
func requireSamePlan(t *testing.T, want, got *Plan, wantProf, gotProf *Profile) {
	t.Helper()
	require.Equal(t, want.Entries, got.Entries)
	require.Equal(t, want.Starts, got.Starts)
	ws, gs := want.Stats, got.Stats
	ws.Searches, gs.Searches = 0, 0
	require.Equal(t, ws, gs)
	requireSameTimelines(t, wantProf, gotProf, "")
}

// requireSameTimelines checks that every node of got has the timeline it
// has in want; what prefixes the failure message.
func requireSameTimelines(t *testing.T, want, got *Profile, what string) {
	t.Helper()
	for i := range want.NumNodes() {
		a, err := want.Timeline(i)
		require.NoError(t, err)
		b, err := got.Timeline(i)
		require.NoError(t, err)
		require.Equal(t, a, b, "%snode %d", what, i)
	}
}

// TestPlanIntoReuses checks that PlanInto and ExtendInto, writing into
// plans used before, give what Plan and Extend give, and that a plan
// extended into another keeps its own node lists intact.
func TestPlanIntoReuses(t *testing.T) {
	var a, b *Plan // reused from seed to seed, alternately
	for seed := range 200 {
		rng := rand.New(rand.NewPCG(uint64(seed), 61))
		p, _ := randomSetup(t, rng, []int64{1, 60}[seed%2])
		id := JobID(1000)
		pl, jobs := randomPlanInput(t, rng, p, &id)
		cut := rng.IntN(len(jobs) + 1)

		fresh := p.Clone()
		first, err := pl.Plan(fresh, jobs[:cut])
		require.NoError(t, err)
		want, err := pl.Extend(fresh, first, jobs[cut:])
		require.NoError(t, err)

		reused := p.Clone()
		a, err = pl.PlanInto(a, reused, jobs[:cut])
		require.NoError(t, err)
		sameEntries(t, first.Entries, a.Entries)
		before := clonePlanEntries(a)
		b, err = pl.ExtendInto(b, reused, a, jobs[cut:])
		require.NoError(t, err)
		sameEntries(t, want.Entries, b.Entries)
		require.True(t, slices.Equal(want.Starts, b.Starts), "starts %v, want %v", b.Starts, want.Starts)
		sameEntries(t, before, a.Entries) // the extended plan is left as it was
		_, err = pl.ExtendInto(a, reused, a, nil)
		require.ErrorIs(t, err, ErrInvalidConfig)
		a, b = b, a
	}
}

func clonePlanEntries(p *Plan) []Entry {
	out := make([]Entry, len(p.Entries))
	for x, e := range p.Entries {
		out[x] = e
		out[x].Nodes = append([]int(nil), e.Nodes...)
		if e.Nodes == nil {
			out[x].Nodes = nil
		}
	}
	return out
}

// sameEntries compares entry lists, an empty one equal to nil.
func sameEntries(t *testing.T, want, got []Entry) {
	t.Helper()
	if len(want) == 0 && len(got) == 0 {
		return
	}
	require.Equal(t, want, got)
}
