package scheduler_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/feature"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// bootTime is the BootTime of the changeable cluster.
const bootTime = 2 * time.Minute

// changeable is four 4-CPU nodes g0…g3 with the static feature "ib" and
// the changeable MIG modes "mig1" and "mig7" (helpers.conf Feature=mig1,mig7):
// g0-g2 boot in mig1, g3 in mig7. BootTime is two minutes; with bf,
// EASY backfill at a one-second resolution.
func changeable(t *testing.T, bf bool) *scheduler.Scheduler {
	t.Helper()
	s, err := scheduler.New(changeableConfig(bf))
	require.NoError(t, err)
	return s
}

func changeableConfig(bf bool) scheduler.Config {
	cfg := scheduler.Config{Partitions: []scheduler.PartitionConfig{{Name: "p", Default: true}}, Policy: &policy.Config{}, BootTime: bootTime}
	for i, mode := range []string{"mig1", "mig1", "mig1", "mig7"} {
		cfg.Nodes = append(cfg.Nodes, scheduler.NodeConfig{Name: fmt.Sprintf("g%d", i), CPUs: 4, MemoryMiB: 1024,
			Features: []string{"ib", mode}, ChangeableFeatures: []string{"mig1", "mig7"}})
	}
	if bf {
		cfg.Backfill = &backfill.Config{Mode: backfill.EASY, Resolution: time.Second}
	}
	return cfg
}

func withConstraint(n int, cons string) scheduler.JobSpec {
	sp := whole(n)
	sp.Constraint = cons
	return sp
}

func nodeOf(t *testing.T, s *scheduler.Scheduler, name string) scheduler.NodeInfo {
	t.Helper()
	n, ok := s.Node(name)
	require.True(t, ok, name)
	return n
}

// A node with the requested changeable feature active is used before a
// node that would need a reboot, though the latter comes first.
func TestChangeablePrefersActiveFeatures(t *testing.T) {
	for _, bf := range []bool{false, true} {
		s := changeable(t, bf)
		id := mustSubmit(t, s, t0, withConstraint(1, "mig7&ib"))
		c := mustSchedule(t, s, t0)
		assert.Empty(t, c.Reboots, "bf=%t", bf)
		j, _ := s.Job(id)
		require.Equal(t, scheduler.JobRunning, j.State, "bf=%t", bf)
		assert.Equal(t, []string{"g3"}, j.Alloc.NodeNames(), "bf=%t", bf)
	}
}

// The job asking for a changeable feature active nowhere free gets an
// idle node rebooted into it; the node takes no other work while it
// reboots (not even jobs its old features suit); the job starts once the
// node reports booted, with the new features active.
func TestRebootIntoChangeableFeature(t *testing.T) {
	s := changeable(t, false)
	mustSubmit(t, s, t0, withConstraint(1, "mig7"))
	mustSchedule(t, s, t0) // on g3, the only node in mig7
	id := mustSubmit(t, s, t0, withConstraint(1, "mig7"))
	c := mustSchedule(t, s, t0)
	require.Equal(t, []scheduler.Reboot{{Node: "g0", Job: id, Features: []string{"ib", "mig7"}}}, c.Reboots)
	assert.Equal(t, policy.ReasonResources, reasonOf(c, id))
	g0 := nodeOf(t, s, "g0")
	require.NotNil(t, g0.Reboot)
	assert.Equal(t, t0.Add(bootTime), g0.Reboot.Until)
	assert.Equal(t, []string{"ib", "mig1"}, g0.ActiveFeatures, "active once booted")
	assert.Equal(t, []string{"ib", "mig1", "mig7"}, g0.AvailableFeatures)

	// The cycles while it reboots reboot nothing more, and start nothing
	// on it (the jobs behind it wait in FIFO order without backfill).
	at := t0.Add(time.Minute)
	plain := mustSubmit(t, s, at, whole(1))
	c = mustSchedule(t, s, at)
	assert.Empty(t, c.Reboots, "g0 reboots for it already")
	assert.Empty(t, nodeOf(t, s, "g0").Jobs)
	j, _ := s.Job(id)
	assert.Equal(t, scheduler.JobPending, j.State, "never started on a rebooting node")

	done := t0.Add(90 * time.Second)
	require.NoError(t, s.NodeRebooted(done, "g0"))
	g0 = nodeOf(t, s, "g0")
	assert.Nil(t, g0.Reboot)
	assert.Equal(t, []string{"ib", "mig7"}, g0.ActiveFeatures)
	mustSchedule(t, s, done)
	j, _ = s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)
	assert.Equal(t, []string{"g0"}, j.Alloc.NodeNames())
	assert.False(t, j.StartTime.Before(done), "starts after the reboot")
	p, _ := s.Job(plain)
	assert.Equal(t, scheduler.JobRunning, p.State)
}

