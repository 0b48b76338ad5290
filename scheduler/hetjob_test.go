package scheduler_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// hetPair is Slurm's canonical heterogeneous job: one part on an h100
// node, one on an a100 node, each with its own partition and request.
func hetPair() []scheduler.JobSpec {
	return []scheduler.JobSpec{
		{Name: "het", User: "u", Account: "a", Partition: "h100", GRESPerNode: typed("h100", 8), TimeLimit: time.Hour},
		{Name: "het", User: "u", Account: "a", Partition: "gpu", GRESPerNode: typed("a100", 4), Tasks: 4, TimeLimit: 2 * time.Hour},
	}
}

func startOf(c scheduler.Cycle, id scheduler.JobID) (scheduler.Start, bool) {
	for _, st := range c.Starts {
		if st.Job == id {
			return st, true
		}
	}
	return scheduler.Start{}, false
}

// sbatch a : b gives one job ID with offsets, and each component a job
// ID of its own (Slurm: JobId 123 and 124, HetJobId 123, HetJobOffset 0
// and 1, shown as 123+0 and 123+1).
func TestHetJobIDsAndOffsets(t *testing.T) {
	s := newBackfillMixed(t, backfill.EASY)
	before := mustSubmit(t, s, t0, scheduler.JobSpec{TimeLimit: time.Minute})
	ids, err := s.SubmitHet(t0, hetPair())
	require.NoError(t, err)
	require.Equal(t, []scheduler.JobID{before + 1, before + 2}, ids)
	for k, id := range ids {
		j, ok := s.Job(id)
		require.True(t, ok)
		assert.Equal(t, ids[0], j.HetJobID)
		assert.Equal(t, k, j.HetJobOffset)
		assert.Equal(t, fmt.Sprintf("%d+%d", ids[0], k), j.Label())
	}
	assert.Equal(t, "h100", mustJob(t, s, ids[0]).Partition)
	assert.Equal(t, "gpu", mustJob(t, s, ids[1]).Partition)
	comps, ok := s.HetJob(ids[0])
	require.True(t, ok)
	require.Len(t, comps, 2)
	_, ok = s.HetJob(ids[1])
	assert.False(t, ok, "only the leader names the heterogeneous job")
	after := mustSubmit(t, s, t0, scheduler.JobSpec{TimeLimit: time.Minute})
	assert.Equal(t, ids[1]+1, after)
	assert.Equal(t, fmt.Sprint(before), mustJob(t, s, before).Label())
}

// The submission is whole or nothing: a bad component refuses it and no
// ID is used up.
func TestHetJobSubmitWholeOrNothing(t *testing.T) {
	s := newBackfillMixed(t, backfill.EASY)
	specs := hetPair()
	specs[1].Partition = "nope"
	_, err := s.SubmitHet(t0, specs)
	require.ErrorIs(t, err, scheduler.ErrInvalidJob)
	assert.Contains(t, err.Error(), "component 1")
	pending, running := s.Counts()
	assert.Zero(t, pending+running)
	assert.Equal(t, scheduler.JobID(1), mustSubmit(t, s, t0, scheduler.JobSpec{TimeLimit: time.Minute}))

	_, err = s.SubmitHet(t0, hetPair()[:1])
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob, "one component is no heterogeneous job")
	_, err = s.Apply(t0, scheduler.SubmitEvent{Spec: hetPair()[0], Components: hetPair()[1:], Array: "0-3"})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob, "no arrays of heterogeneous jobs")

	// Slurm starts heterogeneous jobs by the backfill scheduler only.
	plain := newMixed(t)
	_, err = plain.SubmitHet(t0, hetPair())
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob)
}

