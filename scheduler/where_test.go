package scheduler_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/feature"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

// featured is six 4-CPU nodes n0…n5 with features: n0-n1 rack1, n2-n4
// rack2, n5 rack3; n0, n2, n5 also "ib".
func featured(t *testing.T, bf bool) *scheduler.Scheduler {
	t.Helper()
	feats := [][]string{{"rack1", "ib"}, {"rack1"}, {"rack2", "ib"}, {"rack2"}, {"rack2"}, {"rack3", "ib"}}
	cfg := scheduler.Config{Partitions: []scheduler.PartitionConfig{{Name: "p", Default: true}}, Policy: &policy.Config{}}
	for i, f := range feats {
		cfg.Nodes = append(cfg.Nodes, scheduler.NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 4, MemoryMiB: 1024, Features: f})
	}
	if bf {
		cfg.Backfill = &backfill.Config{Mode: backfill.EASY, Resolution: time.Second}
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

// startNodes submits spec, runs a cycle and returns the job's nodes
// (nil when it did not start) and the job.
func startNodes(t *testing.T, s *scheduler.Scheduler, at time.Time, spec scheduler.JobSpec) ([]string, scheduler.Job) {
	t.Helper()
	id := mustSubmit(t, s, at, spec)
	mustSchedule(t, s, at)
	j, ok := s.Job(id)
	require.True(t, ok)
	if j.State != scheduler.JobRunning {
		return nil, j
	}
	return j.Alloc.NodeNames(), j
}

func whole(n int) scheduler.JobSpec {
	return scheduler.JobSpec{User: "u", Account: "a", Nodes: n, CPUsPerTask: 4, TimeLimit: time.Hour}
}

// sbatch --constraint: AND, OR, parentheses filter every node.
func TestConstraintFilter(t *testing.T) {
	for _, tc := range []struct {
		cons  string
		nodes int
		want  []string
	}{
		{"rack2", 3, []string{"n2", "n3", "n4"}},
		{"rack2&ib", 1, []string{"n2"}},
		{"rack1|rack3", 3, []string{"n0", "n1", "n5"}},
		{"(rack1|rack2)&ib", 2, []string{"n0", "n2"}},
	} {
		s := featured(t, false)
		sp := whole(tc.nodes)
		sp.Constraint = tc.cons
		got, _ := startNodes(t, s, t0, sp)
		assert.Equal(t, tc.want, got, tc.cons)
	}
}

// Slurm rejects an invalid feature specification and a constraint no
// node can satisfy at submission.
func TestConstraintRejectedAtSubmit(t *testing.T) {
	s := featured(t, false)
	sp := whole(1)
	sp.Constraint = "rack1&"
	_, err := s.Submit(t0, sp)
	require.ErrorIs(t, err, scheduler.ErrInvalidJob)
	require.ErrorIs(t, err, feature.ErrSyntax)
	sp.Constraint = "gpu"
	_, err = s.Submit(t0, sp)
	require.ErrorIs(t, err, scheduler.ErrUnsatisfiable)
	sp = whole(3)
	sp.Constraint = "rack1" // two rack1 nodes only
	_, err = s.Submit(t0, sp)
	require.ErrorIs(t, err, scheduler.ErrUnsatisfiable)
	sp.Constraint = "[rack1|rack3]" // neither alternative has 3 nodes
	_, err = s.Submit(t0, sp)
	require.ErrorIs(t, err, scheduler.ErrUnsatisfiable)
	sp.Constraint = "[rack1*3&rack2*1]"
	_, err = s.Submit(t0, sp)
	require.ErrorIs(t, err, scheduler.ErrUnsatisfiable)
}

// Matching OR: all nodes share one alternative; plain OR mixes them.
func TestConstraintMatchingOR(t *testing.T) {
	s := featured(t, false)
	sp := whole(3)
	sp.Constraint = "[rack1|rack2]" // rack1 has only two nodes: rack2
	got, _ := startNodes(t, s, t0, sp)
	assert.Equal(t, []string{"n2", "n3", "n4"}, got)

	s = featured(t, false)
	sp.Constraint = "rack1|rack2" // any mix: the lowest indices
	got, _ = startNodes(t, s, t0, sp)
	assert.Equal(t, []string{"n0", "n1", "n2"}, got)
}

// Node counts: "[rack1*1&rack2*2]" is one rack1 node and two rack2
// nodes, and raises the node count to their sum; "ib*2" with four nodes
// is at least two ib nodes among them.
func TestConstraintCounts(t *testing.T) {
	s := featured(t, false)
	sp := whole(0)
	sp.Constraint = "[rack1*1&rack2*2]"
	got, j := startNodes(t, s, t0, sp)
	assert.Equal(t, []string{"n0", "n2", "n3"}, got)
	assert.Len(t, j.Alloc.Nodes, 3)

	s = featured(t, false)
	// n0 and n2 busy: n5 is the only free ib node, so "ib*2" waits.
	for _, n := range []string{"n0", "n2"} {
		x := whole(1)
		x.NodeList = n
		_, _ = startNodes(t, s, t0, x)
	}
	sp = whole(3)
	sp.Constraint = "ib*2"
	got, j = startNodes(t, s, t0, sp)
	assert.Nil(t, got)
	assert.Equal(t, policy.ReasonResources, j.Reason)

	s = featured(t, false)
	sp = whole(4)
	sp.Constraint = "ib*2"
	got, _ = startNodes(t, s, t0, sp)
	// Two ib nodes (the lowest, n0 and n2), then the two lowest others.
	assert.Equal(t, []string{"n0", "n1", "n2", "n3"}, got)
}

// -w/--nodelist: every required node, plus more for a larger count.
func TestNodeListRequiredPlusMore(t *testing.T) {
	s := featured(t, false)
	sp := whole(3)
	sp.NodeList = "n[4-5]"
	got, _ := startNodes(t, s, t0, sp)
	assert.Equal(t, []string{"n0", "n4", "n5"}, got)

	// A node list longer than the node count raises the count.
	s = featured(t, false)
	sp = whole(1)
	sp.NodeList = "n1,n3"
	got, _ = startNodes(t, s, t0, sp)
	assert.Equal(t, []string{"n1", "n3"}, got)

	// Unknown, excluded or incapable required nodes are refused.
	sp.NodeList = "n9"
	_, err := s.Submit(t0, sp)
	require.ErrorIs(t, err, scheduler.ErrUnknownNode)
	sp.NodeList, sp.Exclude = "n1", []string{"n[0-1]"}
	_, err = s.Submit(t0, sp)
	require.ErrorIs(t, err, scheduler.ErrInvalidJob)
	sp.Exclude, sp.Constraint = nil, "rack2"
	_, err = s.Submit(t0, sp)
	require.ErrorIs(t, err, scheduler.ErrUnsatisfiable)
	sp.NodeList, sp.Constraint = "n[1", ""
	_, err = s.Submit(t0, sp)
	require.ErrorIs(t, err, topology.ErrSyntax)
}

// A required node down or drained: ReqNodeNotAvail, and Explain names it
// as Slurm's "UnavailableNodes:".
func TestNodeListUnavailable(t *testing.T) {
	s := featured(t, false)
	require.NoError(t, s.DrainNode(t0, "n3", "maint"))
	sp := whole(2)
	sp.NodeList = "n[2-3]"
	got, j := startNodes(t, s, t0, sp)
	assert.Nil(t, got)
	assert.Equal(t, policy.ReasonReqNodeNotAvail, j.Reason)
	ex, err := s.Explain(t0, j.ID, scheduler.ExplainOptions{})
	require.NoError(t, err)
	var found bool
	for _, b := range ex.Blockers {
		if b.Reason == policy.ReasonReqNodeNotAvail && assert.Equal(t, []string{"n3"}, b.Nodes) {
			assert.Contains(t, b.Detail, "UnavailableNodes:n3")
			found = true
		}
	}
	assert.True(t, found, "blockers %+v", ex.Blockers)
	// Back up: it starts.
	require.NoError(t, s.ResumeNode(t0.Add(time.Minute), "n3"))
	mustSchedule(t, s, t0.Add(time.Minute))
	j, _ = s.Job(j.ID)
	assert.Equal(t, []string{"n2", "n3"}, j.Alloc.NodeNames())
}

// -x/--exclude takes hostlists; the old JSON key ExcludeNodes still reads.
func TestExcludeHostlistAndOldKey(t *testing.T) {
	s := featured(t, false)
	sp := whole(2)
	sp.Exclude = []string{"n[0-2],n4"}
	got, _ := startNodes(t, s, t0, sp)
	assert.Equal(t, []string{"n3", "n5"}, got)

	var old scheduler.JobSpec
	require.NoError(t, json.Unmarshal([]byte(`{"User":"u","ExcludeNodes":["n1"]}`), &old))
	assert.Equal(t, []string{"n1"}, old.Exclude)
	b, err := json.Marshal(sp)
	require.NoError(t, err)
	var back scheduler.JobSpec
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, sp, back)
}