// With backfill, the plan reserves the rebootable node for the job at
// now + BootTime and reboots it; the job's expected start says so.
func TestRebootPlannedByBackfill(t *testing.T) {
	s := changeable(t, true)
	mustSubmit(t, s, t0, withConstraint(1, "mig7"))
	mustSchedule(t, s, t0)
	id := mustSubmit(t, s, t0, withConstraint(2, "mig7"))
	c := mustSchedule(t, s, t0)
	require.Len(t, c.Reboots, 2)
	for _, r := range c.Reboots {
		assert.Equal(t, id, r.Job)
		assert.Equal(t, []string{"ib", "mig7"}, r.Features)
	}
	j, _ := s.Job(id)
	assert.Equal(t, scheduler.JobPending, j.State)
	assert.Equal(t, t0.Add(bootTime), j.ExpectedStart)

	ex, err := s.Explain(t0, id, scheduler.ExplainOptions{})
	require.NoError(t, err)
	found := false
	for _, b := range ex.Blockers {
		if strings.Contains(b.Detail, "rebooting for it into features ib,mig7") {
			found = true
		}
	}
	assert.True(t, found, "Explain names the reboot: %+v", ex.Blockers)

	// While g0 and g1 reboot, jobs their old features suit go elsewhere
	// or wait; a plain job backfills onto g2.
	plain := mustSubmit(t, s, t0, whole(1))
	old := mustSubmit(t, s, t0, withConstraint(2, "mig1"))
	c2 := mustSchedule(t, s, t0)
	assert.Empty(t, c2.Reboots, "nothing more to reboot")
	p, _ := s.Job(plain)
	require.Equal(t, scheduler.JobRunning, p.State)
	assert.Equal(t, []string{"g2"}, p.Alloc.NodeNames())
	o, _ := s.Job(old)
	assert.Equal(t, scheduler.JobPending, o.State)
	assert.NotContains(t, o.PlannedNodes, "g0", "g0 will be in mig7")

	at := t0.Add(time.Minute)
	for _, r := range c.Reboots {
		require.NoError(t, s.NodeRebooted(at, r.Node))
	}
	mustSchedule(t, s, at)
	j, _ = s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)
}

// Explain says a reboot is needed when a job's changeable features are
// active on too few nodes and its nodes are busy.
func TestExplainRebootNeeded(t *testing.T) {
	s := changeable(t, false)
	for range 4 {
		mustSubmit(t, s, t0, whole(1))
	}
	mustSchedule(t, s, t0)
	id := mustSubmit(t, s, t0, withConstraint(2, "mig7"))
	c := mustSchedule(t, s, t0)
	assert.Empty(t, c.Reboots, "no idle node to reboot")
	ex, err := s.Explain(t0, id, scheduler.ExplainOptions{})
	require.NoError(t, err)
	var details []string
	for _, b := range ex.Blockers {
		details = append(details, b.Detail)
	}
	assert.Contains(t, strings.Join(details, "\n"), "needs changeable feature(s) mig7: 1 up node(s) have them active, 3 more can be rebooted")
}

