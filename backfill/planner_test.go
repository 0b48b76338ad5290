package backfill

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/topology"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// vec builds a vector over the built-in IDs plus one GPU dimension at
// index 5 (cpu, mem, gpu).
func vec(cpu, mem, gpu int64) gres.Vector {
	v := make(gres.Vector, 6)
	v[gres.CPU], v[gres.Mem], v[5] = cpu, mem, gpu
	return v
}

func cluster(n int, capacity gres.Vector) []NodeState {
	nodes := make([]NodeState, n)
	for i := range nodes {
		nodes[i].Capacity = capacity
	}
	return nodes
}

// jobAllocs is what a job started on nodes holds: perNode on each, or,
// when exclusive, the whole node (capacity(i)).
func jobAllocs(nodes []int, perNode gres.Vector, exclusive bool, capacity func(i int) gres.Vector) []Alloc {
	allocs := make([]Alloc, len(nodes))
	for k, i := range nodes {
		u := perNode
		if exclusive {
			u = capacity(i)
		}
		allocs[k] = Alloc{Node: i, Use: u}
	}
	return allocs
}

// capacities returns the capacity of nodes[i], for jobAllocs.
func capacities(nodes []NodeState) func(i int) gres.Vector {
	return func(i int) gres.Vector { return nodes[i].Capacity }
}

func mins(m int) time.Duration { return time.Duration(m) * time.Minute }

func entryByID(p *Plan, id JobID) Entry {
	for _, e := range p.Entries {
		if e.ID == id {
			return e
		}
	}
	panic(fmt.Sprint("no entry ", id))
}

// Slurm's backfill unit tests (testsuite/slurm_unit/backfill): 32
// exclusive nodes, jobs given as (priority order, nodes, minutes).
func TestSlurmScenarios(t *testing.T) {
	type sj struct {
		nodes, minutes int
	}
	tests := []struct {
		name  string
		jobs  []sj
		cfg   Config
		check func(t *testing.T, p *Plan)
	}{{
		// test_backfill_1: job 2 needs every node and waits for job 1;
		// job 3 fits in front of it.
		name: "simple backfill",
		jobs: []sj{{1, 10}, {32, 10}, {31, 5}},
		check: func(t *testing.T, p *Plan) {
			assert.Equal(t, StatusStart, p.Entries[0].Status)
			assert.Equal(t, StatusReserved, p.Entries[1].Status)
			assert.Equal(t, t0.Add(mins(10)), p.Entries[1].Start)
			assert.Equal(t, StatusStart, p.Entries[2].Status)
			assert.Equal(t, []int{0}, p.Entries[0].Nodes)
			assert.Len(t, p.Entries[1].Nodes, 32)
			assert.NotContains(t, p.Entries[2].Nodes, 0)
		},
	}, {
		// test_backfill_2 (Slurm ticket 20847): no higher-priority job
		// that needs no more nodes starts later than a lower one, and
		// every job gets a start time.
		name: "no starvation of smaller higher-priority jobs",
		jobs: []sj{{6, 10}, {27, 15}, {28, 14}, {29, 13}, {30, 12}, {5, 10}, {5, 10}, {30, 11}},
		check: func(t *testing.T, p *Plan) {
			for i, a := range p.Entries {
				require.False(t, a.Start.IsZero(), "job %d has a start time", i)
				for j := i + 1; j < len(p.Entries); j++ {
					b := p.Entries[j]
					if len(a.Nodes) <= len(b.Nodes) {
						assert.False(t, a.Start.After(b.Start), "job %d (%d nodes) starts after lower job %d (%d nodes)", i, len(a.Nodes), j, len(b.Nodes))
					}
				}
			}
		},
	}, {
		// test_backfill_3: bf_max_job_test=500 over 1000 jobs: the 500th
		// has a start time, the 501st is not tested.
		name: "bf_max_job_test",
		jobs: func() []sj {
			out := make([]sj, 1000)
			for i := range out {
				out[i] = sj{6, 10}
			}
			return out
		}(),
		cfg: Config{MaxJobTest: 500},
		check: func(t *testing.T, p *Plan) {
			assert.False(t, p.Entries[499].Start.IsZero())
			assert.Equal(t, StatusNotTested, p.Entries[500].Status)
			assert.Equal(t, ReasonMaxJobTest, p.Entries[500].Reason)
			assert.True(t, p.Entries[500].Start.IsZero())
			assert.Equal(t, 500, p.Stats.Tested)
			assert.Equal(t, 500, p.Stats.NotTested)
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := NewPlanner(tc.cfg)
			require.NoError(t, err)
			prof, err := pl.NewProfile(t0, cluster(32, vec(4, 2000, 0)), nil)
			require.NoError(t, err)
			jobs := make([]Job, len(tc.jobs))
			for i, j := range tc.jobs {
				jobs[i] = Job{ID: JobID(i + 1), Nodes: j.nodes, PerNode: vec(1, 1, 0), Exclusive: true, TimeLimit: mins(j.minutes)}
			}
			plan, err := pl.Plan(prof, jobs)
			require.NoError(t, err)
			tc.check(t, plan)
			checkNoOverAllocation(t, prof)
		})
	}
}

// checkNoOverAllocation asserts that no node's free resources go below
// zero at any instant (profiles without blocks).
func checkNoOverAllocation(t *testing.T, p *Profile) {
	t.Helper()
	for i := range p.n {
		tl := p.tls[i]
		for _, v := range tl.free {
			require.GreaterOrEqual(t, v, int64(0), "node %d over-allocated", i)
		}
		for k := range tl.times {
			require.True(t, fitsIn(p.caps[i*p.a:(i+1)*p.a], tl.free[k*p.a:(k+1)*p.a]), "node %d free above capacity", i)
		}
	}
}

