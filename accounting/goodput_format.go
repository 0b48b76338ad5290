package accounting

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// GPUUsageGroup names one grouping of a GPUUsageReport for
// WriteGPUUsage.
type GPUUsageGroup string

// The groupings WriteGPUUsage prints.
const (
	GroupAccount   GPUUsageGroup = "Account"
	GroupUser      GPUUsageGroup = "User"
	GroupQOS       GPUUsageGroup = "QOS"
	GroupPartition GPUUsageGroup = "Partition"
)

func (r GPUUsageReport) rows(g GPUUsageGroup) ([]GPUUsageRow, error) {
	switch g {
	case GroupAccount:
		return r.ByAccount, nil
	case GroupUser:
		return r.ByUser, nil
	case GroupQOS:
		return r.ByQOS, nil
	case GroupPartition:
		return r.ByPartition, nil
	}
	return nil, fmt.Errorf("%w: GPU usage grouping %q (want Account, User, QOS or Partition)", ErrInvalid, g)
}

// gpuHoursHeader is the column header of a GPUHours line after its name.
const gpuHoursHeader = "Jobs\tMeasured Jobs\tAllocated\tMeasured\tBusy\tUseful\tLost\tUnmeasured\tEnergy(kWh)\tGoodput\t"

func gpuHoursCells(h GPUHours) string {
	return fmt.Sprintf("%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t", h.Jobs, h.MeasuredJobs, hoursF(h.Allocated), hoursF(h.Measured),
		hoursF(h.Busy), hoursF(h.Useful), hoursF(h.Lost), hoursF(h.Unmeasured), strconv.FormatFloat(h.EnergyKWh, 'f', 2, 64),
		pct(h.Goodput(), h.MeasuredJobs > 0))
}

// pct formats a fraction as a percentage, "-" when it has no meaning.
func pct(f float64, ok bool) string {
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(100*f, 'f', 2, 64) + "%"
}

// WriteGPUUsage prints rep as sreport prints its reports: a ruled title
// with the range, then an aligned table of GPU-hours per group of each
// grouping in groups (all four when none is given), and the cluster
// total. Goodput is "-" for a group without measured jobs.
func WriteGPUUsage(w io.Writer, loc *time.Location, rep GPUUsageReport, groups ...GPUUsageGroup) error {
	if loc == nil {
		loc = time.UTC
	}
	if len(groups) == 0 {
		groups = []GPUUsageGroup{GroupAccount, GroupUser, GroupQOS, GroupPartition}
	}
	for _, g := range groups {
		rows, err := rep.rows(g)
		if err != nil {
			return err
		}
		if err := rule(w); err != nil {
			return err
		}
		fmt.Fprintf(w, "GPU Usage by %s %s - %s (jobs ended in the range)\n", g, rep.From.In(loc).Format(reportTimeLayout),
			rep.To.Add(-time.Second).In(loc).Format(reportTimeLayout))
		fmt.Fprintln(w, "Usage reported in GPU Hours")
		if err := rule(w); err != nil {
			return err
		}
		tw := newTableFlags(w, tabwriter.AlignRight)
		fmt.Fprintf(tw, "Cluster\t%s\t%s\n", g, gpuHoursHeader)
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", rep.Cluster, r.Name, gpuHoursCells(r.GPUHours))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", rep.Cluster, "(total)", gpuHoursCells(rep.Total))
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// WriteGoodput prints the goodput figure and the sums it is made of, one
// line each.
func WriteGoodput(w io.Writer, h GPUHours) error {
	tw := newTable(w)
	fmt.Fprintf(tw, "Goodput\t%s\t(useful / allocated GPU-hours of measured jobs)\n", pct(h.Goodput(), h.MeasuredJobs > 0))
	fmt.Fprintf(tw, "Useful GPU-hours\t%s\n", hoursF(h.Useful))
	fmt.Fprintf(tw, "Busy GPU-hours\t%s\n", hoursF(h.Busy))
	fmt.Fprintf(tw, "Measured GPU-hours\t%s\t(%d of %d jobs)\n", hoursF(h.Measured), h.MeasuredJobs, h.Jobs)
	fmt.Fprintf(tw, "Unmeasured GPU-hours\t%s\n", hoursF(h.Unmeasured))
	fmt.Fprintf(tw, "Lost GPU-hours\t%s\n", hoursF(h.Lost))
	fmt.Fprintf(tw, "Energy (kWh)\t%s\n", strconv.FormatFloat(h.EnergyKWh, 'f', 2, 64))
	return tw.Flush()
}

// WriteJobPaths prints job paths as an aligned table, one job a line.
func WriteJobPaths(w io.Writer, paths []JobPath) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "JobID\tAccount\tUser\tQueueDelay\tQuality\tLaunches\tFailed\tRetries\tAllocGPUh\tLostGPUh\tGPUUtil\tState")
	for _, p := range paths {
		delay, quality, util := "-", "-", "-"
		if p.Started {
			delay = FormatDuration(p.QueueDelay)
		}
		if p.Quality > 0 {
			quality = strconv.FormatFloat(p.Quality, 'f', 3, 64)
		}
		if p.Measured {
			util = strconv.FormatFloat(p.MeanUtilization, 'f', 1, 64) + "%"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", p.Job, p.Account, p.User, delay, quality,
			p.LaunchAttempts, p.LaunchFailures, p.Retries, hoursF(p.AllocGPUHours), strconv.FormatFloat(p.LostGPUHours, 'f', 2, 64),
			util, p.State)
	}
	return tw.Flush()
}

// WritePathDistributions prints per-account path distributions as an
// aligned table: counts, launch success, and mean/p50/p90/p99 of queue
// delay, allocation quality and lost GPU-hours.
func WritePathDistributions(w io.Writer, ds []PathDistribution) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "Account\tJobs\tStarted\tCompleted\tRetried\tLaunchOK\tQueueDelay mean/p50/p90/p99\tQuality mean/p50/p90/p99\tLostGPUh mean/p50/p90/p99")
	dur := func(s float64) string { return FormatDuration(time.Duration(s * float64(time.Second))) }
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	sum := func(s Summary, f func(float64) string) string {
		if s.N == 0 {
			return "-"
		}
		return f(s.Mean) + " " + f(s.P50) + " " + f(s.P90) + " " + f(s.P99)
	}
	for _, d := range ds {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", d.Account, d.Jobs, d.Started, d.Completed, d.Retried,
			pct(d.LaunchSuccess, d.LaunchAttempts > 0), sum(d.QueueDelay, dur), sum(d.Quality, num), sum(d.LostGPUHours, num))
	}
	return tw.Flush()
}