// Every component starts at the same instant, in one cycle.
func TestHetJobStartsTogether(t *testing.T) {
	s := newBackfillMixed(t, backfill.EASY)
	ids, err := s.SubmitHet(t0, hetPair())
	require.NoError(t, err)
	cyc := mustSchedule(t, s, t0)
	a, okA := startOf(cyc, ids[0])
	b, okB := startOf(cyc, ids[1])
	require.True(t, okA && okB, "%+v", cyc)
	assert.True(t, a.Backfill && b.Backfill)
	assert.Contains(t, []string{"h100-01", "h100-02"}, a.Alloc.Nodes[0].Name)
	assert.Contains(t, []string{"a100-01", "a100-02"}, b.Alloc.Nodes[0].Name)
	assert.Len(t, b.Alloc.Nodes[0].Devices, 4)
	ja, jb := mustJob(t, s, ids[0]), mustJob(t, s, ids[1])
	assert.Equal(t, ja.StartTime, jb.StartTime)
	assert.Equal(t, time.Hour, ja.TimeLimit)
	assert.Equal(t, 2*time.Hour, jb.TimeLimit, "each component keeps its own limit")
}

// A component that could start now alone does not: the job waits for the
// last component's resources and all start then (backfill's co-start
// plan gives every component the same expected start).
func TestHetJobWaitsForItsLastComponent(t *testing.T) {
	s := newBackfillMixed(t, backfill.EASY)
	blockers := []scheduler.JobID{
		mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "gpu", GRESPerNode: typed("a100", 8), TimeLimit: time.Hour}),
		mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "gpu", GRESPerNode: typed("a100", 8), TimeLimit: time.Hour}),
	}
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 2)
	ids, err := s.SubmitHet(t0.Add(time.Minute), hetPair())
	require.NoError(t, err)
	cyc = mustSchedule(t, s, t0.Add(time.Minute))
	assert.Empty(t, cyc.Starts, "the h100 component does not start alone")
	for _, id := range ids {
		j := mustJob(t, s, id)
		assert.Equal(t, scheduler.JobPending, j.State)
		assert.Equal(t, t0.Add(time.Hour), j.ExpectedStart, "component %s", j.Label())
		assert.NotEmpty(t, j.PlannedNodes)
		assert.Equal(t, policy.ReasonResources, j.Reason)
	}
	for _, b := range blockers {
		require.NoError(t, s.Finish(t0.Add(time.Hour), b, 0))
	}
	cyc = mustSchedule(t, s, t0.Add(time.Hour))
	_, okA := startOf(cyc, ids[0])
	_, okB := startOf(cyc, ids[1])
	assert.True(t, okA && okB, "both start in the same cycle: %+v", cyc.Starts)
}

// scancel: a pending heterogeneous job is cancelled whole (a component
// alone is refused); once running, a component other than the leader may
// be cancelled alone, and cancelling the leader cancels every component.
func TestHetJobCancel(t *testing.T) {
	s := newBackfillMixed(t, backfill.EASY)
	ids, err := s.SubmitHet(t0, hetPair())
	require.NoError(t, err)
	require.ErrorIs(t, s.Cancel(t0, ids[1]), scheduler.ErrJobState)
	assert.Equal(t, scheduler.JobPending, mustJob(t, s, ids[1]).State, "refused: nothing changed")
	require.NoError(t, s.Cancel(t0, ids[0]))
	for _, id := range ids {
		assert.Equal(t, scheduler.JobCancelled, mustJob(t, s, id).State)
	}

	ids, err = s.SubmitHet(t0, hetPair())
	require.NoError(t, err)
	mustSchedule(t, s, t0)
	require.Equal(t, scheduler.JobRunning, mustJob(t, s, ids[1]).State)
	require.NoError(t, s.Cancel(t0.Add(time.Minute), ids[1]))
	assert.Equal(t, scheduler.JobCancelled, mustJob(t, s, ids[1]).State)
	assert.Equal(t, scheduler.JobRunning, mustJob(t, s, ids[0]).State, "the rest keeps running")

	ids, err = s.SubmitHet(t0.Add(time.Minute), hetPair())
	require.NoError(t, err)
	mustSchedule(t, s, t0.Add(time.Minute))
	require.NoError(t, s.Cancel(t0.Add(2*time.Minute), ids[0]))
	for _, id := range ids {
		assert.Equal(t, scheduler.JobCancelled, mustJob(t, s, id).State)
	}
}