func TestEASYVersusConservative(t *testing.T) {
	// Three nodes: node 0 busy until +60, node 1 until +10, node 2 free.
	// Job 1 needs all three (reserved at +60). Job 2 needs two nodes for
	// 50 min: it fits at +10 on nodes 1 and 2, before job 1. Job 3 needs
	// one node for 30 min and could run now on node 2 — which would delay
	// job 2. Conservative protects job 2 (job 3 waits until +120); EASY
	// protects only job 1, so job 3 starts now and job 2 is only an
	// estimate.
	nodes := cluster(3, vec(8, 100, 0))
	full := vec(8, 100, 0)
	running := []Running{
		{ID: 100, End: t0.Add(mins(60)), Allocs: []Alloc{{Node: 0, Use: full}}},
		{ID: 101, End: t0.Add(mins(10)), Allocs: []Alloc{{Node: 1, Use: full}}},
	}
	jobs := []Job{
		{ID: 1, Nodes: 3, PerNode: full, TimeLimit: mins(60)},
		{ID: 2, Nodes: 2, PerNode: full, TimeLimit: mins(50)},
		{ID: 3, Nodes: 1, PerNode: full, TimeLimit: mins(30)},
	}
	type want struct {
		status Status
		start  time.Time
		nodes  []int
	}
	for _, tc := range []struct {
		cfg  Config
		want []want
	}{
		{Config{}, []want{
			{StatusReserved, t0.Add(mins(60)), []int{0, 1, 2}},
			{StatusReserved, t0.Add(mins(10)), []int{1, 2}},
			{StatusReserved, t0.Add(mins(120)), []int{0}},
		}},
		{Config{Mode: EASY}, []want{
			{StatusReserved, t0.Add(mins(60)), []int{0, 1, 2}},
			{StatusEstimated, t0.Add(mins(10)), []int{1, 2}},
			{StatusStart, t0, []int{2}},
		}},
	} {
		t.Run(tc.cfg.Mode.String(), func(t *testing.T) {
			pl, err := NewPlanner(tc.cfg)
			require.NoError(t, err)
			prof, err := pl.NewProfile(t0, nodes, running)
			require.NoError(t, err)
			plan, err := pl.Plan(prof, jobs)
			require.NoError(t, err)
			for i, w := range tc.want {
				e := plan.Entries[i]
				assert.Equal(t, w.status, e.Status, "job %d", i+1)
				assert.Equal(t, w.start, e.Start, "job %d", i+1)
				assert.Equal(t, w.nodes, e.Nodes, "job %d", i+1)
			}
			checkNoOverAllocation(t, prof)
		})
	}

	// A short job that fits in front of every reservation starts now in
	// both modes.
	running = running[:1]
	nodes = nodes[:2]
	jobs = []Job{
		{ID: 1, Nodes: 2, PerNode: full, TimeLimit: mins(60)},          // reserved at +60
		{ID: 2, Nodes: 1, PerNode: full, TimeLimit: mins(400)},         // would delay job 1: after it
		{ID: 3, Nodes: 1, PerNode: vec(4, 50, 0), TimeLimit: mins(30)}, // fits now on node 1
	}
	for _, mode := range []Mode{Conservative, EASY} {
		pl, err := NewPlanner(Config{Mode: mode})
		require.NoError(t, err)
		prof, err := pl.NewProfile(t0, nodes, running)
		require.NoError(t, err)
		plan, err := pl.Plan(prof, jobs)
		require.NoError(t, err)
		assert.Equal(t, StatusStart, plan.Entries[2].Status, mode.String())
		assert.Equal(t, []int{1}, plan.Entries[2].Nodes)
		assert.Equal(t, t0.Add(mins(120)), plan.Entries[1].Start, mode.String())
	}
}

func TestSameQuestionSameAnswer(t *testing.T) {
	// Node 0 has 7 CPUs free for 30 min (then 8), node 1 is busy for 20,
	// node 2 for 40. In EASY, job 1 (one CPU on each node) is reserved at
	// +40; jobs 2 and 3 ask exactly the same (7 CPUs on two nodes for
	// 15 min) and are estimated at +20 on nodes 0 and 1: the second gets
	// the first's answer without a search. Job 4 (7 CPUs on one node for
	// 25 min) then starts now on node 0, and job 5, asking what jobs 2 and
	// 3 asked, must be searched again: that start moved its answer to +25.
	full := vec(8, 100, 0)
	nodes := cluster(3, full)
	running := []Running{
		{ID: 100, End: t0.Add(mins(20)), Allocs: []Alloc{{Node: 1, Use: full}}},
		{ID: 101, End: t0.Add(mins(40)), Allocs: []Alloc{{Node: 2, Use: full}}},
		{ID: 102, End: t0.Add(mins(30)), Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}},
	}
	two := Job{Nodes: 2, PerNode: vec(7, 99, 0), TimeLimit: mins(15)}
	jobs := []Job{
		{ID: 1, Nodes: 3, PerNode: vec(1, 1, 0), TimeLimit: mins(60)},
		two, two,
		{ID: 4, Nodes: 1, PerNode: vec(7, 99, 0), TimeLimit: mins(25)},
		two,
	}
	jobs[1].ID, jobs[2].ID, jobs[4].ID = 2, 3, 5
	pl, err := NewPlanner(Config{Mode: EASY})
	require.NoError(t, err)
	prof, err := pl.NewProfile(t0, nodes, running)
	require.NoError(t, err)
	ref := referencePlan(t, Config{Mode: EASY}, prof.Clone(), jobs)
	plan, err := pl.Plan(prof, jobs)
	require.NoError(t, err)
	for x := range ref {
		assert.Equal(t, ref[x].Status, plan.Entries[x].Status, "job %d", x+1)
		assert.Equal(t, ref[x].Start, plan.Entries[x].Start, "job %d", x+1)
		assert.Equal(t, ref[x].Nodes, plan.Entries[x].Nodes, "job %d", x+1)
	}
	assert.Equal(t, StatusReserved, plan.Entries[0].Status)
	for _, x := range []int{1, 2} {
		assert.Equal(t, StatusEstimated, plan.Entries[x].Status, "job %d", x+1)
		assert.Equal(t, t0.Add(mins(20)), plan.Entries[x].Start, "job %d", x+1)
		assert.Equal(t, []int{0, 1}, plan.Entries[x].Nodes, "job %d", x+1)
	}
	assert.Equal(t, StatusStart, plan.Entries[3].Status, "job 4 starts now")
	assert.Equal(t, []int{0}, plan.Entries[3].Nodes)
	assert.Equal(t, t0.Add(mins(25)), plan.Entries[4].Start, "job 5: after job 4")
	assert.Equal(t, plan.Stats.Tested-1, plan.Stats.Searches, "only job 3 was answered without a search")
	plan.Entries[1].Nodes[0] = 99
	assert.Equal(t, 0, plan.Entries[2].Nodes[0], "entries do not share node lists")
}

