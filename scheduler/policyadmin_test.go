package scheduler_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
)

// adminCluster is four 8-CPU nodes, partitions "batch" (default, every
// node) and "small" (n2, n3), QOS normal and high, accounts physics and
// bio with users ann, bob (physics) and cy (bio).
func adminCluster(t *testing.T, prio bool) *scheduler.Scheduler {
	t.Helper()
	var nodes []scheduler.NodeConfig
	for i := range 4 {
		nodes = append(nodes, scheduler.NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 8, MemoryMiB: 8192})
	}
	cfg := scheduler.Config{
		Nodes: nodes,
		Partitions: []scheduler.PartitionConfig{
			{Name: "batch", Default: true},
			{Name: "small", Nodes: []string{"n2", "n3"}},
		},
		Policy: &policy.Config{
			QOS: []policy.QOS{{Name: "normal", Priority: 10}, {Name: "high", Priority: 100}},
			Assocs: []policy.Assoc{
				{Account: "physics"}, {Account: "bio"},
				{Account: "physics", User: "ann"}, {Account: "physics", User: "bob"}, {Account: "bio", User: "cy"},
			},
		},
	}
	if prio {
		cfg.Priority = &scheduler.PriorityConfig{
			Engine:     priority.Config{Weights: priority.Weights{QOS: 10000, Partition: 1000}},
			CalcPeriod: time.Minute,
		}
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

func oneCPU(user, account string) scheduler.JobSpec {
	return scheduler.JobSpec{User: user, Account: account, CPUsPerTask: 8, TimeLimit: time.Hour}
}

func startedSet(c scheduler.Cycle) map[scheduler.JobID]bool {
	out := map[scheduler.JobID]bool{}
	for _, st := range c.Starts {
		out[st.Job] = true
	}
	return out
}

func ptr(n int) *int { return &n }

// A lowered QOS limit holds new starts only: the jobs already running
// over it go on (Slurm never judges a running job again), the queued ones
// wait with the limit's reason until the running count is under it.
func TestUpdateQOSLoweredLimitHoldsNewStartsOnly(t *testing.T) {
	s := adminCluster(t, false)
	a := mustSubmit(t, s, t0, oneCPU("ann", "physics"))
	b := mustSubmit(t, s, t0, oneCPU("ann", "physics"))
	c := mustSubmit(t, s, t0, oneCPU("ann", "physics"))
	require.Len(t, mustSchedule(t, s, t0).Starts, 3)

	q, ok := s.Policy().QOS("normal")
	require.True(t, ok)
	q.Limits.MaxJobsPerUser = ptr(1)
	require.NoError(t, s.UpdateQOS(t0.Add(time.Second), q))
	got, _ := s.Policy().QOS("normal")
	assert.Equal(t, ptr(1), got.Limits.MaxJobsPerUser)

	d := mustSubmit(t, s, t0.Add(2*time.Second), oneCPU("ann", "physics"))
	cyc := mustSchedule(t, s, t0.Add(3*time.Second))
	assert.Empty(t, cyc.Starts)
	assert.Equal(t, policy.ReasonQOSMaxJobsPerUserLimit, reasonOf(cyc, d))
	for _, id := range []scheduler.JobID{a, b, c} {
		j, _ := s.Job(id)
		assert.Equal(t, scheduler.JobRunning, j.State, "job %d keeps running", id)
	}
	// Two of the three end: one still runs, which the limit allows alone.
	require.NoError(t, s.Finish(t0.Add(4*time.Second), a, 0))
	require.NoError(t, s.Finish(t0.Add(4*time.Second), b, 0))
	assert.Empty(t, mustSchedule(t, s, t0.Add(5*time.Second)).Starts)
	require.NoError(t, s.Finish(t0.Add(6*time.Second), c, 0))
	assert.True(t, startedSet(mustSchedule(t, s, t0.Add(7*time.Second)))[d])
}

// A lowered association limit (sacctmgr modify account) likewise holds
// only new starts.
func TestPutAssocLoweredLimitHoldsNewStartsOnly(t *testing.T) {
	s := adminCluster(t, false)
	a := mustSubmit(t, s, t0, oneCPU("ann", "physics"))
	mustSubmit(t, s, t0, oneCPU("bob", "physics"))
	require.Len(t, mustSchedule(t, s, t0).Starts, 2)
	require.NoError(t, s.PutAssoc(t0.Add(time.Second), policy.Assoc{Account: "physics", Limits: policy.AssocLimits{Limits: policy.Limits{GrpJobs: ptr(1)}}}))
	c := mustSubmit(t, s, t0.Add(time.Second), oneCPU("ann", "physics"))
	cy := mustSubmit(t, s, t0.Add(time.Second), oneCPU("cy", "bio"))
	cyc := mustSchedule(t, s, t0.Add(2*time.Second))
	assert.Equal(t, policy.ReasonAssocGrpJobsLimit, reasonOf(cyc, c))
	assert.True(t, startedSet(cyc)[cy], "another account is not held")
	j, _ := s.Job(a)
	assert.Equal(t, scheduler.JobRunning, j.State)
}

// Every administrative event that fails changes nothing, and says why.
func TestAdminEventsFailWithoutChange(t *testing.T) {
	s := adminCluster(t, false)
	mustSubmit(t, s, t0, oneCPU("ann", "physics"))
	small := mustSubmit(t, s, t0, scheduler.JobSpec{User: "cy", Account: "bio", Partition: "small", TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	state := func() string {
		b, err := json.Marshal(struct {
			P []scheduler.PartitionConfig
			C policy.Config
			J []scheduler.Job
			V string
		}{s.Partitions(), s.Policy().Config(), s.Jobs(), s.PolicyVersion()})
		require.NoError(t, err)
		return string(b)
	}
	before := state()
	at := t0.Add(time.Minute)
	cases := []struct {
		name string
		err  error
		text string
		do   func() error
	}{
		{"remove partition with jobs", scheduler.ErrInUse, "1 pending or running job", func() error { return s.RemovePartition(at, "small") }},
		{"remove unknown partition", scheduler.ErrUnknownPartition, "nope", func() error { return s.RemovePartition(at, "nope") }},
		{"add duplicate partition", scheduler.ErrInvalidConfig, "exists", func() error {
			return s.AddPartition(at, scheduler.PartitionConfig{Name: "small"})
		}},
		{"add partition of unknown node", scheduler.ErrUnknownNode, "n9", func() error {
			return s.AddPartition(at, scheduler.PartitionConfig{Name: "x", Nodes: []string{"n9"}})
		}},
		{"bad MaxTime", scheduler.ErrInvalidConfig, "MaxTime", func() error {
			return s.UpdatePartition(at, scheduler.PartitionConfig{Name: "small", MaxTime: -time.Second})
		}},
		{"partition QOS unknown", scheduler.ErrInvalidConfig, "nope", func() error {
			return s.UpdatePartition(at, scheduler.PartitionConfig{Name: "small", QOS: "nope"})
		}},
		{"update unknown QOS", policy.ErrUnknownQOS, "nope", func() error { return s.UpdateQOS(at, policy.QOS{Name: "nope"}) }},
		{"add duplicate QOS", scheduler.ErrInvalidConfig, "exists", func() error { return s.AddQOS(at, policy.QOS{Name: "high"}) }},
		{"preempt cycle", policy.ErrCyclicPreempt, "high", func() error {
			if err := s.UpdateQOS(at, policy.QOS{Name: "high", Priority: 100, Preempt: []string{"normal"}}); err != nil {
				return err
			}
			return s.UpdateQOS(at, policy.QOS{Name: "normal", Priority: 10, Preempt: []string{"high"}})
		}},
		{"remove QOS in use", scheduler.ErrInUse, "2 pending or running", func() error { return s.RemoveQOS(at, "normal") }},
		{"put assoc of unknown parent", policy.ErrUnknownAccount, "nope", func() error {
			return s.PutAssoc(at, policy.Assoc{Account: "chem", Parent: "nope"})
		}},
		{"remove account with children", scheduler.ErrInUse, "1 child", func() error { return s.RemoveAssoc(at, "bio", "", "") }},
		{"remove user with jobs", scheduler.ErrInUse, "1 pending or running", func() error { return s.RemoveAssoc(at, "bio", "cy", "") }},
	}
	for _, c := range cases {
		err := c.do()
		require.ErrorIs(t, err, c.err, c.name)
		assert.Contains(t, err.Error(), c.text, c.name)
		if c.name == "preempt cycle" {
			// The first update succeeded: take it back to compare.
			require.NoError(t, s.UpdateQOS(at, policy.QOS{Name: "high", Priority: 100}))
			before = state()
			continue
		}
		assert.Equal(t, before, state(), c.name)
	}
	_ = small
}

// The QOS with the partition QOS of a partition cannot be removed, nor
// one an association's list names, and a QOS no one uses can.
func TestRemoveQOSWhenUnused(t *testing.T) {
	s := adminCluster(t, false)
	require.NoError(t, s.AddQOS(t0, policy.QOS{Name: "scav"}))
	p, _ := s.Partition("small")
	p.QOS = "scav"
	require.NoError(t, s.UpdatePartition(t0, p))
	require.ErrorIs(t, s.RemoveQOS(t0, "scav"), scheduler.ErrInUse)
	p.QOS = ""
	require.NoError(t, s.UpdatePartition(t0, p))
	require.NoError(t, s.PutAssoc(t0, policy.Assoc{Account: "bio", QOS: []string{"normal", "scav"}}))
	require.ErrorIs(t, s.RemoveQOS(t0, "scav"), scheduler.ErrInUse)
	require.NoError(t, s.PutAssoc(t0, policy.Assoc{Account: "bio"}))
	require.NoError(t, s.RemoveQOS(t0, "scav"))
	_, ok := s.Policy().QOS("scav")
	assert.False(t, ok)
	// Jobs still run after the QOS indices moved.
	id := mustSubmit(t, s, t0, oneCPU("cy", "bio"))
	assert.True(t, startedSet(mustSchedule(t, s, t0))[id])
}

// A DOWN partition starts nothing (its jobs pend PartitionDown) and
// accepts jobs; DRAIN accepts none; back UP, they start.
func TestUpdatePartitionState(t *testing.T) {
	s := adminCluster(t, false)
	p, _ := s.Partition("small")
	p.State = scheduler.PartitionDown
	require.NoError(t, s.UpdatePartition(t0, p))
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "cy", Account: "bio", Partition: "small", TimeLimit: time.Hour})
	assert.Equal(t, policy.ReasonPartitionDown, reasonOf(mustSchedule(t, s, t0), id))
	p.State = scheduler.PartitionDrain
	require.NoError(t, s.UpdatePartition(t0, p))
	_, err := s.Submit(t0, scheduler.JobSpec{User: "cy", Account: "bio", Partition: "small"})
	require.ErrorIs(t, err, scheduler.ErrInvalidJob)
	p.State = scheduler.PartitionUp
	require.NoError(t, s.UpdatePartition(t0, p))
	assert.True(t, startedSet(mustSchedule(t, s, t0))[id])
}

// Nodes taken out of a partition are no longer offered to its jobs; a
// job running there goes on; nodes added are offered at once.
func TestUpdatePartitionNodes(t *testing.T) {
	s := adminCluster(t, false)
	run := mustSubmit(t, s, t0, scheduler.JobSpec{User: "cy", Account: "bio", Partition: "small", CPUsPerTask: 8, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	require.True(t, startedSet(cyc)[run])
	p, _ := s.Partition("small")
	p.Nodes = []string{"n3"}
	require.NoError(t, s.UpdatePartition(t0, p))
	j, _ := s.Job(run)
	require.Equal(t, scheduler.JobRunning, j.State)
	ran := j.Alloc.Nodes[0].Node
	// One 8-CPU job fits n3 unless the running one holds it.
	next := mustSubmit(t, s, t0, scheduler.JobSpec{User: "cy", Account: "bio", Partition: "small", CPUsPerTask: 8, TimeLimit: time.Hour})
	cyc = mustSchedule(t, s, t0)
	if ran == 3 {
		assert.Empty(t, cyc.Starts)
	} else {
		require.True(t, startedSet(cyc)[next])
		assert.Equal(t, 3, cyc.Starts[0].Alloc.Nodes[0].Node)
	}
	p.Nodes = []string{"n0", "n1", "n3"}
	require.NoError(t, s.UpdatePartition(t0, p))
	two := mustSubmit(t, s, t0, scheduler.JobSpec{User: "cy", Account: "bio", Partition: "small", Nodes: 2, CPUsPerTask: 8, TimeLimit: time.Hour})
	cyc = mustSchedule(t, s, t0)
	require.True(t, startedSet(cyc)[two])
	for _, st := range cyc.Starts {
		if st.Job == two {
			for _, na := range st.Alloc.Nodes {
				assert.Contains(t, []int{0, 1, 3}, na.Node)
			}
		}
	}
}

// Partitions are added after the others and removed when empty; the
// partitions after a removed one keep working (their jobs, shapes,
// priorities are renumbered), and the default moves to the first.
func TestAddRemovePartition(t *testing.T) {
	s := adminCluster(t, true)
	require.NoError(t, s.AddPartition(t0, scheduler.PartitionConfig{Name: "gpu", Nodes: []string{"n1"}, PriorityTier: 5}))
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", Account: "physics", Partition: "gpu", CPUsPerTask: 8, TimeLimit: time.Hour})
	wait := mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", Account: "physics", Partition: "gpu", CPUsPerTask: 8, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	require.True(t, startedSet(cyc)[id])
	assert.Equal(t, 1, cyc.Starts[0].Alloc.Nodes[0].Node)
	require.NoError(t, s.RemovePartition(t0, "small"))
	_, ok := s.Partition("small")
	assert.False(t, ok)
	require.Len(t, s.Partitions(), 2)
	require.NoError(t, s.Finish(t0.Add(time.Minute), id, 0))
	cyc = mustSchedule(t, s, t0.Add(time.Minute))
	require.True(t, startedSet(cyc)[wait], "the gpu partition's job starts after the renumbering")
	assert.Equal(t, 1, cyc.Starts[0].Alloc.Nodes[0].Node)
	// Marking a partition Default takes the mark from the old default.
	g, _ := s.Partition("gpu")
	g.Default = true
	require.NoError(t, s.UpdatePartition(t0.Add(time.Minute), g))
	b, _ := s.Partition("batch")
	assert.False(t, b.Default)
	onGPU := mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{User: "ann", Account: "physics", TimeLimit: time.Hour})
	got0, _ := s.Job(onGPU)
	assert.Equal(t, "gpu", got0.Partition)
	require.NoError(t, s.Cancel(t0.Add(time.Minute), onGPU))
	g.Default = false
	require.NoError(t, s.UpdatePartition(t0.Add(time.Minute), g))
	// Remove the default: the first left becomes it.
	require.NoError(t, s.RemovePartition(t0.Add(time.Minute), "batch"))
	require.ErrorIs(t, s.RemovePartition(t0.Add(time.Minute), "gpu"), scheduler.ErrInvalidConfig) // the last one
	j := mustSubmit(t, s, t0.Add(time.Minute), scheduler.JobSpec{User: "ann", Account: "physics", TimeLimit: time.Hour})
	got, _ := s.Job(j)
	assert.Equal(t, "gpu", got.Partition)
}

// A QOS priority change reaches the multifactor QOS factor, normalised
// by the largest QOS priority (Slurm's MaxQOSPriority), at the next
// priority recalculation; so does a partition's PriorityJobFactor.
func TestPriorityFollowsQOSAndPartitionChanges(t *testing.T) {
	s := adminCluster(t, true)
	require.NoError(t, s.AddPartition(t0, scheduler.PartitionConfig{Name: "busy", Nodes: []string{"n0"}}))
	// Fill the cluster so the jobs below pend.
	for range 4 {
		mustSubmit(t, s, t0, oneCPU("bob", "physics"))
	}
	mustSchedule(t, s, t0)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", Account: "physics", Partition: "busy", TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	b, ok := s.PriorityBreakdown(id)
	require.True(t, ok)
	assert.InDelta(t, 0.1, b.Factors.QOS, 1e-9) // normal 10 of max 100
	assert.InDelta(t, 1.0, b.Factors.Partition, 1e-9)

	q, _ := s.Policy().QOS("high")
	q.Priority = 20
	require.NoError(t, s.UpdateQOS(t0.Add(time.Second), q))
	p, _ := s.Partition("busy")
	p.PriorityJobFactor = 1
	other, _ := s.Partition("small")
	other.PriorityJobFactor = 4
	require.NoError(t, s.UpdatePartition(t0.Add(time.Second), other))
	// Not before the next recalculation …
	mustSchedule(t, s, t0.Add(2*time.Second))
	b, _ = s.PriorityBreakdown(id)
	assert.InDelta(t, 0.1, b.Factors.QOS, 1e-9)
	// … then with the new maxima.
	mustSchedule(t, s, t0.Add(2*time.Minute))
	b, _ = s.PriorityBreakdown(id)
	assert.InDelta(t, 0.5, b.Factors.QOS, 1e-9) // normal 10 of max 20
	assert.InDelta(t, 0.25, b.Factors.Partition, 1e-9)
	// A new job gets the new factors at submission.
	id2 := mustSubmit(t, s, t0.Add(2*time.Minute), scheduler.JobSpec{User: "ann", Account: "physics", QOS: "high", Partition: "small", TimeLimit: time.Hour})
	b, _ = s.PriorityBreakdown(id2)
	assert.InDelta(t, 1.0, b.Factors.QOS, 1e-9)
	assert.InDelta(t, 1.0, b.Factors.Partition, 1e-9)
}

// Accounts and users are added and removed at runtime; a new user may
// submit at once, a removed one may not.
func TestPutRemoveAssoc(t *testing.T) {
	s := adminCluster(t, false)
	_, err := s.Submit(t0, oneCPU("dan", "chem"))
	require.ErrorIs(t, err, scheduler.ErrInvalidJob)
	require.NoError(t, s.PutAssoc(t0, policy.Assoc{Account: "chem", Parent: "physics"}))
	require.NoError(t, s.PutAssoc(t0, policy.Assoc{Account: "chem", User: "dan", Limits: policy.AssocLimits{MaxJobs: ptr(1)}}))
	a := mustSubmit(t, s, t0, oneCPU("dan", "chem"))
	b := mustSubmit(t, s, t0, oneCPU("dan", "chem"))
	cyc := mustSchedule(t, s, t0)
	assert.True(t, startedSet(cyc)[a])
	assert.Equal(t, policy.ReasonAssocMaxJobsLimit, reasonOf(cyc, b))
	require.ErrorIs(t, s.RemoveAssoc(t0, "chem", "dan", ""), scheduler.ErrInUse)
	require.NoError(t, s.Cancel(t0, a))
	require.NoError(t, s.Cancel(t0, b))
	require.NoError(t, s.RemoveAssoc(t0, "chem", "dan", ""))
	require.NoError(t, s.RemoveAssoc(t0, "chem", "", ""))
	_, err = s.Submit(t0, oneCPU("dan", "chem"))
	require.ErrorIs(t, err, scheduler.ErrInvalidJob)
}

// Administrative events are data: each encodes as an Entry and decodes
// to the same value.
func TestAdminEventsJSON(t *testing.T) {
	evs := []scheduler.Event{
		scheduler.AddPartitionEvent{Partition: scheduler.PartitionConfig{Name: "p", Nodes: []string{"n0"}, MaxTime: time.Hour, AllowQOS: []string{"normal"}}},
		scheduler.UpdatePartitionEvent{Partition: scheduler.PartitionConfig{Name: "p", State: scheduler.PartitionDrain, PriorityTier: 3}},
		scheduler.RemovePartitionEvent{Name: "p"},
		scheduler.AddQOSEvent{QOS: policy.QOS{Name: "q", Priority: 5, Preempt: []string{"normal"}, GraceTime: time.Minute,
			Limits: policy.QOSLimits{MaxJobsPerUser: ptr(3)}}},
		scheduler.UpdateQOSEvent{QOS: policy.QOS{Name: "q", Flags: policy.QOSDenyOnLimit}},
		scheduler.RemoveQOSEvent{Name: "q"},
		scheduler.PutAssocEvent{Assoc: policy.Assoc{Account: "a", Parent: "root", QOS: []string{"normal"}, DefaultQOS: "normal",
			Limits: policy.AssocLimits{MaxJobs: ptr(2), Limits: policy.Limits{GrpJobs: ptr(4), MaxWall: time.Hour}}}},
		scheduler.RemoveAssocEvent{Account: "a", User: "u", Partition: "p"},
	}
	for _, ev := range evs {
		b, err := json.Marshal(scheduler.Entry{At: t0, Event: ev})
		require.NoError(t, err)
		var e scheduler.Entry
		require.NoError(t, json.Unmarshal(b, &e), "%s", b)
		assert.Equal(t, ev, e.Event, "%s", b)
	}
}

// Under preempt/qos the queue puts a job that may preempt another before
// it: a QOS given a Preempt list at runtime moves its pending jobs ahead
// at once (the queue is reordered by the change).
func TestUpdateQOSPreemptReordersQueue(t *testing.T) {
	s, err := scheduler.New(scheduler.Config{
		Nodes:      []scheduler.NodeConfig{{Name: "n0", CPUs: 4, MemoryMiB: 1024}},
		Partitions: []scheduler.PartitionConfig{{Name: "p", Default: true}},
		Policy: &policy.Config{QOS: []policy.QOS{{Name: "normal"}, {Name: "high"}, {Name: "low"}},
			PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptCancel},
	})
	require.NoError(t, err)
	full := scheduler.JobSpec{User: "u", Account: "a", CPUsPerTask: 4, TimeLimit: time.Hour}
	mustSubmit(t, s, t0, full)
	mustSchedule(t, s, t0)
	low := full
	low.QOS = "low"
	high := full
	high.QOS = "high"
	a := mustSubmit(t, s, t0, low)
	b := mustSubmit(t, s, t0, high)
	order := func(c scheduler.Cycle) []scheduler.JobID {
		var out []scheduler.JobID
		for _, p := range c.Pending {
			out = append(out, p.Job)
		}
		return out
	}
	assert.Equal(t, []scheduler.JobID{a, b}, order(mustSchedule(t, s, t0)))
	require.NoError(t, s.UpdateQOS(t0, policy.QOS{Name: "high", Preempt: []string{"low"}}))
	assert.Equal(t, []scheduler.JobID{b, a}, order(mustSchedule(t, s, t0)))
}

// A finished job of a removed partition keeps its partition's name and
// stays readable.
func TestRemovePartitionKeepsFinishedJobs(t *testing.T) {
	s := adminCluster(t, false)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "cy", Account: "bio", Partition: "small", TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	require.NoError(t, s.Finish(t0.Add(time.Minute), id, 0))
	require.NoError(t, s.RemovePartition(t0.Add(time.Minute), "small"))
	j, ok := s.Job(id)
	require.True(t, ok)
	assert.Equal(t, "small", j.Partition)
	assert.Equal(t, scheduler.JobCompleted, j.State)
	_, err := s.Explain(t0.Add(time.Minute), id, scheduler.ExplainOptions{Counterfactuals: true})
	require.NoError(t, err)
	_, err = s.Submit(t0.Add(time.Minute), scheduler.JobSpec{User: "cy", Account: "bio", Partition: "small"})
	require.ErrorIs(t, err, scheduler.ErrUnknownPartition)
	mustSchedule(t, s, t0.Add(2*time.Minute))
	// scontrol requeue of the finished job has no partition to go back to.
	require.ErrorIs(t, s.RequeueJob(t0.Add(2*time.Minute), id, false), scheduler.ErrJobState)
	// A snapshot keeps the job, and restores it.
	var b bytes.Buffer
	require.NoError(t, s.Snapshot(&b))
	r, err := scheduler.Restore(&b, scheduler.RestoreOptions{})
	require.NoError(t, err)
	rj, ok := r.Job(id)
	require.True(t, ok)
	assert.Equal(t, j, rj)
}

// A scheduler built without a policy gets one with its first QOS or
// association: the jobs already queued and running are counted in it, and
// its limits hold the next starts. A queued job naming a QOS the new
// policy lacks refuses the change.
func TestFirstPolicyChangeCreatesPolicy(t *testing.T) {
	s, err := scheduler.New(scheduler.Config{
		Nodes:      []scheduler.NodeConfig{{Name: "n0", CPUs: 4, MemoryMiB: 1024}, {Name: "n1", CPUs: 4, MemoryMiB: 1024}},
		Partitions: []scheduler.PartitionConfig{{Name: "p", Default: true}},
	})
	require.NoError(t, err)
	require.Nil(t, s.Policy())
	job := scheduler.JobSpec{User: "u", Account: "a", CPUsPerTask: 4, TimeLimit: time.Hour}
	run := mustSubmit(t, s, t0, job)
	mustSchedule(t, s, t0)
	odd := job
	odd.QOS = "gold"
	bad := mustSubmit(t, s, t0, odd) // no policy: the QOS is not checked
	lim := policy.QOS{Name: "normal", Limits: policy.QOSLimits{MaxJobsPerUser: ptr(1)}}
	require.ErrorIs(t, s.AddQOS(t0, lim), scheduler.ErrInUse)
	require.Nil(t, s.Policy(), "the refused change created nothing")
	require.NoError(t, s.Cancel(t0, bad))
	require.NoError(t, s.AddQOS(t0, lim))
	require.NotNil(t, s.Policy())
	j, _ := s.Job(run)
	assert.Equal(t, "normal", j.Spec.QOS, "the running job has the default QOS")
	next := mustSubmit(t, s, t0, job)
	assert.Equal(t, policy.ReasonQOSMaxJobsPerUserLimit, reasonOf(mustSchedule(t, s, t0), next), "the running job counts")
	require.NoError(t, s.Finish(t0.Add(time.Minute), run, 0))
	assert.True(t, startedSet(mustSchedule(t, s, t0.Add(time.Minute)))[next])
}

// TestRequeueFinishedJobAfterPolicyChanges: scontrol requeue of a job
// that finished before many policy changes resolves its association and
// QOS again, as at submission, instead of failing on a stale subject.
func TestRequeueFinishedJobAfterPolicyChanges(t *testing.T) {
	s := adminCluster(t, false)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", Account: "physics", TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	require.NoError(t, s.Finish(t0, id, 1))
	// Its association goes and comes back (sacctmgr delete, add).
	require.NoError(t, s.RemoveAssoc(t0, "physics", "ann", ""))
	require.NoError(t, s.PutAssoc(t0, policy.Assoc{Account: "physics", User: "ann"}))
	for k := range 40 {
		require.NoError(t, s.UpdateQOS(t0, policy.QOS{Name: "high", Priority: uint32(100 + k)}))
		require.NoError(t, s.AddQOS(t0, policy.QOS{Name: fmt.Sprintf("extra%d", k)}))
	}
	require.NoError(t, s.RequeueJob(t0, id, false))
	mustSchedule(t, s, t0.Add(time.Minute))
	j, _ := s.Job(id)
	assert.Equal(t, scheduler.JobRunning, j.State)
	assert.Equal(t, 1, j.Restarts)
}
