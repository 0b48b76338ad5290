// Package ledgertest is the conformance suite for accounting.Ledger and
// accounting.Backend implementations. An implementation's tests call Run
// (and RunPersistent for a durable one, RunBackend for a Backend):
//
//	func TestConformance(t *testing.T) {
//		ledgertest.Run(t, func(t *testing.T, cfg accounting.Config) accounting.Ledger {
//			l, err := accounting.NewMemory(cfg)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return l
//		})
//	}
package ledgertest

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
)

// Opener returns a new, empty ledger with usage policy cfg. The suite
// closes it.
type Opener func(t *testing.T, cfg accounting.Config) accounting.Ledger

// Reopener opens the ledger stored in directory dir (creating it when
// dir is empty) with usage policy cfg. The suite calls it several times
// with the same dir, closing the ledger in between.
type Reopener func(t *testing.T, dir string, cfg accounting.Config) (accounting.Ledger, error)

// t0 is the time the suite's scenarios start at (a Friday, 1 March 2024,
// 00:00 UTC).
var t0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

// Run runs the behavioural conformance suite against ledgers from open.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"Associations", testAssociations},
		{"AssocMoveAndHistory", testAssocHistory},
		{"AssocValidation", testAssocValidation},
		{"ReadOnlyView", testReadOnly},
		{"Atomicity", testAtomicity},
		{"JobRoundTrip", testJobRoundTrip},
		{"JobValidation", testJobValidation},
		{"GoodputRoundTrip", testGoodputRoundTrip},
		{"JobQuery", testJobQuery},
		{"Steps", testSteps},
		{"JobKeepsAccountAfterMove", testJobKeepsAccount},
		{"RollupsExact", testRollupsExact},
		{"RollupTotalsProperty", testRollupProperty},
		{"RollupReplace", testRollupReplace},
		{"PurgeRollups", testPurgeRollups},
		{"UsageChargesChainAndQOS", testUsageChain},
		{"ChargeIdempotent", testChargeIdempotent},
		{"DecayExact", testDecayExact},
		{"DecaySlurm", testDecaySlurm},
		{"NoDecayQOS", testNoDecayQOS},
		{"Budgets", testBudgets},
		{"ResetPeriods", testResetPeriods},
		{"ResetUsage", testResetUsage},
		{"Decisions", testDecisions},
		{"ClusterUtilization", testUtilization},
		{"AccountUsageAndTopUsers", testAccountUsage},
		{"ShareTree", testShareTree},
		{"Archive", testArchive},
		{"ConcurrentViews", testConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

func newLedger(t *testing.T, open Opener, cfg accounting.Config) accounting.Ledger {
	t.Helper()
	l := open(t, cfg)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// tree is the suite's association fixture.
type tree struct {
	root, phys, chem, hep, alice, bob, carol, dave accounting.Assoc
}

func key(acct, user string) accounting.AssocKey {
	return accounting.AssocKey{Cluster: "c", Account: acct, User: user}
}

func buildTree(t *testing.T, l accounting.Ledger, at time.Time) tree {
	t.Helper()
	var tr tree
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		var err error
		put := func(a accounting.Assoc) accounting.Assoc {
			if err != nil {
				return a
			}
			a, err = tx.PutAssoc(at, a)
			return a
		}
		tr.phys = put(accounting.Assoc{AssocKey: key("phys", ""), Shares: 60})
		tr.chem = put(accounting.Assoc{AssocKey: key("chem", ""), Shares: 40})
		tr.hep = put(accounting.Assoc{AssocKey: key("hep", ""), ParentAccount: "phys", Shares: 2})
		tr.alice = put(accounting.Assoc{AssocKey: key("phys", "alice"), Shares: 1})
		tr.bob = put(accounting.Assoc{AssocKey: key("phys", "bob"), Shares: 3})
		tr.carol = put(accounting.Assoc{AssocKey: key("chem", "carol")})
		tr.dave = put(accounting.Assoc{AssocKey: key("hep", "dave")})
		if err != nil {
			return err
		}
		tr.root, err = tx.LookupAssoc(key(accounting.RootAccount, ""))
		return err
	}))
	return tr
}

func update(t *testing.T, l accounting.Ledger, fn func(tx accounting.Tx) error) {
	t.Helper()
	require.NoError(t, l.Update(fn))
}

func view(t *testing.T, l accounting.Ledger, fn func(tx accounting.Tx) error) {
	t.Helper()
	require.NoError(t, l.View(fn))
}

func testAssociations(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	assert.Equal(t, accounting.AssocID(0), tr.root.Parent, "root has no parent")
	assert.Equal(t, tr.root.ID, tr.phys.Parent)
	assert.Equal(t, tr.phys.ID, tr.hep.Parent)
	assert.Equal(t, tr.phys.ID, tr.alice.Parent)
	assert.Equal(t, tr.hep.ID, tr.dave.Parent)
	assert.Equal(t, uint32(1), tr.carol.EffectiveShares(), "0 shares means 1")
	ids := []accounting.AssocID{tr.root.ID, tr.phys.ID, tr.chem.ID, tr.hep.ID, tr.alice.ID, tr.bob.ID, tr.carol.ID, tr.dave.ID}
	seen := map[accounting.AssocID]bool{}
	for _, id := range ids {
		assert.NotZero(t, id)
		assert.False(t, seen[id], "IDs are unique")
		seen[id] = true
	}
	view(t, l, func(tx accounting.Tx) error {
		a, err := tx.LookupAssoc(key("phys", "bob"))
		require.NoError(t, err)
		assert.Equal(t, tr.bob.ID, a.ID)
		assert.Equal(t, uint32(3), a.Shares)
		assert.Equal(t, uint32(1), a.Version)
		assert.Equal(t, t0, a.Since.UTC())
		_, err = tx.LookupAssoc(key("phys", "nobody"))
		assert.ErrorIs(t, err, accounting.ErrNotFound)
		_, err = tx.Assoc(9999)
		assert.ErrorIs(t, err, accounting.ErrNotFound)
		var got []accounting.AssocID
		require.NoError(t, tx.Assocs("c", false, func(a accounting.Assoc) bool { got = append(got, a.ID); return true }))
		assert.True(t, slices.IsSorted(got))
		assert.ElementsMatch(t, ids, got)
		n := 0
		require.NoError(t, tx.Assocs("other", false, func(accounting.Assoc) bool { n++; return true }))
		assert.Zero(t, n)
		return nil
	})
	// A user needs its account; an account its parent.
	err := l.Update(func(tx accounting.Tx) error {
		_, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: key("bio", "eve")})
		return err
	})
	assert.ErrorIs(t, err, accounting.ErrNotFound)
	err = l.Update(func(tx accounting.Tx) error {
		_, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: key("bio", ""), ParentAccount: "nope"})
		return err
	})
	assert.ErrorIs(t, err, accounting.ErrNotFound)
	// Updating settings adds a version; the same settings add none.
	limit := 8
	update(t, l, func(tx accounting.Tx) error {
		a, err := tx.PutAssoc(t0.Add(time.Hour), accounting.Assoc{AssocKey: key("phys", "bob"), Shares: 5,
			DefaultQOS: "normal", QOS: []string{"normal", "high"},
			Limits: accounting.Limits{GrpTRES: accounting.TRES{"gres/gpu": 16}, MaxJobs: &limit, MaxWall: 48 * time.Hour}})
		require.NoError(t, err)
		assert.Equal(t, uint32(2), a.Version)
		assert.Equal(t, []string{"high", "normal"}, a.QOS, "QOS lists are sorted")
		b, err := tx.PutAssoc(t0.Add(2*time.Hour), accounting.Assoc{AssocKey: key("phys", "bob"), Shares: 5,
			DefaultQOS: "normal", QOS: []string{"high", "normal"},
			Limits: accounting.Limits{GrpTRES: accounting.TRES{"gres/gpu": 16}, MaxJobs: &limit, MaxWall: 48 * time.Hour}})
		require.NoError(t, err)
		assert.Equal(t, uint32(2), b.Version, "no change, no version")
		return nil
	})
	view(t, l, func(tx accounting.Tx) error {
		a, err := tx.Assoc(tr.bob.ID)
		require.NoError(t, err)
		require.NotNil(t, a.Limits.MaxJobs)
		assert.Equal(t, 8, *a.Limits.MaxJobs)
		assert.Nil(t, a.Limits.GrpJobs, "unset limits stay unset")
		assert.Equal(t, int64(16), a.Limits.GrpTRES["gres/gpu"])
		assert.Equal(t, 48*time.Hour, a.Limits.MaxWall)
		return nil
	})
	// Removal: not while children exist.
	err = l.Update(func(tx accounting.Tx) error { return tx.RemoveAssoc(t0.Add(3*time.Hour), tr.chem.ID) })
	assert.ErrorIs(t, err, accounting.ErrInUse)
	update(t, l, func(tx accounting.Tx) error {
		require.NoError(t, tx.RemoveAssoc(t0.Add(3*time.Hour), tr.carol.ID))
		return tx.RemoveAssoc(t0.Add(3*time.Hour), tr.chem.ID)
	})
	view(t, l, func(tx accounting.Tx) error {
		_, err := tx.Assoc(tr.chem.ID)
		assert.ErrorIs(t, err, accounting.ErrNotFound)
		_, err = tx.LookupAssoc(key("chem", ""))
		assert.ErrorIs(t, err, accounting.ErrNotFound)
		var removed []accounting.AssocID
		require.NoError(t, tx.Assocs("c", true, func(a accounting.Assoc) bool {
			if a.Removed {
				removed = append(removed, a.ID)
			}
			return true
		}))
		assert.Equal(t, []accounting.AssocID{tr.chem.ID, tr.carol.ID}, removed)
		return nil
	})
	// A removed key can be added again, with a new ID.
	update(t, l, func(tx accounting.Tx) error {
		a, err := tx.PutAssoc(t0.Add(4*time.Hour), accounting.Assoc{AssocKey: key("chem", "")})
		require.NoError(t, err)
		assert.NotEqual(t, tr.chem.ID, a.ID)
		return nil
	})
}

