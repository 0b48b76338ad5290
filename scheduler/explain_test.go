package scheduler_test

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/topology"
)

var policyVersionRE = regexp.MustCompile(`policy version [0-9a-f]{16}`)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/ with the current output")

// ---- a data-driven scenario runner, in the style of etcd-raft's tests ----
//
// A testdata/*.txt file is a sequence of cases separated by blank lines:
//
//	# comment lines
//	command arg=value flag ...
//	----
//	expected output
//
// Times are offsets from clustertest.Epoch ("at=+90m"). Commands:
//
//	cluster <mixed4|tree8> [backfill=none|easy|conservative] [res=1s] [window=24h] [maxnodes=N] [fairshare] [policy] [preempt]
//	submit [at=] [name=] [user=] [account=] [part=] [qos=] [n=nodes] [gpus=N] [type=T] [time=D] [tmin=D]
//	       [cpus=per-task] [tasks=] [mem=MiB] [excl] [requeue] [begin=+D] [switches=N] [resv=NAME] [dep=afterok:1]
//	schedule at=          one cycle; prints starts, ends, preemptions, pending reasons and ETAs
//	finish job= at=       the job completes
//	requeue job= at=      the job's launch failed: it is requeued; prints its audit record
//	drain|down|resume node= at=
//	health node= dev= bad|good at=
//	usage account= value=  fair-share usage of an account (and of its one user)
//	resv name= nodes=a,b start=+D dur=D users=u [maint]
//	explain job= at= [cf] [frac=F] [records]
//	audit                 the records of the last cycle
//	compare a= b=         Compare over every record so far
//	idle at=              IdleCapacity
type scenario struct {
	t       *testing.T
	s       *scheduler.Scheduler
	usage   map[string]float64
	last    []scheduler.Decision
	records scheduler.Decisions
}

func at(arg string) time.Time {
	d, err := time.ParseDuration(strings.TrimPrefix(arg, "+"))
	if err != nil {
		panic(fmt.Sprintf("bad time %q: %v", arg, err))
	}
	return clustertest.Epoch.Add(d)
}

// tree8 is 8 GPU nodes (4 a100 each, 32 CPUs, 256 GiB) under two leaf
// switches s0 (n0-n3) and s1 (n4-n7), one partition "all" (4 h max).
func tree8() scheduler.Config {
	cfg := scheduler.Config{
		Partitions: []scheduler.PartitionConfig{{Name: "all", MaxTime: 4 * time.Hour, DefaultTime: time.Hour}},
		Topology: &topology.Config{Switches: []topology.SwitchConfig{
			{Name: "s0", Nodes: []string{"n[0-3]"}},
			{Name: "s1", Nodes: []string{"n[4-7]"}},
			{Name: "spine", Switches: []string{"s0", "s1"}},
		}},
	}
	for i := range 8 {
		inv := gres.Inventory{}
		for d := range 4 {
			inv.Devices = append(inv.Devices, gres.Device{Index: d, Name: "gpu", Type: "a100", NUMA: -1, Socket: -1})
		}
		cfg.Nodes = append(cfg.Nodes, scheduler.NodeConfig{Name: fmt.Sprintf("n%d", i), CPUs: 32, MemoryMiB: 256 * 1024, Devices: inv})
	}
	return cfg
}

func (sc *scenario) fairShareTree(time.Time) ([]priority.Association, error) {
	accts := []string{"physics", "bio", "chem"}
	out := []priority.Association{{Account: "root", Shares: 1}}
	total := 0.0
	for _, a := range accts {
		total += sc.usage[a]
	}
	out[0].Usage = total
	for _, a := range accts {
		out = append(out,
			priority.Association{Account: a, Parent: "root", Shares: 1, Usage: sc.usage[a]},
			priority.Association{Account: a, User: userOf(a), Shares: 1, Usage: sc.usage[a]})
	}
	return out, nil
}

func userOf(account string) string {
	switch account {
	case "physics":
		return "ann"
	case "bio":
		return "cy"
	}
	return "dee"
}