func TestEASYReservationCount(t *testing.T) {
	// One node, busy for 10 min; four one-node jobs of 10 min. With k
	// reservations, the first k waiting jobs are Reserved, the rest
	// Estimated with the reservation-limit reason.
	for k := 1; k <= 3; k++ {
		pl, err := NewPlanner(Config{Mode: EASY, Reservations: k})
		require.NoError(t, err)
		prof, err := pl.NewProfile(t0, cluster(1, vec(1, 1, 0)), []Running{{ID: 99, End: t0.Add(mins(10)), Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}}})
		require.NoError(t, err)
		var jobs []Job
		for i := range 4 {
			jobs = append(jobs, Job{ID: JobID(i + 1), Nodes: 1, PerNode: vec(1, 1, 0), TimeLimit: mins(10)})
		}
		plan, err := pl.Plan(prof, jobs)
		require.NoError(t, err)
		for i, e := range plan.Entries {
			if i < k {
				assert.Equal(t, StatusReserved, e.Status)
				assert.Equal(t, t0.Add(mins(10*(i+1))), e.Start)
			} else {
				assert.Equal(t, StatusEstimated, e.Status)
				assert.Equal(t, ReasonReservationLimit, e.Reason)
				// Estimated against the reservations made so far.
				assert.Equal(t, t0.Add(mins(10*(k+1))), e.Start)
			}
		}
		assert.Equal(t, k, plan.Stats.Reserved)
	}
}

func TestPartialNodesAndGPUs(t *testing.T) {
	// One 8-GPU node: four 2-GPU jobs start together; a fifth waits for
	// the first to end; a whole-node job waits for all of them.
	pl, err := NewPlanner(Config{})
	require.NoError(t, err)
	prof, err := pl.NewProfile(t0, cluster(1, vec(128, 2<<20, 8)), nil)
	require.NoError(t, err)
	var jobs []Job
	for i := range 5 {
		jobs = append(jobs, Job{ID: JobID(i + 1), Nodes: 1, PerNode: vec(16, 256<<10, 2), TimeLimit: mins(10 * (i + 1))})
	}
	jobs = append(jobs, Job{ID: 6, Nodes: 1, PerNode: vec(1, 1, 0), Exclusive: true, TimeLimit: mins(5)})
	plan, err := pl.Plan(prof, jobs)
	require.NoError(t, err)
	for i := range 4 {
		assert.Equal(t, StatusStart, plan.Entries[i].Status)
	}
	assert.Equal(t, StatusReserved, plan.Entries[4].Status)
	assert.Equal(t, t0.Add(mins(10)), plan.Entries[4].Start)
	assert.Equal(t, StatusReserved, plan.Entries[5].Status)
	assert.Equal(t, t0.Add(mins(60)), plan.Entries[5].Start, "the node is idle once the fifth job (10..60) ends")
	checkNoOverAllocation(t, prof)
}

func TestTimeMin(t *testing.T) {
	// Node 0 runs a job until +60; job 1 needs both nodes (reserved at
	// +60). Job 2 (limit 120 min, time-min 30 min) fits the 60-minute
	// gap on node 1: it starts now with its limit raised to 60 minutes.
	pl, err := NewPlanner(Config{})
	require.NoError(t, err)
	nodes := cluster(2, vec(8, 100, 0))
	running := []Running{{ID: 100, End: t0.Add(mins(60)), Allocs: []Alloc{{Node: 0, Use: vec(8, 100, 0)}}}}
	prof, err := pl.NewProfile(t0, nodes, running)
	require.NoError(t, err)
	plan, err := pl.Plan(prof, []Job{
		{ID: 1, Nodes: 2, PerNode: vec(8, 100, 0), TimeLimit: mins(60)},
		{ID: 2, Nodes: 1, PerNode: vec(8, 100, 0), TimeLimit: mins(120), TimeMin: mins(30)},
		{ID: 3, Nodes: 1, PerNode: vec(8, 100, 0), TimeLimit: mins(120), TimeMin: mins(90)},
	})
	require.NoError(t, err)
	e := plan.Entries[1]
	assert.Equal(t, StatusStart, e.Status)
	assert.Equal(t, mins(60), e.TimeLimit)
	assert.Equal(t, t0.Add(mins(60)), e.End)
	// Job 3 cannot fit 90 minutes before job 1; it is planned with its
	// time-min after job 1.
	e = plan.Entries[2]
	assert.Equal(t, StatusReserved, e.Status)
	assert.Equal(t, t0.Add(mins(120)), e.Start)
	assert.Equal(t, mins(90), e.TimeLimit)

	// Without a later reservation, the time-min job gets its full limit.
	prof, err = pl.NewProfile(t0, nodes, nil)
	require.NoError(t, err)
	plan, err = pl.Plan(prof, []Job{{ID: 2, Nodes: 1, PerNode: vec(8, 100, 0), TimeLimit: mins(120), TimeMin: mins(30)}})
	require.NoError(t, err)
	assert.Equal(t, mins(120), plan.Entries[0].TimeLimit)
}

func TestReserveKnobs(t *testing.T) {
	// One node busy for 10 minutes; every job must wait, so knobs decide
	// between Reserved and Estimated.
	mk := func(id JobID) Job {
		return Job{ID: id, Nodes: 1, PerNode: vec(1, 1, 0), TimeLimit: mins(10), Partition: "p", User: "u", Assoc: "a", Priority: 100, Eligible: t0.Add(-time.Hour)}
	}
	tests := []struct {
		name   string
		cfg    Config
		edit   func(j *Job)
		status Status
		reason Reason
	}{
		{"default reserves", Config{}, nil, StatusReserved, ReasonNone},
		{"no-reserve flag", Config{}, func(j *Job) { j.NoReserve = true }, StatusEstimated, ReasonNoReserve},
		{"bf_min_prio_reserve", Config{MinPrioReserve: 200}, nil, StatusEstimated, ReasonMinPrioReserve},
		{"bf_min_prio_reserve met", Config{MinPrioReserve: 100}, nil, StatusReserved, ReasonNone},
		{"bf_min_age_reserve", Config{MinAgeReserve: 2 * time.Hour}, nil, StatusEstimated, ReasonMinAgeReserve},
		{"bf_min_age_reserve met", Config{MinAgeReserve: 30 * time.Minute}, nil, StatusReserved, ReasonNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := NewPlanner(tc.cfg)
			require.NoError(t, err)
			prof, err := pl.NewProfile(t0, cluster(1, vec(1, 1, 0)), []Running{{ID: 99, End: t0.Add(mins(10)), Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}}})
			require.NoError(t, err)
			j := mk(1)
			if tc.edit != nil {
				tc.edit(&j)
			}
			plan, err := pl.Plan(prof, []Job{j})
			require.NoError(t, err)
			e := plan.Entries[0]
			assert.Equal(t, tc.status, e.Status)
			assert.Equal(t, tc.reason, e.Reason)
			assert.Equal(t, t0.Add(mins(10)), e.Start, "estimate either way")
			assert.Equal(t, tc.status == StatusReserved, prof.Has(1))
		})
	}
}