func testAssocHistory(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	t1, t2, t3 := t0.Add(24*time.Hour), t0.Add(48*time.Hour), t0.Add(72*time.Hour)
	update(t, l, func(tx accounting.Tx) error {
		// Move the sub-account hep from phys to chem, and the user alice
		// from phys to chem.
		h, err := tx.MoveAssoc(t1, tr.hep.ID, tr.chem.ID)
		require.NoError(t, err)
		assert.Equal(t, "chem", h.ParentAccount)
		assert.Equal(t, tr.chem.ID, h.Parent)
		a, err := tx.MoveAssoc(t2, tr.alice.ID, tr.chem.ID)
		require.NoError(t, err)
		assert.Equal(t, "chem", a.Account)
		assert.Equal(t, tr.alice.ID, a.ID, "moving keeps the ID")
		_, err = tx.LookupAssoc(key("phys", "alice"))
		assert.ErrorIs(t, err, accounting.ErrNotFound)
		b, err := tx.LookupAssoc(key("chem", "alice"))
		require.NoError(t, err)
		assert.Equal(t, tr.alice.ID, b.ID)
		return nil
	})
	// Cycles, user parents, root moves and cross-cluster moves fail.
	for name, fn := range map[string]func(tx accounting.Tx) error{
		"cycle": func(tx accounting.Tx) error { _, err := tx.MoveAssoc(t3, tr.chem.ID, tr.hep.ID); return err },
		"self":  func(tx accounting.Tx) error { _, err := tx.MoveAssoc(t3, tr.chem.ID, tr.chem.ID); return err },
		"user":  func(tx accounting.Tx) error { _, err := tx.MoveAssoc(t3, tr.bob.ID, tr.carol.ID); return err },
		"root":  func(tx accounting.Tx) error { _, err := tx.MoveAssoc(t3, tr.root.ID, tr.chem.ID); return err },
		"past":  func(tx accounting.Tx) error { _, err := tx.MoveAssoc(t0, tr.alice.ID, tr.phys.ID); return err },
		"cluster": func(tx accounting.Tx) error {
			o, err := tx.PutAssoc(t3, accounting.Assoc{AssocKey: accounting.AssocKey{Cluster: "other", Account: "x"}})
			require.NoError(t, err)
			_, err = tx.MoveAssoc(t3, tr.bob.ID, o.ID)
			return err
		},
	} {
		err := l.Update(fn)
		assert.ErrorIs(t, err, accounting.ErrInvalid, name)
	}
	// Moving a user onto an existing key fails.
	update(t, l, func(tx accounting.Tx) error {
		_, err := tx.PutAssoc(t3, accounting.Assoc{AssocKey: key("chem", "bob")})
		return err
	})
	err := l.Update(func(tx accounting.Tx) error { _, err := tx.MoveAssoc(t3, tr.bob.ID, tr.chem.ID); return err })
	assert.ErrorIs(t, err, accounting.ErrExists)

	view(t, l, func(tx accounting.Tx) error {
		h, err := tx.AssocHistory(tr.hep.ID)
		require.NoError(t, err)
		require.Len(t, h, 2)
		assert.Equal(t, "phys", h[0].ParentAccount)
		assert.Equal(t, "chem", h[1].ParentAccount)
		assert.Equal(t, t1, h[1].Since.UTC())
		for at, want := range map[time.Time]accounting.AssocID{t0: tr.phys.ID, t1.Add(-time.Second): tr.phys.ID, t1: tr.chem.ID, t3: tr.chem.ID} {
			a, err := tx.AssocAt(tr.hep.ID, at)
			require.NoError(t, err)
			assert.Equal(t, want, a.Parent, "hep's parent at %v", at)
		}
		_, err = tx.AssocAt(tr.hep.ID, t0.Add(-time.Second))
		assert.ErrorIs(t, err, accounting.ErrNotFound, "before it existed")
		a, err := tx.AssocAt(tr.alice.ID, t1)
		require.NoError(t, err)
		assert.Equal(t, "phys", a.Account)
		return nil
	})
	update(t, l, func(tx accounting.Tx) error { return tx.RemoveAssoc(t3, tr.dave.ID) })
	view(t, l, func(tx accounting.Tx) error {
		_, err := tx.AssocAt(tr.dave.ID, t3)
		assert.ErrorIs(t, err, accounting.ErrNotFound, "removed")
		a, err := tx.AssocAt(tr.dave.ID, t2)
		require.NoError(t, err, "still there before removal")
		assert.Equal(t, "hep", a.Account)
		h, err := tx.AssocHistory(tr.dave.ID)
		require.NoError(t, err)
		assert.True(t, h[len(h)-1].Removed)
		return nil
	})
}

func testAssocValidation(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	neg := -1
	bad := map[string]accounting.Assoc{
		"no cluster":        {AssocKey: accounting.AssocKey{Account: "a"}},
		"no account":        {AssocKey: accounting.AssocKey{Cluster: "c"}},
		"space":             {AssocKey: key("a b", "")},
		"pipe":              {AssocKey: key("a|b", "")},
		"account partition": {AssocKey: accounting.AssocKey{Cluster: "c", Account: "a", Partition: "p"}},
		"root parent":       {AssocKey: key("root", ""), ParentAccount: "x"},
		"self parent":       {AssocKey: key("a", ""), ParentAccount: "a"},
		"bad tres":          {AssocKey: key("a", ""), Limits: accounting.Limits{GrpTRES: accounting.TRES{"gpu": 1}}},
		"negative tres":     {AssocKey: key("a", ""), Limits: accounting.Limits{GrpTRES: accounting.TRES{"cpu": -1}}},
		"negative jobs":     {AssocKey: key("a", ""), Limits: accounting.Limits{GrpJobs: &neg}},
		"negative wall":     {AssocKey: key("a", ""), Limits: accounting.Limits{MaxWall: -time.Second}},
		"bad qos":           {AssocKey: key("a", ""), QOS: []string{""}},
	}
	for name, a := range bad {
		err := l.Update(func(tx accounting.Tx) error { _, err := tx.PutAssoc(t0, a); return err })
		assert.ErrorIs(t, err, accounting.ErrInvalid, name)
	}
	err := l.Update(func(tx accounting.Tx) error {
		_, err := tx.PutAssoc(time.Time{}, accounting.Assoc{AssocKey: key("a", "")})
		return err
	})
	assert.ErrorIs(t, err, accounting.ErrInvalid, "zero now")
	view(t, l, func(tx accounting.Tx) error {
		n := 0
		require.NoError(t, tx.Assocs("", true, func(accounting.Assoc) bool { n++; return true }))
		assert.Zero(t, n, "failed updates leave nothing")
		return nil
	})
}

func testReadOnly(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	job := simpleJob(1, tr.alice, t0, time.Hour)
	require.NoError(t, l.View(func(tx accounting.Tx) error {
		_, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: key("x", "")})
		assert.ErrorIs(t, err, accounting.ErrReadOnly)
		assert.ErrorIs(t, tx.PutJob(job), accounting.ErrReadOnly)
		assert.ErrorIs(t, tx.Charge(accounting.Charge{Assoc: tr.alice.ID, From: t0, To: t0.Add(time.Hour)}), accounting.ErrReadOnly)
		_, err = tx.PutDecision(accounting.Decision{Kind: accounting.DecisionStart, Time: t0, Job: 1})
		assert.ErrorIs(t, err, accounting.ErrReadOnly)
		assert.ErrorIs(t, tx.ResetUsage(t0), accounting.ErrReadOnly)
		assert.ErrorIs(t, tx.RemoveAssoc(t0, tr.alice.ID), accounting.ErrReadOnly)
		_, err = tx.ArchiveJobs(t0, 0, &bytes.Buffer{})
		assert.ErrorIs(t, err, accounting.ErrReadOnly)
		return nil
	}))
}