func (sc *scenario) cluster(args map[string]string, flags []string) string {
	var cfg scheduler.Config
	switch flags[0] {
	case "mixed4":
		cfg = clustertest.Mixed4()
	case "tree8":
		cfg = tree8()
	default:
		sc.t.Fatalf("unknown cluster %q", flags[0])
	}
	res := time.Second
	if v, ok := args["res"]; ok {
		res = mustDur(v)
	}
	switch args["backfill"] {
	case "", "conservative":
		cfg.Backfill = &backfill.Config{Mode: backfill.Conservative, Resolution: res}
	case "easy":
		cfg.Backfill = &backfill.Config{Mode: backfill.EASY, Resolution: res}
	case "none":
	default:
		sc.t.Fatalf("backfill=%s", args["backfill"])
	}
	if v, ok := args["maxnodes"]; ok {
		cfg.Partitions[0].MaxNodes = mustInt(v)
	}
	if w, ok := args["window"]; ok && cfg.Backfill != nil {
		cfg.Backfill.Window = mustDur(w)
	}
	if slices.Contains(flags, "fairshare") {
		sc.usage = map[string]float64{}
		cfg.Priority = &scheduler.PriorityConfig{
			Engine:    priority.Config{Weights: priority.Weights{FairShare: 10000, Age: 100}, MaxAge: 24 * time.Hour},
			FairShare: scheduler.FairShareFunc(sc.fairShareTree),
		}
	}
	if slices.Contains(flags, "policy") {
		reg, err := scheduler.NewRegistry(cfg.Nodes)
		require.NoError(sc.t, err)
		lim := func(s string) policy.TRESLimits {
			l, err := policy.ParseTRESLimits(reg, s)
			require.NoError(sc.t, err)
			return l
		}
		cfg.Registry = reg
		cfg.Policy = &policy.Config{
			QOS: []policy.QOS{{Name: "normal", Limits: policy.QOSLimits{MaxTRESPerUser: lim("gres/gpu=8")}}},
			Assocs: []policy.Assoc{
				{Account: "physics", Limits: policy.AssocLimits{Limits: policy.Limits{GrpTRES: lim("gres/gpu=12")}}},
				{Account: "bio"},
				{Account: "physics", User: "ann"},
				{Account: "physics", User: "bob"},
				{Account: "bio", User: "cy"},
			},
		}
	}
	if slices.Contains(flags, "preempt") {
		cfg.Policy = &policy.Config{
			PreemptType: policy.PreemptQOS, PreemptMode: policy.PreemptRequeue,
			QOS: []policy.QOS{{Name: "urgent", Priority: 100, Preempt: []string{"standby"}}, {Name: "standby"}},
		}
	}
	s, err := scheduler.New(cfg)
	require.NoError(sc.t, err)
	sc.s = s
	return "ok"
}

