package scheduler_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
)

// newEpochPriority is Mixed4 with age-only priority recomputed every 5
// minutes from epoch (zero: the Unix epoch), and a fair-share source that
// records the times it is asked for.
func newEpochPriority(t *testing.T, epoch time.Time, asked *[]time.Time) *scheduler.Scheduler {
	t.Helper()
	cfg := clustertest.Mixed4()
	cfg.Priority = &scheduler.PriorityConfig{
		Engine:     priority.Config{Weights: priority.Weights{Age: 100000}, MaxAge: 100000 * time.Second},
		CalcPeriod: 5 * time.Minute, CalcEpoch: epoch,
		FairShare: scheduler.FairShareFunc(func(at time.Time) ([]priority.Association, error) {
			*asked = append(*asked, at)
			return []priority.Association{{Account: "root", Shares: 1}}, nil
		}),
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

// TestPriorityRecalculatedAtClockBoundaries: the recalculation happens at
// multiples of CalcPeriod (from CalcEpoch), as of the boundary — the age
// is measured to it and the fair-share source is asked for it — however
// late the call, and Cycle.NextWake is the next boundary.
func TestPriorityRecalculatedAtClockBoundaries(t *testing.T) {
	base := t0.Truncate(time.Hour) // a multiple of 5 minutes in Unix time
	for _, tc := range []struct {
		name  string
		epoch time.Time
		first time.Time // the boundary at or before base+7m
	}{
		{"unix", time.Time{}, base.Add(5 * time.Minute)},
		{"slurm start", base.Add(90 * time.Second), base.Add(6*time.Minute + 30*time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []time.Time
			s := newEpochPriority(t, tc.epoch, &asked)
			mustSubmit(t, s, base, scheduler.JobSpec{Nodes: 4, Exclusive: true, TimeLimit: 24 * time.Hour})
			waiting := mustSubmit(t, s, base, scheduler.JobSpec{Nodes: 4, Exclusive: true, TimeLimit: time.Hour})
			mustSchedule(t, s, base) // the jobs are eligible from base
			asked = asked[:0]
			cyc := mustSchedule(t, s, base.Add(7*time.Minute))
			require.Equal(t, []time.Time{tc.first}, asked, "asked as of the boundary, not the call")
			b, _ := s.PriorityBreakdown(waiting)
			assert.Equal(t, uint32(tc.first.Sub(base)/time.Second), b.Priority, "the age is measured to the boundary")
			assert.Equal(t, tc.first.Add(5*time.Minute), cyc.NextWake)
			// A call before the next boundary recomputes nothing.
			mustSchedule(t, s, tc.first.Add(5*time.Minute-time.Second))
			assert.Len(t, asked, 1)
			b2, _ := s.PriorityBreakdown(waiting)
			assert.Equal(t, b.Priority, b2.Priority)
			// A call long after several boundaries computes the latest's.
			late := tc.first.Add(17 * time.Minute)
			mustSchedule(t, s, late)
			last := tc.first.Add(15 * time.Minute)
			assert.Equal(t, []time.Time{tc.first, last}, asked)
			b3, _ := s.PriorityBreakdown(waiting)
			assert.Equal(t, uint32(last.Sub(base)/time.Second), b3.Priority)
		})
	}
}

// TestCalcEpochSurvivesSnapshotAndJSON: CalcEpoch is configuration: the
// snapshot and the JSON form of Config keep it, and a restored scheduler
// recomputes at the same boundaries.
func TestCalcEpochSurvivesSnapshotAndJSON(t *testing.T) {
	base := t0.Truncate(time.Hour)
	epoch := base.Add(90 * time.Second)
	var asked []time.Time
	s := newEpochPriority(t, epoch, &asked)
	mustSubmit(t, s, base, scheduler.JobSpec{Nodes: 4, Exclusive: true, TimeLimit: 24 * time.Hour})
	mustSubmit(t, s, base, scheduler.JobSpec{Nodes: 4, Exclusive: true, TimeLimit: time.Hour})
	mustSchedule(t, s, base)
	cyc := mustSchedule(t, s, base.Add(7*time.Minute))
	var buf bytes.Buffer
	require.NoError(t, s.Snapshot(&buf))
	var asked2 []time.Time
	r, err := scheduler.Restore(&buf, scheduler.RestoreOptions{FairShare: scheduler.FairShareFunc(func(at time.Time) ([]priority.Association, error) {
		asked2 = append(asked2, at)
		return []priority.Association{{Account: "root", Shares: 1}}, nil
	})})
	require.NoError(t, err)
	assert.Equal(t, cyc.NextWake, r.NextWake())
	at := base.Add(12 * time.Minute)
	c1, c2 := mustSchedule(t, s, at), mustSchedule(t, r, at)
	assert.Equal(t, fmt.Sprint(c1.Pending), fmt.Sprint(c2.Pending))
	assert.Equal(t, asked[len(asked)-1], asked2[0])
	assert.Equal(t, epoch.Add(10*time.Minute), asked2[0])

	cfg := clustertest.Mixed4()
	cfg.Priority = &scheduler.PriorityConfig{CalcPeriod: time.Minute, CalcEpoch: epoch}
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"CalcEpoch":"`+epoch.Format(time.RFC3339))
	var back scheduler.Config
	require.NoError(t, json.Unmarshal(b, &back))
	require.NotNil(t, back.Priority)
	assert.True(t, epoch.Equal(back.Priority.CalcEpoch))
}

// TestScheduleIsAFixedPoint: jobs a cycle starts late in its pass (here
// a backfilled job of the user whose higher-priority job waited for
// resources and held its partition back) can change how the jobs judged
// before them are judged (that job is now held by its user's GPU limit and
// holds nothing back); the cycle settles, so a second call at the same
// instant starts nothing.
func TestScheduleIsAFixedPoint(t *testing.T) {
	for seed := range uint64(30) {
		sc := newPollScenario(seed)
		r := &pollRun{sc: &sc, run: map[scheduler.JobID]time.Duration{}, byJob: map[scheduler.JobID]int{}}
		s, err := scheduler.New(sc.config(r))
		require.NoError(t, err)
		r.s = s
		for k := range sc.events {
			e := &sc.events[k]
			r.apply(e.at, e)
			c1, err := s.Schedule(e.at)
			require.NoError(t, err)
			c2, err := s.Schedule(e.at)
			require.NoError(t, err)
			if c1.NextWake.Equal(e.at) {
				continue // preemption victims wait for this second call
			}
			require.Empty(t, c2.Starts, "seed %d: a second call at %s starts nothing", seed, e.at)
			require.Empty(t, c2.Preemptions, "seed %d", seed)
			require.Empty(t, c2.Ended, "seed %d", seed)
		}
	}
}

// ExampleCycle_nextWake is a control loop: Schedule after every event and
// at every NextWake, sleeping (here: jumping the clock) in between.
func ExampleCycle_nextWake() {
	cfg := clustertest.Mixed4()
	cfg.Priority = &scheduler.PriorityConfig{CalcPeriod: 5 * time.Minute}
	s, _ := scheduler.New(cfg)
	now := time.Date(2026, 1, 5, 8, 3, 20, 0, time.UTC)
	_, _ = s.Submit(now, scheduler.JobSpec{Nodes: 4, Exclusive: true, TimeLimit: 20 * time.Minute})
	_, _ = s.Submit(now, scheduler.JobSpec{Nodes: 1, TimeLimit: time.Hour, BeginTime: now.Add(7 * time.Minute)})
	for range 4 {
		cyc, _ := s.Schedule(now)
		fmt.Printf("%s: %d started, %d ended; next wake %s\n",
			now.Format("15:04:05"), len(cyc.Starts), len(cyc.Ended), cyc.NextWake.Format("15:04:05"))
		now = cyc.NextWake
	}
	// Output:
	// 08:03:20: 1 started, 0 ended; next wake 08:05:00
	// 08:05:00: 0 started, 0 ended; next wake 08:10:00
	// 08:10:00: 0 started, 0 ended; next wake 08:10:20
	// 08:10:20: 0 started, 0 ended; next wake 08:15:00
}
