package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/sim"
	"github.com/sluicehq/sluice/topology"
)

// TestIncrementalPlanMatchesFull is the correctness net of incremental
// planning (issue 18): whatever the backfill pass keeps from one pass to
// the next (the kept profile, the extended plan, and every cache added
// later, each switched off by scheduler.PlanFromScratch) must decide
// exactly as planning from scratch. Two schedulers built from the same
// configuration get the same random churn — submits (some with
// --time-min, a begin time, a dependency or a user reservation, some
// throttled arrays), finishes, cancels, holds and releases, priority,
// time-limit and nice updates of pending jobs, time-limit updates of
// running ones, requeues, nodes drained, failed, downed and resumed, GPUs
// failing, advance reservations added and removed — at the same times,
// with quiet cycles (nothing changed, some at the same instant) and light
// ones (one pending job or reservation changed, nothing ended) in
// between, and after every cycle their decisions are compared: starts
// (job, nodes with CPUs and GPUs, time limit, backfill), timeouts, audit
// records, the pending list (job, reason, priority, expected start), each
// pending job's planned nodes and whether it holds a backfill
// reservation, and the next wake. A mismatch names the mode, seed, step
// and time, and lists the lines only one side has.
//
// The matrix is EASY and conservative backfill × without and with policy
// (multifactor priority and QOS per-user GPU limits) × without and with
// advance reservations, on a 48-node GPU cluster with a switch tree and
// an NVLink domain (the planner choosing nodes through the topology), and
// again with fewer seeds on the same cluster without them ("+flat": the
// planner's own lowest-nodes choice, as on the standard cluster).
func TestIncrementalPlanMatchesFull(t *testing.T) {
	seeds, steps := 7, 180
	if testing.Short() {
		seeds, steps = 3, 150
	}
	for _, flat := range []bool{false, true} {
		for _, mode := range []backfill.Mode{backfill.EASY, backfill.Conservative} {
			for _, pol := range []bool{false, true} {
				for _, resv := range []bool{false, true} {
					name := strings.ToLower(mode.String())
					if pol {
						name += "+policy"
					}
					if resv {
						name += "+resv"
					}
					n := seeds
					if flat {
						name += "+flat"
						n = (seeds + 1) / 2
					}
					t.Run(name, func(t *testing.T) {
						var st churnStats
						for seed := range uint64(n) {
							runIncremental(t, incrementalCase{mode: mode, policy: pol, resv: resv, flat: flat, seed: seed, steps: steps}, &st)
						}
						t.Logf("%+v", st)
						// The sequences must reach the paths they test.
						require.Positive(t, st.backfilled, "backfilled starts")
						require.Positive(t, st.reserved, "pending jobs holding a reservation")
						require.Positive(t, st.extendable, "cycles that may extend the last plan")
						require.Positive(t, st.sameInstant, "cycles at the instant of the last")
					})
				}
			}
		}
	}
}

// incrementalCase is one random sequence of TestIncrementalPlanMatchesFull.
type incrementalCase struct {
	mode         backfill.Mode
	policy, resv bool
	// flat leaves the switch tree and the NVLink domain out (the
	// standard cluster's case: the planner's own lowest-nodes choice).
	flat  bool
	seed  uint64
	steps int
	// mutate, when set, is applied to the incremental scheduler only,
	// after New (for checking that the comparison can fail).
	mutate func(*scheduler.Scheduler)
}

// churnStats counts what the sequences exercised.
type churnStats struct {
	cycles, quiet, light, sameInstant, extendable int
	pending, maxPending                           int
	starts, backfilled, reserved, ended           int
	events, refused, settles                      int
}

