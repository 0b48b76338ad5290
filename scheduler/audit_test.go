package scheduler_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/priority"
	"github.com/sluicehq/sluice/scheduler"
)

// auditWorkload runs a seeded workload on Mixed4 with multifactor
// priority and conservative backfill, returning every audit record.
func auditWorkload(t *testing.T, seed uint64) (*scheduler.Scheduler, scheduler.Decisions) {
	rng := rand.New(rand.NewPCG(seed, 3))
	cfg := clustertest.Mixed4()
	cfg.Backfill = &backfill.Config{Resolution: time.Second}
	cfg.Priority = &scheduler.PriorityConfig{Engine: priority.Config{Weights: priority.Weights{Age: 1000, JobSize: 500}}}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	var recs scheduler.Decisions
	now := clustertest.Epoch
	for step := range 30 {
		for range rng.IntN(4) {
			_, _ = s.Submit(now, randSpec(rng))
		}
		cyc, err := s.Schedule(now)
		require.NoError(t, err)
		recs = append(recs, s.AuditRecords(cyc)...)
		if step%7 == 3 {
			for _, j := range s.Jobs() {
				if j.State == scheduler.JobRunning {
					require.NoError(t, s.Requeue(now, j.ID))
					d, err := s.RequeueRecord(now, j.ID)
					require.NoError(t, err)
					recs = append(recs, d)
					break
				}
			}
		}
		now = now.Add(time.Duration(10+rng.IntN(50)) * time.Minute)
	}
	return s, recs
}

func TestAuditRecordsCoverEveryDecision(t *testing.T) {
	for seed := range uint64(5) {
		s, recs := auditWorkload(t, seed)
		version := s.PolicyVersion()
		starts := map[scheduler.JobID]int{}
		for _, d := range recs {
			assert.Equal(t, version, d.PolicyVersion)
			if d.Kind.IsStart() {
				starts[d.Job]++
				assert.Positive(t, d.QueuePos, "%s", d)
				assert.NotEmpty(t, d.Nodes)
				assert.NotNil(t, d.Factors, "multifactor priority is on")
			}
			for _, o := range d.Overtook {
				assert.Equal(t, scheduler.DecisionBackfillStart, d.Kind, "only backfill overtakes")
				assert.NotEqual(t, d.Job, o.Job)
			}
		}
		// Every job that ever ran has one start record per run.
		for _, j := range s.Jobs() {
			runs := j.Restarts
			if j.State != scheduler.JobPending {
				runs++
			}
			if j.StartTime.IsZero() && j.State == scheduler.JobPending {
				continue
			}
			assert.Equal(t, runs, starts[j.ID], "job %d (%s, %d restarts)", j.ID, j.State, j.Restarts)
		}
	}
}

func TestAuditRecordsRoundTripThroughTheLedger(t *testing.T) {
	_, recs := auditWorkload(t, 1)
	l, err := accounting.NewMemory(accounting.Config{})
	require.NoError(t, err)
	var want []scheduler.Decision
	for _, d := range recs {
		ad, err := d.Accounting("c1")
		if d.Kind == scheduler.DecisionTimeout {
			require.ErrorIs(t, err, scheduler.ErrNotRecordable)
			continue
		}
		require.NoError(t, err)
		require.NoError(t, l.Update(func(tx accounting.Tx) error { _, err := tx.PutDecision(ad); return err }))
		want = append(want, d)
	}
	require.NotEmpty(t, want)
	var got []scheduler.Decision
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		return tx.Decisions(accounting.DecisionQuery{}, func(ad accounting.Decision) bool {
			d, err := scheduler.DecisionFromAccounting(ad)
			require.NoError(t, err)
			got = append(got, d)
			return true
		})
	}))
	require.Len(t, got, len(want))
	// The ledger returns records in (time, sequence) order, as they were put.
	for i := range want {
		w := want[i]
		w.Time = w.Time.Truncate(time.Second).UTC()
		w.Nodes = slices.Clone(w.Nodes)
		slices.Sort(w.Nodes)
		for k := range w.Overtook {
			w.Overtook[k].PlannedStart = w.Overtook[k].PlannedStart.UTC()
		}
		if !w.KillAt.IsZero() {
			w.KillAt = w.KillAt.UTC()
		}
		assert.Equal(t, w, got[i], "record %d", i)
	}
}

func TestDecisionFromAccountingRejectsGarbage(t *testing.T) {
	base := accounting.Decision{Kind: accounting.DecisionStart, Job: 1, Time: clustertest.Epoch}
	for _, tc := range []struct {
		name   string
		mutate func(*accounting.Decision)
	}{
		{"detail word", func(d *accounting.Decision) { d.Detail = "how" }},
		{"queue position", func(d *accounting.Decision) { d.Detail = "pos=x" }},
		{"reason", func(d *accounting.Decision) { d.Detail = "reason=NoSuchReason" }},
		{"priority", func(d *accounting.Decision) { d.Priority = 1.5 }},
		{"competitor", func(d *accounting.Decision) {
			d.Competing = []accounting.Competitor{{Job: 2, Reason: "Bogus"}}
		}},
		{"kind", func(d *accounting.Decision) { d.Kind = accounting.DecisionReservation }},
		{"nodelist", func(d *accounting.Decision) { d.NodeList = "n[1-" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := base
			tc.mutate(&d)
			_, err := scheduler.DecisionFromAccounting(d)
			assert.ErrorIs(t, err, scheduler.ErrInvalidRecord)
		})
	}
}