func TestPartCountReserve(t *testing.T) {
	pl, err := NewPlanner(Config{JobPartCountReserve: 2})
	require.NoError(t, err)
	prof, err := pl.NewProfile(t0, cluster(1, vec(1, 1, 0)), []Running{{ID: 99, End: t0.Add(mins(10)), Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}}})
	require.NoError(t, err)
	var jobs []Job
	for i := range 6 {
		part := []string{"a", "b"}[i%2]
		jobs = append(jobs, Job{ID: JobID(i + 1), Nodes: 1, PerNode: vec(1, 1, 0), TimeLimit: mins(10), Partition: part})
	}
	plan, err := pl.Plan(prof, jobs)
	require.NoError(t, err)
	var got []Status
	for _, e := range plan.Entries {
		got = append(got, e.Status)
	}
	assert.Equal(t, []Status{StatusReserved, StatusReserved, StatusReserved, StatusReserved, StatusEstimated, StatusEstimated}, got)
	assert.Equal(t, ReasonPartCountReserve, plan.Entries[5].Reason)
}

func TestGroupLimits(t *testing.T) {
	jobs := []Job{
		{ID: 1, User: "u1", Partition: "p1", Assoc: "a1"},
		{ID: 2, User: "u1", Partition: "p2", Assoc: "a1"},
		{ID: 3, User: "u2", Partition: "p1", Assoc: "a2"},
		{ID: 4, User: "u1", Partition: "p1", Assoc: "a3"},
		{ID: 5, User: "u2", Partition: "p1", Assoc: "a2"},
	}
	for i := range jobs {
		jobs[i].Nodes, jobs[i].PerNode, jobs[i].TimeLimit = 1, vec(1, 1, 0), mins(5)
	}
	tests := []struct {
		cfg  Config
		want []Reason // per job; ReasonNone means tested
	}{
		{Config{MaxJobUser: 1}, []Reason{ReasonNone, ReasonMaxJobUser, ReasonNone, ReasonMaxJobUser, ReasonMaxJobUser}},
		{Config{MaxJobPart: 2}, []Reason{ReasonNone, ReasonNone, ReasonNone, ReasonMaxJobPart, ReasonMaxJobPart}},
		{Config{MaxJobAssoc: 1}, []Reason{ReasonNone, ReasonMaxJobAssoc, ReasonNone, ReasonNone, ReasonMaxJobAssoc}},
		{Config{MaxJobUserPart: 1}, []Reason{ReasonNone, ReasonNone, ReasonNone, ReasonMaxJobUserPart, ReasonMaxJobUserPart}},
		{Config{MaxJobStart: 2}, []Reason{ReasonNone, ReasonNone, ReasonMaxJobStart, ReasonMaxJobStart, ReasonMaxJobStart}},
	}
	for _, tc := range tests {
		pl, err := NewPlanner(tc.cfg)
		require.NoError(t, err)
		prof, err := pl.NewProfile(t0, cluster(8, vec(4, 4, 0)), nil)
		require.NoError(t, err)
		plan, err := pl.Plan(prof, jobs)
		require.NoError(t, err)
		for i, e := range plan.Entries {
			if tc.want[i] == ReasonNone {
				assert.Equal(t, StatusStart, e.Status, "%+v job %d", tc.cfg, i+1)
			} else {
				assert.Equal(t, StatusNotTested, e.Status, "%+v job %d", tc.cfg, i+1)
				assert.Equal(t, tc.want[i], e.Reason, "%+v job %d", tc.cfg, i+1)
			}
		}
	}
}

func TestWindowNeverAndEarliest(t *testing.T) {
	pl, err := NewPlanner(Config{Window: 2 * time.Hour})
	require.NoError(t, err)
	nodes := cluster(3, vec(4, 4, 1))
	nodes[2].Free = gres.Vector{} // down
	running := []Running{{ID: 99, End: t0.Add(3 * time.Hour), Allocs: []Alloc{{Node: 0, Use: vec(4, 4, 1)}, {Node: 1, Use: vec(4, 4, 1)}}}}
	prof, err := pl.NewProfile(t0, nodes, running)
	require.NoError(t, err)
	only2 := topology.NodeSetOf(3, 2)
	plan, err := pl.Plan(prof, []Job{
		{ID: 1, Nodes: 1, PerNode: vec(1, 1, 1), TimeLimit: mins(10)},                                  // nodes free at +3h: beyond a 2h window
		{ID: 2, Nodes: 1, PerNode: vec(1, 1, 2), TimeLimit: mins(10)},                                  // 2 GPUs: no node has them
		{ID: 3, Nodes: 4, PerNode: vec(1, 1, 0), TimeLimit: mins(10)},                                  // more nodes than exist
		{ID: 4, Nodes: 1, PerNode: vec(1, 1, 0), TimeLimit: mins(10), Allowed: only2},                  // only the down node
		{ID: 5, Nodes: 1, PerNode: vec(1, 1, 0), TimeLimit: mins(10), Earliest: t0.Add(5 * time.Hour)}, // begins after the window
	})
	require.NoError(t, err)
	want := []struct {
		s Status
		r Reason
	}{
		{StatusBeyondWindow, ReasonWindow},
		{StatusNeverFits, ReasonCapacity},
		{StatusNeverFits, ReasonCapacity},
		{StatusBeyondWindow, ReasonWindow}, // the down node never frees, but the sweep stops at the window
		{StatusBeyondWindow, ReasonWindow},
	}
	for i, w := range want {
		assert.Equal(t, w.s, plan.Entries[i].Status, "job %d", i+1)
		assert.Equal(t, w.r, plan.Entries[i].Reason, "job %d", i+1)
		assert.True(t, plan.Entries[i].Start.IsZero())
	}

	// With nothing changing after the origin, a job that only the down
	// node may run can be told it will never start.
	prof, err = pl.NewProfile(t0, nodes, nil)
	require.NoError(t, err)
	plan, err = pl.Plan(prof, []Job{{ID: 4, Nodes: 1, PerNode: vec(1, 1, 0), TimeLimit: mins(10), Allowed: only2}})
	require.NoError(t, err)
	assert.Equal(t, StatusNeverFits, plan.Entries[0].Status)
	assert.Equal(t, ReasonUnavailable, plan.Entries[0].Reason)

	// Earliest inside the window is honoured to the second (off the grid).
	pl, err = NewPlanner(Config{})
	require.NoError(t, err)
	prof, err = pl.NewProfile(t0, cluster(1, vec(1, 1, 0)), nil)
	require.NoError(t, err)
	plan, err = pl.Plan(prof, []Job{{ID: 1, Nodes: 1, PerNode: vec(1, 1, 0), TimeLimit: mins(10), Earliest: t0.Add(90 * time.Second)}})
	require.NoError(t, err)
	assert.Equal(t, StatusReserved, plan.Entries[0].Status)
	assert.Equal(t, t0.Add(90*time.Second), plan.Entries[0].Start)
	assert.Equal(t, t0.Add(11*time.Minute+30*time.Second), plan.Entries[0].End, "start plus limit")
	r, ok := prof.Reservation(1)
	require.True(t, ok)
	assert.Equal(t, t0.Add(12*time.Minute), r.End, "a future reservation ends on the grid")
}