func testAtomicity(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	boom := errors.New("boom")
	err := l.Update(func(tx accounting.Tx) error {
		j := simpleJob(1, tr.alice, t0, 2*time.Hour)
		j.Partition, j.QOS, j.Name = "fresh-partition", "fresh-qos", "interned?"
		require.NoError(t, tx.PutJob(j))
		require.NoError(t, tx.Charge(accounting.Charge{Assoc: tr.alice.ID, QOS: "fresh-qos", TRES: accounting.TRES{"gres/gpu:new": 1}, From: t0, To: t0.Add(time.Hour)}))
		_, err := tx.PutAssoc(t0, accounting.Assoc{AssocKey: key("phys", "zed")})
		require.NoError(t, err)
		_, err = tx.PutDecision(accounting.Decision{Kind: accounting.DecisionStart, Time: t0, Job: 1})
		require.NoError(t, err)
		return boom
	})
	require.ErrorIs(t, err, boom)
	view(t, l, func(tx accounting.Tx) error {
		_, err := tx.Job(1)
		assert.ErrorIs(t, err, accounting.ErrNotFound)
		_, err = tx.LookupAssoc(key("phys", "zed"))
		assert.ErrorIs(t, err, accounting.ErrNotFound)
		u, err := tx.Usage(tr.alice.ID, t0.Add(time.Hour))
		require.NoError(t, err)
		assert.Zero(t, u.Raw)
		tot, err := tx.Totals(tr.root.ID, t0, t0.Add(24*time.Hour))
		require.NoError(t, err)
		assert.Zero(t, tot.Jobs)
		assert.Empty(t, tot.TRESSeconds)
		n := 0
		require.NoError(t, tx.Decisions(accounting.DecisionQuery{}, func(accounting.Decision) bool { n++; return true }))
		assert.Zero(t, n)
		return nil
	})
	// The same new strings work in a later transaction.
	update(t, l, func(tx accounting.Tx) error {
		j := simpleJob(1, tr.alice, t0, 2*time.Hour)
		j.Partition, j.QOS, j.Name = "fresh-partition", "fresh-qos", "interned?"
		return tx.PutJob(j)
	})
	view(t, l, func(tx accounting.Tx) error {
		j, err := tx.Job(1)
		require.NoError(t, err)
		assert.Equal(t, "fresh-partition", j.Partition)
		assert.Equal(t, "fresh-qos", j.QOS)
		return nil
	})
}

// simpleJob is a finished 4-CPU job of a that ran for d from start.
func simpleJob(id accounting.JobID, a accounting.Assoc, start time.Time, d time.Duration) accounting.JobRecord {
	return accounting.JobRecord{ID: id, Cluster: a.Cluster, User: a.User, Account: a.Account, Assoc: a.ID,
		Partition: "gpu", QOS: "normal", Submit: start.Add(-10 * time.Minute), Eligible: start.Add(-10 * time.Minute),
		Start: start, End: start.Add(d), State: accounting.StateCompleted,
		ReqTRES:   accounting.TRES{"cpu": 4, "mem": 8192, "node": 1},
		AllocTRES: accounting.TRES{"cpu": 4, "mem": 8192, "node": 1, "billing": 4}}
}

func testJobRoundTrip(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	full := accounting.JobRecord{
		ID: 4242, ArrayJobID: 4200, ArrayTaskID: 42, HetJobID: 4240, HetJobOffset: 2, Name: "train-llm α", Cluster: "c", User: "bob", Account: "phys",
		Partition: "gpu", QOS: "high", Reservation: "maint-window",
		Submit: t0, Eligible: t0.Add(time.Minute), Start: t0.Add(2 * time.Hour), End: t0.Add(30 * time.Hour),
		TimeLimit: 36 * time.Hour, State: accounting.StateTimeout, ExitCode: 0, ExitSignal: 15,
		ReqTRES:   accounting.TRES{"cpu": 64, "mem": 512 << 10, "node": 2, "gres/gpu": 16},
		AllocTRES: accounting.TRES{"cpu": 256, "mem": 4 << 20, "node": 2, "billing": 300, "gres/gpu": 16, "gres/gpu:h100": 16},
		NodeList:  "gpu[001-002]",
		GPUs:      []accounting.NodeGPUs{{Node: "gpu001", Indices: []int{0, 1, 2, 3, 4, 5, 6, 7}}, {Node: "gpu002", Indices: []int{0, 2, 63}}},
		Reason:    "Resources", Priority: 123456789, Flags: []string{"SchedBackfill", "StartReceived"}, Restarts: 2,
	}
	pending := accounting.JobRecord{ID: 7, Cluster: "c", User: "alice", Account: "phys", Submit: t0.Add(500 * time.Millisecond),
		State: accounting.StatePending, ReqTRES: accounting.TRES{"cpu": 1}}
	update(t, l, func(tx accounting.Tx) error {
		require.NoError(t, tx.PutJob(full))
		return tx.PutJob(pending)
	})
	view(t, l, func(tx accounting.Tx) error {
		got, err := tx.Job(4242)
		require.NoError(t, err)
		want := full
		want.Assoc = tr.bob.ID
		assert.Equal(t, want, normJob(got))
		p, err := tx.Job(7)
		require.NoError(t, err)
		assert.Equal(t, tr.alice.ID, p.Assoc, "association resolved from the key")
		assert.Equal(t, t0, p.Submit.UTC(), "times are whole seconds")
		assert.True(t, p.Start.IsZero() && p.End.IsZero() && p.Eligible.IsZero())
		_, err = tx.Job(8)
		assert.ErrorIs(t, err, accounting.ErrNotFound)
		return nil
	})
}

// normJob makes a decoded record comparable with a literal.
func normJob(j accounting.JobRecord) accounting.JobRecord {
	for _, p := range []*time.Time{&j.Submit, &j.Eligible, &j.Start, &j.End} {
		if !p.IsZero() {
			*p = p.UTC()
		}
	}
	if len(j.GPUs) == 0 {
		j.GPUs = nil
	}
	if len(j.Flags) == 0 {
		j.Flags = nil
	}
	if len(j.ReqTRES) == 0 {
		j.ReqTRES = nil
	}
	if len(j.AllocTRES) == 0 {
		j.AllocTRES = nil
	}
	return j
}

func testJobValidation(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	base := simpleJob(1, tr.alice, t0, time.Hour)
	mod := func(f func(j *accounting.JobRecord)) accounting.JobRecord { j := base; f(&j); return j }
	cases := map[string]struct {
		j    accounting.JobRecord
		want error
	}{
		"zero id":         {mod(func(j *accounting.JobRecord) { j.ID = 0 }), accounting.ErrInvalid},
		"no cluster":      {mod(func(j *accounting.JobRecord) { j.Cluster = "" }), accounting.ErrInvalid},
		"end before":      {mod(func(j *accounting.JobRecord) { j.End = j.Start.Add(-time.Second) }), accounting.ErrInvalid},
		"start before":    {mod(func(j *accounting.JobRecord) { j.Start = j.Submit.Add(-time.Second) }), accounting.ErrInvalid},
		"finished no end": {mod(func(j *accounting.JobRecord) { j.End = time.Time{} }), accounting.ErrInvalid},
		"running end":     {mod(func(j *accounting.JobRecord) { j.State = accounting.StateRunning }), accounting.ErrInvalid},
		"bad exit":        {mod(func(j *accounting.JobRecord) { j.ExitCode = 256 }), accounting.ErrInvalid},
		"bad tres":        {mod(func(j *accounting.JobRecord) { j.AllocTRES = accounting.TRES{"gpus": 1} }), accounting.ErrInvalid},
		"huge tres":       {mod(func(j *accounting.JobRecord) { j.AllocTRES = accounting.TRES{"cpu": math.MaxInt64} }), accounting.ErrInvalid},
		"gpu index":       {mod(func(j *accounting.JobRecord) { j.GPUs = []accounting.NodeGPUs{{Node: "n", Indices: []int{64}}} }), accounting.ErrInvalid},
		"gpu order":       {mod(func(j *accounting.JobRecord) { j.GPUs = []accounting.NodeGPUs{{Node: "n", Indices: []int{1, 1}}} }), accounting.ErrInvalid},
		"control char":    {mod(func(j *accounting.JobRecord) { j.Name = "a\nb" }), accounting.ErrInvalid},
		"year 10000":      {mod(func(j *accounting.JobRecord) { j.End = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }), accounting.ErrInvalid},
		"unknown assoc":   {mod(func(j *accounting.JobRecord) { j.Assoc = 9999 }), accounting.ErrNotFound},
		"unknown key":     {mod(func(j *accounting.JobRecord) { j.Assoc, j.User = 0, "nobody" }), accounting.ErrNotFound},
		"wrong user":      {mod(func(j *accounting.JobRecord) { j.User = "bob" }), accounting.ErrInvalid},
		"wrong cluster":   {mod(func(j *accounting.JobRecord) { j.Cluster = "d" }), accounting.ErrInvalid},
	}
	for name, tc := range cases {
		err := l.Update(func(tx accounting.Tx) error { return tx.PutJob(tc.j) })
		assert.ErrorIs(t, err, tc.want, name)
	}
	err := l.Update(func(tx accounting.Tx) error {
		return tx.PutStep(accounting.StepRecord{Job: 99, Step: "batch", Start: t0})
	})
	assert.ErrorIs(t, err, accounting.ErrNotFound, "step of a missing job")
}

