package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// A job the main pass leaves to the backfill plan holds its limit
// counters back from the main pass too (limithold.go): user u's 8-GPU job
// in partition a waits for the a100 nodes (busy for an hour), and EASY
// reserves it there; u's later 4-GPU, 2-hour job in partition h (other
// nodes, free) would fit now, but u's 8-GPU limit could then not hold the
// reservation in an hour. The main pass leaves it to the plan, which
// keeps it waiting, and the reserved job's expected start stays where the
// nodes free.
func TestMainPassLeavesHeldCountersToThePlan(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Partitions = []scheduler.PartitionConfig{
		{Name: "a", Default: true, Nodes: []string{"a100-01", "a100-02"}, MaxTime: 24 * time.Hour},
		{Name: "h", Nodes: []string{"h100-01", "h100-02"}, MaxTime: 24 * time.Hour},
	}
	s := gpuLimitCluster(t, cfg)
	job := func(user, part, typ string, n int64, limit time.Duration) scheduler.JobSpec {
		return scheduler.JobSpec{User: user, Account: "a", Partition: part, GRESPerNode: typed(typ, n), TimeLimit: limit}
	}
	mustSubmit(t, s, t0, job("v", "a", "a100", 8, time.Hour))
	mustSubmit(t, s, t0, job("w", "a", "a100", 8, time.Hour))
	require.Len(t, mustSchedule(t, s, t0).Starts, 2)
	at := t0.Add(time.Minute)
	j := mustSubmit(t, s, at, job("u", "a", "a100", 8, time.Hour))
	k := mustSubmit(t, s, at, job("u", "h", "h100", 4, 2*time.Hour))
	c := mustSchedule(t, s, at)
	assert.Empty(t, c.Starts, "u's h100 job would take the room u's limit keeps for the reservation")
	assert.Equal(t, policy.ReasonResources, reasonOf(c, j))
	assert.Equal(t, t0.Add(time.Hour), mustJob(t, s, j).ExpectedStart, "reserved where the a100 jobs end")
	assert.Equal(t, policy.ReasonPriority, reasonOf(c, k), "left to the plan, behind the reserved job")
}