func TestChooser(t *testing.T) {
	// A chooser that wants two adjacent nodes (a stand-in for "same leaf
	// switch"); nodes 0 and 2 are free now, 1 and 2 later.
	adjacent := func(c topology.NodeSet, n int) []int {
		for i := c.Next(0); i >= 0; i = c.Next(i + 1) {
			if c.Has(i + 1) {
				return []int{i, i + 1}
			}
		}
		return nil
	}
	pl, err := NewPlanner(Config{Chooser: adjacent})
	require.NoError(t, err)
	nodes := cluster(3, vec(1, 1, 0))
	running := []Running{{ID: 99, End: t0.Add(mins(30)), Allocs: []Alloc{{Node: 1, Use: vec(1, 1, 0)}}}}
	prof, err := pl.NewProfile(t0, nodes, running)
	require.NoError(t, err)
	plan, err := pl.Plan(prof, []Job{{ID: 1, Nodes: 2, PerNode: vec(1, 1, 0), TimeLimit: mins(10)}})
	require.NoError(t, err)
	assert.Equal(t, StatusReserved, plan.Entries[0].Status)
	assert.Equal(t, t0.Add(mins(30)), plan.Entries[0].Start)
	assert.Equal(t, []int{0, 1}, plan.Entries[0].Nodes)

	// A chooser that breaks its contract is an error.
	bad := func(c topology.NodeSet, n int) []int { return []int{1} }
	prof, err = NewProfile(t0, nodes, running, ProfileOptions{})
	require.NoError(t, err)
	_, err = prof.EarliestFit(Request{Nodes: 1, PerNode: vec(1, 1, 0), Duration: time.Minute, Chooser: bad})
	require.ErrorIs(t, err, ErrInvalidRequest)
}

func TestPlanValidation(t *testing.T) {
	pl, err := NewPlanner(Config{})
	require.NoError(t, err)
	good := Job{ID: 1, Nodes: 1, PerNode: vec(1, 1, 0), TimeLimit: time.Minute}
	tests := []struct {
		name string
		jobs []Job
		err  error
	}{
		{"duplicate", []Job{good, good}, ErrDuplicateID},
		{"in profile", []Job{{ID: 99, Nodes: 1, TimeLimit: time.Minute}}, ErrDuplicateID},
		{"nodes", []Job{{ID: 2, Nodes: 0, TimeLimit: time.Minute}}, ErrInvalidJob},
		{"limit", []Job{{ID: 2, Nodes: 1}}, ErrInvalidJob},
		{"time-min", []Job{{ID: 2, Nodes: 1, TimeLimit: time.Minute, TimeMin: time.Hour}}, ErrInvalidJob},
		{"time-min sub-second", []Job{{ID: 2, Nodes: 1, TimeLimit: time.Minute, TimeMin: time.Millisecond}}, ErrInvalidJob},
		{"allowed", []Job{{ID: 2, Nodes: 1, TimeLimit: time.Minute, Allowed: topology.NewNodeSet(5)}}, ErrInvalidJob},
		{"negative", []Job{{ID: 2, Nodes: 1, TimeLimit: time.Minute, PerNode: gres.Vector{-1}}}, ErrInvalidJob},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prof, err := pl.NewProfile(t0, cluster(2, vec(1, 1, 0)), []Running{{ID: 99, End: t0.Add(time.Hour), Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}}})
			require.NoError(t, err)
			before := prof.NumChangePoints()
			_, err = pl.Plan(prof, append([]Job{{ID: 50, Nodes: 1, PerNode: vec(1, 1, 0), TimeLimit: time.Minute}}, tc.jobs...))
			require.ErrorIs(t, err, tc.err)
			assert.Equal(t, before, prof.NumChangePoints(), "profile untouched")
			assert.Equal(t, 1, prof.Len())
		})
	}
	prof, err := NewProfile(t0, cluster(1, vec(1, 1, 0)), nil, ProfileOptions{Resolution: time.Second})
	require.NoError(t, err)
	_, err = pl.Plan(prof, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)

	for _, c := range []Config{
		{Mode: 7}, {Reservations: -1}, {Window: -1}, {Window: 31 * 24 * time.Hour}, {Resolution: 500 * time.Millisecond},
		{MaxJobTest: -1}, {MaxJobUser: -1}, {MinPrioReserve: -1}, {MinAgeReserve: -1}, {JobPartCountReserve: -1}, {MaxJobStart: -2},
	} {
		_, err := NewPlanner(c)
		assert.ErrorIs(t, err, ErrInvalidConfig, "%+v", c)
	}
}

