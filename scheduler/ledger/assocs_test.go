package ledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/accounting"
	"github.com/sluicehq/sluice/internal/clustertest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/ledger"
)

func putAssocs(t *testing.T, l accounting.Ledger, at time.Time, as ...accounting.Assoc) {
	t.Helper()
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		for _, a := range as {
			if _, err := tx.PutAssoc(at, a); err != nil {
				return err
			}
		}
		return nil
	}))
}

func key(account, user string) accounting.AssocKey {
	return accounting.AssocKey{Cluster: "c", Account: account, User: user}
}

// The ledger is the one source of the association tree: the scheduler's
// policy is built from it (PolicyAssocs), and ledger changes reach the
// running scheduler as PutAssoc/RemoveAssoc events (SyncAssocs), limits
// included; a second sync has nothing to do.
func TestPolicyAssocsFromLedgerAndSync(t *testing.T) {
	l, err := accounting.NewMemory(accounting.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	putAssocs(t, l, t0,
		accounting.Assoc{AssocKey: key("physics", ""), Limits: accounting.Limits{GrpTRES: accounting.TRES{"gres/gpu": 12}}},
		accounting.Assoc{AssocKey: key("bio", ""), QOS: []string{"normal"}, DefaultQOS: "normal"},
		accounting.Assoc{AssocKey: key("physics", "ann"), Limits: accounting.Limits{MaxJobs: new(1)}},
		accounting.Assoc{AssocKey: key("bio", "cy")})
	cfg := clustertest.Mixed4()
	reg, err := scheduler.NewRegistry(cfg.Nodes)
	require.NoError(t, err)
	cfg.Registry = reg
	assocs, err := ledger.PolicyAssocs(l, "c", reg)
	require.NoError(t, err)
	require.Len(t, assocs, 5) // with the root
	cfg.Policy = &policy.Config{QOS: []policy.QOS{{Name: "normal"}}, Assocs: assocs}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	n, err := ledger.SyncAssocs(t0, l, "c", s)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "built from the ledger: nothing to sync")

	spec := func(user, account string) scheduler.JobSpec {
		return scheduler.JobSpec{User: user, Account: account, CPUsPerTask: 1, TimeLimit: time.Hour}
	}
	a1, err := s.Submit(t0, spec("ann", "physics"))
	require.NoError(t, err)
	a2, err := s.Submit(t0, spec("ann", "physics"))
	require.NoError(t, err)
	c, err := s.Schedule(t0)
	require.NoError(t, err)
	require.Len(t, c.Starts, 1)
	assert.Equal(t, a1, c.Starts[0].Job)
	assert.Equal(t, policy.ReasonAssocMaxJobsLimit, reasonOf(c, a2))

	// sacctmgr: ann may run 2 jobs; a new account chem under physics with
	// user dan; bio's user cy leaves.
	at := t0.Add(time.Hour)
	putAssocs(t, l, at,
		accounting.Assoc{AssocKey: key("physics", "ann"), Limits: accounting.Limits{MaxJobs: new(2)}},
		accounting.Assoc{AssocKey: key("chem", ""), ParentAccount: "physics"},
		accounting.Assoc{AssocKey: key("chem", "dan")})
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		a, err := tx.LookupAssoc(key("bio", "cy"))
		if err != nil {
			return err
		}
		return tx.RemoveAssoc(at, a.ID)
	}))
	n, err = ledger.SyncAssocs(at, l, "c", s)
	require.NoError(t, err)
	assert.Equal(t, 4, n, "put ann, chem, dan; remove cy")
	n, err = ledger.SyncAssocs(at, l, "c", s)
	require.NoError(t, err)
	assert.Equal(t, 0, n)
	c, err = s.Schedule(at)
	require.NoError(t, err)
	require.Len(t, c.Starts, 1)
	assert.Equal(t, a2, c.Starts[0].Job, "the raised limit lets ann's second job start")
	_, err = s.Submit(at, spec("dan", "chem"))
	require.NoError(t, err)
	_, err = s.Submit(at, spec("cy", "bio"))
	require.ErrorIs(t, err, scheduler.ErrInvalidJob)
	assert.Equal(t, []string{"chem", "physics", "root"}, s.Policy().AccountPath("chem"))

	// A removal while jobs of the association run is refused, whole.
	require.NoError(t, l.Update(func(tx accounting.Tx) error {
		a, err := tx.LookupAssoc(key("physics", "ann"))
		if err != nil {
			return err
		}
		return tx.RemoveAssoc(at, a.ID)
	}))
	n, err = ledger.SyncAssocs(at, l, "c", s)
	require.ErrorIs(t, err, scheduler.ErrInUse)
	assert.Equal(t, 0, n)
	require.NoError(t, s.Cancel(at, a2)) // a1 timed out at the last cycle
	n, err = ledger.SyncAssocs(at, l, "c", s)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// A ledger limit on a TRES the scheduler does not have is an error naming
// the association and the limit.
func TestPolicyAssocsUnknownTRES(t *testing.T) {
	l, err := accounting.NewMemory(accounting.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	putAssocs(t, l, t0, accounting.Assoc{AssocKey: key("physics", ""), Limits: accounting.Limits{GrpTRES: accounting.TRES{"gres/tpu": 4}}})
	reg, err := scheduler.NewRegistry(clustertest.Mixed4().Nodes)
	require.NoError(t, err)
	_, err = ledger.PolicyAssocs(l, "c", reg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "c/physics")
	assert.Contains(t, err.Error(), "GrpTRES")
}

func reasonOf(c scheduler.Cycle, id scheduler.JobID) policy.Reason {
	for _, p := range c.Pending {
		if p.Job == id {
			return p.Reason
		}
	}
	return policy.ReasonNone
}