// Slurm's node features plugins take changeable features only ANDed: an
// OR, a matching OR or a count with one is refused at submission, naming
// the problem; the same forms over static features are accepted.
func TestChangeableConstraintFormsRefused(t *testing.T) {
	s := changeable(t, false)
	for _, tc := range []struct{ cons, says string }{
		{"mig7|mig1", "OR"},
		{"ib&(mig7|eth)", "OR"},
		{"[mig1|mig7]", "matching OR"},
		{"mig7*1", "count"},
	} {
		_, err := s.Submit(t0, withConstraint(1, tc.cons))
		require.ErrorIs(t, err, scheduler.ErrInvalidJob, tc.cons)
		require.ErrorIs(t, err, feature.ErrChangeable, tc.cons)
		assert.Contains(t, err.Error(), tc.says, tc.cons)
	}
	for _, ok := range []string{"mig7&ib", "ib|eth", "ib*1", "[ib|eth]"} {
		_, err := s.Submit(t0, withConstraint(1, ok))
		assert.NoError(t, err, ok)
	}
	_, err := s.Submit(t0, withConstraint(1, "mig7&eth"))
	assert.ErrorIs(t, err, scheduler.ErrUnsatisfiable, "no node can have eth")
}

// A node not reported booted within BootTime is DOWN ("reboot timed
// out"), and the job waits for another.
func TestRebootTimesOut(t *testing.T) {
	s := changeable(t, false)
	mustSubmit(t, s, t0, withConstraint(1, "mig7"))
	mustSchedule(t, s, t0)
	id := mustSubmit(t, s, t0, withConstraint(1, "mig7"))
	c := mustSchedule(t, s, t0)
	require.Len(t, c.Reboots, 1)
	assert.Equal(t, t0.Add(bootTime), s.NextWake(), "the boot deadline wakes the scheduler")
	c = mustSchedule(t, s, t0.Add(bootTime))
	assert.Equal(t, []string{"g0"}, c.RebootTimedOut)
	g0 := nodeOf(t, s, "g0")
	assert.Equal(t, scheduler.NodeDown, g0.State)
	assert.Equal(t, "reboot timed out", g0.Reason)
	assert.Nil(t, g0.Reboot)
	assert.Equal(t, []string{"ib", "mig1"}, g0.ActiveFeatures)
	assert.ErrorIs(t, s.NodeRebooted(t0.Add(bootTime), "g0"), scheduler.ErrRebootState)
	require.Len(t, c.Reboots, 1, "the job reboots the next idle node")
	assert.Equal(t, "g1", c.Reboots[0].Node)
	assert.Equal(t, id, c.Reboots[0].Job)
}

