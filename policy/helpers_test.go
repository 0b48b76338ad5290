package policy_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

var t0 = time.Date(2025, 3, 3, 8, 0, 0, 0, time.UTC) // a Monday

func newReg(t testing.TB) *gres.Registry {
	t.Helper()
	r, err := gres.NewRegistry("gres/gpu:h100", "gres/gpu:a100", "license/matlab")
	require.NoError(t, err)
	return r
}

func tl(t testing.TB, r *gres.Registry, s string) policy.TRESLimits {
	t.Helper()
	l, err := policy.ParseTRESLimits(r, s)
	require.NoError(t, err)
	return l
}

func vec(t testing.TB, r *gres.Registry, s string) gres.Vector {
	t.Helper()
	v, err := r.ParseTRES(s)
	require.NoError(t, err)
	return v
}

// baseAssocs is a small tree: root → science → {physics, chem}; alice and
// bob in physics, carol in chem.
func baseAssocs() []policy.Assoc {
	return []policy.Assoc{
		{Account: "science"},
		{Account: "physics", Parent: "science"},
		{Account: "chem", Parent: "science"},
		{Account: "physics", User: "alice"},
		{Account: "physics", User: "bob"},
		{Account: "chem", User: "carol"},
		{Account: "root"},
	}
}

type env struct {
	t   testing.TB
	reg *gres.Registry
	p   *policy.Policy
	u   *policy.Usage
}

func newEnv(t testing.TB, reg *gres.Registry, cfg policy.Config) *env {
	t.Helper()
	p, err := policy.New(reg, cfg)
	require.NoError(t, err)
	return &env{t: t, reg: reg, p: p, u: p.NewUsage()}
}

func (e *env) req(user, account, part, qos, tres string, nodes int, limit time.Duration) *policy.Request {
	e.t.Helper()
	s, err := e.p.Resolve(policy.JobRef{User: user, Account: account, Partition: part, QOS: qos})
	require.NoError(e.t, err)
	v := vec(e.t, e.reg, tres)
	per := v.Clone()
	if nodes > 1 {
		for i := range per {
			per[i] = (per[i] + int64(nodes) - 1) / int64(nodes)
		}
	}
	return &policy.Request{Subject: s, TRES: v, PerNode: per, Nodes: nodes, TimeLimit: limit}
}

// start adds and starts job id with its request as allocation.
func (e *env) start(id policy.JobID, r *policy.Request, now time.Time) {
	e.t.Helper()
	require.NoError(e.t, e.u.AddJob(id, r.Subject))
	require.NoError(e.t, e.u.StartJob(id, r.TRES, r.Nodes, now.Add(r.TimeLimit)))
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 7)) }
