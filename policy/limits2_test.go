package policy_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

// A typed GPU limit holds typed requests only; untyped requests pass it
// (Slurm's rule), while an untyped limit holds both.
func TestTypedGPULimitsApplyToTypedRequests(t *testing.T) {
	reg := newReg(t)
	e := newEnv(t, reg, policy.Config{QOS: []policy.QOS{{Name: "gpu", Limits: policy.QOSLimits{
		MaxTRESPerUser: tl(t, reg, "gres/gpu:h100=2,gres/gpu=6")}}}})
	typed := func(n string) *policy.Request {
		r := e.req("alice", "physics", "", "gpu", "gres/gpu="+n+",gres/gpu:h100="+n, 1, time.Hour)
		return r
	}
	e.start(1, typed("2"), t0)
	b := e.p.CheckStart(t0, typed("1"), e.u)
	assert.Equal(t, policy.ReasonQOSMaxGRESPerUser, b.Reason)
	assert.Equal(t, "gres/gpu:h100", b.TRES)
	untyped := e.req("alice", "physics", "", "gpu", "gres/gpu=4", 1, time.Hour)
	assert.False(t, e.p.CheckStart(t0, untyped, e.u).Blocked(), "untyped requests ignore the h100 limit")
	untyped5 := e.req("alice", "physics", "", "gpu", "gres/gpu=5", 1, time.Hour)
	b = e.p.CheckStart(t0, untyped5, e.u)
	assert.Equal(t, policy.ReasonQOSMaxGRESPerUser, b.Reason)
	assert.Equal(t, "gres/gpu", b.TRES)
	assert.Equal(t, int64(2), b.Usage)
	assert.Equal(t, int64(5), b.Request)
	assert.Equal(t, int64(6), b.Value)
}

// A QOS limit shadows the association limit of the same slot (QOS limits
// override association limits); other association limits still apply.
func TestQOSShadowsAssociationSlot(t *testing.T) {
	reg := newReg(t)
	assocs := baseAssocs()
	assocs[iPhysics].Limits.GrpTRES = tl(t, reg, "gres/gpu=4,cpu=8")
	e := newEnv(t, reg, policy.Config{QOS: []policy.QOS{{Name: "big", Limits: policy.QOSLimits{Limits: policy.Limits{
		GrpTRES: tl(t, reg, "gres/gpu=100")}}}, {Name: "plain"}}, Assocs: assocs})
	assert.False(t, e.p.CheckStart(t0, e.req("alice", "physics", "", "big", "gres/gpu=8", 1, time.Hour), e.u).Blocked())
	b := e.p.CheckStart(t0, e.req("alice", "physics", "", "plain", "gres/gpu=8", 1, time.Hour), e.u)
	assert.Equal(t, policy.ReasonAssocGrpGRES, b.Reason)
	b = e.p.CheckStart(t0, e.req("alice", "physics", "", "big", "cpu=9", 1, time.Hour), e.u)
	assert.Equal(t, policy.ReasonAssocGrpCpuLimit, b.Reason, "cpu is not shadowed")
}

func TestLimitFactorScalesAssociationTRES(t *testing.T) {
	reg := newReg(t)
	assocs := baseAssocs()
	assocs[iPhysics].Limits.GrpTRES = tl(t, reg, "cpu=10")
	e := newEnv(t, reg, policy.Config{QOS: []policy.QOS{{Name: "x2", LimitFactor: 2}, {Name: "plain"}}, Assocs: assocs})
	assert.False(t, e.p.CheckStart(t0, e.req("alice", "physics", "", "x2", "cpu=20", 1, time.Hour), e.u).Blocked())
	assert.Equal(t, policy.ReasonAssocGrpCpuLimit, e.p.CheckStart(t0, e.req("alice", "physics", "", "x2", "cpu=21", 1, time.Hour), e.u).Reason)
	assert.Equal(t, policy.ReasonAssocGrpCpuLimit, e.p.CheckStart(t0, e.req("alice", "physics", "", "plain", "cpu=11", 1, time.Hour), e.u).Reason)
}

