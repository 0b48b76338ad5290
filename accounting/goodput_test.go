package accounting_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/telemetry"
)

// goodputLedger holds the scenario the report tests compute by hand, in
// the day [T, T+24h):
//
//	job 1 alice/phys, QOS normal, gpu: 2 GPUs from T+1h to T+3h (eligible
//	  at T): 4 GPU-h allocated; measured 4 GPU-h at 75 % (3 busy GPU-h),
//	  nothing lost; 1 kWh; quality 0.9; one launch; COMPLETED.
//	job 2 bob/phys, QOS high, gpu: 4 GPUs from T+1.5h to T+2.5h (submitted
//	  at T+1h, no eligible time) after a requeued run of 2 GPU-h, all lost:
//	  6 GPU-h allocated, measured 6 GPU-h at 50 % (3 busy), 2 GPU-h lost,
//	  so useful = 3 − 2 × 0.5 = 2 GPU-h; 2 kWh; quality 0.5; three
//	  launches, one failed; one restart; COMPLETED.
//	job 3 carol/chem, QOS normal, debug: 1 GPU from T+2h to T+4h (eligible
//	  T+1h), no readings (2 GPU-h unmeasured), FAILED, all 2 GPU-h lost; one
//	  launch; not scored.
//	job 4 alice/phys, QOS normal, gpu: cancelled while pending (T to
//	  T+30m): no GPU-hours.
//	job 5 ended before the day, job 6 at its end, job 7 runs: left out.
func goodputLedger(t *testing.T) (accounting.Ledger, time.Time) {
	l, err := accounting.NewMemory(accounting.Config{NoDecay: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	T := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
	h := func(x float64) time.Time { return T.Add(time.Duration(x * float64(time.Hour))) }
	usage := func(first, last time.Time, gpuSec, busySec, joules float64) telemetry.Usage {
		return telemetry.Usage{Samples: 10, First: first, Last: last, GPUSeconds: gpuSec, BusyGPUSeconds: busySec,
			CoveredSeconds: last.Sub(first).Seconds(), EnergyJoules: joules}
	}
	job := func(id accounting.JobID, user, acct, qos, part string, gpus int64, submit, elig, start, end time.Time, st accounting.JobState) accounting.JobRecord {
		return accounting.JobRecord{ID: id, Cluster: "c", User: user, Account: acct, QOS: qos, Partition: part,
			Submit: submit, Eligible: elig, Start: start, End: end, State: st, AllocTRES: accounting.TRES{"cpu": 1, "gres/gpu": gpus}}
	}
	j1 := job(1, "alice", "phys", "normal", "gpu", 2, T, T, h(1), h(3), accounting.StateCompleted)
	j1.Usage, j1.Quality, j1.LaunchAttempts = usage(h(1), h(3), 14400, 10800, 3.6e6), 0.9, 1
	j2 := job(2, "bob", "phys", "high", "gpu", 4, h(1), time.Time{}, h(1.5), h(2.5), accounting.StateCompleted)
	j2.Usage, j2.Quality = usage(h(0.5), h(2.5), 21600, 10800, 7.2e6), 0.5
	j2.PriorGPUSeconds, j2.LostGPUSeconds, j2.Restarts, j2.LaunchAttempts, j2.LaunchFailures = 7200, 7200, 1, 3, 1
	j3 := job(3, "carol", "chem", "normal", "debug", 1, h(1), h(1), h(2), h(4), accounting.StateFailed)
	j3.ExitCode, j3.LostGPUSeconds, j3.LaunchAttempts = 1, 7200, 1
	j4 := job(4, "alice", "phys", "normal", "gpu", 0, T, T, time.Time{}, h(0.5), accounting.StateCancelled)
	j4.AllocTRES = nil
	j5 := job(5, "alice", "phys", "normal", "gpu", 8, h(-5), h(-5), h(-3), h(-1), accounting.StateCompleted)
	j5.Usage = usage(h(-3), h(-1), 57600, 57600, 0)
	j6 := job(6, "bob", "phys", "normal", "gpu", 8, h(20), h(20), h(22), h(24), accounting.StateCompleted)
	j7 := job(7, "bob", "phys", "normal", "gpu", 8, h(20), h(20), h(22), time.Time{}, accounting.StateRunning)
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		for _, a := range []accounting.AssocKey{{Cluster: "c", Account: "phys"}, {Cluster: "c", Account: "chem"},
			{Cluster: "c", Account: "phys", User: "alice"}, {Cluster: "c", Account: "phys", User: "bob"},
			{Cluster: "c", Account: "chem", User: "carol"}} {
			if _, err := tx.PutAssoc(h(-24), accounting.Assoc{AssocKey: a}); err != nil {
				return err
			}
		}
		for _, j := range []accounting.JobRecord{j1, j2, j3, j4, j5, j6, j7} {
			if err := tx.PutJob(j); err != nil {
				return err
			}
		}
		return nil
	}))
	return l, T
}

