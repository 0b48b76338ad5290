package scheduler_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

var errInjected = errors.New("injected cycle failure")

// digest is everything observable of a scheduler: its jobs, nodes, queue
// counts, reservations, priorities, fair-share and usage counters.
func digest(s *scheduler.Scheduler, now time.Time) string {
	p, r := s.Counts()
	return fmt.Sprintf("jobs %+v\nnodes %+v\ncounts %d %d\nresv %+v\nsprio %s\nsshare %s\nusage %s",
		s.Jobs(), s.Nodes(), p, r, s.Reservations(), s.Sprio(priority.SprioFormat{}), s.Sshare(priority.ShareFormat{}),
		scheduler.UsageDigest(s, now))
}

// twinVariants adds to the property tests' variants one with fair-share
// priority recomputed every minute from usage that changes with time, so
// that a failed cycle has a fair-share tree to take back.
func twinVariants() []struct {
	name string
	set  func(*scheduler.Config)
} {
	out := append([]struct {
		name string
		set  func(*scheduler.Config)
	}(nil), variants...)
	out = append(out, struct {
		name string
		set  func(*scheduler.Config)
	}{"power+easy", func(c *scheduler.Config) {
		// Power saving: idle nodes go down and are woken within the
		// steps' time jumps; a failed cycle must take back power changes.
		c.Backfill = &backfill.Config{Mode: backfill.EASY}
		c.Power = &scheduler.PowerConfig{SuspendTime: 10 * time.Minute, ResumeTimeout: 5 * time.Minute, SuspendRate: 2, ResumeRate: 1}
	}}, struct {
		name string
		set  func(*scheduler.Config)
	}{"power", func(c *scheduler.Config) {
		c.Power = &scheduler.PowerConfig{SuspendTime: 10 * time.Minute}
	}})
	return append(out, struct {
		name string
		set  func(*scheduler.Config)
	}{"fairshare+easy+array", func(c *scheduler.Config) {
		c.Backfill = &backfill.Config{Mode: backfill.EASY}
		c.Priority = &scheduler.PriorityConfig{
			Engine:     priority.Config{Weights: priority.Weights{Age: 1000, FairShare: 10000}},
			CalcPeriod: time.Minute,
			FairShare: scheduler.FairShareFunc(func(now time.Time) ([]priority.Association, error) {
				u := float64(now.Unix() % 1000)
				return []priority.Association{
					{Account: "root", Shares: 1},
					{Account: "a", Parent: "root", Shares: 1, Usage: u},
					{Account: "b", Parent: "root", Shares: 2, Usage: 1000 - u},
					{Account: "a", User: "ann", Shares: 1, Usage: u},
					{Account: "b", User: "bob", Shares: 1, Usage: 1000 - u},
					{Account: "b", User: "cy", Shares: 1},
				}, nil
			}),
		}
	}})
}

// A Schedule that fails leaves the scheduler exactly as it was: on random
// event sequences, every cycle is first run failing late (after the
// backfill pass) on one scheduler, then for real on both it and a twin
// that never saw the failed call. After each failure the two digests
// (jobs, nodes, usage counters, priorities …) agree, and so do the next
// cycle's decisions and everything after.
func TestFailedScheduleChangesNothing(t *testing.T) {
	for _, v := range twinVariants() {
		t.Run(v.name, func(t *testing.T) {
			for seed := range uint64(4) {
				runTwins(t, seed, 200, v.set)
			}
		})
	}
}