func testJobQuery(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	update(t, l, func(tx accounting.Tx) error {
		for i, a := range []accounting.Assoc{tr.alice, tr.bob, tr.carol, tr.dave} {
			j := simpleJob(accounting.JobID(10+i), a, t0.Add(time.Duration(i)*time.Hour), time.Hour)
			require.NoError(t, tx.PutJob(j))
		}
		run := simpleJob(20, tr.bob, t0.Add(5*time.Hour), 0)
		run.End, run.State = time.Time{}, accounting.StateRunning
		require.NoError(t, tx.PutJob(run))
		pend := simpleJob(21, tr.carol, t0, 0)
		pend.Start, pend.End, pend.State = time.Time{}, time.Time{}, accounting.StatePending
		return tx.PutJob(pend)
	})
	ids := func(q accounting.JobQuery) []accounting.JobID {
		var out []accounting.JobID
		view(t, l, func(tx accounting.Tx) error {
			return tx.Jobs(q, func(j accounting.JobRecord) bool { out = append(out, j.ID); return true })
		})
		return out
	}
	assert.Equal(t, []accounting.JobID{10, 11, 12, 13, 20, 21}, ids(accounting.JobQuery{}))
	assert.Equal(t, []accounting.JobID{11, 20}, ids(accounting.JobQuery{User: "bob"}))
	assert.Equal(t, []accounting.JobID{10, 11, 20}, ids(accounting.JobQuery{Account: "phys"}))
	assert.Equal(t, []accounting.JobID{20, 21}, ids(accounting.JobQuery{OpenOnly: true}))
	assert.Equal(t, []accounting.JobID{21}, ids(accounting.JobQuery{States: []accounting.JobState{accounting.StatePending}}))
	// Window [t0+2h, t0+3h): job 12 ran 2h–3h, 13 was submitted at
	// 2h50m, 11 ended exactly at 2h (excluded), 21 is pending since before,
	// 20 was submitted after the window.
	assert.Equal(t, []accounting.JobID{12, 13, 21}, ids(accounting.JobQuery{From: t0.Add(2 * time.Hour), To: t0.Add(3 * time.Hour)}))
	assert.Empty(t, ids(accounting.JobQuery{Cluster: "other"}))
	var n int
	view(t, l, func(tx accounting.Tx) error {
		return tx.Jobs(accounting.JobQuery{}, func(accounting.JobRecord) bool { n++; return n < 2 })
	})
	assert.Equal(t, 2, n, "stops when fn returns false")
	// Finishing a running job takes it out of the open set.
	update(t, l, func(tx accounting.Tx) error {
		j, err := tx.Job(20)
		require.NoError(t, err)
		j.End, j.State = j.Start.Add(time.Hour), accounting.StateCompleted
		return tx.PutJob(j)
	})
	assert.Equal(t, []accounting.JobID{21}, ids(accounting.JobQuery{OpenOnly: true}))
}

func testSteps(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	steps := []accounting.StepRecord{
		{Job: 1, Step: "0", Name: "srun", Start: t0, End: t0.Add(time.Minute), State: accounting.StateCompleted, NodeList: "n1",
			AllocTRES: accounting.TRES{"cpu": 4}, CPUTime: 3 * time.Minute, MaxRSS: 1 << 30},
		{Job: 1, Step: "batch", Start: t0, End: t0.Add(time.Hour), State: accounting.StateFailed, ExitCode: 3},
		{Job: 1, Step: "extern", Start: t0, State: accounting.StateRunning},
	}
	update(t, l, func(tx accounting.Tx) error {
		require.NoError(t, tx.PutJob(simpleJob(1, tr.alice, t0, time.Hour)))
		require.NoError(t, tx.PutJob(simpleJob(2, tr.alice, t0, time.Hour)))
		for _, s := range []accounting.StepRecord{steps[2], steps[0], steps[1]} {
			require.NoError(t, tx.PutStep(s))
		}
		return tx.PutStep(accounting.StepRecord{Job: 2, Step: "batch", Start: t0})
	})
	view(t, l, func(tx accounting.Tx) error {
		got, err := tx.Steps(1)
		require.NoError(t, err)
		require.Len(t, got, 3)
		for i := range got {
			got[i].Start, got[i].End = got[i].Start.UTC(), utcOrZero(got[i].End)
			if len(got[i].AllocTRES) == 0 {
				got[i].AllocTRES = nil
			}
		}
		assert.Equal(t, steps, got)
		none, err := tx.Steps(3)
		require.NoError(t, err)
		assert.Empty(t, none)
		return nil
	})
	err := l.Update(func(tx accounting.Tx) error {
		return tx.PutStep(accounting.StepRecord{Job: 1, Step: "bad", Start: t0, End: t0.Add(-time.Second)})
	})
	assert.ErrorIs(t, err, accounting.ErrInvalid)
}

func utcOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

func testJobKeepsAccount(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	// dave's job runs under hep while hep is under phys; then hep moves
	// to chem. The job and its rollups stay with phys.
	update(t, l, func(tx accounting.Tx) error {
		return tx.PutJob(simpleJob(1, tr.dave, t0.Add(time.Hour), 2*time.Hour))
	})
	update(t, l, func(tx accounting.Tx) error {
		_, err := tx.MoveAssoc(t0.Add(5*time.Hour), tr.hep.ID, tr.chem.ID)
		return err
	})
	update(t, l, func(tx accounting.Tx) error {
		return tx.PutJob(simpleJob(2, tr.dave, t0.Add(6*time.Hour), time.Hour))
	})
	view(t, l, func(tx accounting.Tx) error {
		j, err := tx.Job(1)
		require.NoError(t, err)
		assert.Equal(t, "hep", j.Account)
		assert.Equal(t, tr.dave.ID, j.Assoc)
		day := t0.Add(24 * time.Hour)
		for _, c := range []struct {
			a    accounting.Assoc
			want int64
		}{{tr.phys, 4 * 7200}, {tr.chem, 4 * 3600}, {tr.hep, 4 * 10800}, {tr.root, 4 * 10800}} {
			tot, err := tx.Totals(c.a.ID, t0, day)
			require.NoError(t, err)
			assert.Equal(t, c.want, tot.TRESSeconds["cpu"], c.a.Account)
		}
		return nil
	})
}

// hourSeconds computes, by brute force, the allocated TRES-seconds of
// jobs inside [from, to).
func overlap(s, e, from, to time.Time) int64 {
	lo, hi := max(s.Unix(), from.Unix()), min(e.Unix(), to.Unix())
	return max(hi-lo, 0)
}

func testRollupsExact(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	// A job from 23:30 on 31 March to 01:15 on 1 April (crosses an hour,
	// a day, a month boundary).
	start := time.Date(2024, 3, 31, 23, 30, 0, 0, time.UTC)
	j := simpleJob(1, tr.bob, start, 105*time.Minute)
	j.AllocTRES["gres/gpu"] = 2
	update(t, l, func(tx accounting.Tx) error { return tx.PutJob(j) })
	view(t, l, func(tx accounting.Tx) error {
		var hours []accounting.Rollup
		require.NoError(t, tx.Rollups(tr.bob.ID, accounting.LevelHour, start.Add(-time.Hour), start.Add(5*time.Hour),
			func(r accounting.Rollup) bool { hours = append(hours, r); return true }))
		require.Len(t, hours, 3)
		wantStart := []time.Time{time.Date(2024, 3, 31, 23, 0, 0, 0, time.UTC), time.Date(2024, 4, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 4, 1, 1, 0, 0, 0, time.UTC)}
		wantSecs := []int64{1800, 3600, 900}
		for i, h := range hours {
			assert.Equal(t, wantStart[i], h.Start.UTC())
			assert.Equal(t, 2*wantSecs[i], h.TRESSeconds["gres/gpu"])
			assert.Equal(t, 4*wantSecs[i], h.TRESSeconds["billing"])
		}
		assert.Equal(t, int64(1), hours[2].Jobs, "the job counts in the hour it ended")
		var days, months []accounting.Rollup
		require.NoError(t, tx.Rollups(tr.phys.ID, accounting.LevelDay, t0, t0.Add(60*24*time.Hour),
			func(r accounting.Rollup) bool { days = append(days, r); return true }))
		require.Len(t, days, 2)
		assert.Equal(t, int64(4*1800), days[0].TRESSeconds["cpu"])
		assert.Equal(t, int64(4*4500), days[1].TRESSeconds["cpu"])
		require.NoError(t, tx.Rollups(tr.root.ID, accounting.LevelMonth, t0.AddDate(-1, 0, 0), t0.AddDate(1, 0, 0),
			func(r accounting.Rollup) bool { months = append(months, r); return true }))
		require.Len(t, months, 2)
		assert.Equal(t, time.Date(2024, 4, 1, 0, 0, 0, 0, time.UTC), months[1].Start.UTC())
		assert.Equal(t, int64(4*4500), months[1].TRESSeconds["cpu"])
		assert.Equal(t, int64(4*600), months[0].WaitTRESSeconds["cpu"], "10 minutes eligible wait, on the root")
		tot, err := tx.Totals(tr.alice.ID, t0, t0.AddDate(0, 2, 0))
		require.NoError(t, err)
		assert.Empty(t, tot.TRESSeconds, "alice did nothing")
		_, err = tx.Totals(tr.bob.ID, time.Time{}, t0)
		assert.ErrorIs(t, err, accounting.ErrInvalid)
		return nil
	})
}