func mustDur(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

func mustInt(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

func (sc *scenario) submit(args map[string]string, flags []string) string {
	spec := scheduler.JobSpec{Name: args["name"], User: args["user"], Account: args["account"], Partition: args["part"],
		QOS: args["qos"], Reservation: args["resv"], Dependency: args["dep"]}
	if v, ok := args["n"]; ok {
		spec.Nodes = mustInt(v)
	}
	if v, ok := args["gpus"]; ok {
		spec.GRESPerNode = []gres.Request{{Name: "gpu", Type: args["type"], Count: int64(mustInt(v))}}
	}
	if v, ok := args["time"]; ok {
		spec.TimeLimit = mustDur(v)
	}
	if v, ok := args["tmin"]; ok {
		spec.TimeMin = mustDur(v)
	}
	if v, ok := args["cpus"]; ok {
		spec.CPUsPerTask = mustInt(v)
	}
	if v, ok := args["tasks"]; ok {
		spec.Tasks = mustInt(v)
	}
	if v, ok := args["mem"]; ok {
		spec.MemPerNodeMiB = int64(mustInt(v))
	}
	if v, ok := args["switches"]; ok {
		spec.Switches = mustInt(v)
	}
	if v, ok := args["begin"]; ok {
		spec.BeginTime = at(v)
	}
	spec.Exclusive = slices.Contains(flags, "excl")
	switch {
	case slices.Contains(flags, "requeue"):
		spec.Requeue = scheduler.RequeueYes
	case slices.Contains(flags, "norequeue"):
		spec.Requeue = scheduler.RequeueNo
	}
	id, err := sc.s.Submit(at(args["at"]), spec)
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("job %d", id)
}

func (sc *scenario) schedule(args map[string]string) string {
	now := at(args["at"])
	cyc, err := sc.s.Schedule(now)
	if err != nil {
		return "error: " + err.Error()
	}
	sc.last = sc.s.AuditRecords(cyc)
	sc.records = append(sc.records, sc.last...)
	var b strings.Builder
	for _, e := range cyc.Ended {
		fmt.Fprintf(&b, "ended %d %s (%s)\n", e.Job, e.State, e.Reason)
	}
	for _, p := range cyc.Preemptions {
		fmt.Fprintf(&b, "preempt %d for %d (%s)\n", p.Victim, p.Preemptor, p.Action)
	}
	for _, st := range cyc.Starts {
		how := "start"
		if st.Backfill {
			how = "backfill"
		}
		fmt.Fprintf(&b, "%s %d on %s\n", how, st.Job, strings.Join(st.Alloc.NodeNames(), ","))
	}
	for _, p := range cyc.Pending {
		fmt.Fprintf(&b, "pending %d %s", p.Job, p.Reason)
		if !p.ExpectedStart.IsZero() {
			fmt.Fprintf(&b, " eta +%s", p.ExpectedStart.Sub(clustertest.Epoch))
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		return "nothing"
	}
	return strings.TrimRight(b.String(), "\n")
}

func (sc *scenario) run(cmd string, args map[string]string, flags []string) string {
	s := sc.s
	switch cmd {
	case "cluster":
		return sc.cluster(args, flags)
	case "submit":
		return sc.submit(args, flags)
	case "schedule":
		return sc.schedule(args)
	case "finish":
		if err := s.Finish(at(args["at"]), scheduler.JobID(mustInt(args["job"])), 0); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "drain", "down", "resume":
		var err error
		switch cmd {
		case "drain":
			err = s.DrainNode(at(args["at"]), args["node"], "test")
		case "down":
			_, err = s.DownNode(at(args["at"]), args["node"], "test")
		default:
			err = s.ResumeNode(at(args["at"]), args["node"])
		}
		if err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "requeue":
		now, id := at(args["at"]), scheduler.JobID(mustInt(args["job"]))
		if err := s.Requeue(now, id); err != nil {
			return "error: " + err.Error()
		}
		d, err := s.RequeueRecord(now, id)
		if err != nil {
			return "error: " + err.Error()
		}
		sc.records = append(sc.records, d)
		return d.String()
	case "health":
		if err := s.SetDeviceHealth(at(args["at"]), args["node"], mustInt(args["dev"]), slices.Contains(flags, "good"), "xid 79"); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "usage":
		v, err := strconv.ParseFloat(args["value"], 64)
		require.NoError(sc.t, err)
		sc.usage[args["account"]] = v
		return "ok"
	case "resv":
		nodes := topology.NewNodeSet(len(s.Nodes()))
		for _, n := range strings.Split(args["nodes"], ",") {
			ni, ok := s.Node(n)
			require.True(sc.t, ok, n)
			nodes.Add(ni.Index)
		}
		r := policy.Reservation{Name: args["name"], Start: at(args["start"]), Duration: mustDur(args["dur"]), Nodes: nodes,
			Users: strings.Split(args["users"], ",")}
		if slices.Contains(flags, "maint") {
			r.Flags = policy.ResvMaint | policy.ResvIgnoreJobs
		}
		if slices.Contains(flags, "magnetic") {
			r.Flags |= policy.ResvMagnetic
		}
		if err := s.AddReservation(at(args["at"]), r); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "explain":
		opts := scheduler.ExplainOptions{Counterfactuals: slices.Contains(flags, "cf")}
		if v, ok := args["frac"]; ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(sc.t, err)
			opts.RuntimeFraction = f
		}
		if slices.Contains(flags, "records") {
			opts.Records = sc.records
		}
		ex, err := s.Explain(at(args["at"]), scheduler.JobID(mustInt(args["job"])), opts)
		if err != nil {
			return "error: " + err.Error()
		}
		return strings.TrimRight(ex.String(), "\n")
	case "audit":
		var b strings.Builder
		for _, d := range sc.last {
			b.WriteString(d.String() + "\n")
		}
		if b.Len() == 0 {
			return "no records"
		}
		return strings.TrimRight(b.String(), "\n")
	case "compare":
		c, err := scheduler.CompareJobs(sc.records, scheduler.JobID(mustInt(args["a"])), scheduler.JobID(mustInt(args["b"])))
		require.NoError(sc.t, err)
		return c.String()
	case "idle":
		r := s.IdleCapacity(at(args["at"]))
		var b strings.Builder
		b.WriteString(r.String())
		for _, n := range r.Nodes {
			fmt.Fprintf(&b, "  %s:", n.Node)
			for c := range scheduler.NumIdleClasses {
				if n.GPUs[c] > 0 || n.CPUs[c] > 0 {
					fmt.Fprintf(&b, " %s gpus=%d cpus=%d;", c, n.GPUs[c], n.CPUs[c])
				}
			}
			b.WriteString("\n")
		}
		return strings.TrimRight(b.String(), "\n")
	}
	sc.t.Fatalf("unknown command %q", cmd)
	return ""
}

// goldenCase is one command and its expected output.
type goldenCase struct {
	comments []string
	cmd      string
	want     string
}

func parseGolden(t *testing.T, path string) []goldenCase {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []goldenCase
	var cur goldenCase
	inOut := false
	var want []string
	flush := func() {
		if cur.cmd != "" {
			cur.want = strings.Join(want, "\n")
			out = append(out, cur)
		}
		cur, want, inOut = goldenCase{}, nil, false
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case inOut && line == "":
			flush()
		case inOut:
			want = append(want, line)
		case line == "----":
			inOut = true
		case strings.HasPrefix(line, "#") || (line == "" && cur.cmd == ""):
			cur.comments = append(cur.comments, line)
		default:
			require.Empty(t, cur.cmd, "%s: two commands without ---- before %q", path, line)
			cur.cmd = line
		}
	}
	require.NoError(t, sc.Err())
	flush()
	return out
}

func runGolden(t *testing.T, path string) {
	cases := parseGolden(t, path)
	sc := &scenario{t: t}
	var rewritten strings.Builder
	for k, c := range cases {
		fields := strings.Fields(c.cmd)
		args := map[string]string{}
		var flags []string
		for _, f := range fields[1:] {
			if key, v, ok := strings.Cut(f, "="); ok {
				args[key] = v
			} else {
				flags = append(flags, f)
			}
		}
		if _, ok := args["at"]; !ok {
			args["at"] = "+0s"
		}
		// Policy versions hash the whole configuration: any new knob
		// changes them, so the files show their shape only.
		got := policyVersionRE.ReplaceAllString(sc.run(fields[0], args, flags), "policy version <hash>")
		if *updateGolden {
			for _, l := range c.comments {
				rewritten.WriteString(l + "\n")
			}
			rewritten.WriteString(c.cmd + "\n----\n" + got + "\n")
			if k < len(cases)-1 {
				rewritten.WriteString("\n")
			}
			continue
		}
		assert.Equal(t, c.want, got, "%s: case %d: %s", path, k+1, c.cmd)
	}
	if *updateGolden {
		require.NoError(t, os.WriteFile(path, []byte(rewritten.String()), 0o644))
	}
}

// TestExplainGolden runs every scenario in testdata/: one per blocker
// kind, per counterfactual kind, the audit trail and the idle classes.
// Run with -update to rewrite the expected output.
func TestExplainGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runGolden(t, f) })
	}
}