func TestGPUUsageByDefinition(t *testing.T) {
	l, T := goodputLedger(t)
	var rep accounting.GPUUsageReport
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		var err error
		rep, err = accounting.GPUUsage(tx, "c", T, T.Add(24*time.Hour))
		return err
	}))
	near := func(want, got accounting.GPUHours, what string) {
		t.Helper()
		assert.Equal(t, want.Jobs, got.Jobs, what)
		assert.Equal(t, want.MeasuredJobs, got.MeasuredJobs, what)
		for _, f := range []struct {
			name string
			w, g float64
		}{{"allocated", want.Allocated, got.Allocated}, {"measured", want.Measured, got.Measured},
			{"unmeasured", want.Unmeasured, got.Unmeasured}, {"busy", want.Busy, got.Busy}, {"useful", want.Useful, got.Useful},
			{"lost", want.Lost, got.Lost}, {"energy", want.EnergyKWh, got.EnergyKWh}} {
			assert.InDelta(t, f.w, f.g, 1e-9, "%s %s", what, f.name)
		}
	}
	total := accounting.GPUHours{Jobs: 4, MeasuredJobs: 2, Allocated: 12, Measured: 10, Unmeasured: 2, Busy: 6, Useful: 5, Lost: 4, EnergyKWh: 3}
	near(total, rep.Total, "total")
	assert.InDelta(t, 0.5, rep.Total.Goodput(), 1e-12, "5 useful of 10 measured GPU-hours")
	names := func(rows []accounting.GPUUsageRow) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.Name)
		}
		return out
	}
	require.Equal(t, []string{"chem", "phys"}, names(rep.ByAccount))
	near(accounting.GPUHours{Jobs: 1, Allocated: 2, Unmeasured: 2, Lost: 2}, rep.ByAccount[0].GPUHours, "chem")
	assert.Zero(t, rep.ByAccount[0].Goodput(), "no measured job")
	near(accounting.GPUHours{Jobs: 3, MeasuredJobs: 2, Allocated: 10, Measured: 10, Busy: 6, Useful: 5, Lost: 2, EnergyKWh: 3}, rep.ByAccount[1].GPUHours, "phys")
	require.Equal(t, []string{"alice", "bob", "carol"}, names(rep.ByUser))
	near(accounting.GPUHours{Jobs: 2, MeasuredJobs: 1, Allocated: 4, Measured: 4, Busy: 3, Useful: 3, EnergyKWh: 1}, rep.ByUser[0].GPUHours, "alice")
	assert.InDelta(t, 0.75, rep.ByUser[0].Goodput(), 1e-12)
	assert.InDelta(t, 2.0/6, rep.ByUser[1].Goodput(), 1e-12, "bob: 2 useful of 6")
	require.Equal(t, []string{"high", "normal"}, names(rep.ByQOS))
	near(accounting.GPUHours{Jobs: 3, MeasuredJobs: 1, Allocated: 6, Measured: 4, Unmeasured: 2, Busy: 3, Useful: 3, Lost: 2, EnergyKWh: 1}, rep.ByQOS[1].GPUHours, "normal")
	require.Equal(t, []string{"debug", "gpu"}, names(rep.ByPartition))
	near(accounting.GPUHours{Jobs: 3, MeasuredJobs: 2, Allocated: 10, Measured: 10, Busy: 6, Useful: 5, Lost: 2, EnergyKWh: 3}, rep.ByPartition[1].GPUHours, "gpu")

	var g float64
	var sums accounting.GPUHours
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		var err error
		g, sums, err = accounting.Goodput(tx, "c", T, T.Add(24*time.Hour))
		return err
	}))
	assert.InDelta(t, 0.5, g, 1e-12)
	near(total, sums, "Goodput's sums")
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		// The day before holds job 5 alone: 16 GPU-h, all busy, useful.
		g, sums, err := accounting.Goodput(tx, "c", T.Add(-24*time.Hour), T)
		near(accounting.GPUHours{Jobs: 1, MeasuredJobs: 1, Allocated: 16, Measured: 16, Busy: 16, Useful: 16}, sums, "day before")
		assert.InDelta(t, 1, g, 1e-12)
		_, err2 := accounting.GPUUsage(tx, "c", T, T)
		assert.ErrorIs(t, err2, accounting.ErrInvalid, "empty range")
		return err
	}))
}