// A component requeued (its launch failed) takes the others back to the
// queue with it, and the job starts again whole.
func TestHetJobRequeueWhole(t *testing.T) {
	s := newBackfillMixed(t, backfill.EASY)
	ids, err := s.SubmitHet(t0, hetPair())
	require.NoError(t, err)
	mustSchedule(t, s, t0)
	require.NoError(t, s.Requeue(t0.Add(time.Minute), ids[1]))
	cyc := mustSchedule(t, s, t0.Add(time.Minute))
	var ended []scheduler.JobID
	for _, e := range cyc.Ended {
		ended = append(ended, e.Job)
		assert.Equal(t, scheduler.JobPending, e.State)
	}
	assert.Equal(t, []scheduler.JobID{ids[0]}, ended, "the leader is requeued with it")
	a, okA := startOf(cyc, ids[0])
	b, okB := startOf(cyc, ids[1])
	require.True(t, okA && okB, "and both start again together: %+v", cyc.Starts)
	assert.NotEmpty(t, a.Alloc.Nodes)
	assert.NotEmpty(t, b.Alloc.Nodes)
	assert.Equal(t, 1, mustJob(t, s, ids[0]).Restarts)
}

// A dependency on the leader's ID stands for every component.
func TestHetJobDependency(t *testing.T) {
	s := newBackfillMixed(t, backfill.EASY)
	ids, err := s.SubmitHet(t0, hetPair())
	require.NoError(t, err)
	after := mustSubmit(t, s, t0, scheduler.JobSpec{Dependency: fmt.Sprintf("afterok:%d", ids[0]), TimeLimit: time.Minute})
	mustSchedule(t, s, t0)
	require.NoError(t, s.Finish(t0.Add(time.Minute), ids[0], 0))
	cyc := mustSchedule(t, s, t0.Add(time.Minute))
	assert.Equal(t, policy.ReasonDependency, reasonOf(cyc, after), "one component still runs")
	require.NoError(t, s.Finish(t0.Add(2*time.Minute), ids[1], 0))
	cyc = mustSchedule(t, s, t0.Add(2*time.Minute))
	_, ok := startOf(cyc, after)
	assert.True(t, ok, "every component succeeded")
}

// Each component is a job for the limits (Slurm counts components as
// separate jobs): MaxSubmitJobs=2 admits a two-component job, and
// refuses a third job; a component's QOS limit holds the whole job.
func TestHetJobLimitsPerComponent(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Backfill = &backfill.Config{Resolution: time.Second}
	cfg.Policy = &policy.Config{
		QOS:    []policy.QOS{{Name: "normal", Limits: policy.QOSLimits{MaxSubmitJobsPerUser: ptrTo(2)}}},
		Assocs: []policy.Assoc{{Account: "a"}, {Account: "a", User: "u"}},
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	ids, err := s.SubmitHet(t0, hetPair())
	require.NoError(t, err)
	_, err = s.Submit(t0, scheduler.JobSpec{User: "u", Account: "a", TimeLimit: time.Minute})
	require.ErrorIs(t, err, scheduler.ErrInvalidJob)
	require.NoError(t, s.Cancel(t0, ids[0]))
	specs := append(hetPair(), scheduler.JobSpec{User: "u", Account: "a", TimeLimit: time.Minute})
	_, err = s.SubmitHet(t0, specs)
	require.ErrorIs(t, err, scheduler.ErrInvalidJob, "three components are three jobs")
	assert.Contains(t, err.Error(), "component 2")
	_, err = s.SubmitHet(t0, hetPair())
	require.NoError(t, err, "the refused submission left no count behind")
}

// The event's JSON form carries the components; a snapshot keeps the
// heterogeneous job (restored, the job still cancels whole).
func TestHetJobEncodings(t *testing.T) {
	ev := scheduler.SubmitEvent{Spec: hetPair()[0], Components: hetPair()[1:]}
	b, err := json.Marshal(scheduler.Entry{At: t0, Event: ev})
	require.NoError(t, err)
	var back scheduler.Entry
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, ev, back.Event)

	s := newBackfillMixed(t, backfill.EASY)
	ids, err := s.SubmitHet(t0, hetPair())
	require.NoError(t, err)
	j, err := json.Marshal(mustJob(t, s, ids[1]))
	require.NoError(t, err)
	assert.Contains(t, string(j), fmt.Sprintf(`"HetJobID":%d,"HetJobOffset":1`, ids[0]))

	var buf bytes.Buffer
	require.NoError(t, s.Snapshot(&buf))
	r, err := scheduler.Restore(&buf, scheduler.RestoreOptions{})
	require.NoError(t, err)
	comps, ok := r.HetJob(ids[0])
	require.True(t, ok)
	require.Len(t, comps, 2)
	assert.Equal(t, 1, comps[1].HetJobOffset)
	require.ErrorIs(t, r.Cancel(t0, ids[1]), scheduler.ErrJobState)
	cyc := mustSchedule(t, r, t0)
	assert.Len(t, cyc.Starts, 2, "restored, it starts whole")
}

