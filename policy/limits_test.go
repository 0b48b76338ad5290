package policy_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

func findConstraint(cs []policy.Constraint, limit, tres string) (policy.Constraint, bool) {
	for _, c := range cs {
		if c.Limit == limit && c.TRES == tres {
			return c, true
		}
	}
	return policy.Constraint{}, false
}

// The resource_limits page's example: partition QOS MaxJobs=20 (per user),
// no job QOS limits, user association MaxJobs=4 and MaxSubmitJobs=50 →
// MaxJobs=20 and MaxSubmitJobs=50 are in effect.
func TestDocHierarchyExample(t *testing.T) {
	reg := newReg(t)
	assocs := baseAssocs()
	assocs[3].Limits = policy.AssocLimits{MaxJobs: new(4), MaxSubmitJobs: new(50)}
	e := newEnv(t, reg, policy.Config{
		QOS:        []policy.QOS{{Name: "normal"}, {Name: "part", Limits: policy.QOSLimits{MaxJobsPerUser: new(20)}}},
		Partitions: []policy.Partition{{Name: "batch", QOS: "part"}},
		Assocs:     assocs,
	})
	r := e.req("alice", "physics", "batch", "", "cpu=1", 1, time.Hour)
	assert.Equal(t, "normal", r.Subject.Ref().QOS)
	cs := e.p.Constraints(r.Subject)
	mj, ok := findConstraint(cs, "MaxJobsPerUser", "")
	require.True(t, ok)
	assert.Equal(t, int64(20), mj.Value)
	assert.Equal(t, policy.LevelPartitionQOS, mj.Level)
	ms, ok := findConstraint(cs, "MaxSubmitJobs", "")
	require.True(t, ok)
	assert.Equal(t, int64(50), ms.Value)
	assert.Equal(t, policy.LevelUser, ms.Level)
	_, shadowed := findConstraint(cs, "MaxJobs", "")
	assert.False(t, shadowed, "association MaxJobs=4 is shadowed by the partition QOS")

	// Behaviour: 19 running → the 20th may start; 20 running → the 21st waits.
	for i := 1; i <= 20; i++ {
		require.NoError(t, e.p.CheckSubmit(r, e.u))
		require.False(t, e.p.CheckStart(t0, r, e.u).Blocked(), "job %d", i)
		e.start(policy.JobID(i), r, t0)
	}
	b := e.p.CheckStart(t0, r, e.u)
	assert.Equal(t, policy.ReasonQOSMaxJobsPerUserLimit, b.Reason)
	assert.Equal(t, int64(20), b.Usage)
	assert.Equal(t, "user alice", b.Holder)
	// 30 more pending → 50 submitted; the 51st is rejected.
	for i := 21; i <= 50; i++ {
		require.NoError(t, e.p.CheckSubmit(r, e.u), "submit %d", i)
		require.NoError(t, e.u.AddJob(policy.JobID(i), r.Subject))
	}
	err := e.p.CheckSubmit(r, e.u)
	require.ErrorIs(t, err, policy.ErrLimit)
	var le *policy.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, policy.ReasonAssocMaxSubmitJobLimit, le.Blocker.Reason)
	assert.Contains(t, err.Error(), "MaxSubmitJobs")
}