// scontrol reboot with ActiveFeatures=: an operator reboots an idle node
// into changeable features; refused events change nothing.
func TestRebootNodeAdmin(t *testing.T) {
	s := changeable(t, false)
	mustSubmit(t, s, t0, withConstraint(1, "mig7"))
	mustSchedule(t, s, t0) // g3 busy
	before := s.Nodes()
	for _, tc := range []struct {
		err  error
		call func() error
	}{
		{scheduler.ErrRebootState, func() error { return s.NodeRebooted(t0, "g1") }},
		{scheduler.ErrNodeInUse, func() error { return s.RebootNode(t0, "g3", "mig1") }},
		{scheduler.ErrRebootState, func() error { return s.RebootNode(t0, "g1", "ib") }},
		{scheduler.ErrRebootState, func() error { return s.RebootNode(t0, "g1", "mig9") }},
		{scheduler.ErrUnknownNode, func() error { return s.RebootNode(t0, "nope") }},
	} {
		assert.ErrorIs(t, tc.call(), tc.err)
	}
	assert.Equal(t, before, s.Nodes(), "failed events change nothing")

	require.NoError(t, s.RebootNode(t0, "g1", "mig7"))
	g1 := nodeOf(t, s, "g1")
	require.NotNil(t, g1.Reboot)
	assert.Equal(t, []string{"ib", "mig7"}, g1.Reboot.Features)
	assert.Zero(t, g1.Reboot.Job)
	assert.ErrorIs(t, s.RebootNode(t0, "g1"), scheduler.ErrRebootState, "rebooting already")
	assert.ErrorIs(t, s.RemoveNode(t0, "g1"), scheduler.ErrNodeInUse, "rebooting")
	id := mustSubmit(t, s, t0, withConstraint(1, "mig1&ib"))
	mustSchedule(t, s, t0)
	j, _ := s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)
	assert.NotEqual(t, []string{"g1"}, j.Alloc.NodeNames())
	require.NoError(t, s.NodeRebooted(t0.Add(time.Minute), "g1"))
	assert.Equal(t, []string{"ib", "mig7"}, nodeOf(t, s, "g1").ActiveFeatures)

	// UpdateNode sets the active features directly (scontrol update
	// ActiveFeatures=).
	nc, _ := s.NodeConfig("g1")
	nc.Features = []string{"ib", "mig1"}
	require.NoError(t, s.UpdateNode(t0.Add(time.Minute), nc))
	assert.Equal(t, []string{"ib", "mig1"}, nodeOf(t, s, "g1").ActiveFeatures)

	bad := nc
	bad.ChangeableFeatures = []string{"mig1", "mig1"}
	assert.ErrorIs(t, s.UpdateNode(t0.Add(time.Minute), bad), scheduler.ErrInvalidConfig)
	bad.ChangeableFeatures = []string{"a|b"}
	assert.ErrorIs(t, s.UpdateNode(t0.Add(time.Minute), bad), scheduler.ErrInvalidConfig)
}

// nodeView is what a test compares of a node across schedulers.
type nodeView struct {
	Name     string
	State    scheduler.NodeState
	Reason   string
	Jobs     int
	Active   []string
	Reboot   scheduler.NodeReboot
	Rebootin bool
}

func nodeViews(s *scheduler.Scheduler) []nodeView {
	var out []nodeView
	for _, n := range s.Nodes() {
		v := nodeView{Name: n.Name, State: n.State, Reason: n.Reason, Jobs: len(n.Jobs), Active: n.ActiveFeatures}
		if n.Reboot != nil {
			v.Reboot, v.Rebootin = *n.Reboot, true
		}
		out = append(out, v)
	}
	return out
}

// recorder is an EventLog keeping the entries, JSON-encoded as a
// journal writes them.
type recorder struct{ lines [][]byte }

func (r *recorder) Append(now time.Time, ev scheduler.Event) error {
	b, err := json.Marshal(scheduler.Entry{At: now, Event: ev})
	r.lines = append(r.lines, b)
	return err
}

