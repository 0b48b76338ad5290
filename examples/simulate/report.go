package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
	"github.com/sluicehq/sluice/scheduler/sim/swf"
)

// report is the -json output. The first seven names are a contract.
type report struct {
	Jobs         int     `json:"jobs"`
	MeanWait     float64 `json:"mean_wait_s"`
	MeanBSLD     float64 `json:"mean_bsld"`
	MeanResponse float64 `json:"mean_response_s"`
	Utilization  float64 `json:"utilization"`
	Makespan     float64 `json:"makespan_s"`
	SimSeconds   float64 `json:"sim_seconds"`
	Workload     string  `json:"workload"`
	Policy       string  `json:"policy"`
	Estimates    string  `json:"estimates"`
	Rejected     int     `json:"rejected"`
	Completed    int     `json:"completed"`
	Failed       int     `json:"failed"`
	Unknown      int     `json:"unknown"` // ran to their end, the trace does not say how (SWF status -1)
	TimedOut     int     `json:"timed_out"`
	Killed       int     `json:"killed"`
	P50Wait      float64 `json:"p50_wait_s"`
	P90Wait      float64 `json:"p90_wait_s"`
	P99Wait      float64 `json:"p99_wait_s"`
	MaxWait      float64 `json:"max_wait_s"`
	P50BSLD      float64 `json:"p50_bsld"`
	P90BSLD      float64 `json:"p90_bsld"`
	P99BSLD      float64 `json:"p99_bsld"`
	MaxBSLD      float64 `json:"max_bsld"`
	MeanSlowdown float64 `json:"mean_slowdown"`
	CPUUtil      float64 `json:"cpu_utilization"`
	GPUUtil      float64 `json:"gpu_utilization"`
	CPUHours     float64 `json:"cpu_hours"`
	GPUHours     float64 `json:"gpu_hours"`
	LostCPUHours float64 `json:"lost_cpu_hours"`
	LostGPUHours float64 `json:"lost_gpu_hours"`
	// LostCPUHoursTimeLimit and LostGPUHoursTimeLimit: the part of the
	// lost hours that time limits cut off (sim.JobResult.LostCPUHours).
	LostCPUHoursTimeLimit float64 `json:"lost_cpu_hours_time_limit"`
	LostGPUHoursTimeLimit float64 `json:"lost_gpu_hours_time_limit"`

	// preemption (zero without a preemption policy)
	LostGPUHoursPreempted float64 `json:"lost_gpu_hours_preempted"`
	LostCPUHoursPreempted float64 `json:"lost_cpu_hours_preempted"`
	Preemptions           int     `json:"preemptions"`

	MeanQueue     float64 `json:"mean_queue_length"`
	MaxQueue      int     `json:"max_queue_length"`
	WaitingFrac   float64 `json:"waiting_fraction"`
	IdleCPUHWait  float64 `json:"idle_cpu_hours_while_waiting"`
	IdleGPUHWait  float64 `json:"idle_gpu_hours_while_waiting"`
	IdleWhileWait float64 `json:"idle_while_waiting"`
	Cycles        int     `json:"cycles"`
	Nodes         int     `json:"nodes"`
	CPUs          int64   `json:"cpus"`
	GPUs          int64   `json:"gpus"`
	Cleaning      *clean  `json:"cleaning,omitempty"`
	// Start estimates (backfill policies; zero without estimates).
	ETAJobs        int     `json:"eta_jobs"`
	ETAUnestimated int     `json:"eta_unestimated"`
	ETAMean        float64 `json:"eta_error_mean_s"`
	ETAMedian      float64 `json:"eta_error_median_s"`
	ETAP90         float64 `json:"eta_error_p90_s"`
	ETAMax         float64 `json:"eta_error_max_s"`
	ETABias        float64 `json:"eta_bias_s"`
	ETAOnTime      float64 `json:"eta_started_on_time"`
	// Explanation statistics (-explain only).
	ExplainEvery    float64            `json:"explain_every_s,omitempty"`
	ExplainSamples  int                `json:"explain_samples,omitempty"`
	PendingJobHours float64            `json:"pending_job_hours,omitempty"`
	ReasonMix       map[string]float64 `json:"reason_mix,omitempty"`
	IdleUnit        string             `json:"idle_unit,omitempty"`
	IdleClasses     map[string]float64 `json:"idle_classes,omitempty"`
	IdleClassHours  map[string]float64 `json:"idle_class_hours,omitempty"`
	// Goodput and energy (sim.Goodput), over the jobs with a profile.
	Goodput             float64 `json:"goodput"`
	BusyFraction        float64 `json:"busy_fraction"`
	MeasuredJobs        int     `json:"measured_jobs"`
	UnmeasuredJobs      int     `json:"unmeasured_jobs"`
	MeasuredGPUHours    float64 `json:"measured_gpu_hours"`
	UnmeasuredGPUHours  float64 `json:"unmeasured_gpu_hours"`
	BusyGPUHours        float64 `json:"busy_gpu_hours"`
	UsefulGPUHours      float64 `json:"useful_gpu_hours"`
	GoodputLostGPUHours float64 `json:"goodput_lost_gpu_hours"`
	EnergyKWh           float64 `json:"energy_kwh"`
	KWhPerUsefulGPUHour float64 `json:"kwh_per_useful_gpu_hour"`
	IdleEnergyKWh       float64 `json:"idle_gpu_energy_kwh"`
	GPUIdleWatts        float64 `json:"gpu_idle_watts"`
	GPUMaxWatts         float64 `json:"gpu_max_watts"`
	// The allocated-but-idle policy (-telemetry-every only; see
	// sim.TelemetrySummary).
	TelemetryEvery   float64 `json:"telemetry_every_s,omitempty"`
	IdleAction       string  `json:"idle_action,omitempty"`
	TelemetryEvents  int     `json:"telemetry_events,omitempty"`
	IdleNotices      int     `json:"idle_notices,omitempty"`
	IdleRequeues     int     `json:"idle_requeues,omitempty"`
	IdleCancels      int     `json:"idle_cancels,omitempty"`
	IdleLimitCancels int     `json:"idle_limit_cancels,omitempty"`
	IdleGPUHours     float64 `json:"idle_gpu_hours,omitempty"`
	UnsampledRuns    int     `json:"unsampled_runs,omitempty"`
	// The GPU workload file (-gpu-workload only): its profiles and how
	// many of the jobs read got one.
	GPUWorkload *gpuWorkload `json:"gpu_workload,omitempty"`
}

