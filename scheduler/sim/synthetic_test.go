package sim_test

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
)

// canon formats the fields the generator sets, one job per line.
func canon(jobs []clustertest.WorkloadJob) string {
	var b strings.Builder
	for _, j := range jobs {
		s := j.Spec
		fmt.Fprintf(&b, "%s %s %s %s %s %d %d %d %d %v %v %d %d %d\n", s.Name, s.User, s.Account, s.QOS, s.Partition,
			s.Nodes, s.Tasks, s.CPUsPerTask, s.MemPerNodeMiB, s.GRESPerNode, s.Exclusive, s.TimeLimit, j.Submit, j.Runtime)
	}
	return b.String()
}

// TestSyntheticGolden pins the generator's output: the digests were taken
// from clustertest.Workload before the generator moved here, so the move
// changed nothing, and any later change to the workload shows. They were
// retaken once when the one-node GPU jobs gained Nodes: 1 (-N1), which
// they had meant all along: with -n and no -N the scheduler now chooses
// the node count, as Slurm does; nothing else changed.
func TestSyntheticGolden(t *testing.T) {
	for _, tc := range []struct {
		c    clustertest.WorkloadConfig
		want string
	}{
		{clustertest.WorkloadConfig{Jobs: 1000, Seed: 1}, "ceb474214ae11bb9"},
		{clustertest.WorkloadConfig{Jobs: 5000, Seed: 7, Span: 48 * time.Hour}, "563359aec4502617"},
		{clustertest.WorkloadConfig{Jobs: 300, Seed: 3, MaxNodes: 18, Users: 10, Accounts: 3, Span: time.Hour}, "914b37ca2be7f9c4"},
	} {
		sum := sha256.Sum256([]byte(canon(clustertest.Workload(tc.c))))
		assert.Equal(t, tc.want, fmt.Sprintf("%x", sum[:8]), "%+v", tc.c)
	}
	assert.Nil(t, clustertest.Workload(clustertest.WorkloadConfig{Jobs: -1}))
}

func TestSynthetic(t *testing.T) {
	c := sim.SyntheticConfig{Jobs: 2000, Seed: 5, Span: 24 * time.Hour}
	jobs, err := sim.Synthetic(c)
	require.NoError(t, err)
	require.Len(t, jobs, 2000)
	again, err := sim.Synthetic(c)
	require.NoError(t, err)
	assert.Equal(t, jobs, again, "same config, same jobs")

	g, err := sim.NewSyntheticGenerator(c)
	require.NoError(t, err)
	gen := map[string]sim.Job{}
	for j, ok := g.Next(); ok; j, ok = g.Next() {
		gen[j.Spec.Name] = j
	}
	require.Len(t, gen, 2000)
	epoch := sim.SyntheticEpoch()
	parts := map[string]int{}
	for i, j := range jobs {
		assert.Equal(t, gen[j.Spec.Name], j, "Synthetic is the generator's output, sorted")
		if i > 0 {
			require.False(t, j.Submit.Before(jobs[i-1].Submit))
		}
		require.False(t, j.Submit.Before(epoch))
		require.True(t, j.Submit.Before(epoch.Add(c.Span)))
		require.LessOrEqual(t, j.Runtime, j.Spec.TimeLimit)
		require.GreaterOrEqual(t, j.Runtime, time.Minute)
		require.LessOrEqual(t, j.Spec.TimeLimit, 24*time.Hour)
		require.LessOrEqual(t, j.Spec.Nodes, sim.SyntheticMaxNodes)
		parts[j.Spec.Partition]++
	}
	assert.InDelta(t, 0.7, float64(parts["batch"])/2000, 0.05)
	assert.InDelta(t, 0.2, float64(parts["h100"])/2000, 0.05)

	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	jobs, err = sim.Synthetic(sim.SyntheticConfig{Jobs: 10, Start: start})
	require.NoError(t, err)
	for _, j := range jobs {
		assert.Equal(t, start, j.Submit, "no span: every job at Start")
	}

	for _, bad := range []sim.SyntheticConfig{{Jobs: -1}, {Span: -1}, {MaxNodes: -1}, {Users: -1}, {Accounts: -1}, {Span: 200 * 365 * 24 * time.Hour}} {
		_, err := sim.Synthetic(bad)
		assert.ErrorIs(t, err, sim.ErrInvalidSynthetic, "%+v", bad)
	}
}

func TestSyntheticCluster(t *testing.T) {
	std, err := sim.SyntheticCluster(sim.StandardNodes)
	require.NoError(t, err)
	want := clustertest.StandardCluster()
	want.MinJobAge = sim.PurgeAge
	require.True(t, reflect.DeepEqual(want, std), "the standard cluster of DESIGN.md, forgetting finished jobs after PurgeAge")

	small, err := sim.SyntheticCluster(64)
	require.NoError(t, err)
	require.NoError(t, small.Validate())
	assert.Len(t, small.Nodes, 64)
	assert.Len(t, small.Partitions[2].Nodes, 18, "one GB200 rack")
	assert.Len(t, small.Partitions[1].Nodes, 23)
	_, err = scheduler.New(small)
	require.NoError(t, err)

	for _, n := range []int{0, 19, 1 << 21} {
		_, err := sim.SyntheticCluster(n)
		assert.ErrorIs(t, err, sim.ErrInvalidSynthetic, "%d nodes", n)
	}

	c := sim.SyntheticFor(sim.StandardNodes, sim.StandardJobs, 9)
	assert.Equal(t, sim.SyntheticConfig{Jobs: sim.StandardJobs, Seed: 9, Span: sim.StandardSpan, MaxNodes: 256}, c)
	c = sim.SyntheticFor(64, 1000, 1)
	assert.Equal(t, 18, c.MaxNodes)
	assert.Greater(t, c.Span, time.Duration(0))
	// every job of a scaled workload fits its scaled cluster
	jobs, err := sim.Synthetic(c)
	require.NoError(t, err)
	res := run(t, small, jobs, sim.Options{DiscardJobs: true, DiscardSeries: true})
	assert.Zero(t, res.Rejected)
	assert.Equal(t, 1000, res.Summary.Jobs)
}