// A reboot's events replay to the same state, and a snapshot taken while
// a node reboots restores it rebooting; both then start the job alike.
func TestRebootReplayAndSnapshot(t *testing.T) {
	s := changeable(t, true)
	var log recorder
	s.SetEventLog(&log)
	mustSubmit(t, s, t0, withConstraint(1, "mig7"))
	_, err := s.Apply(t0, scheduler.ScheduleEvent{})
	require.NoError(t, err)
	id := mustSubmit(t, s, t0, withConstraint(1, "mig7"))
	_, err = s.Apply(t0, scheduler.ScheduleEvent{})
	require.NoError(t, err)
	require.NoError(t, s.RebootNode(t0, "g2", "mig7"))
	require.NotNil(t, nodeOf(t, s, "g0").Reboot)

	var buf bytes.Buffer
	require.NoError(t, s.Snapshot(&buf))
	snap, err := scheduler.Restore(bytes.NewReader(buf.Bytes()), scheduler.RestoreOptions{})
	require.NoError(t, err)
	replay := changeable(t, true)
	for _, line := range log.lines {
		var e scheduler.Entry
		require.NoError(t, json.Unmarshal(line, &e), string(line))
		_, err := replay.Apply(e.At, e.Event)
		require.NoError(t, err, string(line))
	}
	for _, r := range []*scheduler.Scheduler{snap, replay} {
		assert.Equal(t, nodeViews(s), nodeViews(r))
	}
	at := t0.Add(time.Minute)
	for _, r := range []*scheduler.Scheduler{s, snap, replay} {
		require.NoError(t, r.NodeRebooted(at, "g0"))
		require.NoError(t, r.NodeRebooted(at, "g2"))
		mustSchedule(t, r, at)
		j, _ := r.Job(id)
		require.Equal(t, scheduler.JobRunning, j.State)
		assert.Equal(t, []string{"g0"}, j.Alloc.NodeNames())
		assert.Equal(t, []string{"ib", "mig7"}, nodeOf(t, r, "g2").ActiveFeatures)
	}
	assert.Equal(t, nodeViews(s), nodeViews(snap))
	assert.Equal(t, nodeViews(s), nodeViews(replay))

	for _, ev := range []scheduler.Event{
		scheduler.RebootNodeEvent{Node: "g1", Features: []string{"mig7"}},
		scheduler.NodeRebootedEvent{Node: "g1"},
	} {
		b, err := json.Marshal(scheduler.Entry{At: t0, Event: ev})
		require.NoError(t, err)
		var e scheduler.Entry
		require.NoError(t, json.Unmarshal(b, &e), string(b))
		assert.Equal(t, ev, e.Event, string(b))
	}
	cfg := changeableConfig(true)
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	var back scheduler.Config
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, cfg.BootTime, back.BootTime)
	assert.Equal(t, cfg.Nodes[0].ChangeableFeatures, back.Nodes[0].ChangeableFeatures)
}

// A backfill reservation that needs idle nodes rebooted, starting later
// than BootTime from now, has them rebooted BootTime before its start:
// NextWake reports that instant, so a caller that polls only at NextWake
// reboots them when one polling every second does.
func TestRebootPlanWake(t *testing.T) {
	run := func(poll bool) (time.Time, []scheduler.Reboot) {
		s := changeable(t, true)
		mustSubmit(t, s, t0, withConstraint(1, "mig7")) // g3 until t0+1h
		mustSchedule(t, s, t0)
		mustSubmit(t, s, t0, withConstraint(4, "mig7")) // g0-g3, from t0+1h
		c := mustSchedule(t, s, t0)
		require.Empty(t, c.Reboots)
		for at := t0; at.Before(t0.Add(time.Hour)); {
			next := c.NextWake
			if poll {
				next = at.Add(time.Second)
			}
			require.False(t, next.IsZero())
			at = next
			c = mustSchedule(t, s, at)
			if len(c.Reboots) > 0 {
				return at, c.Reboots
			}
		}
		return time.Time{}, nil
	}
	pollAt, pollReboots := run(true)
	require.NotEmpty(t, pollReboots, "the idle nodes are rebooted before the start")
	require.False(t, pollAt.After(t0.Add(time.Hour-bootTime)), "rebooted at %v", pollAt)
	wakeAt, wakeReboots := run(false)
	assert.Equal(t, pollAt, wakeAt)
	assert.Equal(t, pollReboots, wakeReboots)
}