func TestDenyOnLimit(t *testing.T) {
	reg := newReg(t)
	lim := policy.QOSLimits{Limits: policy.Limits{MaxTRESPerJob: tl(t, reg, "gres/gpu=4"), GrpTRES: tl(t, reg, "cpu=32"), MaxWall: time.Hour},
		MaxTRESPerUser: tl(t, reg, "mem=1G")}
	for _, deny := range []bool{false, true} {
		var fl policy.QOSFlags
		if deny {
			fl = policy.QOSDenyOnLimit
		}
		e := newEnv(t, reg, policy.Config{QOS: []policy.QOS{{Name: "q", Flags: fl, Limits: lim}}})
		cases := []struct {
			tres  string
			limit time.Duration
			want  policy.Reason
		}{
			{"gres/gpu=5", time.Hour, policy.ReasonQOSMaxGRESPerJob},
			{"cpu=33", time.Hour, policy.ReasonQOSGrpCpuLimit}, // Grp read as Max
			{"cpu=1", 2 * time.Hour, policy.ReasonQOSMaxWallDurationPerJobLimit},
			{"mem=2G", time.Hour, policy.ReasonQOSMaxMemoryPerUser},
		}
		for _, c := range cases {
			r := e.req("u", "a", "", "q", c.tres, 1, c.limit)
			assert.Equal(t, c.want, e.p.CheckStart(t0, r, e.u).Reason)
			err := e.p.CheckSubmit(r, e.u)
			if !deny {
				assert.NoError(t, err, "%s pends without DenyOnLimit", c.tres)
				continue
			}
			var le *policy.LimitError
			require.ErrorAs(t, err, &le, c.tres)
			assert.ErrorIs(t, err, policy.ErrLimit)
			assert.Equal(t, c.want, le.Blocker.Reason)
		}
		// A job within every limit is accepted even when the group is busy.
		e.start(1, e.req("v", "a", "", "q", "cpu=32", 1, time.Hour), t0)
		ok := e.req("u", "a", "", "q", "cpu=8", 1, time.Hour)
		assert.NoError(t, e.p.CheckSubmit(ok, e.u))
		assert.Equal(t, policy.ReasonQOSGrpCpuLimit, e.p.CheckStart(t0, ok, e.u).Reason)
	}
}

func TestEnforcePartLimits(t *testing.T) {
	reg := newReg(t)
	for _, enforce := range []bool{false, true} {
		e := newEnv(t, reg, policy.Config{Partitions: []policy.Partition{{Name: "p", MaxTime: time.Hour, MaxNodes: 2}}, EnforcePartLimits: enforce})
		r := e.req("u", "a", "p", "", "cpu=1", 3, time.Hour)
		err := e.p.CheckSubmit(r, e.u)
		if enforce {
			assert.ErrorIs(t, err, policy.ErrLimit)
			assert.Contains(t, err.Error(), "MaxNodes")
		} else {
			assert.NoError(t, err)
		}
		assert.Equal(t, policy.ReasonPartitionNodeLimit, e.p.CheckStart(t0, r, e.u).Reason)
	}
}

func TestCheckStartAllListsEveryBlocker(t *testing.T) {
	reg := newReg(t)
	assocs := baseAssocs()
	assocs[iPhysics].Limits.GrpTRES = tl(t, reg, "gres/gpu=2")
	e := newEnv(t, reg, policy.Config{
		QOS:        []policy.QOS{{Name: "q", Limits: policy.QOSLimits{Limits: policy.Limits{MaxWall: time.Hour}}}},
		Partitions: []policy.Partition{{Name: "p", MaxTime: 30 * time.Minute}},
		Assocs:     assocs,
	})
	r := e.req("alice", "physics", "p", "q", "gres/gpu=4", 1, 2*time.Hour)
	all := e.p.CheckStartAll(t0, r, e.u, nil)
	var reasons []policy.Reason
	for _, b := range all {
		reasons = append(reasons, b.Reason)
	}
	assert.Equal(t, []policy.Reason{policy.ReasonQOSMaxWallDurationPerJobLimit, policy.ReasonAssocGrpGRES, policy.ReasonPartitionTimeLimit}, reasons)
	assert.Equal(t, all[0], e.p.CheckStart(t0, r, e.u), "CheckStart reports the first")
}

