package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

// TestBackfillInputsReuse runs random churn — submits, finishes, cancels,
// job updates, holds, node changes, reservations, policy changes
// (UpdateQOS, associations) — on small clusters with EASY and conservative
// backfill and concurrent limits, on two schedulers: one keeping what the
// backfill pass builds its inputs from on the jobs (bfinputs.go), one
// building everything afresh each pass (bfState.noReuse). Every call must
// answer the same, every cycle must start the same jobs and report the
// same pending jobs (reason, expected start), and the states must stay
// equal.
func TestBackfillInputsReuse(t *testing.T) {
	seeds, steps := 24, 300
	if testing.Short() {
		seeds = 6
	}
	cycles, held := 0, 0
	for seed := range seeds {
		for _, mode := range []int{1, 2} { // conservative, EASY
			name := fmt.Sprintf("seed%d/%s", seed, map[int]string{1: "conservative", 2: "easy"}[mode])
			t.Run(name, func(t *testing.T) {
				src := &fzSource{rng: rand.New(rand.NewPCG(uint64(seed), 18))}
				c := fzGenCluster(src)
				c.Backfill, c.Policy = mode, true
				c.PreemptType = policy.PreemptNone
				var s [2]*Scheduler
				for k := range s {
					cfg, err := fzConfig(c)
					if err != nil {
						t.Skip(err)
					}
					// Concurrent limits for the plan to carry, on top of
					// what UpdateQOS draws later.
					for i := range cfg.Policy.QOS {
						q := &cfg.Policy.QOS[i]
						switch q.Name {
						case "normal":
							q.Limits.MaxJobsPerUser = new(2)
						case "high":
							q.Limits.GrpJobs = new(3)
						case "low":
							l, err := policy.TRESLimitsOf(map[gres.ID]int64{gres.CPU: 8})
							if err != nil {
								t.Fatal(err)
							}
							q.Limits.MaxTRESPerUser = l
						}
					}
					if s[k], err = New(cfg); err != nil {
						t.Skip(err)
					}
				}
				s[1].bf.noReuse = true
				g := newFzGen(src, c)
				g.noTelemetry = true
				targeted := seed%2 == 1
				for step := range steps {
					op := g.next()
					if targeted {
						op = bfInputsOp(src, g, op)
					}
					a, b := fzCall(s[0], op), fzCall(s[1], op)
					if a.panicked || b.panicked {
						t.Fatalf("step %d %s: panic: %v / %v", step, op.Kind, a.err, b.err)
					}
					if fmt.Sprint(a.err) != fmt.Sprint(b.err) {
						t.Fatalf("step %d %s: errors differ: %v / %v", step, op.Kind, a.err, b.err)
					}
					if a.res != b.res {
						t.Fatalf("step %d %s: answers differ: %s", step, op.Kind, fzDiff(a.res, b.res))
					}
					if a.cyc != nil {
						cycles++
						ca, cb := a.cyc, b.cyc
						if len(ca.Starts) != len(cb.Starts) || len(ca.Pending) != len(cb.Pending) {
							t.Fatalf("step %d: %d/%d starts, %d/%d pending", step, len(ca.Starts), len(cb.Starts), len(ca.Pending), len(cb.Pending))
						}
						for k := range ca.Starts {
							if x, y := ca.Starts[k], cb.Starts[k]; x.Job != y.Job || x.Backfill != y.Backfill || x.TimeLimit != y.TimeLimit ||
								fmt.Sprint(x.Alloc) != fmt.Sprint(y.Alloc) {
								t.Fatalf("step %d: start %d: %+v / %+v", step, k, x, y)
							}
						}
						for k := range ca.Pending {
							x, y := ca.Pending[k], cb.Pending[k]
							if x.Job != y.Job || x.Reason != y.Reason || !x.ExpectedStart.Equal(y.ExpectedStart) {
								t.Fatalf("step %d: pending %d: %+v / %+v", step, k, x, y)
							}
							if x.Reason.String() != "" && !x.ExpectedStart.IsZero() && x.Reason != policy.ReasonResources && x.Reason != policy.ReasonPriority {
								held++
							}
						}
					}
					now := fzEpoch.Add(max(g.last, op.At))
					if da, db := fzDigest(s[0], now), fzDigest(s[1], now); da != db {
						t.Fatalf("step %d %s: states differ: %s", step, op.Kind, fzDiff(da, db))
					}
					if a.err == nil {
						g.last = max(g.last, op.At)
						g.ids = append(g.ids, a.ids...)
						if a.cyc != nil {
							for _, st := range a.cyc.Starts {
								g.started = append(g.started, st.Job)
								if len(st.Alloc.Nodes) > 0 {
									g.startedOn = append(g.startedOn, st.Alloc.Nodes[0].Node)
								}
							}
						}
						if op.Kind == fkAddResv {
							g.resvs = append(g.resvs, op.Resv.Name)
						}
					}
				}
			})
		}
	}
	if cycles < seeds*60 { // about 130 per seed
		t.Fatalf("only %d cycles compared", cycles)
	}
	t.Logf("%d cycles compared, %d pending entries planned behind a limit", cycles, held)
}

