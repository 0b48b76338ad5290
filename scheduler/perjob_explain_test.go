package scheduler_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// perJobExplainScenario: n1 with 4 GPUs all free, n2 with 8 GPUs of which
// a 10-hour job holds 7; with ahead, a job asking 4 GPUs on each node waits
// ahead in the queue; at t0+1m the target (an -N2 GRESPerJob job) is
// submitted and scheduled. mode nil: no backfill.
func perJobExplainScenario(t *testing.T, mode *backfill.Mode, ahead bool, target scheduler.JobSpec) (*scheduler.Scheduler, scheduler.JobID, time.Time) {
	t.Helper()
	cfg := scheduler.Config{
		Nodes:      []scheduler.NodeConfig{socketNode("n1", 2, 2, false), socketNode("n2", 2, 4, false)},
		Partitions: []scheduler.PartitionConfig{{Name: "gpu", Default: true}},
	}
	if mode != nil {
		cfg.Backfill = &backfill.Config{Mode: *mode, Resolution: time.Second, Window: 7 * 24 * time.Hour}
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(7), TimeLimit: 10 * time.Hour})
	if ahead {
		mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 2, GRESPerNode: gpus(4), TimeLimit: 20 * time.Hour})
	}
	require.Len(t, mustSchedule(t, s, t0).Starts, 1)
	t1 := t0.Add(time.Minute)
	id := mustSubmit(t, s, t1, target)
	mustSchedule(t, s, t1)
	return s, id, t1
}

// counterfactualOf returns the explanation's what-if of kind k, or nil.
func counterfactualOf(ex scheduler.Explanation, k scheduler.CounterfactualKind) *scheduler.Counterfactual {
	if i := slices.IndexFunc(ex.Counterfactuals, func(c scheduler.Counterfactual) bool { return c.Kind == k }); i >= 0 {
		return &ex.Counterfactuals[i]
	}
	return nil
}

func perJobModes() []*backfill.Mode {
	easy, cons := backfill.EASY, backfill.Conservative
	return []*backfill.Mode{nil, &easy, &cons}
}

func modeName(m *backfill.Mode) string {
	if m == nil {
		return "none"
	}
	return m.String()
}

// Explain's "fewer GPUs" what-if for a GRESPerJob (--gpus) job changes
// the job's total, and decides a start now by the main pass's rule on
// that total: -N2 --gpus=8 waits (n1 and n2 hold 4 + 1 free), and
// --gpus=4 starts now as 3 + 1, though ceil(4/2) = 2 per node does not
// fit n2. Replaying the what-if — the changed spec submitted in the job's
// place — starts the job now.
func TestCounterfactualFewerGPUsForGRESPerJobIsTrue(t *testing.T) {
	for _, mode := range perJobModes() {
		for _, ahead := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/ahead=%v", modeName(mode), ahead), func(t *testing.T) {
				spec := scheduler.JobSpec{Nodes: 2, GRESPerJob: gpus(8), TimeLimit: time.Hour}
				s, id, t1 := perJobExplainScenario(t, mode, ahead, spec)
				j, _ := s.Job(id)
				require.Equal(t, scheduler.JobPending, j.State)
				ex, err := s.Explain(t1, id, scheduler.ExplainOptions{Counterfactuals: true})
				require.NoError(t, err)
				cf := counterfactualOf(ex, scheduler.CounterGPUs)
				if ahead {
					// The job ahead holds the nodes back (no backfill:
					// strict order) or only the backfill pass, which
					// plans ceil(total/nodes) per node, could start it:
					// whatever is offered must come true.
					if cf != nil && cf.Now {
						s2, id2, _ := perJobExplainScenario(t, mode, ahead, cf.Spec)
						j2, _ := s2.Job(id2)
						assert.Equal(t, scheduler.JobRunning, j2.State, "%s is not true", cf)
					}
					return
				}
				require.NotNil(t, cf, "no fewer-GPUs what-if:\n%s", ex)
				assert.True(t, cf.Now, "%s", cf)
				assert.Equal(t, int64(4), cf.GPUs, "the job's total")
				assert.Equal(t, gpus(4), cf.Spec.GRESPerJob, "it stays a --gpus total")
				assert.Empty(t, cf.Spec.GRESPerNode)
				assert.Contains(t, cf.String(), "4 GPU(s) in all")
				// Replay: the changed spec in the job's place starts now.
				s2, id2, _ := perJobExplainScenario(t, mode, ahead, cf.Spec)
				require.Equal(t, id, id2)
				j2, _ := s2.Job(id2)
				require.Equal(t, scheduler.JobRunning, j2.State, "the what-if is not true")
				assert.Equal(t, t1, j2.StartTime)
				assert.Equal(t, []int{3, 1}, gpusOf(j2.Alloc))
			})
		}
	}
}

