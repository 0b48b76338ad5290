package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres/gpuserver"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

// newPolicyMixed builds the Mixed4 cluster with a policy: QOS "normal"
// limits each user to 8 GPUs, QOS "strict" denies on limit; account
// "physics" may hold 12 GPUs in all; the h100 partition admits only
// physics.
func newPolicyMixed(t *testing.T) *scheduler.Scheduler {
	t.Helper()
	cfg := clustertest.Mixed4()
	reg, err := scheduler.NewRegistry(cfg.Nodes)
	require.NoError(t, err)
	lim := func(s string) policy.TRESLimits {
		l, err := policy.ParseTRESLimits(reg, s)
		require.NoError(t, err)
		return l
	}
	perUser := policy.QOSLimits{MaxTRESPerUser: lim("gres/gpu=8")}
	strict := perUser
	strict.MaxTRESPerJob = lim("gres/gpu=4")
	cfg.Registry = reg
	cfg.Partitions[1].AllowAccounts = []string{"physics"}
	cfg.Policy = &policy.Config{
		QOS: []policy.QOS{
			{Name: "normal", Limits: perUser},
			{Name: "strict", Limits: strict, Flags: policy.QOSDenyOnLimit},
		},
		Assocs: []policy.Assoc{
			{Account: "physics", Limits: policy.AssocLimits{Limits: policy.Limits{GrpTRES: lim("gres/gpu=12")}}},
			{Account: "bio"},
			{Account: "physics", User: "ann"},
			{Account: "physics", User: "bob"},
			{Account: "bio", User: "cy"},
		},
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

func TestLimitsPendWithSlurmReasons(t *testing.T) {
	s := newPolicyMixed(t)
	spec := func(user, account string, n int64) scheduler.JobSpec {
		return scheduler.JobSpec{User: user, Account: account, GRESPerNode: gpus(n)}
	}
	a1 := mustSubmit(t, s, t0, spec("ann", "physics", 8))
	a2 := mustSubmit(t, s, t0, spec("ann", "physics", 2)) // ann over 8 GPUs
	b1 := mustSubmit(t, s, t0, spec("bob", "physics", 6)) // physics over 12
	c1 := mustSubmit(t, s, t0, spec("cy", "bio", 8))
	cyc := mustSchedule(t, s, t0)
	started := map[scheduler.JobID]bool{}
	for _, st := range cyc.Starts {
		started[st.Job] = true
	}
	assert.True(t, started[a1])
	assert.True(t, started[c1])
	assert.Equal(t, policy.ReasonQOSMaxGRESPerUser, reasonOf(cyc, a2))
	assert.Equal(t, policy.ReasonAssocGrpGRES, reasonOf(cyc, b1))

	// Limits do not block the queue: a later job of another account runs.
	c2 := mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{User: "cy", Account: "bio", CPUsPerTask: 4})
	cyc = mustSchedule(t, s, t0.Add(time.Minute))
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, c2, cyc.Starts[0].Job)

	// When ann's big job ends, both physics jobs fit the limits again.
	require.NoError(t, s.Finish(t0.Add(2*time.Minute), a1, 0))
	cyc = mustSchedule(t, s, t0.Add(2*time.Minute))
	assert.Len(t, cyc.Starts, 2)
}

func TestPolicySubmitErrors(t *testing.T) {
	s := newPolicyMixed(t)
	_, err := s.Submit(t0, scheduler.JobSpec{User: "ann", Account: "physics", QOS: "gold"})
	assert.ErrorIs(t, err, policy.ErrUnknownQOS)
	_, err = s.Submit(t0, scheduler.JobSpec{User: "zed", Account: "physics"})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob)
	_, err = s.Submit(t0, scheduler.JobSpec{User: "cy", Account: "bio", Partition: "h100"})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob, "bio may not use the h100 partition")
	_, err = s.Submit(t0, scheduler.JobSpec{User: "ann", Account: "physics", QOS: "strict", GRESPerNode: gpus(6)})
	assert.ErrorIs(t, err, policy.ErrLimit, "DenyOnLimit rejects a job over MaxTRESPerJob at submit")
	assert.Contains(t, err.Error(), "MaxTRESPerJob")
	p, r := s.Counts()
	assert.Zero(t, p+r)
}

