package scheduler_test

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

// The polling property: a control loop that calls Schedule after every
// event and at every Cycle.NextWake gets exactly the same starts (time,
// job, nodes, time limit), ends, pending reasons, priorities and expected
// starts whether or not it also calls Schedule at any number of other
// instants.

// pollEvent is one exogenous event of a polling scenario, at a whole
// second.
type pollEvent struct {
	at   time.Time
	kind int // pollSubmit, pollCancel, …
	spec scheduler.JobSpec
	run  time.Duration // pollSubmit: how long the job runs (past its limit: it times out)
	dep  int           // pollSubmit: submit index of the job it depends on, -1 for none
	k    int           // pollCancel, pollHold, pollRelease: submit index; pollUnreserve: reservation index
	resv policy.Reservation
}

const (
	pollSubmit = iota
	pollCancel
	pollHold
	pollRelease
	pollReserve
	pollUnreserve
)

// pollScenario is a random scenario: a configuration variant and its
// exogenous events.
type pollScenario struct {
	bf         *backfill.Mode
	power      bool
	preempt    bool
	calcPeriod time.Duration
	events     []pollEvent
	end        time.Time
}

var pollUsers = []struct{ user, account string }{{"ann", "phys"}, {"bob", "phys"}, {"cy", "bio"}, {"dee", "bio"}}

func newPollScenario(seed uint64) pollScenario {
	rng := rand.New(rand.NewPCG(seed, 19))
	sc := pollScenario{calcPeriod: []time.Duration{time.Minute, 5 * time.Minute, 150 * time.Second, 7 * time.Minute}[rng.IntN(4)]}
	switch rng.IntN(3) {
	case 1:
		m := backfill.EASY
		sc.bf = &m
	case 2:
		m := backfill.Conservative
		sc.bf = &m
	}
	sc.power = rng.IntN(4) == 0
	sc.preempt = !sc.power && rng.IntN(3) == 0
	now := clustertest.Epoch.Add(time.Duration(rng.IntN(3600)) * time.Second)
	submits, resvs := 0, 0
	for step := range 70 {
		now = now.Add(time.Duration(rng.IntN(900)) * time.Second)
		ev := pollEvent{at: now, dep: -1}
		switch k := rng.IntN(100); {
		case k < 60 || submits == 0:
			u := pollUsers[rng.IntN(len(pollUsers))]
			sp := scheduler.JobSpec{
				User: u.user, Account: u.account, Nodes: 1 + rng.IntN(2),
				QOS:         []string{"normal", "high"}[rng.IntN(2)],
				TimeLimit:   time.Duration(10+rng.IntN(230)) * time.Minute,
				CPUsPerTask: 1 + rng.IntN(32), Nice: rng.IntN(3) * 100,
				MemPerNodeMiB: int64(rng.IntN(100)) * clustertest.GiB,
			}
			switch rng.IntN(3) {
			case 0:
				sp.GRESPerNode = []gres.Request{{Name: "gpu", Count: int64(1 + rng.IntN(8))}}
			case 1:
				sp.GRESPerNode = []gres.Request{{Name: "gpu", Type: []string{"h100", "a100"}[rng.IntN(2)], Count: int64(1 + rng.IntN(4))}}
			}
			if rng.IntN(4) == 0 {
				sp.Partition = "h100"
				sp.TimeLimit = min(sp.TimeLimit, 4*time.Hour)
			}
			if rng.IntN(5) == 0 {
				sp.BeginTime = now.Add(time.Duration(rng.IntN(7200)) * time.Second)
			}
			if rng.IntN(5) == 0 {
				sp.TimeMin = (sp.TimeLimit / 3).Truncate(time.Minute)
			}
			if submits > 0 && rng.IntN(5) == 0 {
				ev.dep = rng.IntN(submits)
				sp.Dependency = []string{"afterok", "afterany", "afternotok"}[rng.IntN(3)]
			}
			if resvs > 0 && u.user == "ann" && rng.IntN(2) == 0 {
				sp.Reservation = fmt.Sprintf("ann-%d", rng.IntN(resvs))
			}
			ev.spec = sp
			ev.run = time.Duration(60+rng.IntN(int((sp.TimeLimit+30*time.Minute)/time.Second))) * time.Second
			submits++
		case k < 70:
			ev.kind, ev.k = pollCancel, rng.IntN(submits)
		case k < 76:
			ev.kind, ev.k = pollHold, rng.IntN(submits)
		case k < 82:
			ev.kind, ev.k = pollRelease, rng.IntN(submits)
		case k < 94:
			nodes := topology.NewNodeSet(4)
			nodes.Add(rng.IntN(4))
			r := policy.Reservation{Start: now.Add(time.Duration(rng.IntN(4*3600)) * time.Second),
				Duration: time.Duration(600+rng.IntN(3*3600)) * time.Second, Nodes: nodes}
			if rng.IntN(2) == 0 {
				r.Name, r.Users, r.Flags = fmt.Sprintf("maint-%d", step), []string{"root"}, policy.ResvMaint|policy.ResvIgnoreJobs
			} else {
				r.Name, r.Users, r.Flags = fmt.Sprintf("ann-%d", resvs), []string{"ann"}, policy.ResvIgnoreJobs
				resvs++
			}
			switch rng.IntN(4) {
			case 0:
				r.Flags |= policy.ResvDaily
			case 1:
				r.Flags |= policy.ResvHourly
				r.Duration = time.Duration(60+rng.IntN(1800)) * time.Second
			}
			ev.kind, ev.resv = pollReserve, r
		default:
			ev.kind, ev.k = pollUnreserve, rng.IntN(step+1)
		}
		sc.events = append(sc.events, ev)
	}
	sc.end = now.Add(12 * time.Hour)
	return sc
}

