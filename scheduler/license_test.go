package scheduler_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// Slurm's forms (sbatch -L, slurm.conf Licenses=): name[:count], a count
// of 1 when omitted, comma-separated.
func TestParseLicenses(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []scheduler.License
	}{
		{"", nil},
		{"matlab", []scheduler.License{{Name: "matlab", Count: 1}}},
		{"foo:4,bar", []scheduler.License{{Name: "foo", Count: 4}, {Name: "bar", Count: 1}}},
		{"fluent:30,ansys:100", []scheduler.License{{Name: "fluent", Count: 30}, {Name: "ansys", Count: 100}}},
		{"lic.v2-x_y:0", []scheduler.License{{Name: "lic.v2-x_y", Count: 0}}},
	} {
		got, err := scheduler.ParseLicenses(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
		if len(got) > 0 {
			back, err := scheduler.ParseLicenses(scheduler.FormatLicenses(got))
			require.NoError(t, err)
			require.Equal(t, got, back)
		}
	}
	for _, bad := range []string{"foo:", "foo:-1", "foo:x", ":2", "foo,,bar", "foo:2,foo:1", "nastran@slurmdb:12", "foo|bar", "a b", "foo:+2", "foo:02"} {
		_, err := scheduler.ParseLicenses(bad)
		require.Error(t, err, bad)
		require.True(t, errors.Is(err, scheduler.ErrInvalidJob), bad)
	}
	_, err := scheduler.ParseLicenses("foo|bar")
	require.ErrorContains(t, err, "'|'")
	_, err = scheduler.ParseLicenses("nastran@slurmdb:12")
	require.ErrorContains(t, err, "remote")
}

func FuzzParseLicenses(f *testing.F) {
	for _, s := range []string{"", "matlab", "foo:4,bar", "a:0", "x@y:1", "a|b", "a:99999999999999999999", "é:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ls, err := scheduler.ParseLicenses(s)
		if err != nil {
			return
		}
		back, err := scheduler.ParseLicenses(scheduler.FormatLicenses(ls))
		if err != nil {
			t.Fatalf("%q → %v: its form %q does not parse: %v", s, ls, scheduler.FormatLicenses(ls), err)
		}
		if len(ls) != len(back) {
			t.Fatalf("%q → %v → %v", s, ls, back)
		}
		for i := range ls {
			if ls[i] != back[i] {
				t.Fatalf("%q → %v → %v", s, ls, back)
			}
		}
	})
}