// incrementalCluster is the test's cluster: sim.SyntheticCluster(48)
// (15 h100, 15 a100 and 18 GB200 nodes, partitions batch, h100 and
// gb200), with leaf switches of 8 nodes under two spines and the GB200
// nodes one NVLink domain; finished jobs are kept (MinJobAge 0).
func incrementalCluster(t *testing.T, flat bool) scheduler.Config {
	cfg, err := sim.SyntheticCluster(48)
	require.NoError(t, err)
	cfg.MinJobAge = 0
	if flat {
		return cfg
	}
	topo := &topology.Config{}
	var spines [2][]string
	for i := 0; i < len(cfg.Nodes); i += 8 {
		leaf := fmt.Sprintf("leaf%d", i/8)
		var names []string
		for _, n := range cfg.Nodes[i:min(i+8, len(cfg.Nodes))] {
			names = append(names, n.Name)
		}
		topo.Switches = append(topo.Switches, topology.SwitchConfig{Name: leaf, Nodes: names})
		spines[i/24] = append(spines[i/24], leaf)
	}
	topo.Switches = append(topo.Switches,
		topology.SwitchConfig{Name: "spine0", Switches: spines[0]},
		topology.SwitchConfig{Name: "spine1", Switches: spines[1]},
		topology.SwitchConfig{Name: "core", Switches: []string{"spine0", "spine1"}})
	var gb []string
	for _, n := range cfg.Nodes {
		if strings.HasPrefix(n.Name, "g") {
			gb = append(gb, n.Name)
		}
	}
	topo.Domains = []topology.DomainConfig{{Name: "nvl0", Nodes: gb}}
	cfg.Topology = topo
	return cfg
}

// incrementalConfig is the configuration of case c.
func incrementalConfig(t *testing.T, c incrementalCase) scheduler.Config {
	cfg := incrementalCluster(t, c.flat)
	cfg.Backfill = &backfill.Config{Mode: c.mode, Resolution: time.Minute}
	reg, err := scheduler.NewRegistry(cfg.Nodes)
	require.NoError(t, err)
	lim := func(s string) policy.TRESLimits {
		l, err := policy.ParseTRESLimits(reg, s)
		require.NoError(t, err)
		return l
	}
	switch {
	case c.policy:
		require.NoError(t, standardPriority(&cfg))
		cfg.Registry = reg
		cfg.Policy = &policy.Config{QOS: []policy.QOS{
			{Name: "high", Priority: 100, Limits: policy.QOSLimits{MaxTRESPerUser: lim("gres/gpu=32")}},
			{Name: "normal", Priority: 50, Limits: policy.QOSLimits{MaxTRESPerUser: lim("gres/gpu=16")}},
			{Name: "low", Priority: 10, Limits: policy.QOSLimits{MaxTRESPerUser: lim("gres/gpu=8")}},
			{Name: "standby", Limits: policy.QOSLimits{MaxTRESPerUser: lim("gres/gpu=64")}},
		}}
	case c.resv:
		// Reservations need a policy: the four QOS, without limits.
		cfg.Registry = reg
		cfg.Policy = &policy.Config{QOS: []policy.QOS{{Name: "high"}, {Name: "normal"}, {Name: "low"}, {Name: "standby"}}}
	}
	return cfg
}

// incrementalUsers is the user population: few, so that per-user limits
// bind, and u0001 the user of the user reservations.
const incrementalUsers = 6