// The partition-QOS slides' example: partition QOS GrpTRES=cpu=100,mem=10000
// MaxWall=24h, job QOS GrpTRES=cpu=10 MaxWall=36h. The partition QOS wins
// unless the job QOS has OverPartQOS, which then wins only where it sets a
// limit (mem stays from the partition QOS).
func TestOverPartQOSExample(t *testing.T) {
	reg := newReg(t)
	for _, over := range []bool{false, true} {
		t.Run(fmt.Sprint("OverPartQOS=", over), func(t *testing.T) {
			var fl policy.QOSFlags
			if over {
				fl = policy.QOSOverPartQOS
			}
			e := newEnv(t, reg, policy.Config{
				QOS: []policy.QOS{
					{Name: "pq", Limits: policy.QOSLimits{Limits: policy.Limits{GrpTRES: tl(t, reg, "cpu=100,mem=10000"), MaxWall: 24 * time.Hour}}},
					{Name: "jq", Flags: fl, Limits: policy.QOSLimits{Limits: policy.Limits{GrpTRES: tl(t, reg, "cpu=10"), MaxWall: 36 * time.Hour}}},
				},
				Partitions: []policy.Partition{{Name: "p", QOS: "pq"}},
			})
			r := e.req("u", "a", "p", "jq", "cpu=1", 1, time.Hour)
			cs := e.p.Constraints(r.Subject)
			cpu, _ := findConstraint(cs, "GrpTRES", "cpu")
			mem, _ := findConstraint(cs, "GrpTRES", "mem")
			wall, _ := findConstraint(cs, "MaxWall", "")
			if over {
				assert.Equal(t, int64(10), cpu.Value)
				assert.Equal(t, policy.LevelJobQOS, cpu.Level)
				assert.Equal(t, int64(36*3600), wall.Value)
			} else {
				assert.Equal(t, int64(100), cpu.Value)
				assert.Equal(t, policy.LevelPartitionQOS, cpu.Level)
				assert.Equal(t, int64(24*3600), wall.Value)
			}
			assert.Equal(t, int64(10000), mem.Value)
			assert.Equal(t, policy.LevelPartitionQOS, mem.Level)
		})
	}
}

// limitCase is one row of the per-limit table: a config, usage set up by
// running jobs, and a request that must pend with the reason (or be
// rejected at submission) — and a variant one unit smaller that passes.
type limitCase struct {
	name   string
	qos    policy.QOSLimits // limits of the job QOS "q"
	qflags policy.QOSFlags
	part   policy.Partition // partition "p" (Name set by the harness)
	assoc  func(a []policy.Assoc)
	setup  func(e *env)
	user   string // default alice
	tres   string // request
	nodes  int
	limit  time.Duration
	fair   float64
	resv   string
	submit bool // checked by CheckSubmit instead of CheckStart
	access bool // an access rule: rejected at submission and pends at start
	want   policy.Reason
	wLimit string
	wLevel policy.Level
	okTRES string // a request that passes ("" skips)
}

func runAs(user, account, tres string, nodes int, limit time.Duration) func(e *env) {
	return func(e *env) {
		r := e.req(user, account, "p", "q", tres, nodes, limit)
		e.start(policy.JobID(e.u.Len()+1), r, t0)
	}
}

func setAssoc(i int, l policy.AssocLimits) func(a []policy.Assoc) {
	return func(a []policy.Assoc) { a[i].Limits = l }
}

const (
	iScience = 0
	iPhysics = 1
	iAlice   = 3
	iRoot    = 6
)