// Lowering a limit never touches running jobs: they stay counted, and only
// new starts are held. A job whose QOS disappears is dropped from the
// counters and reported.
func TestRebindLowersLimitsWithoutKilling(t *testing.T) {
	reg := newReg(t)
	mk := func(gpus string, withExtra bool) policy.Config {
		cfg := policy.Config{QOS: []policy.QOS{{Name: "q", Limits: policy.QOSLimits{Limits: policy.Limits{GrpTRES: tl(t, reg, "gres/gpu="+gpus)}}}}}
		if withExtra {
			cfg.QOS = append(cfg.QOS, policy.QOS{Name: "extra"})
		}
		return cfg
	}
	e := newEnv(t, reg, mk("16", true))
	e.start(1, e.req("u", "a", "", "q", "gres/gpu=8", 1, time.Hour), t0)
	e.start(2, e.req("u", "a", "", "q", "gres/gpu=8", 1, time.Hour), t0)
	e.start(3, e.req("u", "a", "", "extra", "gres/gpu=8", 1, time.Hour), t0)
	require.NoError(t, e.u.SetQOSUsed("q", vec(t, reg, "gres/gpu=100"), time.Hour))
	p2, err := policy.New(reg, mk("4", false))
	require.NoError(t, err)
	dropped := e.u.Rebind(p2)
	assert.Equal(t, []policy.JobID{3}, dropped)
	g, ok := e.u.QOSUsage("q", t0)
	require.True(t, ok)
	assert.Equal(t, int64(16), g.Running.At(reg.MustLookup("gres/gpu")), "running jobs stay counted above the lowered limit")
	assert.Equal(t, int64(2), g.Jobs)
	assert.Equal(t, int64(100), g.UsedMins.At(reg.MustLookup("gres/gpu")), "reported usage carried over")
	s, err := p2.Resolve(policy.JobRef{User: "u", Account: "a", QOS: "q"})
	require.NoError(t, err)
	b := p2.CheckStart(t0, &policy.Request{Subject: s, TRES: vec(t, reg, "gres/gpu=1"), Nodes: 1, TimeLimit: time.Hour}, e.u)
	assert.Equal(t, policy.ReasonQOSGrpGRES, b.Reason)
	assert.Equal(t, int64(16), b.Usage)
	// Subjects of the old policy are refused with a clear blocker, not a panic.
	old := e.req("u", "a", "", "q", "cpu=1", 1, time.Hour)
	assert.Equal(t, policy.ReasonAccountingPolicy, p2.CheckStart(t0, old, e.u).Reason)
}

func TestUsageCounters(t *testing.T) {
	reg := newReg(t)
	assocs := baseAssocs()
	e := newEnv(t, reg, policy.Config{QOS: []policy.QOS{{Name: "normal"}, {Name: "pq"}},
		Partitions: []policy.Partition{{Name: "p", QOS: "pq"}}, Assocs: assocs})
	r := e.req("alice", "physics", "p", "", "cpu=4,gres/gpu=2", 2, 2*time.Hour)
	require.NoError(t, e.u.AddJob(7, r.Subject))
	assert.ErrorIs(t, e.u.AddJob(7, r.Subject), policy.ErrDuplicateJob)
	require.NoError(t, e.u.StartJob(7, r.TRES, 2, t0.Add(2*time.Hour)))
	assert.ErrorIs(t, e.u.StartJob(7, r.TRES, 2, t0), policy.ErrDuplicateJob)
	assert.ErrorIs(t, e.u.StartJob(8, r.TRES, 2, t0), policy.ErrUnknownJob)
	cpu, node := reg.MustLookup("cpu"), reg.MustLookup("node")
	for _, q := range []string{"normal", "pq"} {
		g, _ := e.u.QOSUsage(q, t0)
		assert.Equal(t, int64(4), g.Running.At(cpu), q)
		assert.Equal(t, int64(2), g.Running.At(node), q)
		assert.Equal(t, int64(480), g.RunMins.At(cpu), "4 CPUs × 120 min")
		g, _ = e.u.QOSUsage(q, t0.Add(30*time.Minute))
		assert.Equal(t, int64(360), g.RunMins.At(cpu), "run minutes shrink as time passes")
	}
	for _, k := range []policy.AssocKey{{Account: "physics", User: "alice"}, {Account: "physics"}, {Account: "science"}, {Account: "root"}} {
		g, ok := e.u.AssocUsage(k, t0)
		require.True(t, ok, "%+v", k)
		assert.Equal(t, int64(1), g.Jobs)
		assert.Equal(t, int64(1), g.Submitted)
	}
	g, _ := e.u.AssocUsage(policy.AssocKey{Account: "chem"}, t0)
	assert.Equal(t, int64(0), g.Jobs)
	run, jobs, sub := e.u.QOSUserUsage("normal", "alice")
	assert.Equal(t, int64(4), run.At(cpu))
	assert.Equal(t, [2]int64{1, 1}, [2]int64{jobs, sub})
	_, jobs, _ = e.u.QOSAccountUsage("pq", "physics")
	assert.Equal(t, int64(1), jobs)
	require.NoError(t, e.u.SetEnd(7, t0.Add(time.Hour)))
	g, _ = e.u.QOSUsage("normal", t0)
	assert.Equal(t, int64(240), g.RunMins.At(cpu))
	require.NoError(t, e.u.StopJob(7))
	g, _ = e.u.QOSUsage("normal", t0)
	assert.Equal(t, int64(0), g.Jobs)
	assert.Equal(t, int64(1), g.Submitted, "a stopped job stays submitted until removed")
	assert.True(t, g.Running.IsZero())
	assert.True(t, g.RunMins.IsZero())
	require.NoError(t, e.u.RemoveJob(7))
	assert.ErrorIs(t, e.u.RemoveJob(7), policy.ErrUnknownJob)
	g, _ = e.u.QOSUsage("normal", t0)
	assert.Equal(t, int64(0), g.Submitted)
	assert.Equal(t, 0, e.u.Len())
	// Bad input.
	assert.ErrorIs(t, e.u.SetQOSUsed("nope", nil, 0), policy.ErrUnknownQOS)
	assert.ErrorIs(t, e.u.SetAssocUsed(policy.AssocKey{Account: "nope"}, nil, 0), policy.ErrUnknownAccount)
	assert.ErrorIs(t, e.u.SetQOSUsed("normal", gres.Vector{-1}, 0), policy.ErrInvalidRequest)
	require.NoError(t, e.u.AddJob(9, r.Subject))
	assert.ErrorIs(t, e.u.StartJob(9, gres.Vector{-1}, 1, t0), policy.ErrInvalidRequest)
	other := newEnv(t, reg, policy.Config{})
	s, err := other.p.Resolve(policy.JobRef{User: "x", Account: "y"})
	require.NoError(t, err)
	assert.ErrorIs(t, e.u.AddJob(10, s), policy.ErrInvalidRequest)
	b := e.p.CheckStart(t0, &policy.Request{Subject: s, Nodes: 1}, e.u)
	assert.Equal(t, policy.ReasonAccountingPolicy, b.Reason, "a foreign subject is refused, never a panic")
	assert.ErrorIs(t, e.p.CheckSubmit(&policy.Request{Subject: s}, e.u), policy.ErrInvalidRequest)
	assert.ErrorIs(t, e.p.CheckSubmit(&policy.Request{}, e.u), policy.ErrInvalidRequest)
}