// runIncremental runs case c on two schedulers, the one under test and
// one planning from scratch, and fails at the first cycle whose decisions
// differ.
func runIncremental(t *testing.T, c incrementalCase, st *churnStats) {
	t.Helper()
	cfg := incrementalConfig(t, c)
	inc, err := scheduler.New(cfg)
	require.NoError(t, err)
	ref, err := scheduler.New(incrementalConfig(t, c))
	require.NoError(t, err)
	scheduler.PlanFromScratch(ref)
	if c.mutate != nil {
		c.mutate(inc)
	}
	rng := rand.New(rand.NewPCG(c.seed, 18))
	gen, err := sim.NewSyntheticGenerator(sim.SyntheticConfig{Jobs: 1 << 20, Seed: c.seed, MaxNodes: 12,
		Users: incrementalUsers, Accounts: 3, NoProfiles: true})
	require.NoError(t, err)
	names := make([]string, len(cfg.Nodes))
	for i, n := range cfg.Nodes {
		names[i] = n.Name
	}

	now := sim.SyntheticEpoch().Add(17 * time.Second) // off the minute
	where := func(step int) string {
		return fmt.Sprintf("%v seed %d step %d (%v)", c.mode, c.seed, step, now.Format(time.TimeOnly))
	}
	var (
		ids   []scheduler.JobID
		ends  = map[scheduler.JobID]time.Time{} // when each started job finishes, if before its limit
		resvs []string
		last  time.Time
	)
	// both applies one event to both schedulers and checks they agree on
	// its outcome.
	both := func(step int, what string, f func(s *scheduler.Scheduler) (string, error)) {
		a, errA := f(inc)
		b, errB := f(ref)
		require.Equal(t, fmt.Sprint(b, errB), fmt.Sprint(a, errA), "%s: event %s", where(step), what)
		st.events++
		if errA != nil {
			st.refused++
		}
	}
	pick := func(state scheduler.JobState) (scheduler.JobID, bool) {
		var of []scheduler.JobID
		for _, id := range ids {
			if j, ok := inc.Job(id); ok && j.State == state {
				of = append(of, id)
			}
		}
		if len(of) == 0 {
			return 0, false
		}
		return of[rng.IntN(len(of))], true
	}
	submit := func(step int) {
		j, _ := gen.Next()
		spec := j.Spec
		switch k := rng.IntN(20); {
		case k < 2:
			spec.TimeMin = (spec.TimeLimit / 3).Truncate(time.Minute) // --time-min
		case k < 3:
			spec.BeginTime = now.Add(time.Duration(rng.IntN(3600)) * time.Second)
		case k < 5 && c.resv:
			spec.User, spec.Reservation = "u0001", "team"
		case k < 6 && len(ids) > 0:
			// A dependency: the settle pass decides it on the start.
			spec.Dependency = fmt.Sprintf("%s:%d", []string{"after", "afterok", "afterany"}[rng.IntN(3)], ids[len(ids)-1-rng.IntN(min(len(ids), 8))])
		case k < 7:
			// A small throttled array (JobArrayTaskLimit).
			var got []scheduler.JobID
			array := fmt.Sprintf("0-%d%%%d", 1+rng.IntN(5), 1+rng.IntN(2))
			both(step, "submit array "+array, func(s *scheduler.Scheduler) (string, error) {
				x, err := s.SubmitArray(now, spec, array)
				got = x
				return fmt.Sprint(x), err
			})
			ids = append(ids, got...)
			return
		}
		var id scheduler.JobID
		both(step, "submit", func(s *scheduler.Scheduler) (string, error) {
			x, err := s.Submit(now, spec)
			id = x
			return fmt.Sprint(x), err
		})
		if id != 0 {
			ids = append(ids, id)
		}
	}
	// event applies one random event; a light one is a submit, a pending
	// job's update, hold or release, or (with reservations) a reservation
	// added or removed: no job starts or ends, no node changes.
	event := func(step int, light bool) {
		k := rng.IntN(100)
		if light {
			opts := []int{100, 45 + rng.IntN(10), 60 + rng.IntN(6), 66 + rng.IntN(6), 88}
			if !c.resv {
				opts = opts[:4]
			}
			k = opts[rng.IntN(len(opts))]
		}
		switch {
		case k < 35:
			for range 1 + rng.IntN(6) {
				submit(step)
			}
		case k < 45:
			if id, ok := pick([]scheduler.JobState{scheduler.JobPending, scheduler.JobRunning}[rng.IntN(2)]); ok {
				both(step, fmt.Sprintf("cancel %d", id), func(s *scheduler.Scheduler) (string, error) { return "", s.Cancel(now, id) })
			}
		case k < 55:
			if id, ok := pick(scheduler.JobPending); ok {
				var u scheduler.JobUpdate
				switch rng.IntN(4) {
				case 0:
					p := uint32(1 + rng.IntN(100000))
					u.Priority = &p
				case 1:
					u.ResetPriority = true
				case 2:
					l := time.Duration(1+rng.IntN(48)) * 5 * time.Minute
					u.TimeLimit = &l
				default:
					n := rng.IntN(2000) - 1000
					u.Nice = &n
				}
				both(step, fmt.Sprintf("update %d %+v", id, u), func(s *scheduler.Scheduler) (string, error) { return "", s.UpdateJob(now, id, u) })
			}
		case k < 60:
			if id, ok := pick(scheduler.JobRunning); ok {
				l := time.Duration(1+rng.IntN(24*6)) * 10 * time.Minute
				both(step, fmt.Sprintf("update running %d limit %v", id, l), func(s *scheduler.Scheduler) (string, error) {
					return "", s.UpdateJob(now, id, scheduler.JobUpdate{TimeLimit: &l})
				})
			}
		case k < 66:
			if id, ok := pick(scheduler.JobPending); ok {
				admin := rng.IntN(2) == 0
				both(step, fmt.Sprintf("hold %d", id), func(s *scheduler.Scheduler) (string, error) { return "", s.Hold(now, id, admin) })
			}
		case k < 72:
			var held []scheduler.JobID
			for _, id := range ids {
				if j, ok := inc.Job(id); ok && j.State == scheduler.JobPending && j.Hold != scheduler.HoldNone {
					held = append(held, id)
				}
			}
			if len(held) > 0 {
				id := held[rng.IntN(len(held))]
				both(step, fmt.Sprintf("release %d", id), func(s *scheduler.Scheduler) (string, error) { return "", s.Release(now, id) })
			}
		case k < 77:
			if id, ok := pick(scheduler.JobRunning); ok {
				hold := rng.IntN(4) == 0
				both(step, fmt.Sprintf("requeue %d hold=%t", id, hold), func(s *scheduler.Scheduler) (string, error) {
					return "", s.RequeueJob(now, id, hold)
				})
			}
		case k < 80:
			n := names[rng.IntN(len(names))]
			both(step, "drain "+n, func(s *scheduler.Scheduler) (string, error) { return "", s.DrainNode(now, n, "test") })
		case k < 82:
			n := names[rng.IntN(len(names))]
			both(step, "down "+n, func(s *scheduler.Scheduler) (string, error) {
				aff, err := s.DownNode(now, n, "test")
				return fmt.Sprint(aff), err
			})
		case k < 83:
			n := names[rng.IntN(len(names))]
			both(step, "fail "+n, func(s *scheduler.Scheduler) (string, error) { return "", s.FailNode(now, n, "test") })
		case k < 85:
			// A GPU fails (or comes back) under the jobs that hold it.
			n, dev, ok := names[rng.IntN(len(names))], rng.IntN(4), rng.IntN(3) == 0
			both(step, fmt.Sprintf("health %s %d %t", n, dev, ok), func(s *scheduler.Scheduler) (string, error) {
				return "", s.SetDeviceHealth(now, n, dev, ok, "xid 79")
			})
		case k < 88:
			var off []string
			for _, n := range inc.Nodes() {
				if n.State != scheduler.NodeIdle && n.State != scheduler.NodeMixed && n.State != scheduler.NodeAllocated {
					off = append(off, n.Name)
				}
			}
			if len(off) > 0 {
				n := off[rng.IntN(len(off))]
				both(step, "resume "+n, func(s *scheduler.Scheduler) (string, error) { return "", s.ResumeNode(now, n) })
			}
		case k < 96 && c.resv:
			if len(resvs) >= 3 || len(resvs) > 0 && rng.IntN(3) == 0 {
				x := rng.IntN(len(resvs))
				name := resvs[x]
				resvs = slices.Delete(resvs, x, x+1)
				both(step, "unreserve "+name, func(s *scheduler.Scheduler) (string, error) { return "", s.RemoveReservation(now, name) })
				break
			}
			nodes := topology.NewNodeSet(len(names))
			first, count := rng.IntN(len(names)), 1+rng.IntN(6)
			for i := range count {
				nodes.Add((first + i) % len(names))
			}
			r := policy.Reservation{Name: fmt.Sprintf("maint%d", step),
				Start:    now.Add(time.Duration(rng.IntN(4*3600)) * time.Second),
				Duration: time.Duration(1800+rng.IntN(3*3600)) * time.Second,
				Nodes:    nodes, Users: []string{"root"}, Flags: policy.ResvMaint | policy.ResvIgnoreJobs}
			if rng.IntN(3) == 0 {
				// A user's reservation, which some jobs name.
				r.Name, r.Users, r.Flags = "team", []string{"u0001"}, policy.ResvIgnoreJobs
			}
			both(step, "reserve "+r.Name, func(s *scheduler.Scheduler) (string, error) { return "", s.AddReservation(now, r) })
			if !slices.Contains(resvs, r.Name) {
				resvs = append(resvs, r.Name)
			}
		default:
			submit(step)
		}
	}

	for step := range c.steps {
		// A quiet step changes nothing; a light one applies one light
		// event (see event) a few seconds later, without processing ends; the others move the clock up
		// to 10 minutes, end the jobs that ran their course and apply a
		// few events of any kind.
		var quiet, light bool
		if step > 0 {
			switch rng.IntN(8) {
			case 0, 1:
				quiet = true
			case 2, 3:
				light = true
			}
		}
		switch {
		case (quiet || light) && rng.IntN(2) == 0:
			// the same instant
		case quiet || light:
			now = now.Add(time.Duration(1+rng.IntN(20)) * time.Second)
		default:
			now = now.Add(time.Duration(rng.IntN(600)) * time.Second)
		}
		if light {
			event(step, true)
		} else if !quiet {
			// Jobs that ran their course end; then the step's events.
			var done []scheduler.JobID
			for id, end := range ends {
				if !end.After(now) {
					done = append(done, id)
				}
			}
			slices.Sort(done)
			for _, id := range done {
				delete(ends, id)
				if j, ok := inc.Job(id); ok && j.State == scheduler.JobRunning {
					both(step, fmt.Sprintf("finish %d", id), func(s *scheduler.Scheduler) (string, error) { return "", s.Finish(now, id, 0) })
				}
			}
			for range 1 + rng.IntN(3) {
				event(step, false)
			}
		}
		st.cycles++
		if quiet {
			st.quiet++
		}
		if light {
			st.light++
		}
		if now.Equal(last) {
			st.sameInstant++
		}
		if scheduler.MayExtendPlan(inc) {
			st.extendable++
		}
		last = now
		ca, errA := inc.Schedule(now)
		cb, errB := ref.Schedule(now)
		require.NoError(t, errA, where(step))
		require.NoError(t, errB, where(step))
		a, b := cycleDigest(inc, ca), cycleDigest(ref, cb)
		if !slices.Equal(a, b) {
			t.Fatalf("%s: the incremental scheduler decides otherwise than one planning from scratch\n%s", where(step), digestDiff(b, a))
		}
		for _, s := range ca.Starts {
			st.starts++
			if s.Backfill {
				st.backfilled++
			}
			// Most jobs end before their limit, some reach it.
			if j, ok := inc.Job(s.Job); ok && rng.IntN(5) > 0 {
				d := time.Duration(1 + rng.Int64N(int64(s.TimeLimit)))
				ends[j.ID] = now.Add(d)
			}
		}
		st.ended += len(ca.Ended)
		st.pending += len(ca.Pending)
		st.maxPending = max(st.maxPending, len(ca.Pending))
		for _, p := range ca.Pending {
			if scheduler.BackfillReserved(inc, p.Job) {
				st.reserved++
			}
		}
	}
	st.settles += int(scheduler.SettlePasses(inc))
}

