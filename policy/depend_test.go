package policy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/policy"
)

func TestParseDependency(t *testing.T) {
	cases := []struct {
		in, canon string
		any       bool
		terms     int
	}{
		{"afterok:12:13,afterany:14", "afterok:12:13,afterany:14", false, 2},
		{"afterok:12?afternotok:13", "afterok:12?afternotok:13", true, 2},
		{"singleton", "singleton", false, 1},
		{"AFTER:5", "after:5", false, 1},
		{"12:13", "afterany:12:13", false, 1},
		{" afterany:1 , singleton ", "afterany:1,singleton", false, 2},
		{"afterok:12_3:12_0:13", "afterok:12_3:12_0:13", false, 1},
		{"", "", false, 0},
	}
	for _, c := range cases {
		d, err := policy.ParseDependency(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.canon, d.String(), c.in)
		assert.Equal(t, c.any, d.Any, c.in)
		assert.Len(t, d.Terms, c.terms, c.in)
	}
	d, _ := policy.ParseDependency("afterok:12:13,afterany:14")
	assert.Equal(t, []policy.DepJob{{ID: 12}, {ID: 13}, {ID: 14}}, d.Jobs())
	d, _ = policy.ParseDependency("afterok:12_3")
	assert.Equal(t, []policy.DepJob{{ID: 12, Task: 3, HasTask: true}}, d.Jobs())
	for _, bad := range []string{"afterok", "afterok:x", "afterok:0", "afterok:1,afterany:2?after:3", "aftercorr:1",
		"after:5+10", "singleton:3", ",", "afterok:1,", ":12", "afterok:-1", "afterok:99999999999999999999", "expand:1",
		"afterok:12_", "afterok:12_x", "afterok:12_[1-3]", "afterok:12_-1", "afterok:12_+1", "afterok:_3", "afterok:12_4000001"} {
		_, err := policy.ParseDependency(bad)
		assert.ErrorIs(t, err, policy.ErrSyntax, "%q", bad)
	}
}

func TestEvaluateDependency(t *testing.T) {
	P, R, C, F, X := policy.OutcomePending, policy.OutcomeRunning, policy.OutcomeCompleted, policy.OutcomeFailed, policy.OutcomeCancelled
	S, W, N := policy.DepSatisfied, policy.DepWaiting, policy.DepNever
	table := map[string]map[policy.Outcome]policy.DepState{
		"after":      {P: W, R: S, C: S, F: S, X: S},
		"afterany":   {P: W, R: W, C: S, F: S, X: S},
		"afterok":    {P: W, R: W, C: S, F: N, X: N},
		"afternotok": {P: W, R: W, C: N, F: S, X: S},
	}
	for typ, row := range table {
		for o, want := range row {
			d, err := policy.ParseDependency(typ + ":7")
			require.NoError(t, err)
			got, b := d.Evaluate(policy.JobLookup(func(policy.JobID) (policy.Outcome, bool) { return o, true }), true)
			assert.Equal(t, want, got, "%s with job %s", typ, o)
			switch want {
			case W:
				assert.Equal(t, policy.ReasonDependency, b.Reason)
				assert.Equal(t, policy.LevelDependency, b.Level)
				assert.Contains(t, b.Detail, "job 7")
			case N:
				assert.Equal(t, policy.ReasonDependencyNeverSatisfied, b.Reason)
			default:
				assert.False(t, b.Blocked())
			}
		}
	}
	states := map[policy.JobID]policy.Outcome{1: C, 2: F, 3: R}
	look := policy.JobLookup(func(j policy.JobID) (policy.Outcome, bool) { o, ok := states[j]; return o, ok })
	eval := func(s string, single bool) policy.DepState {
		d, err := policy.ParseDependency(s)
		require.NoError(t, err)
		st, _ := d.Evaluate(look, single)
		return st
	}
	assert.Equal(t, S, eval("afterok:1,afternotok:2", true))
	assert.Equal(t, N, eval("afterok:1,afterok:2", true), "AND: one never → never")
	assert.Equal(t, S, eval("afterok:2?afterok:1", true), "OR: one satisfied")
	assert.Equal(t, W, eval("afterok:2?afterany:3", true), "OR: one waiting, one never")
	assert.Equal(t, N, eval("afterok:2?afternotok:1", true), "OR: all never")
	assert.Equal(t, N, eval("afterok:99", true), "unknown job")
	assert.Equal(t, W, eval("afterok:1:3", true), "all jobs of a term")
	assert.Equal(t, W, eval("singleton", false))
	assert.Equal(t, S, eval("singleton,afterok:1", true))
	st, b := policy.Dependency{}.Evaluate(look, false)
	assert.Equal(t, S, st)
	assert.False(t, b.Blocked())

	d, _ := policy.ParseDependency("afterok:1:99")
	assert.ErrorIs(t, policy.CheckDependency(5, d, look), policy.ErrUnknownJob)
	d, _ = policy.ParseDependency("afterok:1")
	assert.NoError(t, policy.CheckDependency(5, d, look))
	assert.ErrorIs(t, policy.CheckDependency(1, d, look), policy.ErrSyntax, "self dependency")
}