func TestPlanDeterministic(t *testing.T) {
	pl, err := NewPlanner(Config{})
	require.NoError(t, err)
	w := genWorkload(smallScale(), 3)
	prof, err := pl.NewProfile(w.now, w.nodes, w.running)
	require.NoError(t, err)
	a, err := pl.Plan(prof.Clone(), w.pending)
	require.NoError(t, err)
	b, err := pl.Plan(prof.Clone(), w.pending)
	require.NoError(t, err)
	require.Equal(t, a, b)
	// And the original was not touched by planning on clones.
	assert.Equal(t, len(w.running), prof.Len())
	_, err = pl.Plan(prof, w.pending)
	require.NoError(t, err)
	checkNoOverAllocation(t, prof)
}

func TestErrorsAreSentinels(t *testing.T) {
	_, err := NewProfile(time.Time{}, nil, nil, ProfileOptions{})
	assert.ErrorIs(t, err, ErrInvalidTime)
	_, err = NewProfile(t0, []NodeState{{Capacity: gres.Vector{-1}}}, nil, ProfileOptions{})
	assert.ErrorIs(t, err, ErrInvalidNode)
	_, err = NewProfile(t0, cluster(1, vec(1, 1, 0)), []Running{{ID: 1, Allocs: []Alloc{{Node: 0, Use: vec(2, 1, 0)}}}}, ProfileOptions{})
	assert.ErrorIs(t, err, ErrOverAllocation)
	_, err = NewProfile(t0, cluster(1, vec(1, 1, 0)), []Running{{ID: 1, Allocs: []Alloc{{Node: 3, Use: vec(1, 1, 0)}}}}, ProfileOptions{})
	assert.ErrorIs(t, err, ErrInvalidNode)
	_, err = NewProfile(t0, cluster(1, vec(2, 2, 0)), []Running{
		{ID: 1, Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}},
		{ID: 1, Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}},
	}, ProfileOptions{})
	assert.ErrorIs(t, err, ErrDuplicateID)
	// Free given explicitly must leave room for the running jobs' release.
	nodes := cluster(1, vec(2, 2, 0))
	nodes[0].Free = vec(2, 2, 0)
	_, err = NewProfile(t0, nodes, []Running{{ID: 1, End: t0.Add(time.Hour), Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}}}, ProfileOptions{})
	assert.ErrorIs(t, err, ErrOverAllocation)

	p, err := NewProfile(t0, cluster(2, vec(2, 2, 0)), nil, ProfileOptions{})
	require.NoError(t, err)
	err = p.Reserve(Reservation{ID: 1, Start: t0, End: t0, Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}})
	assert.ErrorIs(t, err, ErrInvalidTime)
	err = p.Reserve(Reservation{ID: 1, Start: t0, End: t0.Add(time.Hour), Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}, {Node: 0, Use: vec(1, 1, 0)}}})
	assert.ErrorIs(t, err, ErrInvalidRequest)
	require.NoError(t, p.Reserve(Reservation{ID: 1, Start: t0, End: t0.Add(time.Hour), Allocs: []Alloc{{Node: 0, Use: vec(2, 1, 0)}}}))
	err = p.Reserve(Reservation{ID: 2, Start: t0.Add(30 * time.Minute), End: t0.Add(2 * time.Hour), Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}})
	assert.ErrorIs(t, err, ErrOverAllocation)
	err = p.Reserve(Reservation{ID: 1, Start: t0, End: t0.Add(time.Hour), Allocs: []Alloc{{Node: 1, Use: vec(1, 1, 0)}}})
	assert.ErrorIs(t, err, ErrDuplicateID)
	assert.ErrorIs(t, p.Release(5), ErrUnknownID)
	_, err = p.EarliestFit(Request{Nodes: 0, Duration: time.Minute})
	assert.ErrorIs(t, err, ErrInvalidRequest)
	_, err = p.EarliestFit(Request{Nodes: 1})
	assert.ErrorIs(t, err, ErrInvalidTime)
	_, err = p.EarliestFit(Request{Nodes: 1, Duration: time.Minute, Allowed: topology.NewNodeSet(7)})
	assert.ErrorIs(t, err, ErrInvalidRequest)
	_, err = p.FreeAt(9, t0)
	assert.ErrorIs(t, err, ErrInvalidNode)
	var target error = ErrInvalidNode
	assert.True(t, errors.Is(fmt.Errorf("wrapped: %w", err), target))
}

// TestProfileRounding checks where the resolution grid applies: running
// jobs end exactly (off the grid), a fit starts at such an end to the
// second, and only a future reservation's end is rounded up to the grid;
// an overdue job holds until the first grid point after now.
func TestProfileRounding(t *testing.T) {
	now := t0.Add(25 * time.Second) // not on the 60 s grid
	p, err := NewProfile(now, cluster(1, vec(1, 1, 0)), []Running{
		{ID: 1, End: now.Add(90 * time.Second), Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}},
	}, ProfileOptions{})
	require.NoError(t, err)
	steps, err := p.Timeline(0)
	require.NoError(t, err)
	require.Len(t, steps, 2)
	assert.Equal(t, now, steps[0].Start)
	assert.Equal(t, now.Add(90*time.Second), steps[1].Start, "a running job ends exactly")
	fit, err := p.EarliestFit(Request{Nodes: 1, PerNode: vec(1, 1, 0), Duration: 61 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, now.Add(90*time.Second), fit.Start, "the exact end of the blocker")
	assert.Equal(t, t0.Add(3*time.Minute), fit.End, "a reservation's end rounded up to the grid")
	require.NoError(t, p.Reserve(Reservation{ID: 2, Start: fit.Start, End: fit.Start.Add(61 * time.Second), Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}}))
	r2, ok := p.Reservation(2)
	require.True(t, ok)
	assert.Equal(t, fit.Start, r2.Start)
	assert.Equal(t, fit.End, r2.End)
	fit, err = p.EarliestFit(Request{Nodes: 1, PerNode: vec(1, 1, 0), Duration: time.Minute, Earliest: now.Add(7 * time.Second)})
	require.NoError(t, err)
	assert.Equal(t, FitFound, fit.Status)
	assert.Equal(t, t0.Add(3*time.Minute), fit.Start, "after the reservation's rounded end")
	r, ok := p.Reservation(1)
	require.True(t, ok)
	assert.Equal(t, now, r.Start)
	// An overdue job ends one step after now.
	p, err = NewProfile(now, cluster(1, vec(1, 1, 0)), []Running{
		{ID: 1, End: now.Add(-time.Hour), Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}},
	}, ProfileOptions{})
	require.NoError(t, err)
	steps, _ = p.Timeline(0)
	assert.Equal(t, t0.Add(time.Minute), steps[1].Start)
	// A job without an end never releases.
	p, err = NewProfile(now, cluster(1, vec(1, 1, 0)), []Running{{ID: 1, Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}}}, ProfileOptions{})
	require.NoError(t, err)
	fit, err = p.EarliestFit(Request{Nodes: 1, PerNode: vec(1, 1, 0), Duration: time.Minute})
	require.NoError(t, err)
	assert.Equal(t, FitNever, fit.Status)
	require.NoError(t, p.Release(1))
	fit, err = p.EarliestFit(Request{Nodes: 1, PerNode: vec(1, 1, 0), Duration: time.Minute})
	require.NoError(t, err)
	assert.Equal(t, now, fit.Start)
}