// Node features changed live (UpdateNode, an event): a pending job whose
// constraint no node satisfies any more pends with BadConstraints, and
// Explain says so; restoring the feature lets it run.
func TestConstraintBadAfterFeatureChange(t *testing.T) {
	s := featured(t, false)
	nc, _ := s.NodeConfig("n5")
	nc.Features = []string{"rack3"}
	busy := whole(1)
	busy.NodeList = "n5"
	_, _ = startNodes(t, s, t0, busy) // n5 busy
	sp := whole(1)
	sp.Constraint = "rack3"
	got, j := startNodes(t, s, t0, sp)
	require.Nil(t, got)
	assert.Equal(t, policy.ReasonResources, j.Reason)
	nc.Features = []string{"rack9"}
	require.NoError(t, s.UpdateNode(t0, nc))
	mustSchedule(t, s, t0)
	j, _ = s.Job(j.ID)
	assert.Equal(t, policy.ReasonBadConstraints, j.Reason)
	ex, err := s.Explain(t0, j.ID, scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, ex.Blockers)
	assert.Equal(t, policy.ReasonBadConstraints, ex.Blockers[0].Reason)
	assert.Contains(t, ex.Blockers[0].Detail, `Constraint "rack3"`)
	nc.Features = []string{"rack3"}
	require.NoError(t, s.UpdateNode(t0, nc))
	nc2, _ := s.NodeConfig("n1")
	nc2.Features = append(nc2.Features, "rack3")
	require.NoError(t, s.UpdateNode(t0, nc2))
	mustSchedule(t, s, t0)
	j, _ = s.Job(j.ID)
	assert.Equal(t, []string{"n1"}, j.Alloc.NodeNames())
}