func TestUsefulNeverNegative(t *testing.T) {
	// A job that lost more GPU-seconds than its readings cover keeps no
	// useful work, not a negative amount.
	l, err := accounting.NewMemory(accounting.Config{})
	require.NoError(t, err)
	defer l.Close()
	T := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		if _, err := tx.PutAssoc(T, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "c", Account: "a"}}); err != nil {
			return err
		}
		if _, err := tx.PutAssoc(T, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "c", Account: "a", User: "u"}}); err != nil {
			return err
		}
		return tx.PutJob(accounting.JobRecord{ID: 1, Cluster: "c", User: "u", Account: "a", Submit: T, Start: T, End: T.Add(time.Hour),
			State: accounting.StateTimeout, AllocTRES: accounting.TRES{"gres/gpu": 1}, LostGPUSeconds: 3600,
			Usage: telemetry.Usage{Samples: 1, First: T, Last: T, GPUSeconds: 600, BusyGPUSeconds: 600}})
	}))
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		g, h, err := accounting.Goodput(tx, "c", T, T.Add(2*time.Hour))
		assert.Zero(t, h.Useful)
		assert.Zero(t, g)
		assert.InDelta(t, 600.0/3600, h.Busy, 1e-12)
		return err
	}))
}

func TestJobPathsAndDistributions(t *testing.T) {
	l, T := goodputLedger(t)
	var paths []accounting.JobPath
	var ds []accounting.PathDistribution
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		err := accounting.JobPaths(tx, "c", T, T.Add(24*time.Hour), func(p accounting.JobPath) bool {
			paths = append(paths, p)
			return true
		})
		if err != nil {
			return err
		}
		ds, err = accounting.PathDistributions(tx, "c", T, T.Add(24*time.Hour))
		return err
	}))
	require.Len(t, paths, 4)
	assert.Equal(t, accounting.JobPath{Job: 1, Account: "phys", User: "alice", State: accounting.StateCompleted, Started: true,
		QueueDelay: time.Hour, Quality: 0.9, LaunchAttempts: 1, AllocGPUHours: 4, Measured: true, MeanUtilization: 75}, paths[0])
	assert.Equal(t, accounting.JobPath{Job: 2, Account: "phys", User: "bob", State: accounting.StateCompleted, Started: true,
		QueueDelay: 30 * time.Minute, Quality: 0.5, LaunchAttempts: 3, LaunchFailures: 1, Retries: 1, AllocGPUHours: 6, LostGPUHours: 2,
		Measured: true, MeanUtilization: 50}, paths[1], "queue delay from Submit without an eligible time")
	assert.Equal(t, accounting.JobPath{Job: 3, Account: "chem", User: "carol", State: accounting.StateFailed, Started: true,
		QueueDelay: time.Hour, LaunchAttempts: 1, AllocGPUHours: 2, LostGPUHours: 2}, paths[2])
	assert.Equal(t, accounting.JobPath{Job: 4, Account: "phys", User: "alice", State: accounting.StateCancelled}, paths[3])

	require.Len(t, ds, 2)
	chem, phys := ds[0], ds[1]
	assert.Equal(t, accounting.PathDistribution{Account: "chem", Jobs: 1, Started: 1, States: map[accounting.JobState]int{accounting.StateFailed: 1},
		LaunchAttempts: 1, LaunchSuccess: 1, QueueDelay: accounting.Summary{N: 1, Mean: 3600, P50: 3600, P90: 3600, P99: 3600},
		LostGPUHours: accounting.Summary{N: 1, Mean: 2, P50: 2, P90: 2, P99: 2}}, chem)
	assert.Equal(t, "phys", phys.Account)
	assert.Equal(t, []int{3, 2, 2, 1, 1}, []int{phys.Jobs, phys.Started, phys.Completed, phys.Retries, phys.Retried})
	assert.Equal(t, map[accounting.JobState]int{accounting.StateCompleted: 2, accounting.StateCancelled: 1}, phys.States)
	assert.Equal(t, 4, phys.LaunchAttempts)
	assert.InDelta(t, 0.75, phys.LaunchSuccess, 1e-12, "3 of 4 launches")
	// Empirical quantiles of two values {1800, 3600}: p50 is the first
	// whose cumulative share reaches 1/2, p90 and p99 the second.
	assert.Equal(t, accounting.Summary{N: 2, Mean: 2700, P50: 1800, P90: 3600, P99: 3600}, phys.QueueDelay)
	assert.Equal(t, 2, phys.Quality.N)
	assert.InDelta(t, 0.7, phys.Quality.Mean, 1e-12)
	assert.Equal(t, []float64{0.5, 0.9, 0.9}, []float64{phys.Quality.P50, phys.Quality.P90, phys.Quality.P99})
	// Lost GPU-hours {0, 0, 2} (job 4 lost nothing).
	assert.InDelta(t, 2.0/3, phys.LostGPUHours.Mean, 1e-12)
	assert.Equal(t, []float64{0, 2, 2}, []float64{phys.LostGPUHours.P50, phys.LostGPUHours.P90, phys.LostGPUHours.P99})
	assert.Equal(t, accounting.Summary{N: 2, Mean: 62.5, P50: 50, P90: 75, P99: 75}, phys.MeanUtilization)

	n := 0
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		return accounting.JobPaths(tx, "c", T, T.Add(24*time.Hour), func(accounting.JobPath) bool { n++; return false })
	}))
	assert.Equal(t, 1, n, "stops when fn returns false")
}