// testRollupProperty puts random jobs and checks Totals over random
// ranges against a brute-force sum, for every association level.
func testRollupProperty(t *testing.T, open Opener) {
	rng := rand.New(rand.NewPCG(7, 11))
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	users := []accounting.Assoc{tr.alice, tr.bob, tr.carol, tr.dave}
	var jobs []accounting.JobRecord
	update(t, l, func(tx accounting.Tx) error {
		for i := range 300 {
			a := users[rng.IntN(len(users))]
			start := t0.Add(time.Duration(rng.IntN(90*24*3600)) * time.Second)
			d := time.Duration(rng.ExpFloat64()*6*3600) * time.Second
			j := simpleJob(accounting.JobID(i+1), a, start, d)
			j.AllocTRES["cpu"] = int64(1 + rng.IntN(64))
			jobs = append(jobs, j)
			if err := tx.PutJob(j); err != nil {
				return err
			}
		}
		return nil
	})
	under := func(j accounting.JobRecord, a accounting.Assoc) bool {
		switch a.ID {
		case tr.root.ID:
			return true
		case tr.phys.ID:
			return j.Assoc == tr.alice.ID || j.Assoc == tr.bob.ID || j.Assoc == tr.dave.ID
		case tr.hep.ID:
			return j.Assoc == tr.dave.ID
		case tr.chem.ID:
			return j.Assoc == tr.carol.ID
		}
		return j.Assoc == a.ID
	}
	view(t, l, func(tx accounting.Tx) error {
		for range 60 {
			from := t0.Add(time.Duration(rng.IntN(100*24)) * time.Hour)
			to := from.Add(time.Duration(rng.IntN(45*24)) * time.Hour)
			for _, a := range []accounting.Assoc{tr.root, tr.phys, tr.hep, tr.chem, tr.bob} {
				var want, jobsEnded int64
				for _, j := range jobs {
					if under(j, a) {
						want += j.AllocTRES["cpu"] * overlap(j.Start, j.End, from, to)
						if !j.End.Before(from) && j.End.Before(to) {
							jobsEnded++
						}
					}
				}
				tot, err := tx.Totals(a.ID, from, to)
				require.NoError(t, err)
				require.Equal(t, want, tot.TRESSeconds["cpu"], "%s over [%v, %v)", a.Account, from, to)
				if from.Truncate(time.Hour).Equal(from) {
					// Jobs count in the hour containing their end; with
					// hour-aligned ranges that is exact except for jobs
					// ending inside the last (excluded) hour.
					assert.LessOrEqual(t, tot.Jobs, jobsEnded)
				}
			}
		}
		return nil
	})
}

func testRollupReplace(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	j := simpleJob(1, tr.alice, t0.Add(time.Hour), 0)
	j.End, j.State = time.Time{}, accounting.StateRunning
	update(t, l, func(tx accounting.Tx) error { return tx.PutJob(j) }) // at start
	total := func() accounting.Totals {
		var tot accounting.Totals
		view(t, l, func(tx accounting.Tx) error {
			var err error
			tot, err = tx.Totals(tr.root.ID, t0, t0.Add(48*time.Hour))
			return err
		})
		return tot
	}
	assert.Empty(t, total().TRESSeconds, "a running job is not rolled up")
	assert.Equal(t, int64(4*600), total().WaitTRESSeconds["cpu"], "its 10-minute wait is, once it started")
	j.End, j.State = j.Start.Add(3*time.Hour), accounting.StateCompleted
	update(t, l, func(tx accounting.Tx) error { return tx.PutJob(j) }) // at end
	assert.Equal(t, int64(4*3*3600), total().TRESSeconds["cpu"])
	assert.Equal(t, int64(1), total().Jobs)
	j.End = j.Start.Add(time.Hour) // corrected record
	update(t, l, func(tx accounting.Tx) error { return tx.PutJob(j) })
	assert.Equal(t, int64(4*3600), total().TRESSeconds["cpu"])
	assert.Equal(t, int64(1), total().Jobs)
	assert.Equal(t, int64(4*600), total().WaitTRESSeconds["cpu"])
}

func testPurgeRollups(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	update(t, l, func(tx accounting.Tx) error {
		require.NoError(t, tx.PutJob(simpleJob(1, tr.alice, t0.Add(time.Hour), time.Hour)))
		return tx.PutJob(simpleJob(2, tr.alice, t0.AddDate(0, 1, 0), time.Hour))
	})
	var n int
	update(t, l, func(tx accounting.Tx) error {
		var err error
		n, err = tx.PurgeRollups(accounting.LevelHour, t0.AddDate(0, 0, 7))
		return err
	})
	assert.Positive(t, n)
	view(t, l, func(tx accounting.Tx) error {
		var hours []accounting.Rollup
		require.NoError(t, tx.Rollups(tr.alice.ID, accounting.LevelHour, t0, t0.AddDate(0, 2, 0),
			func(r accounting.Rollup) bool { hours = append(hours, r); return true }))
		require.Len(t, hours, 2, "March hours purged, April kept")
		assert.Equal(t, int64(4*3600), hours[0].TRESSeconds["cpu"])
		assert.Equal(t, int64(1), hours[1].Jobs, "the job counts in the hour containing its end")
		tot, err := tx.Totals(tr.alice.ID, t0, t0.Add(5*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, int64(0), tot.TRESSeconds["cpu"], "a range read from purged hours is empty")
		tot, err = tx.Totals(tr.alice.ID, t0, t0.AddDate(0, 2, 0))
		require.NoError(t, err)
		assert.Equal(t, int64(2*4*3600), tot.TRESSeconds["cpu"], "daily and monthly buckets are kept")
		tot, err = tx.Totals(tr.alice.ID, t0, t0.AddDate(0, 0, 1))
		require.NoError(t, err)
		assert.Equal(t, int64(4*3600), tot.TRESSeconds["cpu"], "a whole purged day reads its day total")
		var days []accounting.Rollup
		require.NoError(t, tx.Rollups(tr.alice.ID, accounting.LevelDay, t0, t0.AddDate(0, 2, 0),
			func(r accounting.Rollup) bool { days = append(days, r); return true }))
		require.Len(t, days, 2)
		assert.Equal(t, t0, days[0].Start.UTC())
		assert.Equal(t, int64(4*3600), days[0].TRESSeconds["cpu"])
		return nil
	})
	// A late record for a purged day lands in its day total.
	update(t, l, func(tx accounting.Tx) error {
		return tx.PutJob(simpleJob(3, tr.alice, t0.Add(5*time.Hour), time.Hour))
	})
	view(t, l, func(tx accounting.Tx) error {
		tot, err := tx.Totals(tr.alice.ID, t0, t0.AddDate(0, 0, 1))
		require.NoError(t, err)
		assert.Equal(t, int64(2*4*3600), tot.TRESSeconds["cpu"])
		var hours []accounting.Rollup
		require.NoError(t, tx.Rollups(tr.alice.ID, accounting.LevelHour, t0, t0.AddDate(0, 0, 1),
			func(r accounting.Rollup) bool { hours = append(hours, r); return true }))
		assert.Empty(t, hours, "no hour buckets come back for a purged day")
		return nil
	})
	// Purging days purges what is left of the hours too; months stay.
	var n2 int
	update(t, l, func(tx accounting.Tx) error {
		var err error
		n2, err = tx.PurgeRollups(accounting.LevelDay, t0.AddDate(0, 3, 0))
		return err
	})
	assert.Positive(t, n2)
	view(t, l, func(tx accounting.Tx) error {
		tot, err := tx.Totals(tr.alice.ID, t0, t0.AddDate(0, 2, 0))
		require.NoError(t, err)
		assert.Equal(t, int64(3*4*3600), tot.TRESSeconds["cpu"], "whole months are still there")
		tot, err = tx.Totals(tr.alice.ID, t0, t0.AddDate(0, 0, 1))
		require.NoError(t, err)
		assert.Zero(t, tot.TRESSeconds["cpu"])
		return nil
	})
}

func uf(f float64) *float64 { return &f }

func testUsageChain(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{NoDecay: true})
	tr := buildTree(t, l, t0)
	update(t, l, func(tx accounting.Tx) error {
		require.NoError(t, tx.Charge(accounting.Charge{Assoc: tr.dave.ID, QOS: "high", PartitionQOS: "part",
			TRES: accounting.TRES{"cpu": 8, "gres/gpu": 2, "billing": 10}, From: t0, To: t0.Add(time.Hour)}))
		require.NoError(t, tx.Charge(accounting.Charge{Assoc: tr.alice.ID, QOS: "high", UsageFactor: uf(0.5),
			TRES: accounting.TRES{"cpu": 4}, From: t0, To: t0.Add(time.Hour)}))
		require.NoError(t, tx.Charge(accounting.Charge{Assoc: tr.bob.ID, UsageFactor: uf(0),
			TRES: accounting.TRES{"cpu": 100}, From: t0, To: t0.Add(time.Hour)}))
		require.NoError(t, tx.Charge(accounting.Charge{Assoc: tr.carol.ID, Billing: 2.5,
			TRES: accounting.TRES{"cpu": 1, "billing": 9}, From: t0, To: t0.Add(time.Hour)}))
		err := tx.Charge(accounting.Charge{Assoc: 9999, From: t0, To: t0})
		assert.ErrorIs(t, err, accounting.ErrNotFound)
		err = tx.Charge(accounting.Charge{Assoc: tr.bob.ID, From: t0, To: t0.Add(-time.Second)})
		assert.ErrorIs(t, err, accounting.ErrInvalid)
		err = tx.Charge(accounting.Charge{Assoc: tr.bob.ID, UsageFactor: uf(math.NaN()), From: t0, To: t0})
		assert.ErrorIs(t, err, accounting.ErrInvalid)
		return nil
	})
	now := t0.Add(time.Hour)
	view(t, l, func(tx accounting.Tx) error {
		u := func(id accounting.AssocID) accounting.Usage {
			x, err := tx.Usage(id, now)
			require.NoError(t, err)
			return x
		}
		assert.InDelta(t, 10*3600.0, u(tr.dave.ID).Raw, 1e-6, "billing × seconds")
		assert.InDelta(t, 10*3600.0, u(tr.hep.ID).Raw, 1e-6, "ancestors are charged")
		assert.InDelta(t, 2*3600.0, u(tr.dave.ID).TRES["gres/gpu"], 1e-6)
		assert.InDelta(t, 0.5*4*3600, u(tr.alice.ID).Raw, 1e-6, "UsageFactor, billing defaults to CPUs")
		assert.Zero(t, u(tr.bob.ID).Raw, "UsageFactor 0 charges nothing")
		assert.InDelta(t, 2.5*3600, u(tr.carol.ID).Raw, 1e-6, "explicit Billing wins")
		assert.InDelta(t, (10+2+2.5)*3600, u(tr.root.ID).Raw, 1e-6)
		assert.InDelta(t, (10+2)*3600, u(tr.phys.ID).Raw, 1e-6)
		assert.InDelta(t, 3600*1.5, u(tr.phys.ID).Wall, 1e-6, "wall × UsageFactor")
		assert.Equal(t, now, u(tr.dave.ID).LastCharge.UTC())
		q, err := tx.QOSUsage("high", now)
		require.NoError(t, err)
		assert.InDelta(t, (10+2)*3600.0, q.Raw, 1e-6)
		p, err := tx.QOSUsage("part", now)
		require.NoError(t, err)
		assert.InDelta(t, 10*3600.0, p.Raw, 1e-6, "partition QOS charged too")
		none, err := tx.QOSUsage("unused", now)
		require.NoError(t, err)
		assert.Zero(t, none.Raw)
		_, err = tx.Usage(9999, now)
		assert.ErrorIs(t, err, accounting.ErrNotFound)
		return nil
	})
}