func TestResolveErrors(t *testing.T) {
	reg := newReg(t)
	e := newEnv(t, reg, policy.Config{QOS: []policy.QOS{{Name: "normal"}}, Partitions: []policy.Partition{{Name: "p"}}, Assocs: baseAssocs()})
	_, err := e.p.Resolve(policy.JobRef{User: "alice", Account: "physics", Partition: "nope"})
	assert.ErrorIs(t, err, policy.ErrUnknownPartition)
	assert.Contains(t, err.Error(), `"nope"`)
	_, err = e.p.Resolve(policy.JobRef{User: "alice", Account: "physics", Partition: "p", QOS: "gold"})
	assert.ErrorIs(t, err, policy.ErrUnknownQOS)
	assert.Contains(t, err.Error(), `"gold"`)
	_, err = e.p.Resolve(policy.JobRef{User: "alice", Account: "chem", Partition: "p"})
	assert.ErrorIs(t, err, policy.ErrUnknownAccount)
	assert.Contains(t, err.Error(), `"alice"`)
	s, err := e.p.Resolve(policy.JobRef{User: "alice", Account: "physics", Partition: "p"})
	require.NoError(t, err)
	assert.Equal(t, "normal", s.Ref().QOS, "default QOS normal")
	assert.Equal(t, []string{"physics", "science", "root"}, e.p.AccountPath("physics"))
}

