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

// TestStartCheckMatchesUncompiled keeps pending requests with their
// compiled StartCheck while random jobs start and stop, time passes and
// the QOS limits change (Rebind): every answer of a valid StartCheck is
// the uncompiled call's (CheckStart with and without usage,
// CheckStartAll, Slots), and a StartCheck is only reused while Valid.
func TestStartCheckMatchesUncompiled(t *testing.T) {
	reg := newReg(t)
	cpu, mem, gpu, node := reg.MustLookup("cpu"), reg.MustLookup("mem"), reg.MustLookup("gres/gpu"), reg.MustLookup("node")
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			lim := func(lo, hi int64) int64 { return lo + rng.Int64N(hi-lo+1) }
			tlim := func(pairs map[gres.ID]int64) policy.TRESLimits {
				l, err := policy.TRESLimitsOf(pairs)
				require.NoError(t, err)
				return l
			}
			qosOf := func(n string) policy.QOS {
				return policy.QOS{Name: n, Limits: policy.QOSLimits{
					Limits: policy.Limits{GrpTRES: tlim(map[gres.ID]int64{cpu: lim(16, 64)}), GrpJobs: new(int(lim(4, 12))),
						GrpTRESRunMins: tlim(map[gres.ID]int64{cpu: lim(600, 3000)}), MaxWall: time.Duration(lim(1, 4)) * time.Hour,
						MaxTRESPerJob: tlim(map[gres.ID]int64{mem: lim(40, 64)})},
					MaxTRESPerUser: tlim(map[gres.ID]int64{gpu: lim(1, 6)}), MaxJobsPerUser: new(int(lim(2, 6))),
					MaxTRESPerAccount: tlim(map[gres.ID]int64{node: lim(3, 8)}), MaxJobsPerAccount: new(int(lim(3, 8)))}}
			}
			qs := []policy.QOS{qosOf("normal"), qosOf("gpu")}
			assocs := []policy.Assoc{{Account: "root"}, {Account: "a1", Limits: policy.AssocLimits{Limits: policy.Limits{GrpJobs: new(6)}}}, {Account: "a2"}}
			users := []string{"u1", "u2", "u3"}
			for i, u := range users {
				assocs = append(assocs, policy.Assoc{Account: []string{"a1", "a2"}[i%2], User: u})
			}
			e := newEnv(t, reg, policy.Config{QOS: qs, Partitions: []policy.Partition{{Name: "batch"}}, Assocs: assocs})
			now := t0
			type pend struct {
				id policy.JobID
				r  policy.Request
				sc *policy.StartCheck
			}
			var pending []*pend
			var running []policy.JobID
			next := policy.JobID(1)
			reused := 0
			for step := 0; step < 300; step++ {
				switch k := rng.IntN(10); {
				case k < 4 || len(pending) == 0:
					usr := users[rng.IntN(len(users))]
					acct := "a1"
					if usr == "u2" {
						acct = "a2"
					}
					s, err := e.p.Resolve(policy.JobRef{User: usr, Account: acct, Partition: "batch", QOS: []string{"normal", "gpu"}[rng.IntN(2)]})
					require.NoError(t, err)
					v := make(gres.Vector, reg.Len())
					v[cpu], v[mem] = 1+rng.Int64N(12), rng.Int64N(80)
					v[gpu] = rng.Int64N(3)
					nodes := 1 + rng.IntN(3)
					require.NoError(t, e.u.AddJob(next, s))
					pending = append(pending, &pend{id: next, r: policy.Request{Subject: s, TRES: v, PerNode: v, Nodes: nodes, TimeLimit: time.Duration(1+rng.IntN(5)) * time.Hour}})
					next++
				case k < 7:
					// Start the first pending job the limits admit.
					for x, p := range pending {
						if !e.p.CheckStart(now, &p.r, e.u).Blocked() {
							require.NoError(t, e.u.StartJob(p.id, p.r.TRES, p.r.Nodes, now.Add(p.r.TimeLimit)))
							running = append(running, p.id)
							pending = append(pending[:x], pending[x+1:]...)
							break
						}
					}
				case k < 9 && len(running) > 0:
					x := rng.IntN(len(running))
					require.NoError(t, e.u.RemoveJob(running[x]))
					running = append(running[:x], running[x+1:]...)
				case k == 9 && rng.IntN(4) == 0:
					p, err := e.p.WithQOS(qosOf([]string{"normal", "gpu"}[rng.IntN(2)]))
					require.NoError(t, err)
					require.Empty(t, e.u.Rebind(p))
					e.p = p
					for _, q := range pending {
						s, err := p.Rebase(q.r.Subject)
						require.NoError(t, err)
						q.r.Subject = s
					}
				default:
					now = now.Add(time.Duration(rng.IntN(40)) * time.Minute)
				}
				for _, p := range pending {
					if p.sc.Valid(e.p, e.u) && p.sc.Matches(&p.r) {
						reused++
					} else {
						p.sc = e.p.CompileStart(&p.r, e.u)
						require.NotNil(t, p.sc)
					}
					require.Equal(t, e.p.CheckStart(now, &p.r, e.u).Reason, p.sc.Reason(now), "job %d step %d", p.id, step)
					require.Equal(t, e.p.CheckStart(now, &p.r, nil).Reason, p.sc.NeverReason(), "job %d", p.id)
					bs := e.p.CheckStartAll(now, &p.r, e.u, nil)
					all := true
					for _, b := range bs {
						all = all && b.Concurrent()
					}
					gotAny, gotAll := p.sc.HeldConcurrent(now)
					require.Equal(t, len(bs) > 0, gotAny, "job %d", p.id)
					require.Equal(t, all, gotAll, "job %d", p.id)
					slots := e.p.Slots(&p.r, e.u, nil)
					require.Equal(t, len(slots), p.sc.NumSlots())
					for k, sl := range slots {
						key, limit, add := p.sc.SlotKey(k)
						require.Equal(t, sl.Key, key)
						require.Equal(t, sl.Limit, limit)
						require.Equal(t, sl.Add, add)
						require.Equal(t, sl, p.sc.Slot(k))
					}
				}
			}
			require.Greater(t, reused, 1000, "the compiled checks must be reused")
		})
	}
}
