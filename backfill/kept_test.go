package backfill

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestKeptReservationMatchesRelease checks Plan on a profile that still
// holds the first job's reservation from the last plan against Plan on the
// same profile with that reservation released: after random changes —
// advancing, jobs starting, running jobs ending, the first job's request
// changing — entries, starts, stats and every node's timeline must be
// equal, whether the reservation is kept or replaced.
func TestKeptReservationMatchesRelease(t *testing.T) { testKeptReservation(t, 53, false) }

// TestKeptSpreadReservationMatchesRelease is
// TestKeptReservationMatchesRelease with Spread jobs among the others: a
// kept Spread reservation is looked through (its use counted free in the
// spare of its nodes) exactly as if it had been released.
func TestKeptSpreadReservationMatchesRelease(t *testing.T) { testKeptReservation(t, 54, true) }

func testKeptReservation(t *testing.T, stream uint64, spread bool) {
	kept, replaced := 0, 0
	forEachRandomProfile(t, 1000, 250, stream, func(t *testing.T, rng *rand.Rand, p *Profile, m *naive) {
		res := m.res
		id := JobID(1000)
		pl, jobs := randomPlanInput(t, rng, p, &id)
		for x := range jobs {
			if spread && p.a > 0 && rng.IntN(2) == 0 {
				v := make([]int64, p.a)
				v[rng.IntN(p.a)] = 1 + rng.Int64N(4)
				jobs[x].Spread = p.expand(v)
			}
		}
		last, err := pl.Plan(p, jobs)
		require.NoError(t, err)
		// The next cycle: the plan's starts run, the rest of
		// it is released but for the first job's booking.
		for _, k := range last.Starts {
			r, ok := p.Reservation(last.Entries[k].ID)
			require.True(t, ok)
			if last.Entries[k].ID != jobs[0].ID {
				require.NoError(t, p.AddStarted(Running{ID: r.ID, End: r.End, Allocs: r.Allocs}))
			}
		}
		p.ReleaseReservationsExcept(jobs[0].ID)
		m.items = m.items[:0:0] // the model is not followed from here
		for range rng.IntN(4) {
			switch rng.IntN(3) {
			case 0:
				now := p.Now().Add(secs(1 + rng.Int64N(4*res)))
				if rng.IntN(2) == 0 { // a Now with a fraction of a second
					now = now.Add(time.Duration(1 + rng.Int64N(999_999_999)))
				}
				require.NoError(t, p.Advance(now))
			case 1:
				var ids []JobID
				p.ents.Ascend(func(e *entry) bool {
					if e.kind == kindRunning {
						ids = append(ids, e.id)
					}
					return true
				})
				if len(ids) > 0 {
					require.NoError(t, p.Release(ids[rng.IntN(len(ids))]))
				}
			default:
				id++
				j := jobs[rng.IntN(len(jobs))]
				fit, err := p.EarliestFit(Request{Nodes: j.Nodes, PerNode: j.PerNode, Duration: j.TimeLimit, Latest: p.Now()})
				require.NoError(t, err)
				if fit.Status == FitFound {
					allocs := jobAllocs(fit.Nodes, j.PerNode, false, nil)
					require.NoError(t, p.AddStarted(Running{ID: id, End: fit.End, Allocs: allocs}))
				}
			}
		}
		var next []Job // the jobs still pending: all but those started
		for x, j := range jobs {
			if x == 0 || last.Entries[x].Status != StatusStart {
				next = append(next, j)
			}
		}
		if len(next) == 0 {
			return
		}
		if rng.IntN(4) == 0 { // the first job asks for something else now
			next[0].TimeLimit += secs(1 + rng.Int64N(2*res))
		}
		released := p.Clone()
		if released.Has(next[0].ID) {
			require.NoError(t, released.Release(next[0].ID))
		}
		had := p.Has(next[0].ID)
		var before Reservation
		if had {
			before, _ = p.Reservation(next[0].ID)
		}
		want, err := pl.Plan(released, next)
		require.NoError(t, err)
		got, err := pl.Plan(p, next)
		require.NoError(t, err)
		requireSamePlan(t, want, got, released, p)
		checkProfile(t, p, nil)
		if had {
			after, ok := p.Reservation(next[0].ID)
			if ok && after.Start.Equal(before.Start) && after.End.Equal(before.End) {
				kept++
			} else {
				replaced++
			}
		}
	})
	t.Logf("first job's reservation kept %d times, replaced %d times", kept, replaced)
	require.Positive(t, kept)
	require.Positive(t, replaced)
}

func secs(s int64) time.Duration { return time.Duration(s) * time.Second }