// --contiguous: consecutive nodes in node order, none skipped.
func TestContiguous(t *testing.T) {
	s := featured(t, false)
	busy := whole(1)
	busy.NodeList = "n1"
	_, _ = startNodes(t, s, t0, busy)
	sp := whole(3)
	sp.Contiguous = true
	got, _ := startNodes(t, s, t0, sp)
	assert.Equal(t, []string{"n2", "n3", "n4"}, got)
	// Without it, the lowest free indices.
	s = featured(t, false)
	_, _ = startNodes(t, s, t0, busy)
	sp.Contiguous = false
	got, _ = startNodes(t, s, t0, sp)
	assert.Equal(t, []string{"n0", "n2", "n3"}, got)
}

// The backfill plan places a job with a required node where that node
// frees, and starts a small job elsewhere meanwhile.
func TestNodeListBackfillPlan(t *testing.T) {
	s := featured(t, true)
	long := whole(1)
	long.NodeList = "n4"
	_, _ = startNodes(t, s, t0, long)
	sp := whole(2)
	sp.NodeList = "n4"
	sp.Constraint = "rack2"
	got, j := startNodes(t, s, t0.Add(time.Minute), sp)
	require.Nil(t, got)
	assert.Equal(t, t0.Add(time.Hour), j.ExpectedStart)
	assert.Equal(t, []string{"n2", "n4"}, j.PlannedNodes)
}