// TestPathQuantiles checks the quantiles on 1..100 queue-delay seconds:
// p50 = 50, p90 = 90, p99 = 99, mean 50.5.
func TestPathQuantiles(t *testing.T) {
	l, err := accounting.NewMemory(accounting.Config{})
	require.NoError(t, err)
	defer l.Close()
	T := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		for _, k := range []accounting.AssocKey{{Cluster: "c", Account: "a"}, {Cluster: "c", Account: "a", User: "u"}} {
			if _, err := tx.PutAssoc(T, accounting.Assoc{AssocKey: k}); err != nil {
				return err
			}
		}
		for i := 100; i >= 1; i-- { // IDs in the reverse order of delays
			s := T.Add(time.Duration(i) * time.Second)
			if err := tx.PutJob(accounting.JobRecord{ID: accounting.JobID(101 - i), Cluster: "c", User: "u", Account: "a",
				Submit: T, Start: s, End: s.Add(time.Minute), State: accounting.StateCompleted}); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		ds, err := accounting.PathDistributions(tx, "c", T, T.Add(time.Hour))
		require.Len(t, ds, 1)
		assert.Equal(t, accounting.Summary{N: 100, Mean: 50.5, P50: 50, P90: 90, P99: 99}, ds[0].QueueDelay)
		assert.Zero(t, ds[0].Quality, "no scored job")
		return err
	}))
}