func newResvMixed(t *testing.T) *scheduler.Scheduler {
	t.Helper()
	cfg := clustertest.Mixed4()
	cfg.Policy = &policy.Config{} // nothing limited; reservations only
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

func TestReservationKeepsOthersOut(t *testing.T) {
	s := newResvMixed(t)
	nodes := topology.NodeSetOf(4, 0) // h100-01
	require.NoError(t, s.AddReservation(t0, policy.Reservation{
		Name: "ann-demo", Start: t0.Add(time.Hour), Duration: 2 * time.Hour, Nodes: nodes, Users: []string{"ann"},
	}))
	assert.Error(t, s.AddReservation(t0, policy.Reservation{Name: "clash", Start: t0.Add(2 * time.Hour), Duration: time.Hour, Nodes: nodes, Users: []string{"bob"}}),
		"overlapping reservations need a flag")
	// bob's 2-hour whole-node jobs may not run on h100-01: the window opens within their limit.
	var bobs []scheduler.JobID
	for range 4 {
		bobs = append(bobs, mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", Account: "physics", Exclusive: true, TimeLimit: 2 * time.Hour}))
	}
	ann := mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", Account: "physics", Reservation: "ann-demo", GRESPerNode: gpus(8), TimeLimit: 4 * time.Hour})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 3)
	for _, st := range cyc.Starts {
		assert.NotEqual(t, "h100-01", st.Alloc.Nodes[0].Name)
	}
	assert.Equal(t, policy.ReasonReservation, reasonOf(cyc, ann))

	// The window opens: ann's job runs inside it, killed at its end.
	cyc = mustSchedule(t, s, t0.Add(time.Hour))
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, ann, cyc.Starts[0].Job)
	assert.Equal(t, "h100-01", cyc.Starts[0].Alloc.Nodes[0].Name)
	cyc = mustSchedule(t, s, t0.Add(3*time.Hour))
	ended := map[scheduler.JobID]scheduler.JobState{}
	for _, e := range cyc.Ended {
		ended[e.Job] = e.State
	}
	assert.Equal(t, scheduler.JobTimeout, ended[ann], "killed at the reservation's end, not its own 4 h limit")

	_, err := s.Submit(t0.Add(3*time.Hour), scheduler.JobSpec{User: "bob", Account: "physics", Reservation: "ann-demo"})
	assert.ErrorIs(t, err, policy.ErrNotAllowed)
	require.NoError(t, s.RemoveReservation(t0.Add(3*time.Hour), "ann-demo"))
	_ = bobs
}

func TestReservationByCount(t *testing.T) {
	s := newResvMixed(t)
	require.NoError(t, s.AddReservation(t0, policy.Reservation{
		Name: "maint", Start: t0.Add(30 * time.Minute), Duration: time.Hour, NodeCount: 2, Users: []string{"root"}, Flags: policy.ResvMaint,
	}))
	r := s.Reservations()
	require.Len(t, r, 1)
	assert.Equal(t, 2, r[0].Nodes.Count())
}

func TestDependencies(t *testing.T) {
	s := newMixed(t)
	a := mustSubmit(t, s, t0, scheduler.JobSpec{Name: "prep", User: "ann"})
	b := mustSubmit(t, s, t0, scheduler.JobSpec{Name: "train", User: "ann", Dependency: "afterok:1"})
	c := mustSubmit(t, s, t0, scheduler.JobSpec{Name: "cleanup", User: "ann", Dependency: "afternotok:1"})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, a, cyc.Starts[0].Job)
	assert.Equal(t, policy.ReasonDependency, reasonOf(cyc, b))
	require.NoError(t, s.Finish(t0.Add(time.Minute), a, 0))
	cyc = mustSchedule(t, s, t0.Add(time.Minute))
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, b, cyc.Starts[0].Job)
	assert.Equal(t, policy.ReasonDependencyNeverSatisfied, reasonOf(cyc, c))

	_, err := s.Submit(t0.Add(time.Minute), scheduler.JobSpec{Dependency: "afterok:banana"})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob)
	_, err = s.Submit(t0.Add(time.Minute), scheduler.JobSpec{Dependency: "afterok:999"})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob, "an unknown dependee can never satisfy it")
}