func limitCases(t *testing.T, reg *gres.Registry) []limitCase {
	L := func(s string) policy.TRESLimits { return tl(t, reg, s) }
	G := func(l policy.Limits) policy.QOSLimits { return policy.QOSLimits{Limits: l} }
	h := time.Hour
	return []limitCase{
		// QOS Grp TRES, one per TRES class.
		{name: "QOS GrpTRES cpu", qos: G(policy.Limits{GrpTRES: L("cpu=10")}), setup: runAs("bob", "physics", "cpu=8", 1, h),
			tres: "cpu=4", want: policy.ReasonQOSGrpCpuLimit, wLimit: "GrpTRES", wLevel: policy.LevelJobQOS, okTRES: "cpu=2"},
		{name: "QOS GrpTRES mem", qos: G(policy.Limits{GrpTRES: L("mem=10G")}), setup: runAs("bob", "physics", "mem=8G", 1, h),
			tres: "mem=4G", want: policy.ReasonQOSGrpMemLimit, wLimit: "GrpTRES", wLevel: policy.LevelJobQOS, okTRES: "mem=2G"},
		{name: "QOS GrpTRES node", qos: G(policy.Limits{GrpTRES: L("node=4")}), setup: runAs("bob", "physics", "cpu=1", 3, h),
			tres: "cpu=2", nodes: 2, want: policy.ReasonQOSGrpNodeLimit, wLimit: "GrpTRES", wLevel: policy.LevelJobQOS},
		{name: "QOS GrpTRES gres", qos: G(policy.Limits{GrpTRES: L("gres/gpu=8")}), setup: runAs("carol", "chem", "gres/gpu=6", 1, h),
			tres: "gres/gpu=4", want: policy.ReasonQOSGrpGRES, wLimit: "GrpTRES", wLevel: policy.LevelJobQOS, okTRES: "gres/gpu=2"},
		{name: "QOS GrpTRES license", qos: G(policy.Limits{GrpTRES: L("license/matlab=2")}), setup: runAs("bob", "physics", "license/matlab=2", 1, h),
			tres: "license/matlab=1", want: policy.ReasonQOSGrpLicense, wLimit: "GrpTRES", wLevel: policy.LevelJobQOS},
		{name: "QOS GrpTRES billing", qos: G(policy.Limits{GrpTRES: L("billing=100")}), setup: runAs("bob", "physics", "billing=90", 1, h),
			tres: "billing=20", want: policy.ReasonQOSGrpBilling, wLimit: "GrpTRES", wLevel: policy.LevelJobQOS, okTRES: "billing=10"},
		{name: "QOS GrpTRES energy", qos: G(policy.Limits{GrpTRES: L("energy=100")}), tres: "energy=101",
			want: policy.ReasonQOSGrpEnergy, wLimit: "GrpTRES", wLevel: policy.LevelJobQOS, okTRES: "energy=100"},
		{name: "QOS GrpTRESMins gres", qos: G(policy.Limits{GrpTRESMins: L("gres/gpu=6000")}),
			setup: func(e *env) { require.NoError(t, e.u.SetQOSUsed("q", vec(t, reg, "gres/gpu=6000"), 0)) },
			tres:  "gres/gpu=1", want: policy.ReasonQOSGrpGRESMinutes, wLimit: "GrpTRESMins", wLevel: policy.LevelJobQOS, okTRES: "cpu=1"},
		{name: "QOS GrpTRESRunMins cpu", qos: G(policy.Limits{GrpTRESRunMins: L("cpu=1000")}), setup: runAs("bob", "physics", "cpu=10", 1, 90*time.Minute),
			tres: "cpu=2", limit: h, want: policy.ReasonQOSGrpCPURunMinutesLimit, wLimit: "GrpTRESRunMins", wLevel: policy.LevelJobQOS, okTRES: "cpu=1"},
		{name: "QOS GrpJobs", qos: policy.QOSLimits{Limits: policy.Limits{GrpJobs: new(1)}}, setup: runAs("carol", "chem", "cpu=1", 1, h),
			tres: "cpu=1", want: policy.ReasonQOSGrpJobsLimit, wLimit: "GrpJobs", wLevel: policy.LevelJobQOS},
		{name: "QOS GrpWall", qos: G(policy.Limits{GrpWall: 10 * h}),
			setup: func(e *env) { require.NoError(t, e.u.SetQOSUsed("q", nil, 10*h)) },
			tres:  "cpu=1", want: policy.ReasonQOSGrpWallLimit, wLimit: "GrpWall", wLevel: policy.LevelJobQOS},
		{name: "QOS MaxWall", qos: G(policy.Limits{MaxWall: 2 * h}), tres: "cpu=1", limit: 3 * h,
			want: policy.ReasonQOSMaxWallDurationPerJobLimit, wLimit: "MaxWall", wLevel: policy.LevelJobQOS},
		{name: "QOS MaxTRESPerJob cpu", qos: G(policy.Limits{MaxTRESPerJob: L("cpu=64")}), tres: "cpu=65",
			want: policy.ReasonQOSMaxCpuPerJobLimit, wLimit: "MaxTRESPerJob", wLevel: policy.LevelJobQOS, okTRES: "cpu=64"},
		{name: "QOS MaxTRESPerJob node", qos: G(policy.Limits{MaxTRESPerJob: L("node=2")}), tres: "cpu=3", nodes: 3,
			want: policy.ReasonQOSMaxNodePerJobLimit, wLimit: "MaxTRESPerJob", wLevel: policy.LevelJobQOS},
		{name: "QOS MaxTRESPerJob gres", qos: G(policy.Limits{MaxTRESPerJob: L("gres/gpu=8")}), tres: "gres/gpu=9",
			want: policy.ReasonQOSMaxGRESPerJob, wLimit: "MaxTRESPerJob", wLevel: policy.LevelJobQOS, okTRES: "gres/gpu=8"},
		{name: "QOS MaxTRESPerJob mem", qos: G(policy.Limits{MaxTRESPerJob: L("mem=1G")}), tres: "mem=2G",
			want: policy.ReasonQOSMaxMemoryPerJob, wLimit: "MaxTRESPerJob", wLevel: policy.LevelJobQOS, okTRES: "mem=1G"},
		{name: "QOS MaxTRESPerNode gres", qos: G(policy.Limits{MaxTRESPerNode: L("gres/gpu=4")}), tres: "gres/gpu=5",
			want: policy.ReasonQOSMaxGRESPerNode, wLimit: "MaxTRESPerNode", wLevel: policy.LevelJobQOS, okTRES: "gres/gpu=4"},
		{name: "QOS MaxTRESPerNode cpu", qos: G(policy.Limits{MaxTRESPerNode: L("cpu=8")}), tres: "cpu=9",
			want: policy.ReasonQOSMaxCpuPerNode, wLimit: "MaxTRESPerNode", wLevel: policy.LevelJobQOS, okTRES: "cpu=8"},
		{name: "QOS MaxTRESMinsPerJob cpu", qos: G(policy.Limits{MaxTRESMinsPerJob: L("cpu=600")}), tres: "cpu=11", limit: h,
			want: policy.ReasonQOSMaxCpuMinutesPerJobLimit, wLimit: "MaxTRESMinsPerJob", wLevel: policy.LevelJobQOS, okTRES: "cpu=10"},
		{name: "QOS MaxTRESPerUser gres", qos: policy.QOSLimits{MaxTRESPerUser: L("gres/gpu=8")}, setup: runAs("alice", "physics", "gres/gpu=6", 1, h),
			tres: "gres/gpu=4", want: policy.ReasonQOSMaxGRESPerUser, wLimit: "MaxTRESPerUser", wLevel: policy.LevelJobQOS, okTRES: "gres/gpu=2"},
		{name: "QOS MaxTRESPerUser other user free", qos: policy.QOSLimits{MaxTRESPerUser: L("gres/gpu=8")}, setup: runAs("alice", "physics", "gres/gpu=8", 1, h),
			user: "bob", tres: "gres/gpu=8"},
		{name: "QOS MaxTRESPerUser cpu", qos: policy.QOSLimits{MaxTRESPerUser: L("cpu=10")}, setup: runAs("alice", "physics", "cpu=10", 1, h),
			tres: "cpu=1", want: policy.ReasonQOSMaxCpuPerUserLimit, wLimit: "MaxTRESPerUser", wLevel: policy.LevelJobQOS},
		{name: "QOS MaxTRESPerAccount gres", qos: policy.QOSLimits{MaxTRESPerAccount: L("gres/gpu=8")}, setup: runAs("bob", "physics", "gres/gpu=8", 1, h),
			tres: "gres/gpu=1", want: policy.ReasonMaxGRESPerAccount, wLimit: "MaxTRESPerAccount", wLevel: policy.LevelJobQOS},
		{name: "QOS MaxJobsPerUser", qos: policy.QOSLimits{MaxJobsPerUser: new(1)}, setup: runAs("alice", "physics", "cpu=1", 1, h),
			tres: "cpu=1", want: policy.ReasonQOSMaxJobsPerUserLimit, wLimit: "MaxJobsPerUser", wLevel: policy.LevelJobQOS},
		{name: "QOS MaxJobsPerAccount", qos: policy.QOSLimits{MaxJobsPerAccount: new(1)}, setup: runAs("bob", "physics", "cpu=1", 1, h),
			tres: "cpu=1", want: policy.ReasonMaxJobsPerAccount, wLimit: "MaxJobsPerAccount", wLevel: policy.LevelJobQOS},
		{name: "QOS MinTRESPerJob gres", qos: policy.QOSLimits{MinTRESPerJob: L("gres/gpu=2")}, tres: "gres/gpu=1",
			want: policy.ReasonQOSMinGRES, wLimit: "MinTRESPerJob", wLevel: policy.LevelJobQOS, okTRES: "gres/gpu=2"},
		{name: "QOS MinTRESPerJob cpu", qos: policy.QOSLimits{MinTRESPerJob: L("cpu=4")}, tres: "cpu=3",
			want: policy.ReasonQOSMinCpuNotSatisfied, wLimit: "MinTRESPerJob", wLevel: policy.LevelJobQOS, okTRES: "cpu=4"},
		{name: "QOS MinTRESPerJob node", qos: policy.QOSLimits{MinTRESPerJob: L("node=2")}, tres: "cpu=1", nodes: 1,
			want: policy.ReasonQOSMinNode, wLimit: "MinTRESPerJob", wLevel: policy.LevelJobQOS},
		{name: "QOS UsageThreshold", qflags: policy.QOSEnforceUsageThreshold, tres: "cpu=1", fair: 0.25,
			want: policy.ReasonQOSUsageThreshold, wLimit: "UsageThreshold", wLevel: policy.LevelJobQOS},
		{name: "QOS RequiresReservation", qflags: policy.QOSRequiresReservation, tres: "cpu=1",
			access: true, want: policy.ReasonQOSNotAllowed, wLimit: "RequiresReservation", wLevel: policy.LevelJobQOS},
		// Submit limits (always rejected at submission).
		{name: "QOS GrpSubmitJobs", qos: G(policy.Limits{GrpSubmitJobs: new(1)}), setup: runAs("carol", "chem", "cpu=1", 1, h),
			tres: "cpu=1", submit: true, want: policy.ReasonQOSGrpSubmitJobsLimit, wLimit: "GrpSubmitJobs", wLevel: policy.LevelJobQOS},
		{name: "QOS MaxSubmitJobsPerUser", qos: policy.QOSLimits{MaxSubmitJobsPerUser: new(1)}, setup: runAs("alice", "physics", "cpu=1", 1, h),
			tres: "cpu=1", submit: true, want: policy.ReasonQOSMaxSubmitJobPerUserLimit, wLimit: "MaxSubmitJobsPerUser", wLevel: policy.LevelJobQOS},
		{name: "QOS MaxSubmitJobsPerAccount", qos: policy.QOSLimits{MaxSubmitJobsPerAccount: new(1)}, setup: runAs("bob", "physics", "cpu=1", 1, h),
			tres: "cpu=1", submit: true, want: policy.ReasonMaxSubmitJobsPerAccount, wLimit: "MaxSubmitJobsPerAccount", wLevel: policy.LevelJobQOS},
		{name: "Assoc GrpSubmitJobs", assoc: setAssoc(iScience, policy.AssocLimits{Limits: policy.Limits{GrpSubmitJobs: new(1)}}),
			setup: runAs("carol", "chem", "cpu=1", 1, h), tres: "cpu=1", submit: true,
			want: policy.ReasonAssocGrpSubmitJobsLimit, wLimit: "GrpSubmitJobs", wLevel: policy.LevelAccount},
		{name: "Assoc MaxSubmitJobs", assoc: setAssoc(iAlice, policy.AssocLimits{MaxSubmitJobs: new(1)}),
			setup: runAs("alice", "physics", "cpu=1", 1, h), tres: "cpu=1", submit: true,
			want: policy.ReasonAssocMaxSubmitJobLimit, wLimit: "MaxSubmitJobs", wLevel: policy.LevelUser},
		// Associations.
		{name: "Assoc GrpTRES gres at account", assoc: setAssoc(iPhysics, policy.AssocLimits{Limits: policy.Limits{GrpTRES: L("gres/gpu=8")}}),
			setup: runAs("bob", "physics", "gres/gpu=6", 1, h), tres: "gres/gpu=4",
			want: policy.ReasonAssocGrpGRES, wLimit: "GrpTRES", wLevel: policy.LevelAccount, okTRES: "gres/gpu=2"},
		{name: "Assoc GrpTRES cpu at root", assoc: setAssoc(iRoot, policy.AssocLimits{Limits: policy.Limits{GrpTRES: L("cpu=4")}}),
			setup: runAs("carol", "chem", "cpu=4", 1, h), tres: "cpu=1",
			want: policy.ReasonAssocGrpCpuLimit, wLimit: "GrpTRES", wLevel: policy.LevelRoot},
		{name: "Assoc Grp limits apply at every level", assoc: func(a []policy.Assoc) {
			a[iAlice].Limits.GrpTRES = L("gres/gpu=100")
			a[iPhysics].Limits.GrpTRES = L("gres/gpu=4")
		}, tres: "gres/gpu=5", want: policy.ReasonAssocGrpGRES, wLimit: "GrpTRES", wLevel: policy.LevelAccount, okTRES: "gres/gpu=4"},
		{name: "Assoc GrpJobs at ancestor", assoc: setAssoc(iScience, policy.AssocLimits{Limits: policy.Limits{GrpJobs: new(1)}}),
			setup: runAs("carol", "chem", "cpu=1", 1, h), tres: "cpu=1",
			want: policy.ReasonAssocGrpJobsLimit, wLimit: "GrpJobs", wLevel: policy.LevelAccount},
		{name: "Assoc GrpTRESMins gres", assoc: setAssoc(iPhysics, policy.AssocLimits{Limits: policy.Limits{GrpTRESMins: L("gres/gpu=100")}}),
			setup: func(e *env) {
				require.NoError(t, e.u.SetAssocUsed(policy.AssocKey{Account: "physics"}, vec(t, reg, "gres/gpu=100"), 0))
			}, tres: "gres/gpu=1", want: policy.ReasonAssocGrpGRESMinutes, wLimit: "GrpTRESMins", wLevel: policy.LevelAccount, okTRES: "cpu=1"},
		{name: "Assoc GrpTRESRunMins mem", assoc: setAssoc(iAlice, policy.AssocLimits{Limits: policy.Limits{GrpTRESRunMins: L("mem=6400")}}),
			setup: runAs("alice", "physics", "mem=50", 1, 2*h), tres: "mem=10", limit: h,
			want: policy.ReasonAssocGrpMemRunMinutes, wLimit: "GrpTRESRunMins", wLevel: policy.LevelUser, okTRES: "mem=5"},
		{name: "Assoc GrpWall", assoc: setAssoc(iPhysics, policy.AssocLimits{Limits: policy.Limits{GrpWall: h}}),
			setup: func(e *env) { require.NoError(t, e.u.SetAssocUsed(policy.AssocKey{Account: "physics"}, nil, 2*h)) },
			tres:  "cpu=1", want: policy.ReasonAssocGrpWallLimit, wLimit: "GrpWall", wLevel: policy.LevelAccount},
		{name: "Assoc MaxJobs", assoc: setAssoc(iAlice, policy.AssocLimits{MaxJobs: new(1)}),
			setup: runAs("alice", "physics", "cpu=1", 1, h), tres: "cpu=1",
			want: policy.ReasonAssocMaxJobsLimit, wLimit: "MaxJobs", wLevel: policy.LevelUser},
		{name: "Assoc MaxJobs inherited from account", assoc: setAssoc(iPhysics, policy.AssocLimits{MaxJobs: new(1)}),
			setup: runAs("alice", "physics", "cpu=1", 1, h), tres: "cpu=1",
			want: policy.ReasonAssocMaxJobsLimit, wLimit: "MaxJobs", wLevel: policy.LevelAccount},
		{name: "Assoc MaxJobs counts the user only", assoc: setAssoc(iPhysics, policy.AssocLimits{MaxJobs: new(1)}),
			setup: runAs("bob", "physics", "cpu=1", 1, h), tres: "cpu=1"},
		{name: "Assoc MaxWall", assoc: setAssoc(iScience, policy.AssocLimits{Limits: policy.Limits{MaxWall: h}}), tres: "cpu=1", limit: 2 * h,
			want: policy.ReasonAssocMaxWallDurationPerJobLimit, wLimit: "MaxWall", wLevel: policy.LevelAccount},
		{name: "Assoc MaxTRESPerJob gres", assoc: setAssoc(iAlice, policy.AssocLimits{Limits: policy.Limits{MaxTRESPerJob: L("gres/gpu=2")}}),
			tres: "gres/gpu=3", want: policy.ReasonAssocMaxGRESPerJob, wLimit: "MaxTRESPerJob", wLevel: policy.LevelUser, okTRES: "gres/gpu=2"},
		{name: "Assoc MaxTRESPerJob node", assoc: setAssoc(iAlice, policy.AssocLimits{Limits: policy.Limits{MaxTRESPerJob: L("node=1")}}),
			tres: "cpu=2", nodes: 2, want: policy.ReasonAssocMaxNodePerJobLimit, wLimit: "MaxTRESPerJob", wLevel: policy.LevelUser},
		{name: "Assoc MaxTRESPerNode cpu", assoc: setAssoc(iAlice, policy.AssocLimits{Limits: policy.Limits{MaxTRESPerNode: L("cpu=4")}}),
			tres: "cpu=5", want: policy.ReasonAssocMaxCpuPerNode, wLimit: "MaxTRESPerNode", wLevel: policy.LevelUser, okTRES: "cpu=4"},
		{name: "Assoc MaxTRESMinsPerJob gres", assoc: setAssoc(iAlice, policy.AssocLimits{Limits: policy.Limits{MaxTRESMinsPerJob: L("gres/gpu=60")}}),
			tres: "gres/gpu=2", limit: h, want: policy.ReasonAssocMaxGRESMinutesPerJob, wLimit: "MaxTRESMinsPerJob", wLevel: policy.LevelUser, okTRES: "gres/gpu=1"},
		{name: "Assoc QOS list", assoc: func(a []policy.Assoc) { a[iPhysics].QOS = []string{"other"} }, tres: "cpu=1",
			access: true, want: policy.ReasonQOSNotAllowed, wLimit: "QOS", wLevel: policy.LevelUser},
		// Partition.
		{name: "Partition MaxTime", part: policy.Partition{MaxTime: h}, tres: "cpu=1", limit: 2 * h,
			want: policy.ReasonPartitionTimeLimit, wLimit: "MaxTime", wLevel: policy.LevelPartition},
		{name: "Partition MaxTime lifted by PartitionTimeLimit", part: policy.Partition{MaxTime: h}, qflags: policy.QOSPartitionTimeLimit,
			tres: "cpu=1", limit: 2 * h},
		{name: "Partition MaxTime binds below QOS MaxWall", part: policy.Partition{MaxTime: h}, qos: G(policy.Limits{MaxWall: 4 * h}),
			tres: "cpu=1", limit: 2 * h, want: policy.ReasonPartitionTimeLimit, wLimit: "MaxTime", wLevel: policy.LevelPartition},
		{name: "Partition MinNodes", part: policy.Partition{MinNodes: 2}, tres: "cpu=1", nodes: 1,
			want: policy.ReasonPartitionNodeLimit, wLimit: "MinNodes", wLevel: policy.LevelPartition},
		{name: "Partition MaxNodes", part: policy.Partition{MaxNodes: 2}, tres: "cpu=3", nodes: 3,
			want: policy.ReasonPartitionNodeLimit, wLimit: "MaxNodes", wLevel: policy.LevelPartition},
		{name: "Partition MaxNodes lifted by PartitionMaxNodes", part: policy.Partition{MaxNodes: 2}, qflags: policy.QOSPartitionMaxNodes,
			tres: "cpu=3", nodes: 3},
		{name: "Partition MaxCPUsPerNode", part: policy.Partition{MaxCPUsPerNode: 16}, tres: "cpu=17",
			want: policy.ReasonPartitionConfig, wLimit: "MaxCPUsPerNode", wLevel: policy.LevelPartition, okTRES: "cpu=16"},
		{name: "Partition AllowAccounts", part: policy.Partition{AllowAccounts: []string{"chem"}}, tres: "cpu=1",
			access: true, want: policy.ReasonAccountNotAllowed, wLimit: "AllowAccounts", wLevel: policy.LevelPartition},
		{name: "Partition AllowAccounts hierarchical", part: policy.Partition{AllowAccounts: []string{"science"}}, tres: "cpu=1"},
		{name: "Partition DenyAccounts hierarchical", part: policy.Partition{DenyAccounts: []string{"science"}}, tres: "cpu=1",
			access: true, want: policy.ReasonAccountNotAllowed, wLimit: "DenyAccounts", wLevel: policy.LevelPartition},
		{name: "Partition AllowQOS", part: policy.Partition{AllowQOS: []string{"other"}}, tres: "cpu=1",
			access: true, want: policy.ReasonQOSNotAllowed, wLimit: "AllowQOS", wLevel: policy.LevelPartition},
		{name: "Partition DenyQOS", part: policy.Partition{DenyQOS: []string{"q"}}, tres: "cpu=1",
			access: true, want: policy.ReasonQOSNotAllowed, wLimit: "DenyQOS", wLevel: policy.LevelPartition},
		{name: "Partition ReqResv", part: policy.Partition{ReqResv: true}, tres: "cpu=1",
			access: true, want: policy.ReasonReservation, wLimit: "ReqResv", wLevel: policy.LevelPartition},
	}
}