func TestConfigValidation(t *testing.T) {
	reg := newReg(t)
	L := func(s string) policy.TRESLimits { return tl(t, reg, s) }
	cases := []struct {
		name string
		cfg  policy.Config
		is   error
		says string
	}{
		{"cyclic preempt", policy.Config{QOS: []policy.QOS{{Name: "a", Preempt: []string{"b"}}, {Name: "b", Preempt: []string{"c"}}, {Name: "c", Preempt: []string{"a"}}}},
			policy.ErrCyclicPreempt, "a → b → c → a"},
		{"preempt self", policy.Config{QOS: []policy.QOS{{Name: "a", Preempt: []string{"a"}}}}, policy.ErrInvalidConfig, "WITHIN"},
		{"preempt unknown", policy.Config{QOS: []policy.QOS{{Name: "a", Preempt: []string{"zz"}}}}, policy.ErrUnknownQOS, `"zz"`},
		{"duplicate QOS", policy.Config{QOS: []policy.QOS{{Name: "a"}, {Name: "a"}}}, policy.ErrInvalidConfig, `"a"`},
		{"bad QOS name", policy.Config{QOS: []policy.QOS{{Name: "a b"}}}, policy.ErrInvalidConfig, `"a b"`},
		{"negative GrpJobs", policy.Config{QOS: []policy.QOS{{Name: "a", Limits: policy.QOSLimits{Limits: policy.Limits{GrpJobs: new(-1)}}}}}, policy.ErrInvalidConfig, "GrpJobs"},
		{"node per node", policy.Config{QOS: []policy.QOS{{Name: "a", Limits: policy.QOSLimits{Limits: policy.Limits{MaxTRESPerNode: L("node=1")}}}}}, policy.ErrInvalidConfig, "MaxTRESPerNode"},
		{"min above max", policy.Config{QOS: []policy.QOS{{Name: "a", Limits: policy.QOSLimits{Limits: policy.Limits{MaxTRESPerJob: L("cpu=2")}, MinTRESPerJob: L("cpu=4")}}}}, policy.ErrInvalidConfig, "MinTRESPerJob"},
		{"usage threshold", policy.Config{QOS: []policy.QOS{{Name: "a", UsageThreshold: 2}}}, policy.ErrInvalidConfig, "UsageThreshold"},
		{"usage factor", policy.Config{QOS: []policy.QOS{{Name: "a", UsageFactor: new(-1.0)}}}, policy.ErrInvalidConfig, "UsageFactor"},
		{"default QOS", policy.Config{DefaultQOS: "x"}, policy.ErrUnknownQOS, `"x"`},
		{"partition QOS", policy.Config{Partitions: []policy.Partition{{Name: "p", QOS: "x"}}}, policy.ErrUnknownQOS, `partition "p"`},
		{"partition AllowQOS", policy.Config{Partitions: []policy.Partition{{Name: "p", AllowQOS: []string{"x"}}}}, policy.ErrUnknownQOS, "AllowQOS"},
		{"partition nodes", policy.Config{Partitions: []policy.Partition{{Name: "p", MinNodes: 3, MaxNodes: 2}}}, policy.ErrInvalidConfig, "MinNodes"},
		{"partition billing", policy.Config{Partitions: []policy.Partition{{Name: "p", TRESBillingWeights: "CPU=x"}}}, policy.ErrInvalidConfig, "TRESBillingWeights"},
		{"partition duplicate", policy.Config{Partitions: []policy.Partition{{Name: "p"}, {Name: "p"}}}, policy.ErrInvalidConfig, `"p"`},
		{"partition preempt within", policy.Config{Partitions: []policy.Partition{{Name: "p", PreemptMode: policy.PreemptWithin}}}, policy.ErrInvalidConfig, "PreemptMode"},
		{"preempt mode off", policy.Config{PreemptType: policy.PreemptQOS}, policy.ErrInvalidConfig, "PreemptMode"},
		{"account parent", policy.Config{Assocs: []policy.Assoc{{Account: "a", Parent: "zz"}}}, policy.ErrUnknownAccount, `"zz"`},
		{"account cycle", policy.Config{Assocs: []policy.Assoc{{Account: "a", Parent: "b"}, {Account: "b", Parent: "a"}}}, policy.ErrInvalidConfig, "cycle"},
		{"user account", policy.Config{Assocs: []policy.Assoc{{Account: "zz", User: "u"}}}, policy.ErrUnknownAccount, `"zz"`},
		{"user duplicate", policy.Config{Assocs: []policy.Assoc{{Account: "a"}, {Account: "a", User: "u"}, {Account: "a", User: "u"}}}, policy.ErrInvalidConfig, `"u"`},
		{"assoc QOS", policy.Config{Assocs: []policy.Assoc{{Account: "a", QOS: []string{"zz"}}}}, policy.ErrUnknownQOS, `"zz"`},
		{"assoc default QOS not allowed", policy.Config{QOS: []policy.QOS{{Name: "x"}, {Name: "y"}},
			Assocs: []policy.Assoc{{Account: "a", QOS: []string{"x"}, DefaultQOS: "y"}}}, policy.ErrInvalidConfig, `"y"`},
		{"assoc negative", policy.Config{Assocs: []policy.Assoc{{Account: "a", Limits: policy.AssocLimits{MaxJobs: new(-2)}}}}, policy.ErrInvalidConfig, "MaxJobs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := policy.New(reg, c.cfg)
			require.Error(t, err)
			assert.ErrorIs(t, err, c.is)
			assert.Contains(t, err.Error(), c.says)
			assert.ErrorIs(t, c.cfg.Validate(reg), c.is)
		})
	}
	_, err := policy.New(nil, policy.Config{})
	assert.ErrorIs(t, err, policy.ErrInvalidConfig)
	// A TRES id outside the registry.
	bad, err := policy.TRESLimitsOf(map[gres.ID]int64{99: 1})
	require.NoError(t, err)
	_, err = policy.New(reg, policy.Config{QOS: []policy.QOS{{Name: "a", Limits: policy.QOSLimits{Limits: policy.Limits{GrpTRES: bad}}}}})
	assert.ErrorIs(t, err, gres.ErrUnknownTRES)
	assert.NoError(t, (&policy.Config{}).Validate(reg))
}

