package scheduler_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
)

// usageTree is a root with two accounts of equal shares, one user each;
// heavy's account has used a lot, light's nothing.
func usageTree(heavyUsage float64) scheduler.FairShareFunc {
	return func(time.Time) ([]priority.Association, error) {
		return []priority.Association{
			{Account: "root", Shares: 1, Usage: heavyUsage}, // usage is per subtree (sshare RawUsage)
			{Account: "a", Parent: "root", Shares: 1, Usage: heavyUsage},
			{Account: "b", Parent: "root", Shares: 1},
			{Account: "a", User: "heavy", Parent: "a", Shares: 1, Usage: heavyUsage},
			{Account: "b", User: "light", Parent: "b", Shares: 1},
		}, nil
	}
}

func newPriorityMixed(t *testing.T, src scheduler.FairShareSource) *scheduler.Scheduler {
	t.Helper()
	cfg := clustertest.Mixed4()
	cfg.Priority = &scheduler.PriorityConfig{
		Engine:      priority.Config{Weights: priority.Weights{Age: 1000, FairShare: 10000, QOS: 2000}},
		FairShare:   src,
		QOSPriority: map[string]uint32{"normal": 0, "high": 100},
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

func TestFairShareOrdersTheQueue(t *testing.T) {
	s := newPriorityMixed(t, usageTree(1e6))
	whole := scheduler.JobSpec{Nodes: 4, Exclusive: true, TimeLimit: time.Hour}
	heavy := whole
	heavy.User, heavy.Account = "heavy", "a"
	light := whole
	light.User, light.Account = "light", "b"
	h := mustSubmit(t, s, t0, heavy)
	l := mustSubmit(t, s, t0.Add(time.Second), light)
	cyc := mustSchedule(t, s, t0.Add(time.Second))
	require.Len(t, cyc.Starts, 1)
	assert.Equal(t, l, cyc.Starts[0].Job, "the user under her share goes first despite submitting later")
	require.Len(t, cyc.Pending, 1)
	assert.Equal(t, h, cyc.Pending[0].Job)

	bl, ok := s.PriorityBreakdown(l)
	require.True(t, ok)
	bh, _ := s.PriorityBreakdown(h)
	assert.Equal(t, 1.0, bl.Factors.FairShare)
	assert.Less(t, bh.Factors.FairShare, bl.Factors.FairShare)
	assert.Greater(t, bl.Priority, bh.Priority)
}

func TestQOSAndNiceAndSprio(t *testing.T) {
	s := newPriorityMixed(t, nil)
	whole := scheduler.JobSpec{Nodes: 4, Exclusive: true, TimeLimit: time.Hour}
	blocker := mustSubmit(t, s, t0, whole)
	mustSchedule(t, s, t0)
	normal := whole
	normal.QOS = "normal"
	high := whole
	high.QOS = "high"
	nice := high
	nice.Nice = 5000
	n := mustSubmit(t, s, t0.Add(time.Second), normal)
	hi := mustSubmit(t, s, t0.Add(2*time.Second), high)
	ni := mustSubmit(t, s, t0.Add(3*time.Second), nice)
	cyc := mustSchedule(t, s, t0.Add(10*time.Minute))
	order := []scheduler.JobID{}
	for _, p := range cyc.Pending {
		order = append(order, p.Job)
	}
	assert.Equal(t, []scheduler.JobID{hi, n, ni}, order, "QOS high first, nice pushes a high-QOS job below normal")
	out := s.Sprio(priority.SprioFormat{})
	assert.Contains(t, out, "PRIORITY")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Len(t, lines, 4, "header plus three pending jobs:\n%s", out)
	_ = blocker
}

func TestAgeRaisesPriorityEachCalcPeriod(t *testing.T) {
	s := newPriorityMixed(t, nil)
	whole := scheduler.JobSpec{Nodes: 4, Exclusive: true, TimeLimit: 24 * time.Hour}
	mustSubmit(t, s, t0, whole)
	mustSchedule(t, s, t0)
	old := mustSubmit(t, s, t0, whole)
	mustSchedule(t, s, t0)
	b0, _ := s.PriorityBreakdown(old)
	mustSchedule(t, s, t0.Add(24*time.Hour-time.Minute))
	b1, _ := s.PriorityBreakdown(old)
	assert.Greater(t, b1.Factors.Age, b0.Factors.Age)
	assert.InDelta(t, 1.0/7, b1.Factors.Age, 0.01, "one day against the default 7-day PriorityMaxAge")
}

func TestFairShareSourceErrorIsReported(t *testing.T) {
	boom := errors.New("ledger unreachable")
	s := newPriorityMixed(t, scheduler.FairShareFunc(func(time.Time) ([]priority.Association, error) { return nil, boom }))
	_, err := s.Schedule(t0)
	assert.ErrorIs(t, err, boom)
}

func TestPriorityConfigValidated(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Priority = &scheduler.PriorityConfig{Engine: priority.Config{TRESWeights: map[string]float64{"gres/gpu:v100": 1}}}
	_, err := scheduler.New(cfg)
	assert.ErrorIs(t, err, scheduler.ErrInvalidConfig)
	s := newPriorityMixed(t, nil)
	_, err = s.Submit(t0, scheduler.JobSpec{Nice: 1 << 40})
	assert.ErrorIs(t, err, scheduler.ErrInvalidJob)
}

// TestFairShareTreeUpdatedInPlace: from one recomputation to the next the
// scheduler only updates the usage of a tree whose associations did not
// change; sshare must read exactly what a tree built afresh from the same
// list gives, when usage changes, when an association appears (a new
// tree), when the source reuses its slice, and after a bad list (an
// error, and the tree as it was).
func TestFairShareTreeUpdatedInPlace(t *testing.T) {
	var list []priority.Association
	calls := 0
	src := scheduler.FairShareFunc(func(time.Time) ([]priority.Association, error) {
		calls++
		return list, nil
	})
	s := newPriorityMixed(t, src)
	set := func(step int) {
		// The same slice, rewritten: the scheduler must keep its own copy.
		list = list[:0]
		h, l := float64(1000*step), float64(300*(step%3))
		list = append(list,
			priority.Association{Account: "root", Shares: 1, Usage: h + l},
			priority.Association{Account: "a", Parent: "root", Shares: 2, Usage: h},
			priority.Association{Account: "b", Parent: "root", Shares: 1, Usage: l},
			priority.Association{Account: "a", User: "heavy", Parent: "a", Shares: 1, Usage: h},
			priority.Association{Account: "b", User: "light", Parent: "b", Shares: 1, Usage: l})
		if step >= 3 { // a new user from step 3 on
			list[0].Usage += 50
			list[2].Usage += 50
			list = append(list, priority.Association{Account: "b", User: "new", Parent: "b", Shares: 1, Usage: 50})
		}
	}
	now := t0
	for step := range 6 {
		set(step)
		want, err := priority.NewTree(list, priority.TreeOptions{UsageIncludesDescendants: true})
		require.NoError(t, err)
		mustSchedule(t, s, now)
		require.Equal(t, step+1, calls, "one recomputation per calc period")
		// %#v prints every float exactly and NaN (no usage yet) as NaN.
		require.Equal(t, fmt.Sprintf("%#v", want.Shares()), fmt.Sprintf("%#v", s.Shares()), "step %d", step)
		now = now.Add(10 * time.Minute)
	}
	before := fmt.Sprintf("%#v", s.Shares())
	list[3].Usage = -1
	_, err := s.Schedule(now)
	require.Error(t, err, "a negative usage is refused")
	require.Equal(t, before, fmt.Sprintf("%#v", s.Shares()), "the tree as it was")
}

// TestDependencyWaitBehindBlockedJobIsDependencyAndAccruesNoAge checks
// that a job whose dependency is not satisfied shows Dependency even
// queued behind a blocked job of its partition (Slurm keeps such jobs out
// of the queue), and that its age factor does not accrue while it waits:
// Slurm's age counts from when the job became eligible (begin time passed,
// dependencies satisfied), which the job records as EligibleTime.
func TestDependencyWaitBehindBlockedJobIsDependencyAndAccruesNoAge(t *testing.T) {
	cfg := clustertest.Mixed4()
	cfg.Nodes = cfg.Nodes[:1]
	cfg.Partitions = cfg.Partitions[:1]
	cfg.Priority = &scheduler.PriorityConfig{
		Engine:     priority.Config{Weights: priority.Weights{Age: 1000}, MaxAge: time.Hour},
		CalcPeriod: time.Minute,
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	whole := scheduler.JobSpec{Exclusive: true, TimeLimit: 2 * time.Hour}
	a := mustSubmit(t, s, t0, whole)
	mustSchedule(t, s, t0)
	b := mustSubmit(t, s, t0, whole) // waits on Resources: blocks the partition
	dep := whole
	dep.Dependency = fmt.Sprintf("afterok:%d", a)
	c := mustSubmit(t, s, t0, dep)
	for _, at := range []time.Time{t0, t0.Add(30 * time.Minute)} {
		cyc := mustSchedule(t, s, at)
		require.Len(t, cyc.Pending, 2)
		assert.Equal(t, b, cyc.Pending[0].Job)
		assert.Equal(t, "Resources", cyc.Pending[0].Reason.String())
		assert.Equal(t, c, cyc.Pending[1].Job)
		assert.Equal(t, "Dependency", cyc.Pending[1].Reason.String(), "at %v", at)
		ex, err := s.Explain(at, c, scheduler.ExplainOptions{})
		require.NoError(t, err)
		assert.Equal(t, "Dependency", ex.Reason.String())
		assert.True(t, ex.EligibleTime.IsZero())
	}
	bc, ok := s.PriorityBreakdown(c)
	require.True(t, ok)
	assert.Zero(t, bc.Factors.Age, "no age while the dependency is unsatisfied")
	jc, _ := s.Job(c)
	assert.True(t, jc.EligibleTime.IsZero(), "not eligible yet")
	bb, _ := s.PriorityBreakdown(b)
	assert.InDelta(t, 0.5, bb.Factors.Age, 1e-9, "the blocked job accrues age from its first cycle")

	// A ends at +40m: the dependency is satisfied, B takes the node and
	// C becomes eligible then; its age counts from there.
	end := t0.Add(40 * time.Minute)
	require.NoError(t, s.Finish(end, a, 0))
	mustSchedule(t, s, end)
	jc, _ = s.Job(c)
	assert.Equal(t, end, jc.EligibleTime)
	ex, err := s.Explain(end, c, scheduler.ExplainOptions{})
	require.NoError(t, err)
	assert.Equal(t, end, ex.EligibleTime)
	mustSchedule(t, s, end.Add(30*time.Minute))
	bc, _ = s.PriorityBreakdown(c)
	assert.InDelta(t, 0.5, bc.Factors.Age, 1e-9)
}