func TestBlock(t *testing.T) {
	// Maintenance on node 0 from +60 to +120: a 90-minute job can't run
	// across it; a 30-minute one can run before it.
	p, err := NewProfile(t0, cluster(1, vec(4, 4, 0)), []Running{
		{ID: 1, End: t0.Add(mins(90)), Allocs: []Alloc{{Node: 0, Use: vec(2, 2, 0)}}},
	}, ProfileOptions{})
	require.NoError(t, err)
	require.NoError(t, p.Block(2, t0.Add(mins(60)), t0.Add(mins(120)), []int{0}))
	fit, err := p.EarliestFit(Request{Nodes: 1, PerNode: vec(1, 1, 0), Duration: mins(90)})
	require.NoError(t, err)
	assert.Equal(t, t0.Add(mins(120)), fit.Start)
	fit, err = p.EarliestFit(Request{Nodes: 1, PerNode: vec(1, 1, 0), Duration: mins(30)})
	require.NoError(t, err)
	assert.Equal(t, t0, fit.Start)
	free, err := p.FreeAt(0, t0.Add(mins(70)))
	require.NoError(t, err)
	assert.Equal(t, int64(-2), free[gres.CPU], "blocked resources show negative while the running job holds its share")
	require.NoError(t, p.Release(2))
	fit, err = p.EarliestFit(Request{Nodes: 1, PerNode: vec(1, 1, 0), Duration: mins(90)})
	require.NoError(t, err)
	assert.Equal(t, t0, fit.Start)
}

func TestAddRunningMatchesBulk(t *testing.T) {
	w := genWorkload(scale{nodes: 100, running: 400}, 11)
	bulk, err := NewProfile(w.now, w.nodes, w.running, ProfileOptions{})
	require.NoError(t, err)
	// Same nodes with Free given explicitly, then jobs one by one.
	nodes := slices.Clone(w.nodes)
	for i := range nodes {
		f, err := bulk.FreeAt(i, w.now)
		require.NoError(t, err)
		nodes[i].Free = f
	}
	inc, err := NewProfile(w.now, nodes, nil, ProfileOptions{})
	require.NoError(t, err)
	for _, r := range w.running {
		require.NoError(t, inc.AddRunning(r))
	}
	require.Equal(t, bulk.NumChangePoints(), inc.NumChangePoints())
	requireSameTimelines(t, bulk, inc, "")
	checkProfile(t, inc, nil)
	checkProfile(t, bulk, nil)
	assert.ErrorIs(t, inc.AddRunning(w.running[0]), ErrDuplicateID)
}

// referencePlan plans jobs one by one with plain EarliestFit and Reserve —
// no shape cache, no hints — for configurations without time-min jobs.
func referencePlan(t *testing.T, cfg Config, prof *Profile, jobs []Job) []Entry {
	t.Helper()
	cfg = cfg.withDefaults()
	latest := prof.Now().Add(cfg.Window)
	resv := 0
	out := make([]Entry, len(jobs))
	for x, j := range jobs {
		e := &out[x]
		e.ID = j.ID
		fit, err := prof.EarliestFit(Request{Nodes: j.Nodes, PerNode: j.PerNode, Exclusive: j.Exclusive, Allowed: j.Allowed,
			Duration: j.TimeLimit, Earliest: j.Earliest, Latest: latest, Chooser: cfg.Chooser, PreferBusy: cfg.BusyNodes})
		require.NoError(t, err)
		switch fit.Status {
		case FitNever:
			e.Status = StatusNeverFits
			continue
		case FitBeyondLatest:
			e.Status = StatusBeyondWindow
			continue
		}
		e.Start, e.Nodes = fit.Start, fit.Nodes
		now := fit.Start.Equal(prof.Now())
		if !now && cfg.Mode == EASY && resv >= cfg.Reservations {
			e.Status = StatusEstimated
			continue
		}
		allocs := jobAllocs(fit.Nodes, j.PerNode, j.Exclusive, func(i int) gres.Vector {
			return prof.expand(prof.caps[i*prof.a : (i+1)*prof.a])
		})
		require.NoError(t, prof.Reserve(Reservation{ID: j.ID, Start: fit.Start, End: fit.Start.Add(j.TimeLimit), Allocs: allocs}))
		if now {
			e.Status = StatusStart
		} else {
			e.Status = StatusReserved
			resv++
		}
	}
	return out
}

// TestPlannerMatchesReference checks that the planner's shape cache and
// candidate hints change nothing: every entry equals what uncached
// searches give, in both modes, on synthetic workloads.
func TestPlannerMatchesReference(t *testing.T) {
	sc := scale{nodes: 150, running: 600, pending: 1_000}
	if testing.Short() {
		sc = scale{nodes: 100, running: 400, pending: 600}
	}
	adjacent := func(c topology.NodeSet, n int) []int {
		// n consecutive indices, lowest first: a monotone chooser.
		run := 0
		for i := c.Next(0); i >= 0; i = c.Next(i + 1) {
			if i > 0 && c.Has(i-1) {
				run++
			} else {
				run = 1
			}
			if run == n {
				out := make([]int, n)
				for k := range out {
					out[k] = i - n + 1 + k
				}
				return out
			}
		}
		return nil
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		seed uint64
	}{
		{"conservative", Config{}, 1},
		{"conservative-2h-window", Config{Window: 2 * time.Hour}, 2},
		{"easy", Config{Mode: EASY}, 3},
		{"easy-k4", Config{Mode: EASY, Reservations: 4}, 4},
		{"conservative-res1s", Config{Resolution: time.Second}, 5},
		{"conservative-chooser", Config{Chooser: adjacent}, 6},
		{"easy-busy-nodes", Config{Mode: EASY, BusyNodes: true}, 7},
		{"conservative-busy-nodes", Config{BusyNodes: true}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := genWorkload(sc, tc.seed)
			// Some jobs with a later earliest start.
			for x := range w.pending {
				if x%7 == 3 {
					w.pending[x].Earliest = w.now.Add(time.Duration(x%300) * time.Minute)
				}
			}
			pl, err := NewPlanner(tc.cfg)
			require.NoError(t, err)
			a, err := pl.NewProfile(w.now, w.nodes, w.running)
			require.NoError(t, err)
			b := a.Clone()
			plan, err := pl.Plan(a, w.pending)
			require.NoError(t, err)
			ref := referencePlan(t, tc.cfg, b, w.pending)
			for x := range ref {
				got, want := plan.Entries[x], ref[x]
				if want.Status == StatusNeverFits || want.Status == StatusBeyondWindow {
					require.Contains(t, []Status{StatusNeverFits, StatusBeyondWindow}, got.Status, "job %d", x)
					continue
				}
				require.Equal(t, want.Status, got.Status, "job %d", x)
				require.Equal(t, want.Start, got.Start, "job %d", x)
				require.Equal(t, want.Nodes, got.Nodes, "job %d", x)
			}
			require.Less(t, plan.Stats.Searches, plan.Stats.Tested, "the cache answered some jobs")
			checkNoOverAllocation(t, a)
			checkProfile(t, a, nil)
		})
	}
}