// gpuWorkload is what -gpu-workload joined.
type gpuWorkload struct {
	File     string `json:"file"`
	Profiles int    `json:"profiles"`
	Matched  int    `json:"matched"`
	Read     int    `json:"read"`
}

// clean is the trace reader's cleaning report.
type clean struct {
	Lines          int `json:"lines"`
	Records        int `json:"records"`
	Jobs           int `json:"jobs"`
	Dropped        int `json:"dropped"`
	Malformed      int `json:"malformed"`
	NoSubmit       int `json:"no_submit_time"`
	NoRuntime      int `json:"no_run_time"`
	NoProcs        int `json:"no_processors"`
	TooLarge       int `json:"too_large"`
	OutOfOrder     int `json:"out_of_order"`
	Clipped        int `json:"clipped"`
	EstimateFilled int `json:"estimate_filled"`
	Overrun        int `json:"overrun"`
	HeaderIssues   int `json:"header_issues"`
}

func makeReport(res sim.Result, elapsed time.Duration, name string, c config, rd *swf.Reader) report {
	s := res.Summary
	r := report{
		Jobs: s.Jobs, MeanWait: s.Wait.Mean, MeanBSLD: s.BSLD.Mean, MeanResponse: s.Response.Mean,
		Utilization: s.Utilization, Makespan: s.Makespan.Seconds(), SimSeconds: elapsed.Seconds(),
		Workload: name, Policy: c.policy, Estimates: c.estimates,
		Rejected: s.Rejected, Completed: s.Completed, Failed: s.Failed, Unknown: s.Unknown, TimedOut: s.TimedOut, Killed: s.Killed,
		P50Wait: s.Wait.P50, P90Wait: s.Wait.P90, P99Wait: s.Wait.P99, MaxWait: s.Wait.Max,
		P50BSLD: s.BSLD.P50, P90BSLD: s.BSLD.P90, P99BSLD: s.BSLD.P99, MaxBSLD: s.BSLD.Max,
		MeanSlowdown: s.Slowdown.Mean, CPUUtil: s.CPUUtilization, GPUUtil: s.GPUUtilization,
		CPUHours: s.CPUHours, GPUHours: s.GPUHours, LostCPUHours: s.LostCPUHours, LostGPUHours: s.LostGPUHours,
		LostCPUHoursTimeLimit: s.LostCPUHoursTimeLimit, LostGPUHoursTimeLimit: s.LostGPUHoursTimeLimit,
		LostGPUHoursPreempted: s.LostGPUHoursPreempted, LostCPUHoursPreempted: s.LostCPUHoursPreempted, Preemptions: s.Preemptions,
		MeanQueue: s.MeanPending, MaxQueue: s.MaxPending, WaitingFrac: s.WaitingFraction,
		IdleCPUHWait: s.IdleCPUHoursWaiting, IdleGPUHWait: s.IdleGPUHoursWaiting, IdleWhileWait: s.IdleWhileWaiting,
		Cycles: res.Cycles, Nodes: res.Capacity.Nodes, CPUs: res.Capacity.CPUs, GPUs: res.Capacity.GPUs,
		ETAJobs: s.ETA.Jobs, ETAUnestimated: s.ETA.Unestimated, ETAMean: s.ETA.Error.Mean, ETAMedian: s.ETA.Error.P50,
		ETAP90: s.ETA.Error.P90, ETAMax: s.ETA.Error.Max, ETABias: s.ETA.Bias, ETAOnTime: s.ETA.OnTime,
	}
	g := s.Goodput
	r.Goodput, r.BusyFraction, r.MeasuredJobs, r.UnmeasuredJobs = g.Goodput, g.BusyFraction, g.MeasuredJobs, g.UnmeasuredJobs
	r.MeasuredGPUHours, r.UnmeasuredGPUHours = g.AllocatedGPUHours, g.UnmeasuredGPUHours
	r.BusyGPUHours, r.UsefulGPUHours, r.GoodputLostGPUHours = g.BusyGPUHours, g.UsefulGPUHours, g.LostGPUHours
	r.EnergyKWh, r.KWhPerUsefulGPUHour, r.IdleEnergyKWh = g.EnergyKWh, g.KWhPerUsefulGPUHour, g.IdleEnergyKWh
	r.GPUIdleWatts, r.GPUMaxWatts = c.gpuIdleWatts, c.gpuMaxWatts
	if t := s.Telemetry; t.Every > 0 {
		r.TelemetryEvery, r.IdleAction, r.TelemetryEvents = t.Every.Seconds(), c.idleAction, t.Events
		r.IdleNotices, r.IdleRequeues, r.IdleCancels, r.IdleLimitCancels = t.IdleNotices, t.IdleRequeues, t.IdleCancels, t.LimitCancels
		r.IdleGPUHours, r.UnsampledRuns = t.IdleGPUHours, t.UnsampledRuns
	}
	if ex := s.Explain; ex.Every > 0 {
		r.ExplainEvery, r.ExplainSamples, r.PendingJobHours = ex.Every.Seconds(), ex.Samples, ex.PendingJobHours
		r.ReasonMix = map[string]float64{}
		for _, rs := range ex.Reasons {
			r.ReasonMix[rs.Reason.String()] = rs.Share
		}
		r.IdleUnit, r.IdleClasses, r.IdleClassHours = "CPU", map[string]float64{}, map[string]float64{}
		hours := ex.IdleCPUHours
		if res.Capacity.GPUs > 0 {
			r.IdleUnit, hours = "GPU", ex.IdleGPUHours
		}
		for c := range scheduler.NumIdleClasses {
			r.IdleClasses[c.String()] = ex.IdleShares[c]
			r.IdleClassHours[c.String()] = hours[c]
		}
	}
	if rd != nil {
		st := rd.Stats()
		r.Cleaning = &clean{Lines: st.Lines, Records: st.Records, Jobs: st.Jobs, Dropped: st.Dropped(),
			Malformed: st.Malformed, NoSubmit: st.NoSubmit, NoRuntime: st.NoRuntime, NoProcs: st.NoProcs,
			TooLarge: st.TooLarge, OutOfOrder: st.OutOfOrder, Clipped: st.Clipped,
			EstimateFilled: st.EstimateFilled, Overrun: st.Overrun, HeaderIssues: st.HeaderIssues}
	}
	return r
}