// ---- properties ----

// randSpec draws a job for the Mixed4 cluster.
func randSpec(rng *rand.Rand) scheduler.JobSpec {
	spec := scheduler.JobSpec{}
	limits := []time.Duration{30 * time.Minute, time.Hour, 90 * time.Minute, 2 * time.Hour, 3 * time.Hour, 4 * time.Hour}
	spec.TimeLimit = limits[rng.IntN(len(limits))]
	if rng.IntN(5) == 0 {
		spec.Partition = "h100"
	}
	typ := []string{"", "h100", "a100"}[rng.IntN(3)]
	if spec.Partition == "h100" && typ == "a100" {
		typ = "h100"
	}
	spec.Nodes = 1
	if k := rng.IntN(10); k >= 7 {
		spec.Nodes = 2
	}
	if rng.IntN(10) == 0 {
		spec.Exclusive = true
	} else {
		spec.GRESPerNode = []gres.Request{{Name: "gpu", Type: typ, Count: []int64{1, 2, 4, 8}[rng.IntN(4)]}}
	}
	return spec
}

// cfScenario replays a seeded scenario on Mixed4 with conservative
// backfill: jobs submitted and scheduled at t0, and at t1 the target
// (or a replacement spec) submitted and scheduled. It returns the
// scheduler and the target's ID (0 when the spec is rejected).
func cfScenario(t *testing.T, seed uint64, mode backfill.Mode, target *scheduler.JobSpec) (*scheduler.Scheduler, scheduler.JobID, scheduler.JobSpec) {
	rng := rand.New(rand.NewPCG(seed, 8))
	cfg := clustertest.Mixed4()
	cfg.Backfill = &backfill.Config{Mode: mode, Resolution: time.Second, Window: 7 * 24 * time.Hour}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	t0 := clustertest.Epoch
	for range 3 + rng.IntN(10) {
		_, _ = s.Submit(t0, randSpec(rng)) // a rejected spec is skipped
	}
	_, err = s.Schedule(t0)
	require.NoError(t, err)
	t1 := t0.Add(time.Minute)
	spec := randSpec(rng)
	if target != nil {
		spec = *target
	}
	id, err := s.Submit(t1, spec)
	if err != nil {
		return s, 0, spec
	}
	_, err = s.Schedule(t1)
	require.NoError(t, err)
	return s, id, spec
}