func TestParseArray(t *testing.T) {
	cases := []struct {
		in, canon string
		count     int
		throttle  int
	}{
		{"0-15%4", "0-15%4", 16, 4},
		{"0-15:4", "0,4,8,12", 4, 0},
		{"1,3,5-9:2", "1,3,5,7,9", 5, 0},
		{"7", "7", 1, 0},
		{"3-5,4-6", "3-6", 4, 0},
		{"0-1000", "0-1000", 1001, 0},
	}
	for _, c := range cases {
		a, err := policy.ParseArray(c.in, 0)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.canon, a.String(), c.in)
		assert.Equal(t, c.count, a.Count(), c.in)
		assert.Equal(t, c.throttle, a.Throttle, c.in)
	}
	a, _ := policy.ParseArray("0-15:4%2", 0)
	assert.True(t, a.Has(8))
	assert.False(t, a.Has(9))
	assert.Equal(t, []int{0, 4, 8, 12}, a.Indices())
	assert.False(t, a.ThrottleBlocker(1).Blocked())
	b := a.ThrottleBlocker(2)
	assert.Equal(t, policy.ReasonJobArrayTaskLimit, b.Reason)
	assert.Equal(t, int64(2), b.Value)
	for _, bad := range []string{"", "%4", "a-b", "5-3", "3:2", "1-4:0", "1-4%0", "1,,2", "-1", "1-", "1-4%x", "1-4:+2"} {
		_, err := policy.ParseArray(bad, 0)
		assert.ErrorIs(t, err, policy.ErrSyntax, "%q", bad)
	}
	_, err := policy.ParseArray("0-1001", 0)
	assert.ErrorIs(t, err, policy.ErrTooLarge, "index 1001 ≥ MaxArraySize 1001")
	_, err = policy.ParseArray("0-1001", 2000)
	assert.NoError(t, err)
	_, err = policy.ParseArray("1", policy.MaxMaxArraySize+1)
	assert.ErrorIs(t, err, policy.ErrTooLarge)
}

// TestEvaluateDependencyOnArrayTasks checks each type against the tasks
// of a job array, as Slurm decides a dependency on an array's ID: after
// once no task is pending; afterany once all ended; afterok once all
// ended, all successfully (never otherwise); afternotok once all ended,
// at least one failed (never when all succeeded).
func TestEvaluateDependencyOnArrayTasks(t *testing.T) {
	P, R, C, F, X := policy.OutcomePending, policy.OutcomeRunning, policy.OutcomeCompleted, policy.OutcomeFailed, policy.OutcomeCancelled
	S, W, N := policy.DepSatisfied, policy.DepWaiting, policy.DepNever
	tasks := func(os ...policy.Outcome) policy.Outcomes {
		var c policy.Outcomes
		for _, o := range os {
			c[o]++
		}
		return c
	}
	cases := []struct {
		name  string
		tasks policy.Outcomes
		want  map[string]policy.DepState
	}{
		{"task 0 done, others run", tasks(C, R, R), map[string]policy.DepState{"after": S, "afterany": W, "afterok": W, "afternotok": W}},
		{"one still pending", tasks(C, R, P), map[string]policy.DepState{"after": W, "afterany": W, "afterok": W, "afternotok": W}},
		{"one failed, one runs", tasks(C, F, R), map[string]policy.DepState{"after": S, "afterany": W, "afterok": W, "afternotok": W}},
		{"exit codes 0 and 1", tasks(C, F), map[string]policy.DepState{"after": S, "afterany": S, "afterok": N, "afternotok": S}},
		{"all succeeded", tasks(C, C, C), map[string]policy.DepState{"after": S, "afterany": S, "afterok": S, "afternotok": N}},
		{"one cancelled", tasks(C, X, C), map[string]policy.DepState{"after": S, "afterany": S, "afterok": N, "afternotok": S}},
	}
	for _, c := range cases {
		look := func(j policy.DepJob) (policy.Outcomes, bool) {
			if j.HasTask {
				return policy.OneOutcome(C), true // task 0 alone
			}
			return c.tasks, true
		}
		for typ, want := range c.want {
			d, err := policy.ParseDependency(typ + ":7")
			require.NoError(t, err)
			got, b := d.Evaluate(look, true)
			assert.Equal(t, want, got, "%s: %s", c.name, typ)
			if want != S {
				assert.Contains(t, b.Detail, "job array 7: tasks", "%s: %s", c.name, typ)
			}
			d, err = policy.ParseDependency(typ + ":7_0")
			require.NoError(t, err)
			got, _ = d.Evaluate(look, true)
			assert.Equal(t, map[string]policy.DepState{"after": S, "afterany": S, "afterok": S, "afternotok": N}[typ], got,
				"%s: %s on task 0 alone", c.name, typ)
		}
	}
	d, _ := policy.ParseDependency("afterok:7_1")
	st, b := d.Evaluate(policy.JobLookup(func(policy.JobID) (policy.Outcome, bool) { return C, true }), true)
	assert.Equal(t, N, st, "JobLookup knows no array tasks")
	assert.Contains(t, b.Detail, "job 7_1 is unknown")
	assert.Equal(t, "2 COMPLETED, 1 FAILED", tasks(C, F, C).String())
	assert.Equal(t, "RUNNING", policy.OneOutcome(R).String())
}