func printReport(w io.Writer, r report, res sim.Result) {
	dur := func(s float64) string {
		d := time.Duration(s * float64(time.Second)).Round(time.Second)
		if d >= 48*time.Hour {
			return fmt.Sprintf("%s (%.1f days)", d, d.Hours()/24)
		}
		return d.String()
	}
	fmt.Fprintf(w, "Sluice simulation of %s\n", r.Workload)
	fmt.Fprintf(w, "cluster:      %d nodes, %d CPUs, %d GPUs; policy %s, %s estimates\n", r.Nodes, r.CPUs, r.GPUs, r.Policy, r.Estimates)
	if cl := r.Cleaning; cl != nil {
		fmt.Fprintf(w, "trace:        %d job lines read, %d kept, %d dropped", cl.Records, cl.Jobs, cl.Dropped)
		var why []string
		for _, x := range []struct {
			n    int
			what string
		}{{cl.Malformed, "malformed"}, {cl.NoSubmit, "no submit time"}, {cl.NoRuntime, "run time ≤ 0"},
			{cl.NoProcs, "no processors"}, {cl.TooLarge, "too large"}, {cl.OutOfOrder, "out of order"}} {
			if x.n > 0 {
				why = append(why, fmt.Sprintf("%d %s", x.n, x.what))
			}
		}
		if len(why) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(why, ", "))
		}
		fmt.Fprintf(w, "; %d clipped, %d estimates filled, %d ran past their estimate\n", cl.Clipped, cl.EstimateFilled, cl.Overrun)
	}
	fmt.Fprintf(w, "jobs:         %d simulated (%d completed, %d failed", r.Jobs, r.Completed, r.Failed)
	if r.Unknown > 0 {
		fmt.Fprintf(w, ", %d with unknown status", r.Unknown)
	}
	fmt.Fprintf(w, ", %d timed out, %d killed), %d rejected\n", r.TimedOut, r.Killed, r.Rejected)
	fmt.Fprintf(w, "wait:         mean %s, p50 %s, p90 %s, p99 %s, max %s\n", dur(r.MeanWait), dur(r.P50Wait), dur(r.P90Wait), dur(r.P99Wait), dur(r.MaxWait))
	fmt.Fprintf(w, "response:     mean %s\n", dur(r.MeanResponse))
	fmt.Fprintf(w, "bounded sld:  mean %.2f, p50 %.2f, p90 %.2f, p99 %.2f, max %.1f (τ = 10 s)\n", r.MeanBSLD, r.P50BSLD, r.P90BSLD, r.P99BSLD, r.MaxBSLD)
	fmt.Fprintf(w, "utilisation:  %.1f %% over a makespan of %s", 100*r.Utilization, dur(r.Makespan))
	if r.GPUs > 0 {
		fmt.Fprintf(w, " (GPUs; CPUs %.1f %%), %.0f GPU-hours, %.0f lost (%.0f to time limits)", 100*r.CPUUtil, r.GPUHours, r.LostGPUHours, r.LostGPUHoursTimeLimit)
	} else {
		fmt.Fprintf(w, ", %.0f CPU-hours, %.0f lost (%.0f to time limits)", r.CPUHours, r.LostCPUHours, r.LostCPUHoursTimeLimit)
	}
	fmt.Fprintln(w)
	what, idle := "CPU", r.IdleCPUHWait
	if r.GPUs > 0 {
		what, idle = "GPU", r.IdleGPUHWait
	}
	fmt.Fprintf(w, "queue:        mean %.1f, max %d jobs; jobs waiting %.1f %% of the time\n", r.MeanQueue, r.MaxQueue, 100*r.WaitingFrac)
	fmt.Fprintf(w, "idle waiting: %.0f %s-hours idle while jobs waited (%.1f %% of capacity)\n", idle, what, 100*r.IdleWhileWait)
	printGoodput(w, r)
	if r.ETAJobs > 0 {
		fmt.Fprintf(w, "estimates:    %d jobs waited with a start estimate: first estimate off by mean %s, median %s, p90 %s; %.1f %% started no later than estimated\n",
			r.ETAJobs, dur(r.ETAMean), dur(r.ETAMedian), dur(r.ETAP90), 100*r.ETAOnTime)
	}
	if ex := res.Summary.Explain; ex.Every > 0 {
		var parts []string
		for _, rs := range ex.Reasons {
			parts = append(parts, fmt.Sprintf("%s %.1f %%", rs.Reason, 100*rs.Share))
		}
		if len(parts) == 0 {
			parts = append(parts, "no job waited")
		}
		fmt.Fprintf(w, "why waiting:  %s (of %s pending job-hours)\n", strings.Join(parts, ", "), fmtHours(ex.PendingJobHours))
		type share struct {
			c scheduler.IdleClass
			v float64
		}
		var idle []share
		for c := range scheduler.NumIdleClasses {
			if ex.IdleShares[c] > 0 {
				idle = append(idle, share{c, ex.IdleShares[c]})
			}
		}
		slices.SortStableFunc(idle, func(a, b share) int { return cmp.Compare(b.v, a.v) })
		parts = parts[:0]
		for _, x := range idle {
			parts = append(parts, fmt.Sprintf("%s %.1f %%", x.c, 100*x.v))
		}
		if len(parts) == 0 {
			parts = append(parts, "nothing idle")
		}
		fmt.Fprintf(w, "why idle:     %s (of idle %s-time; %d samples, one per %v)\n", strings.Join(parts, ", "), r.IdleUnit, ex.Samples, ex.Every)
	}
	fmt.Fprintf(w, "simulated in: %.3f s (%d scheduling cycles)\n", r.SimSeconds, res.Cycles)
}