// runUntilStart advances the scheduler event by event (every running job
// ends at its deadline, ended by the cycle itself) until job id starts or
// the time passes limit; it returns the start (zero when it did not).
func runUntilStart(t *testing.T, s *scheduler.Scheduler, id scheduler.JobID, from, limit time.Time) time.Time {
	now := from
	for {
		j, _ := s.Job(id)
		if j.State != scheduler.JobPending {
			return j.StartTime
		}
		next := time.Time{}
		for _, r := range s.Jobs() {
			if r.State == scheduler.JobRunning {
				if end := r.StartTime.Add(r.TimeLimit); end.After(now) && (next.IsZero() || end.Before(next)) {
					next = end
				}
			}
		}
		if next.IsZero() || next.After(limit) {
			return time.Time{}
		}
		now = next
		_, err := s.Schedule(now)
		require.NoError(t, err)
	}
}

// TestCounterfactualsAreTrue applies every counterfactual Explain offers
// (the changed request submitted in the job's place, same queue position)
// and checks that the job then starts no later than promised: under
// conservative backfill for every counterfactual, under EASY for those
// that start now (EASY's later starts are estimates).
func TestCounterfactualsAreTrue(t *testing.T) {
	for _, mode := range []backfill.Mode{backfill.Conservative, backfill.EASY} {
		t.Run(mode.String(), func(t *testing.T) { testCounterfactualsAreTrue(t, mode) })
	}
}

func testCounterfactualsAreTrue(t *testing.T, mode backfill.Mode) {
	offered := map[scheduler.CounterfactualKind]int{}
	for seed := range uint64(300) {
		s, id, _ := cfScenario(t, seed, mode, nil)
		if id == 0 {
			continue
		}
		t1 := clustertest.Epoch.Add(time.Minute)
		ex, err := s.Explain(t1, id, scheduler.ExplainOptions{Counterfactuals: true, RuntimeFraction: 0.5})
		require.NoError(t, err)
		if ex.State != scheduler.JobPending {
			continue
		}
		if est := ex.Estimate; est != nil && !est.Start.IsZero() {
			require.False(t, est.Earliest.After(est.Start), "seed %d: range lower end after the estimate", seed)
		}
		for _, cf := range ex.Counterfactuals {
			if cf.Kind == scheduler.CounterFairShare {
				continue
			}
			require.True(t, cf.Was.IsZero() || cf.Start.Before(cf.Was), "seed %d: %s does not improve", seed, cf)
			if mode == backfill.EASY && !cf.Now {
				continue
			}
			offered[cf.Kind]++
			spec := cf.Spec
			s2, id2, _ := cfScenario(t, seed, mode, &spec)
			require.NotZero(t, id2, "seed %d: %s: the changed spec is rejected", seed, cf)
			require.Equal(t, id, id2)
			got := runUntilStart(t, s2, id2, t1, cf.Start)
			require.False(t, got.IsZero(), "seed %d: %s: not started by %s\n%s", seed, cf, cf.Start, ex)
			require.False(t, got.After(cf.Start), "seed %d: %s: started %s, promised %s", seed, cf, got, cf.Start)
			if cf.Now {
				require.Equal(t, t1, got, "seed %d: %s", seed, cf)
			}
		}
	}
	t.Logf("counterfactuals verified: %v", offered)
	for _, k := range []scheduler.CounterfactualKind{scheduler.CounterTimeLimit, scheduler.CounterGPUs, scheduler.CounterPartition, scheduler.CounterGPUType} {
		assert.Positive(t, offered[k], "no %s counterfactual was offered: the property was not exercised", k)
	}
}