func TestTRESLimits(t *testing.T) {
	reg := newReg(t)
	l, err := policy.ParseTRESLimits(reg, "cpu=16, mem=1G ,gres/gpu:h100=0,license/matlab=-1,gres/gpu=UNLIMITED")
	require.NoError(t, err)
	assert.Equal(t, "cpu=16,mem=1024,gres/gpu:h100=0", l.Format(reg))
	v, ok := l.Get(reg.MustLookup("gres/gpu:h100"))
	assert.True(t, ok)
	assert.Equal(t, int64(0), v)
	_, ok = l.Get(reg.MustLookup("gres/gpu"))
	assert.False(t, ok)
	assert.Equal(t, 3, l.Len())
	l2 := l.With(gres.CPU, -1).With(gres.Node, 4)
	assert.Equal(t, "mem=1024,node=4,gres/gpu:h100=0", l2.Format(reg))
	assert.Equal(t, "cpu=16,mem=1024,gres/gpu:h100=0", l.Format(reg), "With copies")
	for _, bad := range []string{"cpu", "cpu=1,cpu=2", "gres/tpu=1", "cpu=-2", "=3", "cpu=1x"} {
		_, err := policy.ParseTRESLimits(reg, bad)
		assert.ErrorIs(t, err, policy.ErrSyntax, bad)
	}
	_, err = policy.ParseTRESLimits(reg, "gres/tpu=1")
	assert.ErrorIs(t, err, gres.ErrUnknownTRES)
	m, err := policy.NewTRESLimits(reg, map[string]int64{"cpu": 4, "gres/gpu": -1, "GRES/GPU:H100": 2})
	require.NoError(t, err)
	assert.Equal(t, "cpu=4,gres/gpu:h100=2", m.Format(reg))
	_, err = policy.NewTRESLimits(reg, map[string]int64{"nope": 1})
	assert.ErrorIs(t, err, gres.ErrUnknownTRES)
	_, err = policy.NewTRESLimits(reg, map[string]int64{"cpu": gres.MaxCount + 1})
	assert.ErrorIs(t, err, gres.ErrOverflow)
	assert.True(t, policy.TRESLimits{}.IsZero())
}

func TestReasons(t *testing.T) {
	seen := map[string]policy.Reason{}
	for _, r := range policy.Reasons() {
		s := r.String()
		assert.NotContains(t, s, "Reason(", "every reason has a name")
		if prev, dup := seen[s]; dup {
			t.Errorf("%v and %v share the name %q", prev, r, s)
		}
		seen[s] = r
		got, err := policy.ParseReason(strings.ToLower(s))
		require.NoError(t, err)
		assert.Equal(t, r, got)
	}
	assert.Greater(t, len(policy.Reasons()), 150)
	_, err := policy.ParseReason("NoSuchReason")
	assert.ErrorIs(t, err, policy.ErrUnknownReason)
	// The existing constants keep their names and meanings.
	for r, s := range map[policy.Reason]string{
		policy.ReasonNone: "None", policy.ReasonPriority: "Priority", policy.ReasonResources: "Resources",
		policy.ReasonBeginTime: "BeginTime", policy.ReasonPartitionDown: "PartitionDown",
		policy.ReasonPartitionInactive: "PartitionInactive", policy.ReasonPartitionTimeLimit: "PartitionTimeLimit",
		policy.ReasonPartitionNodeLimit: "PartitionNodeLimit", policy.ReasonReqNodeNotAvail: "ReqNodeNotAvail",
		policy.ReasonNodeDown: "NodeDown", policy.ReasonTimeLimit: "TimeLimit",
		policy.ReasonLaunchFailRequeue: "launch_failed_requeued",
		// Slurm's exact spellings of the limit family.
		policy.ReasonQOSMaxGRESPerUser: "QOSMaxGRESPerUser", policy.ReasonAssocGrpGRES: "AssocGrpGRES",
		policy.ReasonQOSGrpGRESMinutes: "QOSGrpGRESMinutes", policy.ReasonAssocGrpCpuLimit: "AssocGrpCpuLimit",
		policy.ReasonQOSMaxWallDurationPerJobLimit: "QOSMaxWallDurationPerJobLimit",
		policy.ReasonMaxJobsPerAccount:             "MaxJobsPerAccount", policy.ReasonQOSUsageThreshold: "QOSUsageThreshold",
		policy.ReasonQOSGrpMemoryMinutes: "QOSGrpMemoryMinutes", policy.ReasonAssocGrpMemMinutes: "AssocGrpMemMinutes",
		policy.ReasonQOSMinCpuNotSatisfied: "QOSMinCpuNotSatisfied",
	} {
		assert.Equal(t, s, r.String())
	}
	assert.True(t, policy.ReasonResources.Blocking())
	assert.False(t, policy.ReasonQOSGrpGRES.Blocking())
	assert.True(t, policy.ReasonQOSGrpGRES.IsLimit())
	assert.True(t, policy.ReasonMaxJobsPerAccount.IsLimit())
	assert.False(t, policy.ReasonResources.IsLimit())
	assert.False(t, policy.ReasonJobArrayTaskLimit.IsLimit())
	assert.Equal(t, "Reason(65535)", policy.Reason(65535).String())
}