// pollRun is the record of one run of a scenario: the fair-share usage it
// feeds the scheduler, and the transcript compared between runs.
type pollRun struct {
	sc    *pollScenario
	s     *scheduler.Scheduler
	ids   []scheduler.JobID // by submit index
	run   map[scheduler.JobID]time.Duration
	usage []pollUsage // in start order
	byJob map[scheduler.JobID]int
	resv  []string // names of the reservations added, by event order
	// transcript lines: every start and end, and, at every call that
	// is not an extra one, the cycle's pending jobs and NextWake.
	log []string
	// finishes are the pending Finish events (the jobs' run times), and
	// boots the NodePoweredUp reports.
	finishes []pollTimed
	extra    int // extra calls made
}

type pollUsage struct {
	user, account string
	cpus          float64
	start, end    time.Time // end zero while running
}

type pollTimed struct {
	at   time.Time
	id   scheduler.JobID
	node string
}

const pollHalfLife = 2 * time.Hour

// fairShare is the run's FairShareSource: every association's usage,
// decayed with a two-hour half-life, as a pure function of t and of the
// runs recorded so far (so the same boundary gives the same tree).
func (r *pollRun) fairShare(t time.Time) ([]priority.Association, error) {
	h := pollHalfLife.Seconds()
	use := map[string]float64{}
	for _, u := range r.usage {
		if !u.start.Before(t) {
			continue
		}
		e := t
		if !u.end.IsZero() && u.end.Before(t) {
			e = u.end
		}
		v := u.cpus * h / math.Ln2 * (math.Exp2(-t.Sub(e).Seconds()/h) - math.Exp2(-t.Sub(u.start).Seconds()/h))
		use[u.account+"/"+u.user] += v
		use[u.account] += v
		use[""] += v
	}
	out := []priority.Association{{Account: "root", Shares: 1, Usage: use[""]}}
	for _, a := range []string{"phys", "bio"} {
		out = append(out, priority.Association{Account: a, Parent: "root", Shares: int64(len(a)), Usage: use[a]})
		for _, u := range pollUsers {
			if u.account == a {
				out = append(out, priority.Association{Account: a, User: u.user, Shares: 1, Usage: use[a+"/"+u.user]})
			}
		}
	}
	return out, nil
}

func (sc *pollScenario) config(r *pollRun) scheduler.Config {
	cfg := clustertest.Mixed4()
	reg, err := scheduler.NewRegistry(cfg.Nodes)
	if err != nil {
		panic(err)
	}
	cfg.Registry = reg
	perUser, err := policy.ParseTRESLimits(reg, "gres/gpu=8")
	if err != nil {
		panic(err)
	}
	cfg.Policy = &policy.Config{QOS: []policy.QOS{
		{Name: "normal", Limits: policy.QOSLimits{MaxTRESPerUser: perUser}},
		{Name: "high", Priority: 10},
	}}
	if sc.preempt {
		cfg.Policy.PreemptType, cfg.Policy.PreemptMode = policy.PreemptQOS, policy.PreemptRequeue
		cfg.Policy.QOS[0].GraceTime = time.Duration(sc.calcPeriod.Seconds()) * time.Second / 3
		cfg.Policy.QOS[1].Preempt = []string{"normal"}
	}
	cfg.Priority = &scheduler.PriorityConfig{
		Engine: priority.Config{
			Weights: priority.Weights{Age: 3000, FairShare: 5000, JobSize: 500, QOS: 2000, Partition: 100},
			MaxAge:  3 * time.Hour,
		},
		CalcPeriod: sc.calcPeriod,
		FairShare:  scheduler.FairShareFunc(r.fairShare),
	}
	if sc.bf != nil {
		cfg.Backfill = &backfill.Config{Mode: *sc.bf}
	}
	if sc.power {
		cfg.Power = &scheduler.PowerConfig{SuspendTime: 20 * time.Minute, ResumeRate: 1, SuspendRate: 1}
	}
	return cfg
}

