package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// rackCluster is six 16-CPU nodes n0…n5: n0-n1 rack1 with feature a,
// n2-n5 rack2 with feature b.
func rackCluster(t *testing.T, bf bool) *scheduler.Scheduler {
	t.Helper()
	cfg := scheduler.Config{Partitions: []scheduler.PartitionConfig{{Name: "p", Default: true}}}
	for i := range 6 {
		f := []string{"rack1", "a"}
		if i >= 2 {
			f = []string{"rack2", "b"}
		}
		cfg.Nodes = append(cfg.Nodes, scheduler.NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 16, MemoryMiB: 64 * 1024, Features: f})
	}
	if bf {
		cfg.Backfill = &backfill.Config{Mode: backfill.EASY, Resolution: time.Second}
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

// cpusByName is each allocated node's CPU count by node name.
func cpusByName(a scheduler.Allocation) map[string]int {
	out := map[string]int{}
	for _, n := range a.Nodes {
		out[n.Name] = len(n.CPUs)
	}
	return out
}

// Slurm's sbatch -w/--nodelist, -C/--constraint and --contiguous with -n
// and no -N: Slurm chooses the node count that holds the tasks, the
// required nodes (or counted groups, one alternative, consecutive nodes)
// among them, and the tasks are dealt one per node in turn.
func TestWhereWithTaskSpread(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec scheduler.JobSpec
		want map[string]int
	}{
		// sbatch -w n[1-2] -n 20: the two listed nodes, 10+10.
		{"nodelist holds", scheduler.JobSpec{NodeList: "n[1-2]", Tasks: 20}, map[string]int{"n1": 10, "n2": 10}},
		// sbatch -w n1 -n 40: the list names fewer nodes than the tasks
		// need; Slurm allocates additional nodes as needed (n0, n2: the
		// lowest others), 14+13+13.
		{"nodelist plus more", scheduler.JobSpec{NodeList: "n1", Tasks: 40}, map[string]int{"n0": 14, "n1": 13, "n2": 13}},
		// --constraint='[rack1*2&rack2*2]' -n 64: two nodes of each rack, 16 each.
		{"counted constraint", scheduler.JobSpec{Constraint: "[rack1*2&rack2*2]", Tasks: 64},
			map[string]int{"n0": 16, "n1": 16, "n2": 16, "n3": 16}},
		// -C 'a|b' -n 40: the a nodes (32 CPUs) cannot hold 40 tasks; all
		// nodes take the next alternative, b.
		{"matching OR", scheduler.JobSpec{Constraint: "[a|b]", Tasks: 40}, map[string]int{"n2": 14, "n3": 13, "n4": 13}},
		// -N1 -n7 -w n[0-1]: the list raises the count to 2; 4+3.
		{"nodelist raises -N", scheduler.JobSpec{Nodes: 1, NodeList: "n[0-1]", Tasks: 7}, map[string]int{"n0": 4, "n1": 3}},
		// -N 2-4 -n 8 -w n5: as many nodes as it can within the range,
		// n5 among them: 2+2+2+2.
		{"node range with nodelist", scheduler.JobSpec{Nodes: 2, NodesMax: 4, NodeList: "n5", Tasks: 8},
			map[string]int{"n0": 2, "n1": 2, "n2": 2, "n5": 2}},
	} {
		for _, bf := range []bool{false, true} {
			s := rackCluster(t, bf)
			sp := tc.spec
			sp.TimeLimit = time.Hour
			got, j := startNodes(t, s, t0, sp)
			require.NotNil(t, got, "%s bf=%v: %s", tc.name, bf, j.Reason)
			assert.Equal(t, tc.want, cpusByName(j.Alloc), "%s bf=%v", tc.name, bf)
		}
	}
}

// --contiguous -n 40 with n1 busy: three consecutive free nodes, n2-n4.
func TestContiguousWithTaskSpread(t *testing.T) {
	s := rackCluster(t, false)
	got, _ := startNodes(t, s, t0, scheduler.JobSpec{NodeList: "n1", Tasks: 16, TimeLimit: 2 * time.Hour})
	require.Equal(t, []string{"n1"}, got)
	got, j := startNodes(t, s, t0, scheduler.JobSpec{Contiguous: true, Tasks: 40, TimeLimit: time.Hour})
	require.NotNil(t, got, "%s", j.Reason)
	assert.Equal(t, map[string]int{"n2": 14, "n3": 13, "n4": 13}, cpusByName(j.Alloc))
}