func TestCompare(t *testing.T) {
	at := func(m int) time.Time { return clustertest.Epoch.Add(time.Duration(m) * time.Minute) }
	start := func(job scheduler.JobID, m int, kind scheduler.DecisionKind, prio uint32, pos int, over ...scheduler.Overtaken) scheduler.Decision {
		return scheduler.Decision{Kind: kind, Job: job, Time: at(m), Priority: prio, QueuePos: pos, Overtook: over,
			Factors: &scheduler.Factors{Age: float64(prio) / 2, FairShare: float64(prio) / 2}, PolicyVersion: "v1"}
	}
	tests := []struct {
		name       string
		a, b       []scheduler.Decision
		kind       scheduler.ComparisonKind
		first      scheduler.JobID
		overtaken  bool
		samePolicy bool
	}{
		{"backfill past a pending job", []scheduler.Decision{start(1, 5, scheduler.DecisionBackfillStart, 10, 3,
			scheduler.Overtaken{Job: 2, Priority: 50, Reason: policy.ReasonResources, PlannedStart: at(60)})},
			[]scheduler.Decision{{Kind: scheduler.DecisionRequeue, Job: 2, Time: at(0)}},
			scheduler.CompareBackfill, 1, true, false},
		{"backfill past a job that started later", []scheduler.Decision{start(1, 5, scheduler.DecisionBackfillStart, 10, 3,
			scheduler.Overtaken{Job: 2, Priority: 50, Reason: policy.ReasonResources, PlannedStart: at(60)})},
			[]scheduler.Decision{start(2, 60, scheduler.DecisionStart, 55, 1)},
			scheduler.CompareBackfill, 1, true, true},
		{"queue order, b first", []scheduler.Decision{start(1, 30, scheduler.DecisionStart, 10, 1)},
			[]scheduler.Decision{start(2, 5, scheduler.DecisionStart, 50, 1)},
			scheduler.CompareQueueOrder, 2, false, true},
		{"same cycle", []scheduler.Decision{start(1, 5, scheduler.DecisionStart, 10, 2)},
			[]scheduler.Decision{start(2, 5, scheduler.DecisionStart, 50, 1)},
			scheduler.CompareQueueOrder, 2, false, true},
		{"main pass before backfill in one cycle", []scheduler.Decision{start(1, 5, scheduler.DecisionBackfillStart, 10, 2)},
			[]scheduler.Decision{start(2, 5, scheduler.DecisionStart, 50, 1)},
			scheduler.CompareQueueOrder, 2, false, true},
		{"backfill, not competing", []scheduler.Decision{start(1, 5, scheduler.DecisionBackfillStart, 10, 2)},
			[]scheduler.Decision{start(2, 50, scheduler.DecisionStart, 50, 1)},
			scheduler.CompareNotCompeting, 1, false, true},
		{"only one", nil, []scheduler.Decision{start(2, 50, scheduler.DecisionStart, 50, 1)},
			scheduler.CompareOnlyOne, 2, false, false},
		{"neither", nil, nil, scheduler.CompareUnknown, 0, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := scheduler.Compare(tc.a, tc.b)
			assert.Equal(t, tc.kind, c.Kind, c.String())
			assert.Equal(t, tc.first, c.First)
			assert.Equal(t, tc.overtaken, c.Overtaken != nil)
			assert.Equal(t, tc.samePolicy, c.SamePolicy)
			assert.NotEmpty(t, c.String())
			if c.FirstStart != nil && c.SecondStart != nil {
				assert.Equal(t, int64(c.FirstStart.Priority)-int64(c.SecondStart.Priority), c.PriorityDelta)
				assert.NotEmpty(t, c.Largest)
			}
		})
	}
	// Compare is symmetric in who started first.
	a := []scheduler.Decision{start(1, 30, scheduler.DecisionStart, 10, 1)}
	b := []scheduler.Decision{start(2, 5, scheduler.DecisionStart, 50, 1)}
	assert.Equal(t, scheduler.Compare(a, b), scheduler.Compare(b, a))
}

