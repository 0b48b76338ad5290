package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// settleCluster is Mixed4 (two a100 nodes of 8 GPUs in partition gpu)
// under QOS normal with MaxTRESPerUser gres/gpu=8 and EASY backfill.
func settleCluster(t *testing.T) *scheduler.Scheduler {
	return gpuLimitCluster(t, clustertest.Mixed4())
}

// gpuLimitCluster is cfg under QOS normal with MaxTRESPerUser gres/gpu=8
// for users u, v and w of account a, and EASY backfill.
func gpuLimitCluster(t *testing.T, cfg scheduler.Config) *scheduler.Scheduler {
	t.Helper()
	reg, err := scheduler.NewRegistry(cfg.Nodes)
	require.NoError(t, err)
	lim, err := policy.ParseTRESLimits(reg, "gres/gpu=8")
	require.NoError(t, err)
	cfg.Registry = reg
	cfg.Backfill = &backfill.Config{Mode: backfill.EASY, Resolution: time.Second}
	cfg.Policy = &policy.Config{
		QOS:    []policy.QOS{{Name: "normal", Limits: policy.QOSLimits{MaxTRESPerUser: lim}}},
		Assocs: []policy.Assoc{{Account: "a"}, {Account: "a", User: "u"}, {Account: "a", User: "v"}, {Account: "a", User: "w"}},
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

// userJob is user's job of n a100 GPUs on one node of partition gpu.
func userJob(user string, n int64, limit time.Duration) scheduler.JobSpec {
	s := gpuJob(n, limit)
	s.User = user
	return s
}

// checkSettled checks that a second Schedule call at the instant of cycle
// c changes nothing: no start, and every pending job with the same reason
// and expected start.
func checkSettled(t *testing.T, s *scheduler.Scheduler, c scheduler.Cycle) {
	t.Helper()
	again := mustSchedule(t, s, c.Now)
	assert.Empty(t, again.Starts, "a second call at the same instant starts nothing")
	assert.Equal(t, fmt.Sprint(c.Pending), fmt.Sprint(again.Pending), "a second call at the same instant changes no pending job")
}

// A start that changes nothing for a job already held by its limit does
// not cost another pass: user u's 4-GPU job waits on its 8-GPU limit (u
// runs 8 GPUs for an hour) and holds EASY's reservation where the limit
// frees; another user's job then starts in the same cycle. The cycle is
// settled after one pass, and a second call at the same instant changes
// nothing.
func TestSettleSkipsAJobHeldByTheSameLimit(t *testing.T) {
	s := settleCluster(t)
	mustSubmit(t, s, t0, userJob("u", 8, time.Hour))
	require.Len(t, mustSchedule(t, s, t0).Starts, 1)
	at := t0.Add(time.Minute)
	j := mustSubmit(t, s, at, userJob("u", 4, time.Hour))
	k := mustSubmit(t, s, at, userJob("v", 4, 30*time.Minute))
	passes := scheduler.SettlePasses(s)
	c := mustSchedule(t, s, at)
	require.Len(t, c.Starts, 1)
	assert.Equal(t, k, c.Starts[0].Job)
	assert.Equal(t, policy.ReasonQOSMaxGRESPerUser, reasonOf(c, j))
	job := mustJob(t, s, j)
	assert.Equal(t, t0.Add(time.Hour), job.ExpectedStart, "planned where u's running job ends")
	assert.Equal(t, passes, scheduler.SettlePasses(s), "no further pass")
	checkSettled(t, s, c)
}

// A start that makes the limit hold a job that waited for resources does
// cost another pass: user u's 8-GPU job waits for a node (EASY reserves
// it where v's jobs end, in two hours), and u's own 4-GPU, 30-minute job
// backfills before it. u now runs 4 GPUs, so the 8-GPU job is held by
// u's limit, and the cycle says so at once.
func TestSettleJudgesAgainAJobTheLimitNowHolds(t *testing.T) {
	s := settleCluster(t)
	mustSubmit(t, s, t0, userJob("v", 8, 2*time.Hour))
	require.Len(t, mustSchedule(t, s, t0).Starts, 1)
	at := t0.Add(time.Minute)
	mustSubmit(t, s, at, scheduler.JobSpec{User: "w", Account: "a", Partition: "gpu", GRESPerNode: typed("a100", 4), TimeLimit: 2 * time.Hour})
	require.Len(t, mustSchedule(t, s, at).Starts, 1)
	j := mustSubmit(t, s, at, userJob("u", 8, time.Hour))
	k := mustSubmit(t, s, at, userJob("u", 4, 30*time.Minute))
	passes := scheduler.SettlePasses(s)
	c := mustSchedule(t, s, at)
	require.Len(t, c.Starts, 1)
	assert.Equal(t, k, c.Starts[0].Job)
	assert.True(t, c.Starts[0].Backfill)
	assert.Equal(t, policy.ReasonQOSMaxGRESPerUser, reasonOf(c, j), "held by u's limit since its 4-GPU job started")
	assert.Greater(t, scheduler.SettlePasses(s), passes, "a further pass judged it again")
	checkSettled(t, s, c)
}
