package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// newPartFlagCluster builds four 8-CPU nodes in one partition "batch"
// with the given limits, and two QOS: "plain" (no flags) and "over" with
// flags and its own limits.
func newPartFlagCluster(t *testing.T, part scheduler.PartitionConfig, flags policy.QOSFlags, own policy.QOSLimits) *scheduler.Scheduler {
	t.Helper()
	cfg := scheduler.Config{}
	cfg.Nodes = cpuNodes(4)
	part.Name, part.Default = "batch", true
	cfg.Partitions = []scheduler.PartitionConfig{part}
	cfg.Policy = &policy.Config{QOS: []policy.QOS{{Name: "plain"}, {Name: "over", Flags: flags, Limits: own}}}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

// cpuNodes returns n nodes "n0", "n1", … of 8 CPUs and 8 GiB each.
func cpuNodes(n int) []scheduler.NodeConfig {
	out := make([]scheduler.NodeConfig, n)
	for i := range out {
		out[i] = scheduler.NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 8, MemoryMiB: 8192}
	}
	return out
}

func startedIn(c scheduler.Cycle, id scheduler.JobID) bool {
	for _, st := range c.Starts {
		if st.Job == id {
			return true
		}
	}
	return false
}

// explainReasons lists the Slurm reasons of every blocker Explain gives.
func explainReasons(t *testing.T, s *scheduler.Scheduler, at time.Time, id scheduler.JobID) []policy.Reason {
	t.Helper()
	x, err := s.Explain(at, id, scheduler.ExplainOptions{})
	require.NoError(t, err)
	var out []policy.Reason
	for _, b := range x.Blockers {
		out = append(out, b.Reason)
	}
	return out
}

// overrideCase is one partition limit lifted by a QOS flag: a job of QOS
// "plain" that breaks the limit, the same job in QOS "over" (which has the
// flag), and a job of "over" that its own limit (own) still holds.
type overrideCase struct {
	part                  scheduler.PartitionConfig
	flag                  policy.QOSFlags
	own                   policy.QOSLimits
	plain, over, held     scheduler.JobSpec
	partReason, ownReason policy.Reason
}

func (c overrideCase) check(t *testing.T) {
	t.Helper()
	s := newPartFlagCluster(t, c.part, c.flag, c.own)
	c.plain.QOS, c.over.QOS, c.held.QOS = "plain", "over", "over"
	plain := mustSubmit(t, s, t0, c.plain)
	over := mustSubmit(t, s, t0, c.over)
	held := mustSubmit(t, s, t0, c.held)
	cyc := mustSchedule(t, s, t0)
	assert.True(t, startedIn(cyc, over), "the QOS flag %s lifts the partition limit", c.flag)
	assert.Equal(t, c.partReason, reasonOf(cyc, plain), "a QOS without the flag is held by the partition")
	assert.Equal(t, c.ownReason, reasonOf(cyc, held), "the QOS's own limit still holds")
	assert.Contains(t, explainReasons(t, s, t0, plain), c.partReason)
	assert.NotContains(t, explainReasons(t, s, t0, held), c.partReason)
}

func TestQOSPartitionTimeLimitOverridesPartitionMaxTime(t *testing.T) {
	overrideCase{
		part: scheduler.PartitionConfig{MaxTime: time.Hour}, flag: policy.QOSPartitionTimeLimit,
		own:   policy.QOSLimits{Limits: policy.Limits{MaxWall: 3 * time.Hour}},
		plain: scheduler.JobSpec{TimeLimit: 2 * time.Hour}, over: scheduler.JobSpec{TimeLimit: 2 * time.Hour},
		held:       scheduler.JobSpec{TimeLimit: 4 * time.Hour},
		partReason: policy.ReasonPartitionTimeLimit, ownReason: policy.ReasonQOSMaxWallDurationPerJobLimit,
	}.check(t)
}

func TestQOSPartitionMaxNodesOverridesPartitionMaxNodes(t *testing.T) {
	overrideCase{
		part: scheduler.PartitionConfig{MaxNodes: 1}, flag: policy.QOSPartitionMaxNodes,
		own:   policy.QOSLimits{Limits: policy.Limits{MaxTRESPerJob: policy.TRESLimits{}.With(gres.Node, 3)}},
		plain: scheduler.JobSpec{Nodes: 2}, over: scheduler.JobSpec{Nodes: 2}, held: scheduler.JobSpec{Nodes: 4},
		partReason: policy.ReasonPartitionNodeLimit, ownReason: policy.ReasonQOSMaxNodePerJobLimit,
	}.check(t)
}

func TestQOSPartitionMinNodesOverridesPartitionMinNodes(t *testing.T) {
	overrideCase{
		part: scheduler.PartitionConfig{MinNodes: 2}, flag: policy.QOSPartitionMinNodes,
		own:   policy.QOSLimits{MinTRESPerJob: policy.TRESLimits{}.With(gres.CPU, 2)},
		plain: scheduler.JobSpec{Nodes: 1}, over: scheduler.JobSpec{Nodes: 1, CPUsPerTask: 2}, held: scheduler.JobSpec{Nodes: 1},
		partReason: policy.ReasonPartitionNodeLimit, ownReason: policy.ReasonQOSMinCpuNotSatisfied,
	}.check(t)
}