func usageAt(t *testing.T, l accounting.Ledger, id accounting.AssocID, now time.Time) accounting.Usage {
	t.Helper()
	var u accounting.Usage
	view(t, l, func(tx accounting.Tx) error {
		var err error
		u, err = tx.Usage(id, now)
		return err
	})
	return u
}

func testDecayExact(t *testing.T, open Opener) {
	hl := 7 * 24 * time.Hour
	l := newLedger(t, open, accounting.Config{Decay: accounting.DecayExact, HalfLife: hl})
	tr := buildTree(t, l, t0)
	end := t0.Add(time.Hour)
	update(t, l, func(tx accounting.Tx) error {
		return tx.Charge(accounting.Charge{Assoc: tr.alice.ID, TRES: accounting.TRES{"cpu": 1}, From: t0, To: end})
	})
	u0 := usageAt(t, l, tr.alice.ID, end)
	// The chunk itself is weighted by the exact integral.
	assert.InDelta(t, (1-math.Exp2(-3600/hl.Seconds()))*hl.Seconds()/math.Ln2, u0.Raw, 1e-6)
	u1 := usageAt(t, l, tr.alice.ID, end.Add(hl))
	u2 := usageAt(t, l, tr.alice.ID, end.Add(2*hl))
	assert.InDelta(t, 0.5, u1.Raw/u0.Raw, 1e-12, "one half-life halves usage")
	assert.InDelta(t, 0.25, u2.Raw/u0.Raw, 1e-12, "two half-lives leave a quarter")
	assert.InDelta(t, 0.25, u2.TRES["cpu"]/u0.TRES["cpu"], 1e-12)
	assert.InDelta(t, 3600, u2.BudgetTRES["cpu"], 1e-9, "budgets do not decay by default")
	// Charging in pieces equals charging at once.
	update(t, l, func(tx accounting.Tx) error {
		for m := 0; m < 60; m += 5 {
			if err := tx.Charge(accounting.Charge{Assoc: tr.bob.ID, TRES: accounting.TRES{"cpu": 1},
				From: t0.Add(time.Duration(m) * time.Minute), To: t0.Add(time.Duration(m+5) * time.Minute)}); err != nil {
				return err
			}
		}
		return nil
	})
	assert.InDelta(t, u0.Raw, usageAt(t, l, tr.bob.ID, end).Raw, 1e-6)
	// A late charge (interval before the record's time) is decayed to it.
	update(t, l, func(tx accounting.Tx) error {
		return tx.Charge(accounting.Charge{Assoc: tr.bob.ID, TRES: accounting.TRES{"cpu": 1}, From: t0.Add(-hl).Add(-time.Hour), To: t0.Add(-hl)})
	})
	assert.InDelta(t, u0.Raw*(1+math.Exp2(-(hl.Seconds()+3600)/hl.Seconds())), usageAt(t, l, tr.bob.ID, end).Raw, 1e-6)
}

func testDecaySlurm(t *testing.T, open Opener) {
	hl := 7 * 24 * time.Hour
	cfg := accounting.Config{HalfLife: hl} // Slurm mode, 5-minute calc period by default
	l := newLedger(t, open, cfg)
	tr := buildTree(t, l, t0)
	end := t0.Add(time.Hour)
	update(t, l, func(tx accounting.Tx) error {
		return tx.Charge(accounting.Charge{Assoc: tr.alice.ID, TRES: accounting.TRES{"cpu": 1}, From: t0, To: end})
	})
	df := 1 - 0.693/hl.Seconds()
	u0 := usageAt(t, l, tr.alice.ID, end)
	assert.InDelta(t, 3600*math.Pow(df, 3600), u0.Raw, 1e-6, "Slurm decays the new chunk once: Δ·df^Δ")
	assert.Equal(t, u0.Raw, usageAt(t, l, tr.alice.ID, end.Add(4*time.Minute)).Raw, "constant between calc periods")
	u2 := usageAt(t, l, tr.alice.ID, end.Add(2*hl))
	assert.InDelta(t, math.Pow(df, 2*hl.Seconds()), u2.Raw/u0.Raw, 1e-12)
	assert.InDelta(t, 0.25, u2.Raw/u0.Raw, 0.0002, "two half-lives ≈ a quarter")
	assert.InDelta(t, cfg.DecayBetween(end, end.Add(2*hl)), u2.Raw/u0.Raw, 1e-12)
}

func testNoDecayQOS(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{Decay: accounting.DecayExact})
	tr := buildTree(t, l, t0)
	end := t0.Add(time.Hour)
	update(t, l, func(tx accounting.Tx) error {
		return tx.Charge(accounting.Charge{Assoc: tr.alice.ID, QOS: "frozen", QOSNoDecay: true,
			TRES: accounting.TRES{"cpu": 2}, From: t0, To: end})
	})
	later := end.Add(30 * 24 * time.Hour)
	view(t, l, func(tx accounting.Tx) error {
		q, err := tx.QOSUsage("frozen", later)
		require.NoError(t, err)
		assert.InDelta(t, 7200, q.Raw, 1e-9, "NoDecay QOS keeps its usage")
		u, err := tx.Usage(tr.alice.ID, later)
		require.NoError(t, err)
		assert.Less(t, u.Raw, 7200/8.0, "the association still decays")
		return nil
	})
}

func testBudgets(t *testing.T, open Opener) {
	for _, decay := range []bool{false, true} {
		l := newLedger(t, open, accounting.Config{Decay: accounting.DecayExact, DecayBudgets: decay})
		tr := buildTree(t, l, t0)
		update(t, l, func(tx accounting.Tx) error {
			return tx.Charge(accounting.Charge{Assoc: tr.bob.ID, TRES: accounting.TRES{"gres/gpu": 4, "cpu": 8},
				From: t0, To: t0.Add(10 * time.Hour)})
		})
		u := usageAt(t, l, tr.phys.ID, t0.Add(10*time.Hour).Add(14*24*time.Hour))
		if decay {
			assert.InDelta(t, u.TRES["gres/gpu"], u.BudgetTRES["gres/gpu"], 1e-6, "DecayBudgets: budget decays like usage")
			assert.Less(t, u.BudgetMinutes("gres/gpu"), 4*600.0/3)
		} else {
			assert.InDelta(t, 4*600.0, u.BudgetMinutes("gres/gpu"), 1e-9, "GPU-minutes since the last reset")
			assert.InDelta(t, 8*36000.0, u.BudgetBilling, 1e-9)
		}
	}
}