// bfInputsOp replaces most of the fuzz generator's events by a churn of
// valid jobs of three users on the QOS's limits: submits (more than the
// nodes and limits admit, so that jobs wait behind others, on limits, and
// on the plan), schedules, finishes and cancels of the jobs given, job
// updates (time limit, QOS, nice) and limit changes (UpdateQOS); the rest
// (node changes, reservations, administration) is the fuzz generator's
// own event op.
func bfInputsOp(src *fzSource, g *fzGen, op fzOp) fzOp {
	at := op.At
	if at < g.last {
		at = g.last
	}
	pick := func() JobID {
		if len(g.ids) == 0 {
			return 1
		}
		return g.ids[len(g.ids)-1-src.intn(min(len(g.ids), 30))]
	}
	switch k := src.intn(100); {
	case k < 38:
		sp := JobSpec{User: fzPick(src, "ann", "bob", "cy"), QOS: fzPick(src, "normal", "high", "low", ""),
			Nodes: 1 + src.intn(2), CPUsPerTask: 1 + src.intn(4), Tasks: 1 + src.intn(4),
			TimeLimit: time.Duration(5+src.intn(180)) * time.Minute}
		if src.chance(4) {
			sp.Exclusive = true
		}
		if !src.chance(3) {
			// Several partitions: a job waiting in one holds back the
			// limit counters a job of another would take (limithold.go).
			sp.Partition = fmt.Sprintf("p%d", src.intn(len(g.c.Parts)))
		}
		return fzOp{Kind: fkSubmit, At: at, Spec: sp}
	case k < 60:
		return fzOp{Kind: fkSchedule, At: at + time.Duration(src.intn(4))*time.Minute}
	case k < 72:
		id := pick()
		if len(g.started) > 0 && !src.chance(3) {
			id = g.started[len(g.started)-1-src.intn(min(len(g.started), 20))]
		}
		return fzOp{Kind: fkFinish, At: at, ID: id}
	case k < 76:
		return fzOp{Kind: fkCancel, At: at, ID: pick()}
	case k < 82:
		var u JobUpdate
		switch src.intn(3) {
		case 0:
			d := time.Duration(5+src.intn(240)) * time.Minute
			u.TimeLimit = &d
		case 1:
			q := fzPick(src, "normal", "high", "low")
			u.QOS = &q
		default:
			n := src.intn(200) - 100
			u.Nice = &n
		}
		return fzOp{Kind: fkUpdateJob, At: at, ID: pick(), Update: u}
	case k < 86:
		q := policy.QOS{Name: fzPick(src, "normal", "high", "low"), Priority: uint32(src.intn(200))}
		switch src.intn(4) {
		case 0:
			q.Limits.MaxJobsPerUser = new(1 + src.intn(3))
		case 1:
			q.Limits.GrpJobs = new(1 + src.intn(4))
		case 2:
			l, err := policy.TRESLimitsOf(map[gres.ID]int64{gres.CPU: int64(2 + src.intn(16))})
			if err == nil {
				q.Limits.MaxTRESPerUser = l
			}
		}
		return fzOp{Kind: fkUpdateQOS, At: at, QOS: q}
	}
	return op
}