func TestJobArrayWithThrottle(t *testing.T) {
	s := newMixed(t)
	ids, err := s.SubmitArray(t0, scheduler.JobSpec{Name: "sweep", GRESPerNode: gpus(1), TimeLimit: time.Hour}, "0-9%3")
	require.NoError(t, err)
	require.Len(t, ids, 10)
	first, _ := s.Job(ids[0])
	last, _ := s.Job(ids[9])
	assert.Equal(t, ids[0], first.ArrayJobID)
	assert.Equal(t, ids[0], last.ArrayJobID)
	assert.Equal(t, 9, last.ArrayTaskID)
	cyc := mustSchedule(t, s, t0)
	assert.Len(t, cyc.Starts, 3, "the %3 throttle")
	assert.Equal(t, policy.ReasonJobArrayTaskLimit, reasonOf(cyc, ids[3]))
	// Explain names the throttle, and the GPUs the throttled tasks could
	// use are idle for policy, not for want of demand.
	ex, err := s.Explain(t0, ids[3], scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, ex.Blockers)
	assert.Equal(t, scheduler.BlockerLimit, ex.Blockers[0].Kind)
	assert.Equal(t, policy.ReasonJobArrayTaskLimit, ex.Blockers[0].Reason)
	require.NotNil(t, ex.Blockers[0].Policy)
	assert.Equal(t, int64(3), ex.Blockers[0].Policy.Value)
	idle := s.IdleCapacity(t0)
	assert.Positive(t, idle.GPUs[scheduler.IdlePolicy], "%s", idle)
	assert.Zero(t, idle.GPUs[scheduler.IdleFragmented], "%s", idle)
	require.NoError(t, s.Finish(t0.Add(time.Minute), cyc.Starts[0].Job, 0))
	cyc = mustSchedule(t, s, t0.Add(time.Minute))
	assert.Len(t, cyc.Starts, 1)

	_, err = s.SubmitArray(t0.Add(time.Minute), scheduler.JobSpec{}, "0-2000")
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob, "past MaxArraySize")
	_, err = s.SubmitArray(t0.Add(time.Minute), scheduler.JobSpec{}, "3-1")
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob)
}

func TestPartitionPolicyDefaults(t *testing.T) {
	cfg := clustertest.Mixed4()
	reg, err := scheduler.NewRegistry(cfg.Nodes)
	require.NoError(t, err)
	cfg.Registry = reg
	cfg.Partitions[0].DefCPUPerGPU = 12
	cfg.Partitions[0].DefMemPerGPU = 100 * clustertest.GiB
	cfg.Partitions[0].TRESBillingWeights = "CPU=1.0,GRES/gpu=10.0"
	cfg.Partitions[1].OverSubscribe = policy.OverSubscribeExclusive
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	a := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(2)})
	b := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", GRESPerNode: gpus(1)})
	mustSchedule(t, s, t0)
	ja, _ := s.Job(a)
	assert.Len(t, ja.Alloc.Nodes[0].CPUs, 24, "DefCpuPerGPU × 2")
	assert.Equal(t, int64(200*clustertest.GiB), ja.Alloc.Nodes[0].MemoryMiB, "DefMemPerGPU × 2")
	assert.InDelta(t, 24+2*10.0, ja.Alloc.Billing, 1e-9, "TRESBillingWeights")
	jb, _ := s.Job(b)
	assert.True(t, jb.Spec.Exclusive, "OverSubscribe=EXCLUSIVE gives whole nodes")
	assert.Len(t, jb.Alloc.Nodes[0].Devices, 8)
}

func TestGPUsPerSocket(t *testing.T) {
	s, err := scheduler.New(clustertest.DGX())
	require.NoError(t, err)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{GPUsPerSocket: 2, SocketsPerNode: 2})
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	require.Len(t, j.Alloc.Nodes[0].Devices, 4)
	perSocket := map[int]int{}
	for _, d := range j.Alloc.Nodes[0].Devices {
		perSocket[gpuserver.DGXH100().Devices[d].Socket]++
	}
	assert.Equal(t, map[int]int{0: 2, 1: 2}, perSocket)
	_, err = s.Submit(t0, scheduler.JobSpec{SocketsPerNode: 2})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob)
}

// explainReason returns the reason Explain gives job id at now.
func explainReason(t *testing.T, s *scheduler.Scheduler, now time.Time, id scheduler.JobID) policy.Reason {
	t.Helper()
	ex, err := s.Explain(now, id, scheduler.ExplainOptions{})
	require.NoError(t, err)
	return ex.Reason
}