// licenseCluster: two 16-CPU nodes, Licenses=matlab:2,ansys:1, and a QOS
// limiting each user to 1 matlab license at a time when limited is set.
func licenseCluster(t *testing.T, limited bool) *scheduler.Scheduler {
	t.Helper()
	nodes := []scheduler.NodeConfig{{Name: "n0", CPUs: 16, MemoryMiB: 65536}, {Name: "n1", CPUs: 16, MemoryMiB: 65536}}
	reg, err := scheduler.NewRegistry(nodes)
	require.NoError(t, err)
	_, err = reg.Register("license/matlab")
	require.NoError(t, err)
	cfg := scheduler.Config{Nodes: nodes, Registry: reg, Partitions: []scheduler.PartitionConfig{{Name: "batch"}},
		Backfill: &backfill.Config{Mode: backfill.Conservative, Resolution: time.Second},
		Licenses: []scheduler.License{{Name: "matlab", Count: 2}, {Name: "ansys", Count: 1}}}
	if limited {
		l, err := policy.ParseTRESLimits(reg, "license/matlab=1")
		require.NoError(t, err)
		cfg.Policy = &policy.Config{QOS: []policy.QOS{{Name: "normal", Limits: policy.QOSLimits{MaxTRESPerUser: l}}}}
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

// A job waiting for a license pends with Slurm's reason Licenses, holds a
// reservation for when the license comes back, and Explain names it; a
// lower job that would keep the license past then does not take it.
func TestLicensesPlanned(t *testing.T) {
	s := licenseCluster(t, false)
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	spec := func(lic string, limit time.Duration) scheduler.JobSpec {
		ls, err := scheduler.ParseLicenses(lic)
		require.NoError(t, err)
		return scheduler.JobSpec{User: "ann", CPUsPerTask: 2, TimeLimit: limit, Licenses: ls}
	}
	a := mustSubmit(t, s, now, spec("matlab", time.Hour)) // one of two, until 10:00
	cyc := mustSchedule(t, s, now)
	require.Len(t, cyc.Starts, 1)
	require.Equal(t, a, cyc.Starts[0].Job)

	now = now.Add(time.Minute)
	b := mustSubmit(t, s, now, spec("matlab:2", 2*time.Hour))
	c := mustSubmit(t, s, now, spec("matlab", 3*time.Hour))        // would keep the free one past 10:00
	short := mustSubmit(t, s, now, spec("matlab", 30*time.Minute)) // gives it back before
	d := mustSubmit(t, s, now, spec("ansys", 3*time.Hour))
	cyc = mustSchedule(t, s, now)
	started := map[scheduler.JobID]bool{}
	for _, st := range cyc.Starts {
		started[st.Job] = true
	}
	require.True(t, started[d], "ansys is free")
	require.True(t, started[short], "a short job uses the free license before the reservation needs it")
	require.False(t, started[b] || started[c], "%v", cyc.Starts)
	require.Equal(t, policy.ReasonLicenses, reasonOf(cyc, b))
	for _, p := range cyc.Pending {
		switch p.Job {
		case b:
			require.Equal(t, now.Add(59*time.Minute), p.ExpectedStart, "matlab comes back when job %d ends", a)
		case c:
			require.Equal(t, now.Add(59*time.Minute+2*time.Hour), p.ExpectedStart, "after job %d's reservation", b)
		}
	}
	ex, err := s.Explain(now, b, scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.Contains(t, ex.String(), "Licenses")
	require.Contains(t, ex.String(), "waits on limit Licenses license/matlab=2 (cluster)")

	// Unknown licenses and more than the cluster has are refused.
	_, err = s.Submit(now, spec("nastran", time.Hour))
	require.ErrorIs(t, err, scheduler.ErrInvalidJob)
	_, err = s.Submit(now, spec("matlab:3", time.Hour))
	require.ErrorIs(t, err, scheduler.ErrInvalidJob)

	// The spec's JSON carries the licenses in Slurm's form.
	js, err := json.Marshal(spec("matlab:2,ansys", time.Hour))
	require.NoError(t, err)
	require.True(t, strings.Contains(string(js), `"Licenses":["matlab:2","ansys:1"]`), string(js))
	var back scheduler.JobSpec
	require.NoError(t, json.Unmarshal(js, &back))
	require.Equal(t, spec("matlab:2,ansys", time.Hour).Licenses, back.Licenses)
}

// QOS TRES limits apply to licenses (TRES license/<name>): above the
// per-user limit outright a job can never start, and says so.
func TestLicensesUnderQOSLimit(t *testing.T) {
	s := licenseCluster(t, true)
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	ls, _ := scheduler.ParseLicenses("matlab:2")
	id := mustSubmit(t, s, now, scheduler.JobSpec{User: "ann", CPUsPerTask: 2, TimeLimit: time.Hour, Licenses: ls})
	cyc := mustSchedule(t, s, now)
	require.Empty(t, cyc.Starts)
	require.Equal(t, policy.ReasonQOSMaxLicensePerUser, reasonOf(cyc, id))
	require.True(t, cyc.Pending[0].ExpectedStart.IsZero())
	ex, err := s.Explain(now, id, scheduler.ExplainOptions{})
	require.NoError(t, err)
	require.Contains(t, ex.String(), "can never start")
}

// The licenses, configured and requested, survive a snapshot: the
// restored scheduler plans the same.
func TestLicensesSnapshotRoundTrip(t *testing.T) {
	s := licenseCluster(t, false)
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	ls, _ := scheduler.ParseLicenses("matlab:2")
	a := mustSubmit(t, s, now, scheduler.JobSpec{User: "ann", CPUsPerTask: 2, TimeLimit: time.Hour, Licenses: ls})
	mustSchedule(t, s, now)
	b := mustSubmit(t, s, now, scheduler.JobSpec{User: "ann", CPUsPerTask: 2, TimeLimit: time.Hour, Licenses: ls[:1]})
	var buf bytes.Buffer
	require.NoError(t, s.Snapshot(&buf))
	r, err := scheduler.Restore(&buf, scheduler.RestoreOptions{})
	require.NoError(t, err)
	ja, _ := r.Job(a)
	require.Equal(t, ls, ja.Spec.Licenses)
	later := now.Add(time.Minute)
	c1, c2 := mustSchedule(t, s, later), mustSchedule(t, r, later)
	require.Equal(t, c1.Pending, c2.Pending)
	require.Equal(t, policy.ReasonLicenses, reasonOf(c2, b))
	require.Equal(t, now.Add(time.Hour), c2.Pending[0].ExpectedStart)
}
