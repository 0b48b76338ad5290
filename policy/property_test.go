package policy_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

type propJob struct {
	id    policy.JobID
	ref   policy.JobRef
	tres  gres.Vector
	nodes int
}

// groupKey names one usage group for the independent recount.
type groupKey struct{ kind, qos, name string }

// TestPropertyGrpLimitsNeverExceeded starts and ends random jobs, starting
// only those CheckStart admits, and recounts every group from the running
// set after each step: no Grp limit (QOS or any association level), no
// per-user/per-account QOS limit is ever exceeded, and Usage's counters
// equal the recount. Limits are placed on disjoint slots so that none is
// shadowed (shadowing is tested separately).
func TestPropertyGrpLimitsNeverExceeded(t *testing.T) {
	reg := newReg(t)
	cpu, mem, gpu, h100, node := reg.MustLookup("cpu"), reg.MustLookup("mem"), reg.MustLookup("gres/gpu"), reg.MustLookup("gres/gpu:h100"), reg.MustLookup("node")
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			lim := func(lo, hi int64) int64 { return lo + rng.Int64N(hi-lo+1) }
			tlim := func(pairs map[gres.ID]int64) policy.TRESLimits {
				l, err := policy.TRESLimitsOf(pairs)
				require.NoError(t, err)
				return l
			}
			qosGrp := map[string]map[gres.ID]int64{}
			qosUser := map[string]map[gres.ID]int64{}
			qosJobs := map[string]int{}
			var qs []policy.QOS
			for _, n := range []string{"normal", "gpu", "low"} {
				g := map[gres.ID]int64{cpu: lim(16, 64), h100: lim(2, 8)}
				u := map[gres.ID]int64{gpu: lim(2, 6)}
				qosGrp[n], qosUser[n] = g, u
				qosJobs[n] = int(lim(3, 12))
				qs = append(qs, policy.QOS{Name: n, Limits: policy.QOSLimits{Limits: policy.Limits{GrpTRES: tlim(g)},
					MaxTRESPerUser: tlim(u), MaxJobsPerUser: new(qosJobs[n])}})
			}
			// Partition QOS limit memory only (disjoint from the job QOS).
			partMem := lim(64, 256)
			qs = append(qs, policy.QOS{Name: "pq", Limits: policy.QOSLimits{Limits: policy.Limits{GrpTRES: tlim(map[gres.ID]int64{mem: partMem})}}})
			qosGrp["pq"] = map[gres.ID]int64{mem: partMem}
			parts := []policy.Partition{{Name: "batch", QOS: "pq"}, {Name: "gpu"}}
			// Associations limit gres/gpu, node and job counts.
			assocs := []policy.Assoc{{Account: "root", Limits: policy.AssocLimits{Limits: policy.Limits{GrpTRES: tlim(map[gres.ID]int64{gpu: lim(8, 16)})}}}}
			assocGrp := map[string]map[gres.ID]int64{"root": {gpu: 0}}
			assocGrp["root"][gpu], _ = assocs[0].Limits.GrpTRES.Get(gpu)
			assocJobs := map[string]int{}
			accounts := []string{"a1", "a2", "a3"}
			for i, a := range accounts {
				parent := ""
				if i == 2 {
					parent = "a1"
				}
				g := map[gres.ID]int64{gpu: lim(4, 12), node: lim(4, 10)}
				j := int(lim(3, 8))
				assocGrp[a], assocJobs[a] = g, j
				assocs = append(assocs, policy.Assoc{Account: a, Parent: parent, Limits: policy.AssocLimits{Limits: policy.Limits{GrpTRES: tlim(g), GrpJobs: new(j)}}})
			}
			users := []string{"u1", "u2", "u3", "u4"}
			userAcct := map[string]string{}
			for i, u := range users {
				a := accounts[i%3]
				userAcct[u] = a
				assocs = append(assocs, policy.Assoc{Account: a, User: u})
			}
			parentOf := map[string]string{"a1": "root", "a2": "root", "a3": "a1", "root": ""}
			e := newEnv(t, reg, policy.Config{QOS: qs, Partitions: parts, Assocs: assocs})

			var running []propJob
			next := policy.JobID(1)
			recount := func() map[groupKey]gres.Vector {
				m := map[groupKey]gres.Vector{}
				add := func(k groupKey, v gres.Vector, nodes int) {
					s := m[k]
					if s == nil {
						s = make(gres.Vector, reg.Len())
						m[k] = s
					}
					for i, x := range v {
						s[i] += x
					}
					s[node] += int64(nodes) - v.At(node)
					s[gres.Energy]++ // job count rides in the energy slot (unused)
				}
				for _, j := range running {
					qq := []string{j.ref.QOS}
					if j.ref.Partition == "batch" {
						qq = append(qq, "pq")
					}
					for _, q := range qq {
						add(groupKey{"qos", q, ""}, j.tres, j.nodes)
						add(groupKey{"qosuser", q, j.ref.User}, j.tres, j.nodes)
					}
					for a := userAcct[j.ref.User]; a != ""; a = parentOf[a] {
						add(groupKey{"assoc", "", a}, j.tres, j.nodes)
					}
				}
				return m
			}
			check := func() {
				m := recount()
				for q, g := range qosGrp {
					for id, l := range g {
						require.LessOrEqual(t, m[groupKey{"qos", q, ""}].At(id), l, "QOS %s GrpTRES %s", q, reg.Name(id))
					}
					got, _ := e.u.QOSUsage(q, t0)
					want := m[groupKey{"qos", q, ""}]
					for _, id := range []gres.ID{cpu, mem, gpu, h100, node} {
						require.Equal(t, want.At(id), got.Running.At(id), "QOS %s counter %s", q, reg.Name(id))
					}
					require.Equal(t, want.At(gres.Energy), got.Jobs, "QOS %s running jobs", q)
				}
				for q, u := range qosUser {
					for _, usr := range users {
						v := m[groupKey{"qosuser", q, usr}]
						for id, l := range u {
							require.LessOrEqual(t, v.At(id), l, "QOS %s MaxTRESPerUser %s user %s", q, reg.Name(id), usr)
						}
						require.LessOrEqual(t, v.At(gres.Energy), int64(qosJobs[q]), "QOS %s MaxJobsPerUser", q)
					}
				}
				for a, g := range assocGrp {
					v := m[groupKey{"assoc", "", a}]
					for id, l := range g {
						require.LessOrEqual(t, v.At(id), l, "account %s GrpTRES %s", a, reg.Name(id))
					}
					if j, ok := assocJobs[a]; ok {
						require.LessOrEqual(t, v.At(gres.Energy), int64(j), "account %s GrpJobs", a)
					}
					got, _ := e.u.AssocUsage(policy.AssocKey{Account: a}, t0)
					require.Equal(t, v.At(gpu), got.Running.At(gpu), "account %s counter", a)
					require.Equal(t, v.At(gres.Energy), got.Jobs, "account %s jobs", a)
				}
			}
			starts := 0
			for step := 0; step < 400; step++ {
				if len(running) > 0 && rng.IntN(3) == 0 {
					k := rng.IntN(len(running))
					require.NoError(t, e.u.RemoveJob(running[k].id))
					running = append(running[:k], running[k+1:]...)
				} else {
					usr := users[rng.IntN(len(users))]
					ref := policy.JobRef{User: usr, Account: userAcct[usr], Partition: []string{"batch", "gpu"}[rng.IntN(2)], QOS: []string{"normal", "gpu", "low"}[rng.IntN(3)]}
					s, err := e.p.Resolve(ref)
					require.NoError(t, err)
					nodes := 1 + rng.IntN(3)
					v := make(gres.Vector, reg.Len())
					v[cpu] = 1 + rng.Int64N(16)
					v[mem] = rng.Int64N(64)
					if g := rng.Int64N(4); g > 0 {
						v[gpu] = g
						if rng.IntN(2) == 0 {
							v[h100] = g
						}
					}
					r := &policy.Request{Subject: s, TRES: v, PerNode: v, Nodes: nodes, TimeLimit: time.Hour}
					require.NoError(t, e.u.AddJob(next, s))
					if !e.p.CheckStart(t0, r, e.u).Blocked() {
						require.NoError(t, e.u.StartJob(next, v, nodes, t0.Add(time.Hour)))
						running = append(running, propJob{id: next, ref: s.Ref(), tres: v, nodes: nodes})
						starts++
					} else {
						require.NoError(t, e.u.RemoveJob(next))
					}
					next++
				}
				check()
			}
			require.Greater(t, starts, 20, "the sequence must exercise starts")
		})
	}
}