// TestFirstInPartitionHeldByOtherPartitionIsResources checks that a job
// first in its own partition, kept off nodes that a blocked job of
// another partition holds back, waits on Resources: Slurm's Priority
// means a higher-priority job waits in the same partition.
func TestFirstInPartitionHeldByOtherPartitionIsResources(t *testing.T) {
	s := newMixed(t)
	mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: typed("h100", 8), TimeLimit: time.Hour}) // h100-01
	mustSchedule(t, s, t0)
	// A tier-2 h100 job that needs both h100 nodes blocks them; the gpu
	// partition's first job would fit h100-02 but for that.
	wide := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", Nodes: 2, GRESPerNode: gpus(8), TimeLimit: time.Hour})
	first := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: typed("h100", 8), TimeLimit: time.Hour})
	behind := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: typed("h100", 1), TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	assert.Empty(t, cyc.Starts)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, wide))
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, first))
	assert.Equal(t, policy.ReasonPriority, reasonOf(cyc, behind), "behind a blocked job of its own partition")
	for _, id := range []scheduler.JobID{wide, first, behind} {
		assert.Equal(t, reasonOf(cyc, id), explainReason(t, s, t0, id), "job %d", id)
	}
}

// TestMaintReservationIsReqNodeNotAvailReservedForMaintenance checks that
// a job kept off the nodes it fits now by a MAINT reservation shows
// Slurm's "ReqNodeNotAvail, Reserved for maintenance" (it showed
// Resources), still gets its expected start after the window, holds its
// partition like a job waiting on Resources, and that Explain and the
// audit record say the same.
func TestMaintReservationIsReqNodeNotAvailReservedForMaintenance(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Policy = &policy.Config{}
	cfg.Backfill = &backfill.Config{Resolution: time.Second}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.AddReservation(t0, policy.Reservation{Name: "maint", Start: t0.Add(time.Hour), Duration: 4 * time.Hour,
		Nodes: topology.NodeSetOf(4, 2, 3), Users: []string{"root"}, Flags: policy.ResvMaint | policy.ResvIgnoreJobs}))
	a100 := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: typed("a100", 8), TimeLimit: 2 * time.Hour})
	cyc := mustSchedule(t, s, t0)
	assert.Empty(t, cyc.Starts)
	require.Len(t, cyc.Pending, 1)
	assert.Equal(t, policy.ReasonReqNodeNotAvailMaint, cyc.Pending[0].Reason)
	assert.Equal(t, "ReqNodeNotAvail, Reserved for maintenance", cyc.Pending[0].Reason.String())
	assert.Equal(t, t0.Add(5*time.Hour), cyc.Pending[0].ExpectedStart, "planned after the window")
	assert.Equal(t, cyc.Pending[0].Reason, explainReason(t, s, t0, a100))

	// The audit record of a job pending for it reads back.
	d := scheduler.Decision{Kind: scheduler.DecisionRequeue, Job: a100, Time: t0, Reason: cyc.Pending[0].Reason}
	ad, err := d.Accounting("c")
	require.NoError(t, err)
	back, err := scheduler.DecisionFromAccounting(ad)
	require.NoError(t, err)
	assert.Equal(t, d.Reason, back.Reason)

	// Not a maintenance reservation: Resources, as before.
	s2, err := scheduler.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s2.AddReservation(t0, policy.Reservation{Name: "demo", Start: t0.Add(time.Hour), Duration: 4 * time.Hour,
		Nodes: topology.NodeSetOf(4, 2, 3), Users: []string{"root"}}))
	other := mustSubmit(t, s2, t0, scheduler.JobSpec{GRESPerNode: typed("a100", 8), TimeLimit: 2 * time.Hour})
	cyc = mustSchedule(t, s2, t0)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, other))
}

// TestJobNeedingMoreNodesThanUpIsResources checks that a job that merely
// needs more nodes than are up waits on Resources, as Slurm says, and
// that ReqNodeNotAvail stays for a job none of whose nodes is up.
func TestJobNeedingMoreNodesThanUpIsResources(t *testing.T) {
	s := newMixed(t)
	require.NoError(t, s.DrainNode(t0, "h100-01", "test"))
	two := mustSubmit(t, s, t0, scheduler.JobSpec{Partition: "h100", Nodes: 2, GRESPerNode: gpus(1), TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, two))
	assert.Equal(t, policy.ReasonResources, explainReason(t, s, t0, two))

	_, err := s.DownNode(t0, "h100-02", "test")
	require.NoError(t, err)
	one := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: typed("h100", 1), TimeLimit: time.Hour})
	cyc = mustSchedule(t, s, t0)
	assert.Equal(t, policy.ReasonReqNodeNotAvail, reasonOf(cyc, one), "no h100 node is up")
	assert.Equal(t, policy.ReasonReqNodeNotAvail, explainReason(t, s, t0, one))
}