// TestETAHonesty drives a seeded workload whose jobs run exactly their time
// limits under conservative backfill (FCFS order, 1 s resolution): the
// first expected start Explain gives each job is its actual start.
func TestETAHonesty(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 99))
		cfg := clustertest.Mixed4()
		cfg.Backfill = &backfill.Config{Mode: backfill.Conservative, Resolution: time.Second, Window: 30 * 24 * time.Hour}
		s, err := scheduler.New(cfg)
		require.NoError(t, err)
		type arrival struct {
			at   time.Time
			spec scheduler.JobSpec
		}
		var arrivals []arrival
		for range 40 {
			spec := randSpec(rng)
			spec.Partition = "" // one tier: a later job never outranks an earlier one
			arrivals = append(arrivals, arrival{clustertest.Epoch.Add(time.Duration(rng.IntN(4*3600)) * time.Second), spec})
		}
		slices.SortStableFunc(arrivals, func(a, b arrival) int { return a.at.Compare(b.at) })
		eta := map[scheduler.JobID]time.Time{}
		now := clustertest.Epoch
		checked := 0
		for steps := 0; steps < 10000; steps++ {
			for len(arrivals) > 0 && !arrivals[0].at.After(now) {
				_, _ = s.Submit(now, arrivals[0].spec)
				arrivals = arrivals[1:]
			}
			cyc, err := s.Schedule(now)
			require.NoError(t, err)
			for _, st := range cyc.Starts {
				if want, ok := eta[st.Job]; ok {
					require.Equal(t, want, now, "seed %d: job %d started at %s, first expected %s", seed, st.Job, now, want)
					checked++
				}
			}
			for _, p := range cyc.Pending {
				if _, ok := eta[p.Job]; ok {
					continue
				}
				ex, err := s.Explain(now, p.Job, scheduler.ExplainOptions{})
				require.NoError(t, err)
				require.NotNil(t, ex.Estimate)
				require.Equal(t, p.ExpectedStart, ex.Estimate.Start, "seed %d: Explain and the cycle disagree", seed)
				if !ex.Estimate.Start.IsZero() {
					eta[p.Job] = ex.Estimate.Start
				}
			}
			// Next event: an arrival or a running job's end.
			next := time.Time{}
			if len(arrivals) > 0 {
				next = arrivals[0].at
			}
			for _, r := range s.Jobs() {
				if r.State == scheduler.JobRunning {
					if end := r.StartTime.Add(r.TimeLimit); next.IsZero() || end.Before(next) {
						next = end
					}
				}
			}
			if next.IsZero() {
				break
			}
			now = next
		}
		p, r := s.Counts()
		require.Zero(t, p+r, "seed %d: jobs left", seed)
		require.Positive(t, checked)
	}
}

// TestFairShareCounterfactualIsTrue applies the fair-share counterfactual
// (the account's usage halves, the others' holds) and checks the job's
// rank after the next priority recalculation is the one promised.
func TestFairShareCounterfactualIsTrue(t *testing.T) {
	for _, flags := range []priority.Flags{0, priority.NoFairTree} {
		offered := 0
		for seed := range uint64(40) {
			rng := rand.New(rand.NewPCG(seed, 5))
			accts := []string{"physics", "bio", "chem", "math"}
			usage := map[string]float64{}
			for _, a := range accts {
				usage[a] = float64(100 + rng.IntN(5000))
			}
			tree := func(time.Time) ([]priority.Association, error) {
				out := []priority.Association{{Account: "root", Shares: 1}}
				for _, a := range accts {
					out[0].Usage += usage[a]
					out = append(out, priority.Association{Account: a, Parent: "root", Shares: int64(1 + len(a)%3), Usage: usage[a]},
						priority.Association{Account: a, User: a + "-u", Shares: 1, Usage: usage[a]})
				}
				return out, nil
			}
			cfg := clustertest.Mixed4()
			cfg.Backfill = &backfill.Config{Resolution: time.Second}
			cfg.Priority = &scheduler.PriorityConfig{
				Engine:    priority.Config{Weights: priority.Weights{FairShare: 100000, JobSize: 100}, Flags: flags},
				FairShare: scheduler.FairShareFunc(tree),
			}
			s, err := scheduler.New(cfg)
			require.NoError(t, err)
			now := clustertest.Epoch
			// The whole cluster is busy: the ranks are the queue's.
			_, err = s.Submit(now, scheduler.JobSpec{User: "x", Account: "physics", Nodes: 4, Exclusive: true, TimeLimit: 10 * time.Hour})
			require.NoError(t, err)
			_, err = s.Schedule(now)
			require.NoError(t, err)
			var ids []scheduler.JobID
			for range 8 {
				a := accts[rng.IntN(len(accts))]
				id, err := s.Submit(now, scheduler.JobSpec{User: a + "-u", Account: a, GRESPerNode: gpus(int64(1 + rng.IntN(8))), TimeLimit: time.Hour})
				require.NoError(t, err)
				ids = append(ids, id)
			}
			_, err = s.Schedule(now)
			require.NoError(t, err)
			for _, id := range ids {
				ex, err := s.Explain(now, id, scheduler.ExplainOptions{Counterfactuals: true})
				require.NoError(t, err)
				for _, cf := range ex.Counterfactuals {
					if cf.Kind != scheduler.CounterFairShare {
						continue
					}
					offered++
					require.Less(t, cf.Rank, cf.RankWas)
					// Apply: the account's usage halves, the others' holds.
					saved := usage[cf.Account]
					usage[cf.Account] = saved / 2
					s2, err := scheduler.New(cfg)
					require.NoError(t, err)
					_, _ = s2.Submit(now, scheduler.JobSpec{User: "x", Account: "physics", Nodes: 4, Exclusive: true, TimeLimit: 10 * time.Hour})
					_, err = s2.Schedule(now)
					require.NoError(t, err)
					rng2 := rand.New(rand.NewPCG(seed, 5))
					for range accts {
						rng2.IntN(5000)
					}
					for range 8 {
						a := accts[rng2.IntN(len(accts))]
						_, err := s2.Submit(now, scheduler.JobSpec{User: a + "-u", Account: a, GRESPerNode: gpus(int64(1 + rng2.IntN(8))), TimeLimit: time.Hour})
						require.NoError(t, err)
					}
					cyc, err := s2.Schedule(now)
					require.NoError(t, err)
					usage[cf.Account] = saved
					rank := 0
					for k, p := range cyc.Pending {
						if p.Job == id {
							rank = k + 1
						}
					}
					require.Equal(t, cf.Rank, rank, "seed %d job %d: %s", seed, id, cf)
					p, _ := s2.Job(id)
					require.Equal(t, cf.Priority, p.Priority, "seed %d job %d", seed, id)
				}
			}
		}
		assert.Positive(t, offered, "flags %v: no fair-share counterfactual offered", flags)
		t.Logf("flags %v: %d fair-share counterfactuals verified", flags, offered)
	}
}