// TestNoEstimateSameDecisions checks that Job.NoEstimate changes no
// decision: the same starts and reservations on the same nodes, and for
// the jobs that asked for no estimate, StatusWaiting where the full plan
// has an estimate or none within the window. Jobs with and without it
// alternate, so the shape cache mixes answers searched to the origin only
// with answers searched to the window's end.
func TestNoEstimateSameDecisions(t *testing.T) {
	sc := scale{nodes: 100, running: 400, pending: 600}
	for _, tc := range []struct {
		name string
		cfg  Config
		seed uint64
	}{
		{"easy", Config{Mode: EASY}, 11},
		{"easy-k4", Config{Mode: EASY, Reservations: 4}, 12},
		{"easy-busy-nodes", Config{Mode: EASY, BusyNodes: true}, 13},
		{"conservative-part-count", Config{JobPartCountReserve: 5}, 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := genWorkload(sc, tc.seed)
			for x := range w.pending {
				if x%7 == 3 {
					w.pending[x].Earliest = w.now.Add(time.Duration(x%300) * time.Minute)
				}
				w.pending[x].Partition = []string{"a", "b"}[x%2]
			}
			pl, err := NewPlanner(tc.cfg)
			require.NoError(t, err)
			a, err := pl.NewProfile(w.now, w.nodes, w.running)
			require.NoError(t, err)
			b := a.Clone()
			full, err := pl.Plan(a, w.pending)
			require.NoError(t, err)
			jobs := slices.Clone(w.pending)
			for x := range jobs {
				jobs[x].NoEstimate = x%3 != 0
			}
			lean, err := pl.Plan(b, jobs)
			require.NoError(t, err)
			waiting := 0
			for x := range jobs {
				want, got := full.Entries[x], lean.Entries[x]
				switch {
				case !jobs[x].NoEstimate, want.Status == StatusStart, want.Status == StatusReserved:
					require.Equal(t, want, got, "job %d", x)
				case want.Status == StatusEstimated, want.Status == StatusBeyondWindow:
					require.Equal(t, StatusWaiting, got.Status, "job %d", x)
					require.NotContains(t, []Reason{ReasonNone, ReasonWindow}, got.Reason, "job %d: why it gets no reservation", x)
					require.Empty(t, got.Nodes, "job %d", x)
					require.True(t, got.Start.IsZero(), "job %d", x)
					waiting++
				case want.Status == StatusNeverFits:
					require.Contains(t, []Status{StatusNeverFits, StatusWaiting}, got.Status, "job %d", x)
				default:
					require.Equal(t, want.Status, got.Status, "job %d", x)
				}
			}
			require.Positive(t, waiting, "some jobs were only tested for a start now")
			require.Equal(t, waiting, lean.Stats.Waiting-countStatus(full, StatusWaiting))
			require.Less(t, lean.Stats.Searches, full.Stats.Searches)
			checkNoOverAllocation(t, b)
			checkProfile(t, b, nil)
		})
	}
}

func countStatus(p *Plan, s Status) int {
	n := 0
	for _, e := range p.Entries {
		if e.Status == s {
			n++
		}
	}
	return n
}

func TestReserveFit(t *testing.T) {
	now := t0.Add(20 * time.Second)
	p, err := NewProfile(now, cluster(3, vec(4, 4, 2)), []Running{
		{ID: 1, End: now.Add(mins(30)), Allocs: []Alloc{{Node: 0, Use: vec(1, 1, 0)}}},
	}, ProfileOptions{})
	require.NoError(t, err)
	req := Request{Nodes: 2, PerNode: vec(1, 1, 1), Exclusive: true, Duration: mins(45)}
	for id := JobID(10); id < 13; id++ {
		fit, err := p.EarliestFit(req)
		require.NoError(t, err)
		require.NoError(t, p.ReserveFit(id, req, fit))
		checkProfile(t, p, nil)
		checkNoOverAllocation(t, p)
	}
	// Whole nodes 1 and 2 now (node 0 runs job 1 until 12:30:20); then
	// nodes 0 and 1 once the first, a start, ends exactly 45 minutes from
	// now; the second, a future reservation, ends on the grid.
	r, ok := p.Reservation(10)
	require.True(t, ok)
	assert.Equal(t, now, r.Start)
	assert.Equal(t, now.Add(mins(45)), r.End, "a start ends exactly")
	assert.Equal(t, vec(4, 4, 2), r.Allocs[0].Use, "exclusive takes the whole node")
	assert.Equal(t, []int{1, 2}, []int{r.Allocs[0].Node, r.Allocs[1].Node})
	r, _ = p.Reservation(11)
	assert.Equal(t, now.Add(mins(45)), r.Start)
	assert.Equal(t, t0.Add(mins(91)), r.End, "12:45:20 + 45 min, rounded up to the grid")
	assert.Equal(t, []int{0, 1}, []int{r.Allocs[0].Node, r.Allocs[1].Node})
	assert.ErrorIs(t, p.ReserveFit(20, req, Fit{Status: FitNever}), ErrInvalidRequest)
}