// A required node that is down: ReqNodeNotAvail, Explain's
// "UnavailableNodes:"; once it is back the job starts there.
func TestNodeListDownWithTaskSpread(t *testing.T) {
	s := rackCluster(t, true)
	_, err := s.DownNode(t0, "n1", "dead")
	require.NoError(t, err)
	got, j := startNodes(t, s, t0, scheduler.JobSpec{NodeList: "n1", Tasks: 40, TimeLimit: time.Hour})
	require.Nil(t, got)
	assert.Equal(t, policy.ReasonReqNodeNotAvail, j.Reason)
	ex, err := s.Explain(t0, j.ID, scheduler.ExplainOptions{})
	require.NoError(t, err)
	var found bool
	for _, b := range ex.Blockers {
		if b.Reason == policy.ReasonReqNodeNotAvail {
			assert.Contains(t, b.Detail, "UnavailableNodes:n1")
			found = true
		}
	}
	assert.True(t, found, "%+v", ex.Blockers)
	require.NoError(t, s.ResumeNode(t0.Add(time.Minute), "n1"))
	mustSchedule(t, s, t0.Add(time.Minute))
	j, _ = s.Job(j.ID)
	require.Equal(t, scheduler.JobRunning, j.State)
	assert.Equal(t, map[string]int{"n0": 14, "n1": 13, "n2": 13}, cpusByName(j.Alloc))
}

// The required node full: Resources, Explain names it; the backfill plan
// expects the job when it frees, on it, and the job starts then.
func TestNodeListBusyWithTaskSpread(t *testing.T) {
	s := rackCluster(t, true)
	busy := mustSubmit(t, s, t0, scheduler.JobSpec{NodeList: "n1", Tasks: 16, TimeLimit: time.Hour})
	got, j := startNodes(t, s, t0, scheduler.JobSpec{NodeList: "n1", Tasks: 20, TimeLimit: time.Hour})
	require.Nil(t, got)
	assert.Equal(t, policy.ReasonResources, j.Reason)
	assert.Equal(t, t0.Add(time.Hour), j.ExpectedStart)
	assert.Contains(t, j.PlannedNodes, "n1")
	ex, err := s.Explain(t0, j.ID, scheduler.ExplainOptions{})
	require.NoError(t, err)
	var found bool
	for _, b := range ex.Blockers {
		if b.Kind == scheduler.BlockerResources && len(b.Nodes) == 1 && b.Nodes[0] == "n1" {
			assert.Contains(t, b.Detail, "required node(s) n1")
			assert.Contains(t, b.Detail, "20 task(s)")
			found = true
		}
	}
	assert.True(t, found, "%+v", ex.Blockers)
	assert.Equal(t, t0.Add(time.Hour), ex.Estimate.Start)

	at := t0.Add(time.Hour)
	require.NoError(t, s.Finish(at, busy, 0))
	mustSchedule(t, s, at)
	j, _ = s.Job(j.ID)
	require.Equal(t, scheduler.JobRunning, j.State)
	assert.Equal(t, map[string]int{"n0": 10, "n1": 10}, cpusByName(j.Alloc))
}

// Submission refuses what no node set could run: fewer tasks than the
// listed nodes, a list longer than -N's maximum.
func TestWhereTaskSpreadRefused(t *testing.T) {
	s := rackCluster(t, false)
	for _, sp := range []scheduler.JobSpec{
		{NodeList: "n[0-3]", Tasks: 2},
		{Nodes: 1, NodesMax: 2, NodeList: "n[0-2]", Tasks: 8},
		{Constraint: "[a|b]", Tasks: 97},
		{Constraint: "a", NodeList: "n1", Tasks: 33},
	} {
		sp.TimeLimit = time.Hour
		_, err := s.Submit(t0, sp)
		assert.ErrorIs(t, err, scheduler.ErrInvalidJob, "%+v", sp)
	}
}