// ---- benchmarks at the standard scale ----

// stdState is a standard-scale state (40,000 running, 100,000 pending,
// multifactor priority, backfill) after one cycle, with 64 pending jobs
// spread evenly over the queue to explain.
type stdState struct {
	s     *scheduler.Scheduler
	now   time.Time
	first scheduler.Cycle
	took  time.Duration
	jobs  []scheduler.JobID
}

// benchStates caches the states by backfill mode, built once per run.
var benchStates = map[backfill.Mode]*stdState{}

func standardBench(b *testing.B, mode backfill.Mode) *stdState {
	b.Helper()
	if st := benchStates[mode]; st != nil {
		return st
	}
	s, now, err := clustertest.NewState(clustertest.StateOptions{Running: 40000, Pending: 100000, Seed: 1,
		Configure: func(c *scheduler.Config) error {
			if err := standardPriority(c); err != nil {
				return err
			}
			c.Backfill = &backfill.Config{Mode: mode}
			return nil
		}})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	cyc, err := s.Schedule(now)
	if err != nil {
		b.Fatal(err)
	}
	st := &stdState{s: s, now: now, first: cyc, took: time.Since(start)}
	for k := range 64 {
		st.jobs = append(st.jobs, cyc.Pending[k*len(cyc.Pending)/64].Job)
	}
	benchStates[mode] = st
	return st
}

// BenchmarkExplain explains one pending job at the standard scale with
// EASY and with conservative backfill, cycling over 64 jobs spread over
// the queue: without counterfactuals (target < 5 ms), and with
// counterfactuals and the historical-runtime range (target < 50 ms).
func BenchmarkExplain(b *testing.B) {
	for _, mode := range []backfill.Mode{backfill.EASY, backfill.Conservative} {
		for _, bc := range []struct {
			name string
			opts scheduler.ExplainOptions
		}{
			{"plain", scheduler.ExplainOptions{}},
			{"counterfactuals", scheduler.ExplainOptions{Counterfactuals: true, RuntimeFraction: 0.4}},
		} {
			b.Run(mode.String()+"/"+bc.name, func(b *testing.B) {
				st := standardBench(b, mode)
				k, cfs := 0, 0
				for b.Loop() {
					ex, err := st.s.Explain(st.now, st.jobs[k%len(st.jobs)], bc.opts)
					if err != nil {
						b.Fatal(err)
					}
					cfs += len(ex.Counterfactuals)
					k++
				}
				b.ReportMetric(float64(cfs)/float64(k), "counterfactuals/op")
			})
		}
	}
}

// BenchmarkIdleCapacity classifies the idle capacity of the standard state
// (EASY backfill).
func BenchmarkIdleCapacity(b *testing.B) {
	st := standardBench(b, backfill.EASY)
	s, now := st.s, st.now
	for b.Loop() {
		_ = s.IdleCapacity(now)
	}
}