func runTwins(t *testing.T, seed uint64, steps int, variant func(*scheduler.Config)) {
	rng := rand.New(rand.NewPCG(seed, 11))
	cfg := clustertest.Mixed4()
	variant(&cfg)
	a, err := scheduler.New(cfg)
	require.NoError(t, err)
	b, err := scheduler.New(cfg)
	require.NoError(t, err)
	both := func(f func(s *scheduler.Scheduler) string) {
		ra, rb := f(a), f(b)
		require.Equal(t, rb, ra, "seed %d", seed)
	}
	now := clustertest.Epoch.Add(17 * time.Second)
	var ids []scheduler.JobID
	nodeNames := []string{"h100-01", "h100-02", "a100-01", "a100-02"}
	failed := 0
	for step := range steps {
		now = now.Add(time.Duration(rng.IntN(400)) * time.Second)
		where := fmt.Sprintf("seed %d step %d", seed, step)
		switch k := rng.IntN(100); {
		case k < 40:
			spec := scheduler.JobSpec{
				Nodes:       1 + rng.IntN(2),
				TimeLimit:   time.Duration(60+rng.IntN(7200)) * time.Second,
				Exclusive:   rng.IntN(8) == 0,
				Requeue:     scheduler.RequeueMode(rng.IntN(3)),
				User:        []string{"ann", "bob", "cy"}[rng.IntN(3)],
				QOS:         []string{"normal", "high"}[rng.IntN(2)],
				CPUsPerTask: 1 + rng.IntN(32),
			}
			spec.Account = map[string]string{"ann": "a", "bob": "b", "cy": "b"}[spec.User]
			if rng.IntN(4) == 0 {
				spec.TimeMin = spec.TimeLimit / 3
			}
			if rng.IntN(2) == 0 {
				spec.GRESPerNode = []gres.Request{{Name: "gpu", Count: int64(1 + rng.IntN(8))}}
			}
			switch rng.IntN(6) {
			case 0:
				spec.GPUsPerSocket, spec.GRESPerNode = 1+rng.IntN(2), nil
			case 1:
				spec.GRESPerJob, spec.GRESPerNode = []gres.Request{{Name: "gpu", Count: int64(spec.Nodes + rng.IntN(9))}}, nil
			}
			array := ""
			if rng.IntN(6) == 0 {
				array = "0-3%2"
			}
			both(func(s *scheduler.Scheduler) string {
				if array != "" {
					got, err := s.SubmitArray(now, spec, array)
					if s == a && err == nil {
						ids = append(ids, got...)
					}
					return fmt.Sprint(got, err)
				}
				id, err := s.Submit(now, spec)
				if s == a && err == nil {
					ids = append(ids, id)
				}
				return fmt.Sprint(id, err)
			})
		case k < 58 && len(ids) > 0:
			id, code := ids[rng.IntN(len(ids))], rng.IntN(2)
			both(func(s *scheduler.Scheduler) string { return fmt.Sprint(s.Finish(now, id, code)) })
		case k < 63 && len(ids) > 0:
			id := ids[rng.IntN(len(ids))]
			both(func(s *scheduler.Scheduler) string { return fmt.Sprint(s.Cancel(now, id)) })
		case k < 65 && len(ids) > 0:
			id := ids[rng.IntN(len(ids))]
			both(func(s *scheduler.Scheduler) string { return fmt.Sprint(s.Requeue(now, id)) })
		case k < 67:
			n := nodeNames[rng.IntN(4)]
			both(func(s *scheduler.Scheduler) string { aff, err := s.DownNode(now, n, "x"); return fmt.Sprint(aff, err) })
		case k < 70:
			n := nodeNames[rng.IntN(4)]
			booted := cfg.Power != nil && rng.IntN(2) == 0
			both(func(s *scheduler.Scheduler) string {
				if booted {
					return fmt.Sprint(s.NodePoweredUp(now, n))
				}
				return fmt.Sprint(s.ResumeNode(now, n))
			})
		case k < 73:
			n, d, h := nodeNames[rng.IntN(4)], rng.IntN(8), rng.IntN(2) == 0
			both(func(s *scheduler.Scheduler) string { return fmt.Sprint(s.SetDeviceHealth(now, n, d, h, "xid")) })
		case k < 75 && cfg.Policy != nil:
			nodes := topology.NewNodeSet(4)
			nodes.Add(rng.IntN(4))
			r := policy.Reservation{Name: fmt.Sprintf("r%d", step), Start: now.Add(time.Duration(rng.IntN(7200)) * time.Second),
				Duration: time.Duration(600+rng.IntN(3600)) * time.Second, Nodes: nodes, Users: []string{"ann"},
				Flags: policy.ResvIgnoreJobs}
			both(func(s *scheduler.Scheduler) string { return fmt.Sprint(s.AddReservation(now, r)) })
		default:
			before := digest(a, now)
			scheduler.SetCycleFault(a, func() error { return errInjected })
			cyc, err := a.Schedule(now)
			scheduler.SetCycleFault(a, nil)
			require.ErrorIs(t, err, errInjected, where)
			require.Equal(t, scheduler.Cycle{}, cyc, where)
			failed++
			require.Equal(t, before, digest(a, now), "%s: the failed cycle changed the scheduler", where)
			require.Equal(t, digest(b, now), digest(a, now), "%s: the twin differs after the failed cycle", where)
			if rng.IntN(2) == 0 {
				// Between the failed call and the next, a node changes
				// (no cache of the failed cycle may outlive it).
				n, drain := nodeNames[rng.IntN(4)], rng.IntN(2) == 0
				both(func(s *scheduler.Scheduler) string {
					if drain {
						return fmt.Sprint(s.DrainNode(now, n, "x"))
					}
					return fmt.Sprint(s.ResumeNode(now, n))
				})
			}
			both(func(s *scheduler.Scheduler) string {
				cyc, err := s.Schedule(now)
				require.NoError(t, err, where)
				return fmt.Sprintf("%+v", cyc)
			})
		}
	}
	require.Equal(t, digest(b, now), digest(a, now), "seed %d: at the end", seed)
	require.Positive(t, failed)
}