func testResetPeriods(t *testing.T, open Opener) {
	loc := time.FixedZone("UTC+2", 2*3600)
	l := newLedger(t, open, accounting.Config{NoDecay: true, ResetPeriod: accounting.ResetMonthly, Location: loc})
	tr := buildTree(t, l, t0)
	// Local midnight of 1 April is 22:00 UTC on 31 March.
	boundary := time.Date(2024, 4, 1, 0, 0, 0, 0, loc)
	update(t, l, func(tx accounting.Tx) error {
		return tx.Charge(accounting.Charge{Assoc: tr.alice.ID, TRES: accounting.TRES{"cpu": 1}, From: boundary.Add(-2 * time.Hour), To: boundary.Add(-time.Hour)})
	})
	assert.InDelta(t, 3600, usageAt(t, l, tr.alice.ID, boundary.Add(-time.Second)).Raw, 1e-9)
	assert.Zero(t, usageAt(t, l, tr.alice.ID, boundary).Raw, "cleared at the boundary")
	assert.Zero(t, usageAt(t, l, tr.alice.ID, boundary).BudgetBilling, "budgets too")
	// A charge straddling the boundary only counts after it.
	update(t, l, func(tx accounting.Tx) error {
		return tx.Charge(accounting.Charge{Assoc: tr.alice.ID, TRES: accounting.TRES{"cpu": 1}, From: boundary.Add(-30 * time.Minute), To: boundary.Add(30 * time.Minute)})
	})
	assert.InDelta(t, 1800, usageAt(t, l, tr.alice.ID, boundary.Add(time.Hour)).Raw, 1e-9)
	// A late charge for the previous period is ignored.
	update(t, l, func(tx accounting.Tx) error {
		return tx.Charge(accounting.Charge{Assoc: tr.alice.ID, TRES: accounting.TRES{"cpu": 1}, From: boundary.Add(-3 * time.Hour), To: boundary.Add(-2 * time.Hour)})
	})
	assert.InDelta(t, 1800, usageAt(t, l, tr.alice.ID, boundary.Add(time.Hour)).Raw, 1e-9)
}

func testResetUsage(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{NoDecay: true})
	tr := buildTree(t, l, t0)
	update(t, l, func(tx accounting.Tx) error {
		return tx.Charge(accounting.Charge{Assoc: tr.alice.ID, QOS: "q", TRES: accounting.TRES{"cpu": 1}, From: t0, To: t0.Add(time.Hour)})
	})
	r := t0.Add(2 * time.Hour)
	update(t, l, func(tx accounting.Tx) error { return tx.ResetUsage(r) })
	assert.InDelta(t, 3600, usageAt(t, l, tr.alice.ID, r.Add(-time.Second)).Raw, 1e-9, "reading the past")
	assert.Zero(t, usageAt(t, l, tr.root.ID, r).Raw)
	view(t, l, func(tx accounting.Tx) error {
		q, err := tx.QOSUsage("q", r)
		require.NoError(t, err)
		assert.Zero(t, q.Raw)
		return nil
	})
	update(t, l, func(tx accounting.Tx) error {
		require.NoError(t, tx.Charge(accounting.Charge{Assoc: tr.alice.ID, TRES: accounting.TRES{"cpu": 1}, From: t0, To: r}), "ignored")
		return tx.Charge(accounting.Charge{Assoc: tr.alice.ID, TRES: accounting.TRES{"cpu": 1}, From: r, To: r.Add(time.Hour)})
	})
	assert.InDelta(t, 3600, usageAt(t, l, tr.alice.ID, r.Add(time.Hour)).Raw, 1e-9)
}

func testDecisions(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	mk := func(kind accounting.DecisionKind, at time.Time, job accounting.JobID, comp ...accounting.JobID) accounting.Decision {
		d := accounting.Decision{Kind: kind, Time: at, Job: job, Cluster: "c", NodeList: "gpu[01-02]",
			GPUs:     []accounting.NodeGPUs{{Node: "gpu01", Indices: []int{0, 1}}},
			Priority: 1000.5, Factors: map[string]float64{"age": 10.25, "fairshare": 900, "qos": 90.25},
			PolicyVersion: "sha256:abc", Detail: "main"}
		for i, c := range comp {
			d.Competing = append(d.Competing, accounting.Competitor{Job: c, Priority: 999 - float64(i), Reason: "Priority"})
		}
		return d
	}
	ds := []accounting.Decision{
		mk(accounting.DecisionStart, t0.Add(time.Hour), 1, 2, 3),
		mk(accounting.DecisionReservation, t0, 2),
		mk(accounting.DecisionPreempt, t0.Add(2*time.Hour), 1),
		mk(accounting.DecisionStart, t0.Add(2*time.Hour), 2, 3),
		mk(accounting.DecisionRequeue, t0.Add(3*time.Hour), 1),
	}
	var seqs []uint64
	update(t, l, func(tx accounting.Tx) error {
		for _, d := range ds {
			s, err := tx.PutDecision(d)
			if err != nil {
				return err
			}
			seqs = append(seqs, s)
		}
		_, err := tx.PutDecision(accounting.Decision{Kind: 0, Time: t0, Job: 1})
		assert.ErrorIs(t, err, accounting.ErrInvalid)
		_, err = tx.PutDecision(accounting.Decision{Kind: accounting.DecisionStart, Time: t0, Job: 1, Priority: math.Inf(1)})
		assert.ErrorIs(t, err, accounting.ErrInvalid)
		return nil
	})
	assert.True(t, slices.IsSorted(seqs) && len(slices.Compact(slices.Clone(seqs))) == len(seqs), "increasing sequence numbers")
	query := func(q accounting.DecisionQuery) []accounting.Decision {
		var out []accounting.Decision
		view(t, l, func(tx accounting.Tx) error {
			return tx.Decisions(q, func(d accounting.Decision) bool { out = append(out, d); return true })
		})
		return out
	}
	all := query(accounting.DecisionQuery{})
	require.Len(t, all, 5)
	assert.Equal(t, accounting.DecisionReservation, all[0].Kind, "time order")
	got := all[1]
	want := ds[0]
	want.Seq = seqs[0]
	got.Time = got.Time.UTC()
	assert.Equal(t, want, got, "round trip")
	byJob := query(accounting.DecisionQuery{Job: 1})
	require.Len(t, byJob, 3)
	assert.Equal(t, []accounting.DecisionKind{accounting.DecisionStart, accounting.DecisionPreempt, accounting.DecisionRequeue},
		[]accounting.DecisionKind{byJob[0].Kind, byJob[1].Kind, byJob[2].Kind})
	assert.Len(t, query(accounting.DecisionQuery{Job: 3, WithCompeting: true}), 2, "where job 3 lost")
	assert.Len(t, query(accounting.DecisionQuery{From: t0.Add(time.Hour), To: t0.Add(3 * time.Hour)}), 3)
	assert.Len(t, query(accounting.DecisionQuery{Job: 1, From: t0.Add(2 * time.Hour)}), 2)
	assert.Len(t, query(accounting.DecisionQuery{Kinds: []accounting.DecisionKind{accounting.DecisionStart}}), 2)
	var purged int
	update(t, l, func(tx accounting.Tx) error {
		var err error
		purged, err = tx.PurgeDecisions(t0.Add(2 * time.Hour))
		return err
	})
	assert.Equal(t, 2, purged)
	assert.Len(t, query(accounting.DecisionQuery{}), 3)
	assert.Len(t, query(accounting.DecisionQuery{Job: 1}), 2, "the job index is purged too")
}