// BenchmarkAuditRecords measures the audit records of the standard state's
// (EASY backfill) first cycle after it was built, of a steady-state cycle,
// and of a cycle that starts many jobs, and reports their cost as a share
// of the cycle.
func BenchmarkAuditRecords(b *testing.B) {
	st := standardBench(b, backfill.EASY)
	s, now := st.s, st.now
	b.Run("first-cycle", func(b *testing.B) {
		n := 0
		for b.Loop() {
			n = len(s.AuditRecords(st.first))
		}
		b.ReportMetric(float64(n), "records")
		b.ReportMetric(float64(st.took.Nanoseconds()), "cycle-ns")
	})
	b.Run("steady-cycle", func(b *testing.B) {
		var cycle, audit time.Duration
		n := 0
		for b.Loop() {
			t := time.Now()
			cyc, err := s.Schedule(now)
			if err != nil {
				b.Fatal(err)
			}
			cycle += time.Since(t)
			t = time.Now()
			n += len(s.AuditRecords(cyc))
			audit += time.Since(t)
		}
		b.ReportMetric(100*audit.Seconds()/cycle.Seconds(), "audit-%-of-cycle")
		b.ReportMetric(float64(n)/float64(b.N), "records/op")
	})
	// Last, as it changes the shared state: 4,000 running jobs end and one
	// cycle starts thousands (most of them by backfill).
	b.Run("many-starts", func(b *testing.B) {
		var ids []scheduler.JobID
		for _, j := range s.Jobs() {
			if j.State == scheduler.JobRunning && len(ids) < 4000 {
				ids = append(ids, j.ID)
			}
		}
		later := now.Add(time.Second)
		for _, id := range ids {
			if err := s.Finish(later, id, 0); err != nil {
				b.Fatal(err)
			}
		}
		t := time.Now()
		cyc, err := s.Schedule(later)
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(t)
		bf := 0
		for _, st := range cyc.Starts {
			if st.Backfill {
				bf++
			}
		}
		var audit time.Duration
		n := 0
		for b.Loop() {
			t := time.Now()
			n = len(s.AuditRecords(cyc))
			audit += time.Since(t)
		}
		b.ReportMetric(float64(n), "records")
		b.ReportMetric(float64(bf), "backfill-starts")
		b.ReportMetric(float64(took.Nanoseconds()), "cycle-ns")
		b.ReportMetric(100*audit.Seconds()/float64(b.N)/took.Seconds(), "audit-%-of-cycle")
	})
	b.Run("policy-version", func(b *testing.B) {
		for b.Loop() {
			_ = s.PolicyVersion()
		}
	})
}

// A job waits behind a bigger one that holds the plan's nodes: Explain
// says why, when it will start, and — verified by re-planning — what
// would let it start now.
func ExampleScheduler_Explain() {
	node := func(name string) scheduler.NodeConfig {
		inv := gres.Inventory{}
		for i := range 4 {
			inv.Devices = append(inv.Devices, gres.Device{Index: i, Name: "gpu", Type: "a100", NUMA: -1, Socket: -1})
		}
		return scheduler.NodeConfig{Name: name, CPUs: 32, MemoryMiB: 256 * 1024, Devices: inv}
	}
	s, err := scheduler.New(scheduler.Config{
		Nodes:      []scheduler.NodeConfig{node("n1"), node("n2")},
		Partitions: []scheduler.PartitionConfig{{Name: "gpu", MaxTime: 24 * time.Hour}},
		Backfill:   &backfill.Config{Resolution: time.Second},
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	gpus := func(n int64) []gres.Request { return []gres.Request{{Name: "gpu", Count: n}} }
	submit := func(spec scheduler.JobSpec) scheduler.JobID {
		id, err := s.Submit(now, spec)
		if err != nil {
			panic(err)
		}
		return id
	}
	submit(scheduler.JobSpec{User: "ann", GRESPerNode: gpus(4), TimeLimit: 2 * time.Hour})
	if _, err := s.Schedule(now); err != nil {
		panic(err)
	}
	submit(scheduler.JobSpec{User: "bob", Nodes: 2, GRESPerNode: gpus(4), TimeLimit: time.Hour})
	long := submit(scheduler.JobSpec{User: "cy", GRESPerNode: gpus(4), TimeLimit: 3 * time.Hour})
	if _, err := s.Schedule(now); err != nil {
		panic(err)
	}
	ex, err := s.Explain(now, long, scheduler.ExplainOptions{Counterfactuals: true})
	if err != nil {
		panic(err)
	}
	fmt.Print(ex)
	// Output:
	// Job 3 (gpu, cy) is PENDING: Priority
	//   Priority 0, 2nd in partition gpu (queue position 2 of 2)
	//   Blockers:
	//     - queue: 1 higher-priority job(s) hold the plan's resources first:
	//       - job 2 (priority 0, gpu, Resources) planned at 2026-01-05 11:00:00 (in 2h) on 2 node(s)
	//   Expected start: at 2026-01-05 12:00:00 (in 3h) on n1 (reserved)
	//     waits for running job(s): 1 (ends 2026-01-05 11:00:00)
	//   What would let it start sooner (verified by re-planning):
	//     - with a time limit ≤ 02:00:00 it starts now (backfill) on n2
}