// Explain's resource blocker for a GRESPerJob job measures the total, as
// placement does: both nodes hold the one GPU per node each takes, but
// not the 8 in all, so the job is short of resources (it listed no
// resource blocker, judging one per node) and the need says the total.
func TestExplainResourceBlockerForGRESPerJobMeasuresTheTotal(t *testing.T) {
	for _, mode := range perJobModes() {
		t.Run(modeName(mode), func(t *testing.T) {
			s, id, t1 := perJobExplainScenario(t, mode, false, scheduler.JobSpec{Nodes: 2, GRESPerJob: gpus(8), TimeLimit: time.Hour})
			ex, err := s.Explain(t1, id, scheduler.ExplainOptions{})
			require.NoError(t, err)
			var b *scheduler.Blocker
			if k := slices.IndexFunc(ex.Blockers, func(b scheduler.Blocker) bool { return b.Kind == scheduler.BlockerResources }); k >= 0 {
				b = &ex.Blockers[k]
			}
			require.NotNil(t, b, "no resource blocker:\n%s", ex)
			assert.Equal(t, policy.ReasonResources, b.Reason)
			need := b.Need
			assert.Equal(t, 2, need.FitNow, "both nodes hold one GPU")
			assert.Equal(t, "gres/gpu=8", need.PerJob)
			require.Len(t, need.Deficits, 1)
			d := need.Deficits[0]
			assert.Equal(t, "gres/gpu", d.TRES)
			assert.Equal(t, int64(8), d.Total)
			assert.Equal(t, int64(5), d.Room, "4 + 1 free")
			assert.Contains(t, fmt.Sprint(need), "8 in all, 2 node(s) hold at most 5 free")
		})
	}
}

// Explain's "another GPU type" what-if for a GRESPerJob job keeps the
// job's total (--gpus=h100:6, not one h100 per node): the a100 nodes are
// busy, the h100 nodes free; replayed, the changed job starts now with 6
// GPUs.
func TestCounterfactualGPUTypeForGRESPerJobKeepsTheTotal(t *testing.T) {
	h100 := func(name string) scheduler.NodeConfig {
		n := socketNode(name, 2, 2, false)
		for k := range n.Devices.Devices {
			n.Devices.Devices[k].Type = "h100"
		}
		return n
	}
	build := func(target scheduler.JobSpec) (*scheduler.Scheduler, scheduler.JobID) {
		s, err := scheduler.New(scheduler.Config{
			Nodes:      []scheduler.NodeConfig{socketNode("a1", 2, 2, false), socketNode("a2", 2, 2, false), h100("h1"), h100("h2")},
			Partitions: []scheduler.PartitionConfig{{Name: "gpu", Default: true}},
		})
		require.NoError(t, err)
		mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 2, GRESPerNode: typed("a100", 4), TimeLimit: 10 * time.Hour})
		require.Len(t, mustSchedule(t, s, t0).Starts, 1)
		id := mustSubmit(t, s, t0.Add(time.Minute), target)
		mustSchedule(t, s, t0.Add(time.Minute))
		return s, id
	}
	t1 := t0.Add(time.Minute)
	s, id := build(scheduler.JobSpec{Nodes: 2, GRESPerJob: typed("a100", 6), TimeLimit: time.Hour})
	ex, err := s.Explain(t1, id, scheduler.ExplainOptions{Counterfactuals: true})
	require.NoError(t, err)
	cf := counterfactualOf(ex, scheduler.CounterGPUType)
	require.NotNil(t, cf, "no GPU-type what-if:\n%s", ex)
	assert.Equal(t, "h100", cf.GPUType)
	assert.True(t, cf.Now, "%s", cf)
	assert.Equal(t, typed("h100", 6), cf.Spec.GRESPerJob)
	assert.Empty(t, cf.Spec.GRESPerNode)
	s2, id2 := build(cf.Spec)
	j2, _ := s2.Job(id2)
	require.Equal(t, scheduler.JobRunning, j2.State, "the what-if is not true")
	assert.Equal(t, t1, j2.StartTime)
	got := 0
	for _, c := range gpusOf(j2.Alloc) {
		got += c
	}
	assert.Equal(t, 6, got)
}