// runPoll runs the scenario, calling Schedule after the events of each
// instant and at every NextWake, and also at each of the extra instants
// (those that fall on an event or wake instant are skipped).
func runPoll(t *testing.T, sc *pollScenario, extra []time.Time) *pollRun {
	r := &pollRun{sc: sc, run: map[scheduler.JobID]time.Duration{}, byJob: map[scheduler.JobID]int{}}
	s, err := scheduler.New(sc.config(r))
	require.NoError(t, err)
	r.s = s
	var wake time.Time
	ev := 0
	for {
		// The next instant with an event or a wake.
		var at time.Time
		consider := func(x time.Time) {
			if !x.IsZero() && (at.IsZero() || x.Before(at)) {
				at = x
			}
		}
		if ev < len(sc.events) {
			consider(sc.events[ev].at)
		}
		for _, f := range r.finishes {
			consider(f.at)
		}
		consider(wake)
		if at.IsZero() || at.After(sc.end) {
			return r
		}
		for len(extra) > 0 && !extra[0].After(at) {
			x := extra[0]
			extra = extra[1:]
			if x.Equal(at) {
				continue
			}
			r.extra++
			cyc := r.schedule(t, x)
			wake = cyc.NextWake
		}
		if !wake.IsZero() && wake.Before(at) {
			continue // an extra call brought an earlier wake: take it
		}
		r.log = append(r.log, "at "+at.Format(time.RFC3339Nano))
		// Finishes first (in ID order), then the events of the instant.
		slices.SortFunc(r.finishes, func(a, b pollTimed) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.id, b.id)) })
		for len(r.finishes) > 0 && r.finishes[0].at.Equal(at) {
			f := r.finishes[0]
			r.finishes = r.finishes[1:]
			if f.node != "" {
				r.note("up %s %v", f.node, s.NodePoweredUp(at, f.node))
				continue
			}
			err := s.Finish(at, f.id, 0)
			r.note("finish %d %v", f.id, err)
			if err == nil {
				r.ended(f.id, at)
			}
		}
		for ev < len(sc.events) && sc.events[ev].at.Equal(at) {
			r.apply(at, &sc.events[ev])
			ev++
		}
		cyc := r.schedule(t, at)
		for _, p := range cyc.Pending {
			r.note("  pending %d %v prio %d est %s", p.Job, p.Reason, p.Priority, p.ExpectedStart.Format(time.RFC3339))
		}
		r.note("  wake %s", cyc.NextWake.Format(time.RFC3339Nano))
		require.Equal(t, cyc.NextWake, s.NextWake(), "Scheduler.NextWake after the cycle at %s", at)
		wake = cyc.NextWake
	}
}