func TestWriteGoodputReports(t *testing.T) {
	l, T := goodputLedger(t)
	var buf bytes.Buffer
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		rep, err := accounting.GPUUsage(tx, "c", T, T.Add(24*time.Hour))
		if err != nil {
			return err
		}
		if err := accounting.WriteGPUUsage(&buf, nil, rep, accounting.GroupAccount); err != nil {
			return err
		}
		assert.ErrorIs(t, accounting.WriteGPUUsage(&bytes.Buffer{}, nil, rep, "Bogus"), accounting.ErrInvalid)
		return accounting.WriteGoodput(&buf, rep.Total)
	}))
	lines := strings.Split(buf.String(), "\n")
	assert.Equal(t, "GPU Usage by Account 2024-03-04T00:00:00 - 2024-03-04T23:59:59 (jobs ended in the range)", lines[1])
	assert.Equal(t, []string{"Cluster", "Account", "Jobs", "Measured", "Jobs", "Allocated", "Measured", "Busy", "Useful", "Lost",
		"Unmeasured", "Energy(kWh)", "Goodput"}, strings.Fields(lines[4]))
	assert.Equal(t, []string{"c", "chem", "1", "0", "2.0", "0.0", "0.0", "0.0", "2.0", "2.0", "0.00", "-"}, strings.Fields(lines[5]))
	assert.Equal(t, []string{"c", "phys", "3", "2", "10.0", "10.0", "6.0", "5.0", "2.0", "0.0", "3.00", "50.00%"}, strings.Fields(lines[6]))
	assert.Equal(t, []string{"c", "(total)", "4", "2", "12.0", "10.0", "6.0", "5.0", "4.0", "2.0", "3.00", "50.00%"}, strings.Fields(lines[7]))
	// Columns are aligned: every table line is as long as the header.
	for _, ln := range lines[5:8] {
		assert.Len(t, ln, len(lines[4]))
	}
	assert.Equal(t, []string{"Goodput", "50.00%", "(useful", "/", "allocated", "GPU-hours", "of", "measured", "jobs)"}, strings.Fields(lines[8]))
	assert.Contains(t, buf.String(), "Unmeasured GPU-hours  2.0")

	buf.Reset()
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		var paths []accounting.JobPath
		if err := accounting.JobPaths(tx, "c", T, T.Add(24*time.Hour), func(p accounting.JobPath) bool { paths = append(paths, p); return true }); err != nil {
			return err
		}
		if err := accounting.WriteJobPaths(&buf, paths); err != nil {
			return err
		}
		ds, err := accounting.PathDistributions(tx, "c", T, T.Add(24*time.Hour))
		if err != nil {
			return err
		}
		return accounting.WritePathDistributions(&buf, ds)
	}))
	lines = strings.Split(buf.String(), "\n")
	assert.Equal(t, []string{"2", "phys", "bob", "00:30:00", "0.500", "3", "1", "1", "6.0", "2.00", "50.0%", "COMPLETED"}, strings.Fields(lines[2]))
	assert.Equal(t, []string{"4", "phys", "alice", "-", "-", "0", "0", "0", "0.0", "0.00", "-", "CANCELLED"}, strings.Fields(lines[4]))
	assert.Equal(t, []string{"phys", "3", "2", "2", "1", "75.00%", "00:45:00", "00:30:00", "01:00:00", "01:00:00",
		"0.700", "0.500", "0.900", "0.900", "0.667", "0.000", "2.000", "2.000"}, strings.Fields(lines[7]))
}