// printGoodput prints the goodput and energy lines of the text report
// (nothing on a cluster without GPUs).
func printGoodput(w io.Writer, r report) {
	if gw := r.GPUWorkload; gw != nil {
		fmt.Fprintf(w, "gpu workload: %s: %d profiles, %d of %d jobs read matched\n", gw.File, gw.Profiles, gw.Matched, gw.Read)
	}
	if r.GPUs == 0 {
		return
	}
	energy := ""
	if r.MeasuredJobs == 0 {
		fmt.Fprintf(w, "goodput:      no job measured (%s GPU-hours without a utilisation profile)\n", fmtHours(r.UnmeasuredGPUHours))
	} else {
		fmt.Fprintf(w, "goodput:      %.1f %% of %s measured GPU-hours useful (busy %.1f %%, %s GPU-hours of work lost); %s GPU-hours unmeasured\n",
			100*r.Goodput, fmtHours(r.MeasuredGPUHours), 100*r.BusyFraction, fmtHours(r.GoodputLostGPUHours), fmtHours(r.UnmeasuredGPUHours))
		energy = fmt.Sprintf("%s kWh on the measured jobs' GPUs, %.3f kWh per useful GPU-hour; ", fmtHours(r.EnergyKWh), r.KWhPerUsefulGPUHour)
	}
	fmt.Fprintf(w, "energy:       %s%s kWh on GPUs no job held (%g W idle, %g W at 100 %% per GPU)\n",
		energy, fmtHours(r.IdleEnergyKWh), r.GPUIdleWatts, r.GPUMaxWatts)
	if r.TelemetryEvery > 0 {
		fmt.Fprintf(w, "idle policy:  %s; %d jobs reported allocated-but-idle, %s idle GPU-hours measured; %d requeued, %d cancelled, %d cancelled after too many requeues (%d telemetry events, every %s)\n",
			r.IdleAction, r.IdleNotices, fmtHours(r.IdleGPUHours), r.IdleRequeues, r.IdleCancels, r.IdleLimitCancels, r.TelemetryEvents, time.Duration(r.TelemetryEvery*float64(time.Second)))
		if r.UnsampledRuns > 0 {
			fmt.Fprintf(w, "              %d profiled runs on nodes without a device inventory got no reading\n", r.UnsampledRuns)
		}
	}
}

// fmtHours formats a number of hours (or kilowatt-hours) for the text
// report: three significant digits under 100, whole numbers from there.
func fmtHours(h float64) string {
	if h < 100 {
		return strconv.FormatFloat(h, 'g', 3, 64)
	}
	return strconv.FormatFloat(h, 'f', 0, 64)
}