// Node Weight under a topology: the lightest nodes that make a placement
// are used first (the heavier leaf only when needed).
func TestNodeWeightUnderTopology(t *testing.T) {
	cfg := treeCluster()
	for i := range 4 {
		cfg.Nodes[i].Weight = 50 // leaf s0 heavy
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	got, _ := startNodes(t, s, t0, scheduler.JobSpec{Nodes: 2, Exclusive: true})
	assert.Equal(t, []string{"n4", "n5"}, got)
	got, _ = startNodes(t, s, t0, scheduler.JobSpec{Nodes: 3, Exclusive: true})
	// Only two light nodes left: the heavy leaf holds three together.
	assert.Equal(t, []string{"n0", "n1", "n2"}, got)
}

// Snapshot and JSON round trips keep where requests.
func TestWhereSnapshotRoundTrip(t *testing.T) {
	s := featured(t, true)
	busy := whole(6)
	_, _ = startNodes(t, s, t0, busy)
	specs := []scheduler.JobSpec{whole(2), whole(0), whole(3), whole(1)}
	specs[0].NodeList = "n[2-3]"
	specs[1].Constraint = "[rack1*1&rack2*1]"
	specs[2].Constraint, specs[2].Contiguous = "[rack1|rack2]", true
	specs[3].Exclude = []string{"n0"}
	var ids []scheduler.JobID
	for _, sp := range specs {
		ids = append(ids, mustSubmit(t, s, t0, sp))
	}
	mustSchedule(t, s, t0)
	var buf bytes.Buffer
	require.NoError(t, s.Snapshot(&buf))
	r, err := scheduler.Restore(bytes.NewReader(buf.Bytes()), scheduler.RestoreOptions{})
	require.NoError(t, err)
	for k, id := range ids {
		a, _ := s.Job(id)
		b, _ := r.Job(id)
		assert.Equal(t, a.Spec, b.Spec, "job %d", k)
		assert.Equal(t, a.PlannedNodes, b.PlannedNodes, "job %d", k)
	}
	at := t0.Add(2 * time.Hour)
	c1, err := s.Schedule(at)
	require.NoError(t, err)
	c2, err := r.Schedule(at)
	require.NoError(t, err)
	assert.Equal(t, c1.Starts, c2.Starts)
}

// Preemption frees the required node: the victim is the job on it, not
// the one whose preemption would lose least elsewhere.
func TestNodeListPreemptsTheRequiredNode(t *testing.T) {
	s := newPreemptMixed(t, policy.PreemptRequeue, 0)
	var standby []scheduler.JobID
	for range 4 {
		standby = append(standby, mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", QOS: "standby", Exclusive: true, Requeue: scheduler.RequeueYes, TimeLimit: 10 * time.Hour}))
	}
	mustSchedule(t, s, t0)
	require.NoError(t, s.Checkpoint(t0.Add(2*time.Hour-time.Minute), standby[2]))
	on, _ := s.Job(standby[0])
	require.Len(t, on.Alloc.Nodes, 1)
	want := on.Alloc.Nodes[0].Name
	urgent := mustSubmit(t, s, t0.Add(2*time.Hour), scheduler.JobSpec{User: "ann", QOS: "urgent", Exclusive: true, TimeLimit: time.Hour, NodeList: want})
	cyc := mustSchedule(t, s, t0.Add(2*time.Hour))
	require.Len(t, cyc.Preemptions, 1)
	assert.Equal(t, standby[0], cyc.Preemptions[0].Victim)
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, urgent, cyc.Starts[0].Job)
	assert.Equal(t, []string{want}, cyc.Starts[0].Alloc.NodeNames())
}

// Explain says why a where request waits while enough nodes fit: the
// required node is busy.
func TestExplainWhereBusy(t *testing.T) {
	s := featured(t, false)
	busy := whole(1)
	busy.NodeList = "n3"
	_, _ = startNodes(t, s, t0, busy)
	sp := whole(2)
	sp.NodeList = "n3"
	got, j := startNodes(t, s, t0, sp)
	require.Nil(t, got)
	assert.Equal(t, policy.ReasonResources, j.Reason)
	ex, err := s.Explain(t0, j.ID, scheduler.ExplainOptions{})
	require.NoError(t, err)
	var found bool
	for _, b := range ex.Blockers {
		if b.Kind == scheduler.BlockerResources && len(b.Nodes) == 1 && b.Nodes[0] == "n3" {
			assert.Contains(t, b.Detail, "required node(s) n3")
			found = true
		}
	}
	assert.True(t, found, "blockers %+v", ex.Blockers)
}

// --contiguous with node Weight: the window of consecutive nodes with
// the least total weight, the lowest first index on a tie.
func TestContiguousWeight(t *testing.T) {
	for _, tc := range []struct {
		weights []int64
		n       int
		want    []string
	}{
		{[]int64{1, 9, 1, 1, 9, 1}, 2, []string{"n2", "n3"}},
		{[]int64{5, 1, 1, 1, 5, 5}, 3, []string{"n1", "n2", "n3"}},
		{[]int64{1, 1, 1, 1, 1, 1}, 4, []string{"n0", "n1", "n2", "n3"}},
	} {
		cfg := scheduler.Config{Partitions: []scheduler.PartitionConfig{{Name: "p", Default: true}}, Policy: &policy.Config{}}
		for i, w := range tc.weights {
			cfg.Nodes = append(cfg.Nodes, scheduler.NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 4, MemoryMiB: 1024, Weight: w})
		}
		s, err := scheduler.New(cfg)
		require.NoError(t, err)
		sp := whole(tc.n)
		sp.Contiguous = true
		got, _ := startNodes(t, s, t0, sp)
		assert.Equal(t, tc.want, got, "weights %v", tc.weights)
	}
}