// cycleDigest is what TestIncrementalPlanMatchesFull compares of a
// cycle: one line per decision, and one per pending job with its planned
// nodes and reservation from s.
func cycleDigest(s *scheduler.Scheduler, c scheduler.Cycle) []string {
	var out []string
	for _, st := range c.Starts {
		nodes := make([]string, len(st.Alloc.Nodes))
		for i, na := range st.Alloc.Nodes {
			nodes[i] = fmt.Sprintf("%s%v%v", na.Name, na.CPUs, na.Devices)
		}
		out = append(out, fmt.Sprintf("start %d nodes=%v limit=%v backfill=%t", st.Job, nodes, st.TimeLimit, st.Backfill))
	}
	for _, e := range c.Ended {
		out = append(out, fmt.Sprintf("ended %+v", e))
	}
	for _, p := range c.Preemptions {
		out = append(out, fmt.Sprintf("preempt %+v", p))
	}
	for _, d := range c.Decisions {
		out = append(out, fmt.Sprintf("decision %+v", d))
	}
	for _, p := range c.Pending {
		j, _ := s.Job(p.Job)
		out = append(out, fmt.Sprintf("pending %d reason=%v prio=%d expected=%v planned=%v reserved=%t",
			p.Job, p.Reason, p.Priority, p.ExpectedStart.Format(time.DateTime), j.PlannedNodes, scheduler.BackfillReserved(s, p.Job)))
	}
	out = append(out, fmt.Sprintf("nextwake %v", c.NextWake.Format(time.DateTime)))
	return out
}

// digestDiff shows how two digests differ: the lines only the one from
// scratch (want) has, then those only the incremental one (got) has, each
// in order, at most 12 of each.
func digestDiff(want, got []string) string {
	count := func(lines []string) map[string]int {
		m := map[string]int{}
		for _, l := range lines {
			m[l]++
		}
		return m
	}
	only := func(b *strings.Builder, title string, lines []string, other map[string]int) {
		fmt.Fprintf(b, "%s:\n", title)
		shown := 0
		for _, l := range lines {
			if other[l] > 0 {
				other[l]--
				continue
			}
			if shown++; shown <= 12 {
				fmt.Fprintf(b, "  %s\n", l)
			}
		}
		if shown > 12 {
			fmt.Fprintf(b, "  … %d more\n", shown-12)
		}
	}
	var b strings.Builder
	only(&b, "only from scratch", want, count(got))
	only(&b, "only incremental", got, count(want))
	fmt.Fprintf(&b, "(%d lines from scratch, %d incremental)", len(want), len(got))
	return b.String()
}
