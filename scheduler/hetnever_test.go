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

// A heterogeneous job that can never start as it is (a component over
// its partition's MaxTime, or over its QOS's MaxWall) holds nothing back
// in the main pass, as a plain job that never starts holds nothing back:
// the lower jobs of its other component's partition start there, not
// only through the backfill pass (which, with bf_max_job_start=1, starts
// one a cycle).
func TestHetJobThatNeverStartsHoldsNothingBack(t *testing.T) {
	for _, qos := range []string{"", "short", "dep"} {
		t.Run("qos="+qos, func(t *testing.T) { hetNeverHoldsNothingBack(t, qos) })
	}
}

// hetNeverHoldsNothingBack runs the case: qos "" puts the GPU component
// over its partition's MaxTime, "short" over its QOS's MaxWall, "dep"
// has it wait on a dependency (a job the plan does not hold either).
func hetNeverHoldsNothingBack(t *testing.T, qos string) {
	nodes := append(taskNodes(2, 16), gpuNode("g0", 1, 16, 4, true))
	maxTime := 30 * time.Minute
	if qos != "" {
		maxTime = 0
	}
	s, err := scheduler.New(scheduler.Config{
		Nodes: nodes,
		Partitions: []scheduler.PartitionConfig{
			{Name: "cpu", Nodes: []string{"c0", "c1"}, Default: true},
			{Name: "gpu", Nodes: []string{"g0"}, MaxTime: maxTime},
		},
		Policy:   &policy.Config{QOS: []policy.QOS{{Name: "normal"}, {Name: "short", Limits: policy.QOSLimits{Limits: policy.Limits{MaxWall: 30 * time.Minute}}}}},
		Backfill: &backfill.Config{Mode: backfill.Conservative, Resolution: time.Second, MaxJobStart: 1},
	})
	require.NoError(t, err)
	gpuSpec := scheduler.JobSpec{User: "u", Partition: "gpu", Nodes: 1, TimeLimit: time.Hour, QOS: qos} // over MaxTime or MaxWall
	if qos == "dep" {
		busy := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "gpu", Nodes: 1, TimeLimit: 20 * time.Minute})
		mustSchedule(t, s, t0)
		gpuSpec.QOS, gpuSpec.TimeLimit, gpuSpec.Dependency = "", 20*time.Minute, fmt.Sprintf("afterok:%d", busy)
	}
	ids, err := s.SubmitHet(t0, []scheduler.JobSpec{
		{User: "u", Partition: "cpu", Nodes: 1, TimeLimit: time.Hour},
		gpuSpec,
	})
	require.NoError(t, err)
	a := mustSubmit(t, s, t0, scheduler.JobSpec{User: "v", Partition: "cpu", Nodes: 1, TimeLimit: time.Hour})
	b := mustSubmit(t, s, t0, scheduler.JobSpec{User: "v", Partition: "cpu", Nodes: 1, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	for _, id := range ids {
		assert.Equal(t, scheduler.JobPending, mustJob(t, s, id).State)
	}
	_, okA := startOf(cyc, a)
	_, okB := startOf(cyc, b)
	assert.True(t, okA && okB, "both lower jobs start in the main pass: %+v", cyc.Starts)
}