func testUtilization(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
	update(t, l, func(tx accounting.Tx) error {
		// 100 CPUs from t0.
		require.NoError(t, tx.PutCapacity(accounting.Capacity{Cluster: "c", Since: t0, TRES: accounting.TRES{"cpu": 100}}))
		// A finished 40-CPU job over hours 0–2.
		j := simpleJob(1, tr.alice, h(0), 2*time.Hour)
		j.Submit, j.Eligible = h(0), h(0)
		j.AllocTRES, j.ReqTRES = accounting.TRES{"cpu": 40}, accounting.TRES{"cpu": 40}
		require.NoError(t, tx.PutJob(j))
		// A node of 10 CPUs down over hours 1–3.
		require.NoError(t, tx.PutNodeEvent(accounting.NodeEvent{Cluster: "c", Node: "n1", State: accounting.NodeDown,
			Start: h(1), End: h(3), TRES: accounting.TRES{"cpu": 10}, Reason: "ECC"}))
		// A maintenance reservation of 20 CPUs over hours 2–3.
		require.NoError(t, tx.PutReservation(accounting.Reservation{Cluster: "c", Name: "maint", Start: h(2), End: h(3),
			TRES: accounting.TRES{"cpu": 20}, Maint: true}))
		// A pending 80-CPU job eligible since hour 1 (waits for ever).
		p := simpleJob(2, tr.bob, h(1), 0)
		p.Submit, p.Eligible, p.Start, p.End, p.State = h(1), h(1), time.Time{}, time.Time{}, accounting.StatePending
		p.ReqTRES = accounting.TRES{"cpu": 80}
		require.NoError(t, tx.PutJob(p))
		// A running 30-CPU job since hour 3.
		r := simpleJob(3, tr.carol, h(3), 0)
		r.Submit, r.Eligible, r.End, r.State = h(3), h(3), time.Time{}, accounting.StateRunning
		r.AllocTRES = accounting.TRES{"cpu": 30}
		return tx.PutJob(r)
	})
	var u accounting.Utilization
	view(t, l, func(tx accounting.Tx) error {
		var err error
		u, err = accounting.ClusterUtilization(tx, "c", h(0), h(10), h(4).Add(30*time.Minute), "")
		return err
	})
	const hr = 3600
	// Hours 0..3 (the range is clipped to the last complete hour, 4):
	// h0: alloc 40, idle 60.
	// h1: alloc 40, down 10, idle 50 → planned 50 (80 waiting), over 30.
	// h2: down 10, pdown 20, idle 70 → planned 70, over 10.
	// h3: alloc 30, idle 70 → planned 70, over 10.
	assert.Equal(t, h(0), u.From.UTC())
	assert.Equal(t, h(4), u.To.UTC())
	assert.Equal(t, int64(400*hr), u.Reported)
	assert.Equal(t, int64(110*hr), u.Allocated)
	assert.Equal(t, int64(20*hr), u.Down)
	assert.Equal(t, int64(20*hr), u.PlannedDown)
	assert.Equal(t, int64(60*hr), u.Idle)
	assert.Equal(t, int64(190*hr), u.Planned)
	assert.Equal(t, int64(50*hr), u.OverCommitted)
	assert.Equal(t, u.Reported, u.Allocated+u.Down+u.PlannedDown+u.Idle+u.Planned)
	assert.InDelta(t, 27.5, u.Percent(u.Allocated), 1e-9)
	view(t, l, func(tx accounting.Tx) error {
		_, err := accounting.ClusterUtilization(tx, "nope", h(0), h(1), h(2), "cpu")
		assert.ErrorIs(t, err, accounting.ErrNotFound)
		return nil
	})
}

func testAccountUsage(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	update(t, l, func(tx accounting.Tx) error {
		require.NoError(t, tx.PutJob(simpleJob(1, tr.alice, t0, 2*time.Hour)))
		require.NoError(t, tx.PutJob(simpleJob(2, tr.dave, t0, 5*time.Hour)))
		require.NoError(t, tx.PutJob(simpleJob(3, tr.carol, t0, time.Hour)))
		run := simpleJob(4, tr.bob, t0.Add(time.Hour), 0)
		run.End, run.State = time.Time{}, accounting.StateRunning
		return tx.PutJob(run)
	})
	var rows []accounting.UsageRow
	var top []accounting.UserUsage
	view(t, l, func(tx accounting.Tx) error {
		var err error
		rows, err = accounting.AccountUsage(tx, "c", t0, t0.Add(24*time.Hour), t0.Add(3*time.Hour), false)
		require.NoError(t, err)
		top, err = accounting.TopUsers(tx, "c", t0, t0.Add(24*time.Hour), t0.Add(3*time.Hour), "cpu", 2)
		return err
	})
	byKey := map[string]accounting.UsageRow{}
	var order []string
	for _, r := range rows {
		byKey[r.Key.String()] = r
		order = append(order, r.Key.String())
	}
	assert.Equal(t, []string{"c/root", "c/chem", "c/chem/carol", "c/phys", "c/phys/alice", "c/phys/bob", "c/hep", "c/hep/dave"}, order)
	// Up to now = 3h: alice 2h, dave 3h (of 5), carol 1h, bob running 2h.
	assert.Equal(t, int64(4*8*3600), byKey["c/root"].TRESSeconds["cpu"])
	assert.Equal(t, int64(4*7*3600), byKey["c/phys"].TRESSeconds["cpu"])
	assert.Equal(t, int64(4*2*3600), byKey["c/phys/bob"].TRESSeconds["cpu"], "running job counted up to now")
	assert.Equal(t, int64(4*3*3600), byKey["c/hep"].TRESSeconds["cpu"])
	assert.Equal(t, 2, byKey["c/hep"].Depth)
	assert.Equal(t, 3, byKey["c/hep/dave"].Depth)
	require.Len(t, top, 2)
	assert.Equal(t, "dave", top[0].User)
	assert.Equal(t, []string{"hep"}, top[0].Accounts)
	assert.Equal(t, "alice", top[1].User, "ties broken by name")
}

func testShareTree(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{NoDecay: true})
	tr := buildTree(t, l, t0)
	update(t, l, func(tx accounting.Tx) error {
		require.NoError(t, tx.Charge(accounting.Charge{Assoc: tr.bob.ID, TRES: accounting.TRES{"cpu": 3}, From: t0, To: t0.Add(time.Hour)}))
		return tx.Charge(accounting.Charge{Assoc: tr.carol.ID, TRES: accounting.TRES{"cpu": 1}, From: t0, To: t0.Add(time.Hour)})
	})
	var root *accounting.ShareNode
	view(t, l, func(tx accounting.Tx) error {
		var err error
		root, err = accounting.ShareTree(tx, "c", t0.Add(time.Hour))
		return err
	})
	byKey := map[string]*accounting.ShareNode{}
	root.Walk(func(n *accounting.ShareNode, _ int) bool { byKey[n.Assoc.Key().String()] = n; return true })
	require.Len(t, byKey, 8)
	assert.Equal(t, 1.0, root.NormShares)
	assert.InDelta(t, 0.6, byKey["c/phys"].NormShares, 1e-12)
	// phys's children: alice 1, bob 3, hep 2 → bob = 0.6 × 3/6.
	assert.InDelta(t, 0.3, byKey["c/phys/bob"].NormShares, 1e-12)
	assert.InDelta(t, 0.2, byKey["c/hep"].NormShares, 1e-12)
	assert.InDelta(t, 0.2, byKey["c/hep/dave"].NormShares, 1e-12)
	assert.InDelta(t, 0.75, byKey["c/phys"].NormUsage, 1e-12)
	assert.InDelta(t, 0.25, byKey["c/chem/carol"].NormUsage, 1e-12)
	assert.InDelta(t, 4*3600.0, root.Usage.Raw, 1e-9)
	assert.Equal(t, uint32(60), byKey["c/phys"].RawShares)
}

func testArchive(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	update(t, l, func(tx accounting.Tx) error {
		for i := range 10 {
			j := simpleJob(accounting.JobID(i+1), tr.alice, t0.Add(time.Duration(i)*24*time.Hour), time.Hour)
			require.NoError(t, tx.PutJob(j))
			require.NoError(t, tx.PutStep(accounting.StepRecord{Job: j.ID, Step: "batch", Start: j.Start, End: j.End, State: accounting.StateCompleted}))
		}
		run := simpleJob(11, tr.alice, t0, 0)
		run.End, run.State = time.Time{}, accounting.StateRunning
		return tx.PutJob(run)
	})
	var buf bytes.Buffer
	var n int
	before := t0.Add(5 * 24 * time.Hour)
	update(t, l, func(tx accounting.Tx) error {
		var err error
		n, err = tx.ArchiveJobs(before, 3, &buf)
		require.NoError(t, err)
		require.Equal(t, 3, n, "limit")
		m, err := tx.ArchiveJobs(before, 0, &buf)
		n += m
		return err
	})
	assert.Equal(t, 5, n)
	var archived []accounting.JobID
	require.NoError(t, accounting.ReadArchive(&buf, func(a accounting.ArchivedJob) bool {
		archived = append(archived, a.Job.ID)
		assert.Len(t, a.Steps, 1)
		return true
	}))
	assert.Equal(t, []accounting.JobID{1, 2, 3, 4, 5}, archived)
	view(t, l, func(tx accounting.Tx) error {
		_, err := tx.Job(1)
		assert.ErrorIs(t, err, accounting.ErrNotFound)
		s, err := tx.Steps(1)
		require.NoError(t, err)
		assert.Empty(t, s)
		_, err = tx.Job(6)
		assert.NoError(t, err)
		_, err = tx.Job(11)
		assert.NoError(t, err, "open jobs are never archived")
		tot, err := tx.Totals(tr.alice.ID, t0, t0.Add(30*24*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, int64(10*4*3600), tot.TRESSeconds["cpu"], "rollups survive archiving")
		return nil
	})
}

func testConcurrent(t *testing.T, open Opener) {
	l := newLedger(t, open, accounting.Config{})
	tr := buildTree(t, l, t0)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				err := l.View(func(tx accounting.Tx) error {
					var n int
					if err := tx.Jobs(accounting.JobQuery{}, func(accounting.JobRecord) bool { n++; return true }); err != nil {
						return err
					}
					_, err := tx.Totals(tr.root.ID, t0, t0.Add(time.Duration(w*20+i)*time.Hour))
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 40 {
		require.NoError(t, l.Update(func(tx accounting.Tx) error {
			return tx.PutJob(simpleJob(accounting.JobID(i+1), tr.bob, t0.Add(time.Duration(i)*time.Hour), time.Hour))
		}))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