// UpdateNode on a rebooting node changes its static features: the reboot
// keeps the changeable features it boots into and takes the new static
// ones, so NodeRebooted does not bring back the features the update
// dropped nor drop those it added.
func TestUpdateNodeWhileRebooting(t *testing.T) {
	s := changeable(t, false)
	require.NoError(t, s.RebootNode(t0, "g1", "mig7"))
	nc, _ := s.NodeConfig("g1")
	nc.Features = []string{"eth", "nvme", "mig1"} // ib gone, eth and nvme static
	require.NoError(t, s.UpdateNode(t0, nc))
	want := []string{"eth", "nvme", "mig7"}
	g1 := nodeOf(t, s, "g1")
	require.NotNil(t, g1.Reboot)
	assert.Equal(t, want, g1.Reboot.Features)
	require.NoError(t, s.NodeRebooted(t0.Add(time.Minute), "g1"))
	assert.Equal(t, want, nodeOf(t, s, "g1").ActiveFeatures)
}

// The main pass reboots no more nodes than the job is short of: a
// two-node job asking for mig7, active on idle g3 only, reboots one node
// and uses g3, though g0 and g1 come first.
func TestRebootFewestNodes(t *testing.T) {
	s := changeable(t, false)
	id := mustSubmit(t, s, t0, withConstraint(2, "mig7"))
	c := mustSchedule(t, s, t0)
	require.Len(t, c.Reboots, 1)
	assert.Equal(t, "g0", c.Reboots[0].Node)
	require.NoError(t, s.NodeRebooted(t0.Add(time.Minute), "g0"))
	mustSchedule(t, s, t0.Add(time.Minute))
	j, _ := s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)
	assert.Equal(t, []string{"g0", "g3"}, j.Alloc.NodeNames())
}

// A rebooting node is not powered down (its reboot would never end
// but by timing out, and power saving could wake it meanwhile): the
// event is refused and changes nothing.
func TestPowerDownRebootingNode(t *testing.T) {
	cfg := changeableConfig(false)
	cfg.Power = &scheduler.PowerConfig{SuspendTime: time.Hour}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.RebootNode(t0, "g1", "mig7"))
	before := s.Nodes()
	assert.ErrorIs(t, s.PowerDownNode(t0, "g1"), scheduler.ErrRebootState)
	assert.Equal(t, before, s.Nodes())
	require.NoError(t, s.NodeRebooted(t0.Add(time.Minute), "g1"))
	assert.Equal(t, scheduler.NodeIdle, nodeOf(t, s, "g1").State)
}

// The plan reboots nodes for the components of a heterogeneous job too:
// one asking for mig7 on two nodes, active on g3 only, gets a node
// rebooted and starts once it has booted (it waited forever).
func TestRebootForHetComponent(t *testing.T) {
	s := changeable(t, true)
	ids, err := s.SubmitHet(t0, []scheduler.JobSpec{withConstraint(2, "mig7"), withConstraint(1, "mig1")})
	require.NoError(t, err)
	c := mustSchedule(t, s, t0)
	require.NotEmpty(t, c.Reboots)
	at := t0.Add(time.Minute)
	for _, r := range c.Reboots {
		assert.Equal(t, ids[0], r.Job)
		require.NoError(t, s.NodeRebooted(at, r.Node))
	}
	mustSchedule(t, s, at)
	for _, id := range ids {
		j, _ := s.Job(id)
		assert.Equal(t, scheduler.JobRunning, j.State, "job %d", id)
	}
}

// A job that could also use a node after a reboot backfills now on
// nodes with its features active: the reboot's BootTime delay, which
// moves with the clock, does not hold its start off (it never started).
func TestRebootableJobBackfillsNow(t *testing.T) {
	s := changeable(t, true)
	mustSubmit(t, s, t0, withConstraint(1, "mig7")) // g3 until t0+1h
	mustSchedule(t, s, t0)
	mustSubmit(t, s, t0, withConstraint(4, "ib")) // all four from t0+1h
	short := withConstraint(1, "mig1")
	short.TimeLimit = 30 * time.Minute
	id := mustSubmit(t, s, t0, short)
	c := mustSchedule(t, s, t0)
	assert.Empty(t, c.Reboots)
	j, _ := s.Job(id)
	require.Equal(t, scheduler.JobRunning, j.State)
	assert.True(t, j.Backfilled)
}