// TestFlexReservationJobBlocksItsPartition checks that a blocked job in a
// FLEX reservation, which may use the partition's unreserved nodes too,
// holds them back like any blocked job: a lower job of the partition
// waits on Priority instead of taking a node the FLEX job could use.
func TestFlexReservationJobBlocksItsPartition(t *testing.T) {
	s := newResvMixed(t)
	require.NoError(t, s.AddReservation(t0, policy.Reservation{Name: "flex", Start: t0, Duration: 4 * time.Hour,
		Nodes: topology.NodeSetOf(4, 0), Users: []string{"ann"}, Flags: policy.ResvFlex}))
	// 5 GPUs in use on every node outside the reservation.
	mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", GRESPerNode: typed("h100", 5), TimeLimit: time.Hour})
	mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", GRESPerNode: typed("a100", 5), TimeLimit: time.Hour})
	mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", GRESPerNode: typed("a100", 5), TimeLimit: time.Hour})
	require.Len(t, mustSchedule(t, s, t0).Starts, 3)
	// Two whole 8-GPU nodes: h100-01 inside, none outside is free enough.
	flex := mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", Reservation: "flex", Nodes: 2, GRESPerNode: gpus(8), TimeLimit: time.Hour})
	low := mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", GRESPerNode: gpus(1), TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	assert.Empty(t, cyc.Starts, "the lower job must not take a node the FLEX job may use")
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, flex))
	assert.Equal(t, policy.ReasonPriority, reasonOf(cyc, low))
	assert.Equal(t, policy.ReasonPriority, explainReason(t, s, t0, low))
}

// TestMagneticJobsTakeTheirReservationTurnFirst checks that a job a
// MAGNETIC reservation admits is tried in it as a reservation job, ahead
// of the plain jobs and exempt from its partition's block, and that
// outside the reservation it waits its turn like any job (Priority behind
// the blocked one).
func TestMagneticJobsTakeTheirReservationTurnFirst(t *testing.T) {
	s := newResvMixed(t)
	require.NoError(t, s.AddReservation(t0, policy.Reservation{Name: "mag", Start: t0, Duration: 4 * time.Hour,
		Nodes: topology.NodeSetOf(4, 0), Users: []string{"cy"}, Flags: policy.ResvMagnetic}))
	// First in queue order, bob's job needs both h100 nodes; h100-01 is
	// reserved, so it waits on Resources and blocks the partition.
	wide := mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", Nodes: 2, GRESPerNode: typed("h100", 8), TimeLimit: time.Hour})
	inside := mustSubmit(t, s, t0, scheduler.JobSpec{User: "cy", GRESPerNode: typed("h100", 8), TimeLimit: time.Hour})
	outside := mustSubmit(t, s, t0, scheduler.JobSpec{User: "cy", GRESPerNode: typed("h100", 8), TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, inside, cyc.Starts[0].Job, "started inside the MAGNETIC reservation despite the block")
	assert.Equal(t, []string{"h100-01"}, cyc.Starts[0].Alloc.NodeNames())
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, wide))
	assert.Equal(t, policy.ReasonPriority, reasonOf(cyc, outside), "the reservation is full: its plain turn is behind the blocked job")
	assert.Equal(t, policy.ReasonPriority, explainReason(t, s, t0, outside))
	assert.Equal(t, []scheduler.JobID{wide, outside}, []scheduler.JobID{cyc.Pending[0].Job, cyc.Pending[1].Job}, "pending in queue order")
}

// TestReservationJobBehindBlockedOneIsPriority checks Slurm's Priority
// for the advanced reservation: behind a job of the same reservation that
// waits on Resources, a job in it waits on Priority.
func TestReservationJobBehindBlockedOneIsPriority(t *testing.T) {
	s := newResvMixed(t)
	require.NoError(t, s.AddReservation(t0, policy.Reservation{Name: "r", Start: t0, Duration: 4 * time.Hour,
		Nodes: topology.NodeSetOf(4, 0, 1), Users: []string{"ann"}}))
	mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", Reservation: "r", GRESPerNode: gpus(1), TimeLimit: time.Hour})
	require.Len(t, mustSchedule(t, s, t0).Starts, 1)
	both := mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", Reservation: "r", Nodes: 2, GRESPerNode: gpus(8), TimeLimit: time.Hour})
	next := mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", Reservation: "r", GRESPerNode: gpus(1), TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	assert.Empty(t, cyc.Starts)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, both))
	assert.Equal(t, policy.ReasonPriority, reasonOf(cyc, next))
	assert.Equal(t, policy.ReasonPriority, explainReason(t, s, t0, next))
}