// Under random churn (submissions of plain and heterogeneous jobs,
// finishes, cancels, requeues, node failures), after every cycle the
// running components of a heterogeneous job all started at the same
// instant and no component pends while another runs.
func TestHetJobPropertyStartTogether(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 11))
	for _, mode := range []backfill.Mode{backfill.EASY, backfill.Conservative} {
		s := newBackfillMixed(t, mode)
		now := t0
		var hets [][]scheduler.JobID
		var all []scheduler.JobID
		seen := map[time.Time]bool{} // het starts observed (leader start times)
		for step := range 300 {
			now = now.Add(time.Duration(1+rng.IntN(20)) * time.Minute)
			switch rng.IntN(6) {
			case 0, 1:
				n := 2 + rng.IntN(2)
				specs := make([]scheduler.JobSpec, n)
				for k := range specs {
					specs[k] = randomSpec(rng)
				}
				ids, err := s.SubmitHet(now, specs)
				if err == nil {
					hets = append(hets, ids)
					all = append(all, ids...)
				}
			case 2:
				if id, err := s.Submit(now, randomSpec(rng)); err == nil {
					all = append(all, id)
				}
			case 3:
				if len(all) > 0 {
					_ = s.Finish(now, all[rng.IntN(len(all))], rng.IntN(2))
				}
			case 4:
				if len(all) > 0 {
					_ = s.Cancel(now, all[rng.IntN(len(all))])
				}
			case 5:
				if len(all) > 0 {
					_ = s.Requeue(now, all[rng.IntN(len(all))])
				}
			}
			if rng.IntN(40) == 0 {
				_, _ = s.DownNode(now, "a100-01", "test")
				_ = s.ResumeNode(now, "a100-01")
			}
			mustSchedule(t, s, now)
			for _, ids := range hets {
				var start time.Time
				pending, running := false, false
				for _, id := range ids {
					j := mustJob(t, s, id)
					switch j.State {
					case scheduler.JobPending:
						pending = true
					case scheduler.JobRunning:
						running = true
						if start.IsZero() {
							start = j.StartTime
						}
						require.Equal(t, start, j.StartTime, "%s step %d: het job %d components start together", mode, step, ids[0])
					}
				}
				require.False(t, pending && running, "%s step %d: het job %d is split", mode, step, ids[0])
				if running {
					seen[start] = true
				}
			}
		}
		require.Greater(t, len(seen), 10, "%s: heterogeneous jobs started", mode)
	}
}