func TestParseHelpers(t *testing.T) {
	f, err := policy.ParseQOSFlags("DenyOnLimit, noreserve,OverPartQOS")
	require.NoError(t, err)
	assert.True(t, f.Has(policy.QOSDenyOnLimit|policy.QOSNoReserve|policy.QOSOverPartQOS))
	assert.Equal(t, "DenyOnLimit,NoReserve,OverPartQOS", f.String())
	_, err = policy.ParseQOSFlags("Bogus")
	assert.ErrorIs(t, err, policy.ErrSyntax)
	m, err := policy.ParsePreemptMode("suspend,gang")
	require.NoError(t, err)
	assert.Equal(t, policy.PreemptSuspend, m.Base())
	assert.Equal(t, "SUSPEND,GANG", m.String())
	m, err = policy.ParsePreemptMode("REQUEUE,WITHIN,PRIORITY")
	require.NoError(t, err)
	assert.True(t, m.Has(policy.PreemptWithin) && m.Has(policy.PreemptPriority))
	for _, bad := range []string{"", "CANCEL,REQUEUE", "KILL"} {
		_, err := policy.ParsePreemptMode(bad)
		assert.ErrorIs(t, err, policy.ErrSyntax, bad)
	}
	pt, err := policy.ParsePreemptType("preempt/partition_prio")
	require.NoError(t, err)
	assert.Equal(t, policy.PreemptPartitionPrio, pt)
	_, err = policy.ParsePreemptType("preempt/x")
	assert.ErrorIs(t, err, policy.ErrSyntax)
	o, n, err := policy.ParseOverSubscribe("force:2")
	require.NoError(t, err)
	assert.Equal(t, policy.OverSubscribeForce, o)
	assert.Equal(t, 2, n)
	o, n, err = policy.ParseOverSubscribe("EXCLUSIVE")
	require.NoError(t, err)
	assert.Equal(t, [2]any{policy.OverSubscribeExclusive, 1}, [2]any{o, n})
	for _, bad := range []string{"NO:2", "YES:0", "maybe"} {
		_, _, err := policy.ParseOverSubscribe(bad)
		assert.ErrorIs(t, err, policy.ErrSyntax, bad)
	}
	p := policy.Partition{Name: "p", OverSubscribe: policy.OverSubscribeExclusive, DefCPUPerGPU: 16, DefMemPerGPU: 65536}
	assert.True(t, p.WholeNodes(false))
	c, mem := p.GPUDefaults(2)
	assert.Equal(t, [2]int64{32, 131072}, [2]int64{c, mem})
	assert.Equal(t, 1, p.Tier())
}