func (r *pollRun) note(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

// ended records the end of a running job's usage.
func (r *pollRun) ended(id scheduler.JobID, at time.Time) {
	if k, ok := r.byJob[id]; ok && r.usage[k].end.IsZero() {
		r.usage[k].end = at
	}
	r.finishes = slices.DeleteFunc(r.finishes, func(f pollTimed) bool { return f.id == id && f.node == "" })
}

// schedule runs one cycle and records its starts and ends (for extra
// calls too: an extra call must start and end nothing of its own).
func (r *pollRun) schedule(t *testing.T, at time.Time) scheduler.Cycle {
	cyc, err := r.s.Schedule(at)
	require.NoError(t, err)
	for _, e := range cyc.Ended {
		j, _ := r.s.Job(e.Job)
		r.note("end %d %v %v at %s", e.Job, e.State, e.Reason, j.EndTime.Format(time.RFC3339Nano))
		r.ended(e.Job, j.EndTime)
	}
	for _, st := range cyc.Starts {
		var nodes []string
		for _, na := range st.Alloc.Nodes {
			nodes = append(nodes, fmt.Sprintf("%s%v", na.Name, na.CPUs))
		}
		r.note("start %d at %s on %s limit %v backfill %v", st.Job, at.Format(time.RFC3339Nano), strings.Join(nodes, ","), st.TimeLimit, st.Backfill)
		j, _ := r.s.Job(st.Job)
		r.byJob[st.Job] = len(r.usage)
		r.usage = append(r.usage, pollUsage{user: j.Spec.User, account: j.Spec.Account, cpus: float64(j.Alloc.Total()[gres.CPU]), start: at})
		if run := r.run[st.Job]; run < st.TimeLimit {
			r.finishes = append(r.finishes, pollTimed{at: at.Add(run), id: st.Job})
		}
	}
	for _, p := range cyc.Preemptions {
		r.note("preempt %d for %d kill at %s", p.Victim, p.Preemptor, p.KillAt.Format(time.RFC3339Nano))
		if !p.KillAt.After(at) {
			r.ended(p.Victim, at)
		}
	}
	for _, p := range cyc.PowerUp {
		r.note("power up %s for %d", p.Node, p.Job)
		r.finishes = append(r.finishes, pollTimed{at: at.Add(40 * time.Second), node: p.Node})
	}
	for _, n := range cyc.PowerDown {
		r.note("power down %s", n)
	}
	return cyc
}

// apply applies one exogenous event.
func (r *pollRun) apply(at time.Time, e *pollEvent) {
	s := r.s
	id := func(k int) scheduler.JobID {
		if k < len(r.ids) {
			return r.ids[k]
		}
		return 0
	}
	switch e.kind {
	case pollSubmit:
		sp := e.spec
		if e.dep >= 0 {
			sp.Dependency = fmt.Sprintf("%s:%d", sp.Dependency, id(e.dep))
		}
		j, err := s.Submit(at, sp)
		r.ids = append(r.ids, j) // 0 when refused: events naming it fail alike
		r.run[j] = e.run
		r.note("submit %d %v", j, err)
	case pollCancel:
		j := id(e.k)
		was, _ := s.Job(j)
		err := s.Cancel(at, j)
		r.note("cancel %d %v", j, err)
		if err == nil && was.State == scheduler.JobRunning {
			r.ended(j, at)
		}
	case pollHold:
		r.note("hold %d %v", id(e.k), s.Hold(at, id(e.k), false))
	case pollRelease:
		r.note("release %d %v", id(e.k), s.Release(at, id(e.k)))
	case pollReserve:
		err := s.AddReservation(at, e.resv)
		r.note("reserve %s %v", e.resv.Name, err)
		if err == nil {
			r.resv = append(r.resv, e.resv.Name)
		}
	case pollUnreserve:
		if len(r.resv) == 0 {
			return
		}
		name := r.resv[e.k%len(r.resv)]
		r.note("unreserve %s %v", name, s.RemoveReservation(at, name))
	}
}

// pollExtra returns n random instants in the scenario's span, off the
// whole seconds every event and wake falls on.
func pollExtra(rng *rand.Rand, sc *pollScenario, n int) []time.Time {
	from := sc.events[0].at
	span := sc.end.Sub(from)
	out := make([]time.Time, n)
	for i := range out {
		out[i] = from.Add(time.Duration(rng.Int64N(int64(span/time.Second)))*time.Second + time.Duration(1+rng.IntN(999))*time.Millisecond)
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

func TestPollingNeverChangesDecisions(t *testing.T) {
	seeds := 80
	if testing.Short() {
		seeds = 12
	}
	extraCalls, starts, preemptions := 0, 0, 0
	for seed := range uint64(seeds) {
		sc := newPollScenario(seed)
		base := runPoll(t, &sc, nil)
		rng := rand.New(rand.NewPCG(seed, 23))
		for _, n := range []int{5, 60, 400} {
			polled := runPoll(t, &sc, pollExtra(rng, &sc, n))
			extraCalls += polled.extra
			if diff := firstDiff(base.log, polled.log); diff != "" {
				t.Fatalf("seed %d (backfill %v, power %v, preempt %v, CalcPeriod %v), %d extra calls: %s", seed, sc.bf, sc.power, sc.preempt, sc.calcPeriod, n, diff)
			}
		}
		for _, l := range base.log {
			if strings.HasPrefix(l, "start ") {
				starts++
			}
			if strings.HasPrefix(l, "preempt ") {
				preemptions++
			}
		}
	}
	t.Logf("%d scenarios, %d starts, %d preemptions, %d extra calls", seeds, starts, preemptions, extraCalls)
	require.Greater(t, starts, seeds*10, "the scenarios start jobs")
	require.Positive(t, preemptions, "the scenarios preempt")
}

// firstDiff describes the first line where two transcripts differ, with
// the lines before it for context; "" when they are equal.
func firstDiff(a, b []string) string {
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			lo := max(0, i-8)
			ctx := ""
			if i > 0 {
				ctx = strings.Join(a[lo:min(i, len(a))], "\n  ")
			}
			return fmt.Sprintf("line %d:\n  %s\nwithout extra calls: %q\nwith extra calls:    %q", i, ctx, x, y)
		}
	}
	return ""
}