// A component refused by a limit once the components before it are
// counted (MaxJobsPerUser=1: the second component would be the user's
// second running job) keeps the whole job waiting, and what the first
// took in that cycle is given back: the cycle starts neither.
func TestHetJobAllOrNothingAtStart(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Backfill = &backfill.Config{Resolution: time.Second}
	cfg.Policy = &policy.Config{
		QOS:    []policy.QOS{{Name: "normal", Limits: policy.QOSLimits{MaxJobsPerUser: ptrTo(1)}}},
		Assocs: []policy.Assoc{{Account: "a"}, {Account: "a", User: "u"}, {Account: "a", User: "v"}},
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	ids, err := s.SubmitHet(t0, hetPair())
	require.NoError(t, err)
	cyc := mustSchedule(t, s, t0)
	assert.Empty(t, cyc.Starts)
	for _, id := range ids {
		j := mustJob(t, s, id)
		assert.Equal(t, scheduler.JobPending, j.State)
		assert.Equal(t, policy.ReasonQOSMaxJobsPerUserLimit, j.Reason, j.Label())
	}
	// Nothing stayed allocated: another user takes both h100 nodes whole.
	other := mustSubmit(t, s, t0, scheduler.JobSpec{User: "v", Account: "a", Partition: "h100", Nodes: 2, Exclusive: true, TimeLimit: time.Hour})
	cyc = mustSchedule(t, s, t0.Add(time.Second))
	_, ok := startOf(cyc, other)
	assert.True(t, ok, "%+v", cyc)
	var buf bytes.Buffer
	require.NoError(t, s.Snapshot(&buf), "the state is consistent")
	_, err = scheduler.Restore(&buf, scheduler.RestoreOptions{})
	require.NoError(t, err)
}

func randomSpec(rng *rand.Rand) scheduler.JobSpec {
	spec := scheduler.JobSpec{User: fmt.Sprintf("u%d", rng.IntN(3)), TimeLimit: time.Duration(10+rng.IntN(120)) * time.Minute}
	switch rng.IntN(3) {
	case 0:
		spec.Partition, spec.GRESPerNode = "h100", typed("h100", int64(1+rng.IntN(8)))
	case 1:
		spec.GRESPerNode = typed("a100", int64(1+rng.IntN(8)))
	default:
		spec.Tasks = 1 + rng.IntN(32)
	}
	return spec
}

func TestParseHetJobID(t *testing.T) {
	for _, tc := range []struct {
		in     string
		id     scheduler.JobID
		offset int
	}{{"123+0", 123, 0}, {"123+1", 123, 1}, {"7", 7, -1}} {
		id, off, err := scheduler.ParseHetJobID(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.id, id)
		assert.Equal(t, tc.offset, off)
	}
	for _, bad := range []string{"", "+1", "123+", "0+1", "-1+0", "1+-1", "1 +0", "1+0+1", "x", "99999999999999999999999"} {
		_, _, err := scheduler.ParseHetJobID(bad)
		assert.ErrorIs(t, err, scheduler.ErrInvalidJob, bad)
	}
}

func FuzzParseHetJobID(f *testing.F) {
	for _, s := range []string{"123+0", "1+1", "7", "", "+", "1+", "18446744073709551615+2147483647"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, off, err := scheduler.ParseHetJobID(s)
		if err != nil {
			return
		}
		if id == 0 || off < -1 {
			t.Fatalf("%q: id %d offset %d", s, id, off)
		}
		if off < 0 {
			return
		}
		// The label of what parsed parses back to the same.
		j := scheduler.Job{ID: id, HetJobID: id, HetJobOffset: off}
		id2, off2, err := scheduler.ParseHetJobID(j.Label())
		if err != nil || id2 != id || off2 != off {
			t.Fatalf("%q: label %q parses to %d+%d (%v)", s, j.Label(), id2, off2, err)
		}
	})
}

// Explain names the component a pending heterogeneous job waits for:
// the h100 part could start now alone, the a100 part only when the
// a100 nodes free up, so the job waits for the a100 part.
func TestHetJobExplainNamesTheBlockingComponent(t *testing.T) {
	s := newBackfillMixed(t, backfill.EASY)
	for range 2 {
		mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "gpu", GRESPerNode: typed("a100", 8), TimeLimit: time.Hour})
	}
	mustSchedule(t, s, t0)
	ids, err := s.SubmitHet(t0.Add(time.Minute), hetPair())
	require.NoError(t, err)
	now := t0.Add(time.Minute)
	mustSchedule(t, s, now)
	ex, err := s.Explain(now, ids[0], scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.NotNil(t, ex.Het)
	assert.Equal(t, ids[0], ex.Het.HetJobID)
	assert.Equal(t, 1, ex.Het.Blocking, "the a100 component")
	require.Len(t, ex.Het.Components, 2)
	assert.Equal(t, now, ex.Het.Components[0].Alone)
	assert.Equal(t, t0.Add(time.Hour), ex.Het.Components[1].Alone)
	assert.Equal(t, t0.Add(time.Hour), ex.Het.Start)
	assert.Contains(t, ex.String(), fmt.Sprintf("%d+1 (job %d) PENDING: Resources", ids[0], ids[1]))
	assert.Contains(t, ex.String(), "the job waits for this component")
	plain, err := s.Explain(now, 1, scheduler.ExplainOptions{})
	require.NoError(t, err)
	assert.Nil(t, plain.Het)
}
