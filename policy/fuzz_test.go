package policy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

func FuzzParseDependency(f *testing.F) {
	for _, s := range []string{"afterok:12:13,afterany:14", "afterok:1?afternotok:2", "singleton", "12", "after:5+3", ":", "?,", "afterok:18446744073709551615", "afterok:12_3:12", "afternotok:7_0?afterany:7_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := policy.ParseDependency(s)
		if err != nil {
			return
		}
		again, err := policy.ParseDependency(d.String())
		require.NoError(t, err, "canonical form %q of %q", d.String(), s)
		require.Equal(t, d.String(), again.String())
		require.Equal(t, d.Jobs(), again.Jobs())
		st, _ := d.Evaluate(policy.JobLookup(func(policy.JobID) (policy.Outcome, bool) { return policy.OutcomeRunning, true }), true)
		require.LessOrEqual(t, st, policy.DepNever)
	})
}

func FuzzParseArray(f *testing.F) {
	for _, s := range []string{"0-15%4", "1,3,5-9:2", "0-1000", "7", "5-3", "1-4:0", "%", "0-15:4%2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := policy.ParseArray(s, 0)
		if err != nil {
			return
		}
		require.Positive(t, a.Count())
		require.LessOrEqual(t, a.Count(), policy.DefaultMaxArraySize)
		again, err := policy.ParseArray(a.String(), 0)
		require.NoError(t, err, "canonical form %q of %q", a.String(), s)
		require.Equal(t, a.Indices(), again.Indices())
		require.Equal(t, a.Throttle, again.Throttle)
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90", "5:30", "1:02:03", "2-12", "1-2:30", "1-00:00:01", "UNLIMITED", "1-25", "99999999999", "-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := policy.ParseDuration(s)
		if err != nil {
			return
		}
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.LessOrEqual(t, d, policy.MaxLimitDuration)
		if d == 0 {
			return
		}
		back, err := policy.ParseDuration(policy.FormatDuration(d))
		require.NoError(t, err, policy.FormatDuration(d))
		require.Equal(t, d.Truncate(time.Second), back)
	})
}

func FuzzParseTRESLimits(f *testing.F) {
	reg, err := gres.NewRegistry("gres/gpu:h100", "license/matlab")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"cpu=16,mem=1G,gres/gpu=4", "gres/gpu:h100=0,license/matlab=-1", "cpu=UNLIMITED", "cpu", "cpu=1,cpu=2", "mem=9P"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := policy.ParseTRESLimits(reg, s)
		if err != nil {
			return
		}
		back, err := policy.ParseTRESLimits(reg, l.Format(reg))
		require.NoError(t, err, "format %q of %q", l.Format(reg), s)
		require.Equal(t, l.Format(reg), back.Format(reg))
	})
}

// FuzzParseFlags covers the small enum parsers: each either fails or
// formats back to something it parses to the same value.
func FuzzParseFlags(f *testing.F) {
	for _, s := range []string{"DenyOnLimit,NoReserve", "MAINT,IGNORE_JOBS,DAILY", "SUSPEND,GANG", "REQUEUE,WITHIN,PRIORITY", "FORCE:4", "none", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if q, err := policy.ParseQOSFlags(s); err == nil {
			back, err := policy.ParseQOSFlags(q.String())
			require.NoError(t, err)
			require.Equal(t, q, back)
		}
		if r, err := policy.ParseResvFlags(s); err == nil {
			back, err := policy.ParseResvFlags(r.String())
			require.NoError(t, err)
			require.Equal(t, r, back)
		}
		if m, err := policy.ParsePreemptMode(s); err == nil {
			back, err := policy.ParsePreemptMode(m.String())
			require.NoError(t, err)
			require.Equal(t, m, back)
		}
		if o, n, err := policy.ParseOverSubscribe(s); err == nil {
			require.GreaterOrEqual(t, n, 1)
			_, _, err := policy.ParseOverSubscribe(o.String())
			require.NoError(t, err)
		}
		_, _ = policy.ParsePreemptType(s)
		_, _ = policy.ParseReason(s)
	})
}