// Readings can cover GPU time the record does not count as allocated: a
// job on shards of a GPU (gres/shard, no gres/gpu) is read on that GPU,
// and a job's readings may cover a second more than its whole-second
// record. Goodput stays at most 100 %: a job's busy and useful
// GPU-hours are at most its allocated ones. By hand: job 1, 1 GPU for
// an hour at 10 % (0.1 busy GPU-h); job 2, shard:2 for an hour read at
// 100 % (1 GPU-h of readings, 0 allocated: 0 busy, 0 useful); job 3, 1
// GPU for an hour whose readings cover 3700 s at 100 % (1 useful GPU-h,
// not 1.03). Goodput (0.1 + 0 + 1) / (1 + 0 + 1) = 55 %.
func TestGoodputAtMostAllocated(t *testing.T) {
	l, err := accounting.NewMemory(accounting.Config{})
	require.NoError(t, err)
	defer l.Close()
	T := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
	read := func(gpuSec, busy float64) telemetry.Usage {
		return telemetry.Usage{Samples: 120, First: T.Add(30 * time.Second), Last: T.Add(time.Hour), GPUSeconds: gpuSec,
			BusyGPUSeconds: busy, CoveredSeconds: 3600}
	}
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		for _, k := range []accounting.AssocKey{{Cluster: "c", Account: "a"}, {Cluster: "c", Account: "a", User: "u"}} {
			if _, err := tx.PutAssoc(T, accounting.Assoc{AssocKey: k}); err != nil {
				return err
			}
		}
		for _, j := range []accounting.JobRecord{
			{ID: 1, AllocTRES: accounting.TRES{"gres/gpu": 1}, Usage: read(3600, 360)},
			{ID: 2, AllocTRES: accounting.TRES{"gres/shard": 2}, Usage: read(3600, 3600)},
			{ID: 3, AllocTRES: accounting.TRES{"gres/gpu": 1}, Usage: read(3700, 3700)},
		} {
			j.Cluster, j.User, j.Account, j.Submit, j.Start, j.End, j.State = "c", "u", "a", T, T, T.Add(time.Hour), accounting.StateCompleted
			if err := tx.PutJob(j); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		g, h, err := accounting.Goodput(tx, "c", T, T.Add(2*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, 3, h.MeasuredJobs)
		assert.InDelta(t, 2, h.Measured, 1e-12)
		assert.InDelta(t, 1.1, h.Busy, 1e-12)
		assert.InDelta(t, 1.1, h.Useful, 1e-12)
		assert.InDelta(t, 0.55, g, 1e-12)
		assert.LessOrEqual(t, h.Busy, h.Measured)
		return nil
	}))
}

// A job that ended exactly at a range's start ended in [From, To): job 6
// of goodputLedger ends at T+24h, the end of the day (left out there), so
// the next day holds it: 8 GPUs for 2 hours, unmeasured. Adjacent ranges
// count every finished job once.
func TestGoodputRangeFromIsInclusive(t *testing.T) {
	l, T := goodputLedger(t)
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		_, sums, err := accounting.Goodput(tx, "c", T.Add(24*time.Hour), T.Add(48*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, 1, sums.Jobs)
		assert.InDelta(t, 16, sums.Unmeasured, 1e-9)
		n := 0
		err = accounting.JobPaths(tx, "c", T.Add(24*time.Hour), T.Add(48*time.Hour), func(p accounting.JobPath) bool {
			assert.Equal(t, accounting.JobID(6), p.Job)
			n++
			return true
		})
		assert.Equal(t, 1, n)
		return err
	}))
}