func TestDurations(t *testing.T) {
	cases := map[string]time.Duration{
		"90": 90 * time.Minute, "5:30": 5*time.Minute + 30*time.Second, "1:02:03": time.Hour + 2*time.Minute + 3*time.Second,
		"2-12": 60 * time.Hour, "1-2:30": 26*time.Hour + 30*time.Minute, "1-00:00:01": 24*time.Hour + time.Second,
		"UNLIMITED": 0, "infinite": 0, "-1": 0,
	}
	for s, want := range cases {
		got, err := policy.ParseDuration(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got, s)
	}
	for _, bad := range []string{"", "1:2:3:4", "1-25", "1:60:00", "x", "1-", "-5", "1.5"} {
		_, err := policy.ParseDuration(bad)
		assert.True(t, errors.Is(err, policy.ErrSyntax), "%q: %v", bad, err)
	}
	_, err := policy.ParseDuration("99999999999")
	assert.ErrorIs(t, err, policy.ErrTooLarge)
	assert.Equal(t, "1-02:03:04", policy.FormatDuration(26*time.Hour+3*time.Minute+4*time.Second))
	assert.Equal(t, "00:30:00", policy.FormatDuration(30*time.Minute))
	assert.Equal(t, "UNLIMITED", policy.FormatDuration(0))
}

func TestAccessors(t *testing.T) {
	reg := newReg(t)
	e := newEnv(t, reg, policy.Config{
		QOS:        []policy.QOS{{Name: "q", Priority: 7, Flags: policy.QOSDenyOnLimit | policy.QOSNoReserve, UsageFactor: new(0.5)}, {Name: "plain"}},
		Partitions: []policy.Partition{{Name: "p", TRESBillingWeights: "CPU=1.0,GRES/gpu=4.0"}},
	})
	q, ok := e.p.QOS("q")
	require.True(t, ok)
	assert.Equal(t, 0.5, q.EffectiveUsageFactor())
	plain, _ := e.p.QOS("plain")
	assert.Equal(t, 1.0, plain.EffectiveUsageFactor())
	_, ok = e.p.QOS("zz")
	assert.False(t, ok)
	pt, ok := e.p.Partition("p")
	require.True(t, ok)
	assert.Equal(t, "p", pt.Name)
	_, ok = e.p.Partition("zz")
	assert.False(t, ok)
	bw := e.p.BillingWeights("p")
	assert.InDelta(t, 16+4*2, bw.Billable(vec(t, reg, "cpu=16,gres/gpu=2"), 0), 1e-9)
	assert.True(t, e.p.BillingWeights("zz").IsZero())
	assert.Same(t, reg, e.p.Registry())
	assert.Len(t, e.p.Config().QOS, 2)
	assert.Same(t, e.p, e.u.Policy())
	r := e.req("u", "a", "p", "q", "cpu=1", 1, time.Hour)
	assert.True(t, r.Subject.Valid())
	assert.True(t, r.Subject.DenyOnLimit())
	assert.True(t, r.Subject.NoReserve())
	assert.Equal(t, uint32(7), r.Subject.QOSPriority())
	assert.False(t, policy.Subject{}.Valid())
	assert.False(t, policy.Subject{}.NoReserve())
	assert.Equal(t, "preempt/qos", policy.PreemptQOS.String())
	assert.Equal(t, "job QOS", policy.LevelJobQOS.String())
	assert.Equal(t, "TRES-minutes", policy.UnitTRESMinutes.String())
	assert.Equal(t, "None", policy.Blocker{}.String())
	assert.Nil(t, e.p.Constraints(policy.Subject{}))
}

// TestSubjectPartitionOverridesNamesOnlyPartitionFlags checks that
// PartitionOverrides returns the job QOS's partition-limit flags and no
// other flag, for the callers that check partition limits themselves.
func TestSubjectPartitionOverridesNamesOnlyPartitionFlags(t *testing.T) {
	reg := newReg(t)
	e := newEnv(t, reg, policy.Config{
		QOS: []policy.QOS{
			{Name: "plain"},
			{Name: "over", Flags: policy.QOSPartitionTimeLimit | policy.QOSPartitionMaxNodes | policy.QOSNoReserve},
		},
		Assocs:     baseAssocs(),
		Partitions: []policy.Partition{{Name: "p", MaxTime: time.Hour, MaxNodes: 1}},
	})
	over := e.req("alice", "physics", "p", "over", "cpu=1", 2, 2*time.Hour)
	assert.Equal(t, policy.QOSPartitionTimeLimit|policy.QOSPartitionMaxNodes, over.Subject.PartitionOverrides())
	assert.False(t, e.p.CheckStart(t0, over, e.u).Blocked(), "the partition limits the flags name do not hold the job")
	plain := e.req("alice", "physics", "p", "plain", "cpu=1", 2, 2*time.Hour)
	assert.Zero(t, plain.Subject.PartitionOverrides())
	assert.Equal(t, policy.ReasonPartitionTimeLimit, e.p.CheckStart(t0, plain, e.u).Reason)
	assert.Zero(t, policy.Subject{}.PartitionOverrides())
}