func TestLimitTable(t *testing.T) {
	reg := newReg(t)
	for _, c := range limitCases(t, reg) {
		t.Run(c.name, func(t *testing.T) {
			e := c.newEnv(t, reg)
			user, acct := "alice", "physics"
			if c.user == "bob" {
				user = "bob"
			}
			limit := c.limit
			if limit == 0 {
				limit = time.Hour
			}
			nodes := max(c.nodes, 1)
			r := e.req(user, acct, "p", "q", c.tres, nodes, limit)
			if c.fair > 0 {
				r.FairShare, r.HasFairShare = c.fair, true
			}
			r.Reservation = c.resv
			var b policy.Blocker
			if c.submit {
				err := e.p.CheckSubmit(r, e.u)
				if c.want == policy.ReasonNone {
					require.NoError(t, err)
					return
				}
				var le *policy.LimitError
				require.ErrorAs(t, err, &le)
				require.True(t, errors.Is(err, policy.ErrLimit) || errors.Is(err, policy.ErrNotAllowed))
				assert.Contains(t, err.Error(), c.wLimit)
				b = le.Blocker
			} else {
				err := e.p.CheckSubmit(r, e.u)
				if c.access {
					require.ErrorIs(t, err, policy.ErrNotAllowed)
					assert.Contains(t, err.Error(), c.wLimit)
				} else {
					require.NoError(t, err, "without DenyOnLimit the job is accepted and pends")
				}
				b = e.p.CheckStart(t0, r, e.u)
			}
			assert.Equal(t, c.want, b.Reason, "%s", b)
			if c.want == policy.ReasonNone {
				return
			}
			assert.Equal(t, c.wLimit, b.Limit)
			assert.Equal(t, c.wLevel, b.Level)
			assert.NotEmpty(t, b.String())
			assert.Contains(t, b.String(), c.want.String())
			if c.okTRES != "" {
				ok := e.req(user, acct, "p", "q", c.okTRES, nodes, limit)
				assert.False(t, e.p.CheckStart(t0, ok, e.u).Blocked(), "%s", e.p.CheckStart(t0, ok, e.u))
			}
		})
	}
}

func (c *limitCase) newEnv(t *testing.T, reg *gres.Registry) *env {
	cfg := policy.Config{QOS: []policy.QOS{{Name: "q", Limits: c.qos, Flags: c.qflags, UsageThreshold: 0.5}, {Name: "other"}}}
	pt := c.part
	pt.Name = "p"
	cfg.Partitions = []policy.Partition{pt}
	assocs := baseAssocs()
	if c.assoc != nil {
		c.assoc(assocs)
	}
	cfg.Assocs = assocs
	e := newEnv(t, reg, cfg)
	if c.setup != nil {
		c.setup(e)
	}
	return e
}