func TestPolicyVersion(t *testing.T) {
	mk := func(mutate func(*scheduler.Config)) string {
		cfg := clustertest.Mixed4()
		cfg.Backfill = &backfill.Config{}
		cfg.Priority = &scheduler.PriorityConfig{Engine: priority.Config{Weights: priority.Weights{Age: 1000}},
			FairShare: scheduler.FairShareFunc(func(time.Time) ([]priority.Association, error) { return nil, nil })}
		if mutate != nil {
			mutate(&cfg)
		}
		s, err := scheduler.New(cfg)
		require.NoError(t, err)
		v := s.PolicyVersion()
		assert.Equal(t, v, s.PolicyVersion(), "stable")
		assert.Len(t, v, 16)
		return v
	}
	base := mk(nil)
	assert.Equal(t, base, mk(nil), "the same configuration hashes the same")
	for name, m := range map[string]func(*scheduler.Config){
		"node memory":   func(c *scheduler.Config) { c.Nodes[0].MemoryMiB-- },
		"partition max": func(c *scheduler.Config) { c.Partitions[0].MaxTime = time.Hour },
		"partition acl": func(c *scheduler.Config) { c.Partitions[1].AllowAccounts = []string{"physics"} },
		"weights":       func(c *scheduler.Config) { c.Priority.Engine.Weights.Age = 1 },
		"backfill mode": func(c *scheduler.Config) { c.Backfill.Mode = backfill.EASY },
		"bf window":     func(c *scheduler.Config) { c.Backfill.Window = time.Hour },
		"qos priority":  func(c *scheduler.Config) { c.Priority.QOSPriority = map[string]uint32{"high": 1} },
		"policy": func(c *scheduler.Config) {
			c.Policy = &policy.Config{QOS: []policy.QOS{{Name: "normal"}}}
		},
	} {
		assert.NotEqual(t, base, mk(m), name)
	}
	// Fair-share usage is data, not policy.
	cfg := clustertest.Mixed4()
	usage := 1.0
	cfg.Priority = &scheduler.PriorityConfig{Engine: priority.Config{Weights: priority.Weights{FairShare: 1000}},
		FairShare: scheduler.FairShareFunc(func(time.Time) ([]priority.Association, error) {
			return []priority.Association{{Account: "root", Shares: 1, Usage: usage}}, nil
		})}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	v := s.PolicyVersion()
	_, err = s.Schedule(clustertest.Epoch)
	require.NoError(t, err)
	usage = 99
	_, err = s.Schedule(clustertest.Epoch.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, v, s.PolicyVersion())
}

func TestDecisionKindStrings(t *testing.T) {
	for k, want := range map[scheduler.DecisionKind]string{
		scheduler.DecisionStart: "start", scheduler.DecisionBackfillStart: "backfill-start", scheduler.DecisionTimeout: "timeout",
		scheduler.DecisionRequeue: "requeue", scheduler.DecisionPreempt: "preempt", 0: "DecisionKind(0)",
	} {
		assert.Equal(t, want, k.String())
	}
	assert.Equal(t, "ComparisonKind(9)", scheduler.ComparisonKind(9).String())
}

func TestRequeueRecordErrors(t *testing.T) {
	s := newMixed(t)
	id := mustSubmit(t, s, t0, scheduler.JobSpec{GRESPerNode: gpus(1)})
	_, err := s.RequeueRecord(t0, id)
	assert.ErrorIs(t, err, scheduler.ErrJobState, "pending, never requeued")
	_, err = s.RequeueRecord(t0, 99)
	assert.ErrorIs(t, err, scheduler.ErrUnknownJob)
}

// FuzzDecisionFromAccounting feeds arbitrary ledger records to the
// parser: it must return a record or an error, never panic, and a record
// it accepts must convert back to the ledger unchanged in kind, job and
// priority.
func FuzzDecisionFromAccounting(f *testing.F) {
	f.Add(uint8(1), uint64(7), 120.0, "how=backfill part=gpu user=ann pos=3 more=1", "h100-[01-02]", "Resources planned=2026-01-05T10:00:00Z")
	f.Add(uint8(3), uint64(2), 0.0, "reason=launch_failed_requeued", "a100-01", "")
	f.Add(uint8(2), uint64(9), 5.0, "preemptor=4 action=REQUEUE killat=2026-01-05T09:00:00Z reason=Preempted", "n1", "Preempted")
	f.Add(uint8(1), uint64(1), 1.0, "pos=x", "n[1-", "Bogus")
	f.Add(uint8(5), uint64(3), 0.0, "util=1.5 idle_s=600 action=CANCEL reason=AllocatedIdle", "n1", "")
	f.Fuzz(func(t *testing.T, kind uint8, job uint64, prio float64, detail, nodelist, competitor string) {
		ad := accounting.Decision{Kind: accounting.DecisionKind(kind), Job: accounting.JobID(job), Time: clustertest.Epoch,
			Priority: prio, Detail: detail, NodeList: nodelist}
		if competitor != "" {
			ad.Competing = []accounting.Competitor{{Job: 1, Reason: competitor}}
		}
		d, err := scheduler.DecisionFromAccounting(ad)
		if err != nil {
			return
		}
		back, err := d.Accounting("c")
		if err != nil {
			require.ErrorIs(t, err, scheduler.ErrNotRecordable)
			return
		}
		assert.Equal(t, ad.Kind, back.Kind)
		assert.Equal(t, ad.Job, back.Job)
		assert.Equal(t, prio, back.Priority)
	})
}
