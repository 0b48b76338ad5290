package policy_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
)

// updateJob is one job of the runtime-update tests.
type updateJob struct {
	id                       policy.JobID
	user, account, part, qos string
	tres                     string
	nodes                    int
	running                  bool
}

var updateJobs = []updateJob{
	{1, "alice", "physics", "p", "", "cpu=4,gres/gpu=2", 1, true},
	{2, "alice", "physics", "p", "high", "cpu=8", 2, true},
	{3, "bob", "physics", "q", "", "gres/gpu=1", 1, false},
	{4, "carol", "chem", "p", "high", "cpu=1", 1, true},
	{5, "carol", "chem", "q", "", "cpu=2", 1, false},
}

func updateConfig(t *testing.T, reg *gres.Registry) policy.Config {
	return policy.Config{
		QOS: []policy.QOS{{Name: "spare"}, {Name: "normal", Limits: policy.QOSLimits{MaxTRESPerUser: tl(t, reg, "gres/gpu=8")}},
			{Name: "high", Priority: 100}},
		Partitions: []policy.Partition{{Name: "p"}, {Name: "q", QOS: "normal"}},
		Assocs:     baseAssocs(),
	}
}

// usageDigest renders every counter a check reads.
func usageDigest(u *policy.Usage, now time.Time) string {
	var b strings.Builder
	for _, q := range []string{"spare", "normal", "high", "extra"} {
		g, ok := u.QOSUsage(q, now)
		fmt.Fprintf(&b, "qos %s %v %+v\n", q, ok, g)
		for _, who := range []string{"alice", "bob", "carol", "physics", "chem"} {
			r, j, s := u.QOSUserUsage(q, who)
			r2, j2, s2 := u.QOSAccountUsage(q, who)
			fmt.Fprintf(&b, " %s %v %d %d / %v %d %d\n", who, r, j, s, r2, j2, s2)
		}
	}
	for _, k := range []policy.AssocKey{{Account: "root"}, {Account: "science"}, {Account: "physics"}, {Account: "chem"},
		{Account: "physics", User: "alice"}, {Account: "physics", User: "bob"}, {Account: "chem", User: "carol"}, {Account: "bio"}} {
		g, ok := u.AssocUsage(k, now)
		fmt.Fprintf(&b, "assoc %+v %v %+v\n", k, ok, g)
	}
	return b.String()
}

// countAll counts updateJobs afresh under p, with the reported usage.
func countAll(t *testing.T, reg *gres.Registry, p *policy.Policy) *policy.Usage {
	u := p.NewUsage()
	for _, j := range updateJobs {
		s, err := p.Resolve(policy.JobRef{User: j.user, Account: j.account, Partition: j.part, QOS: j.qos})
		require.NoError(t, err)
		require.NoError(t, u.AddJob(j.id, s))
		if j.running {
			require.NoError(t, u.StartJob(j.id, vec(t, reg, j.tres), j.nodes, t0.Add(time.Hour)))
		}
	}
	require.NoError(t, u.SetQOSUsed("high", vec(t, reg, "gres/gpu=600"), 3*time.Hour))
	require.NoError(t, u.SetAssocUsed(policy.AssocKey{Account: "physics"}, vec(t, reg, "cpu=900"), time.Hour))
	return u
}

// Rebind after a runtime change counts exactly what counting every job
// afresh under the new policy counts, whether the layout stays (the
// counters are kept in place) or moves (they are recounted), and the
// decayed usage the ledger reported (GrpTRESMins, GrpWall) carries over
// by name; Rebase gives each job the subject Resolve would.
func TestRebindAfterChangeMatchesRecount(t *testing.T) {
	reg := newReg(t)
	p, err := policy.New(reg, updateConfig(t, reg))
	require.NoError(t, err)
	changes := []struct {
		name string
		do   func(*policy.Policy) (*policy.Policy, error)
	}{
		{"QOS limit (in place)", func(p *policy.Policy) (*policy.Policy, error) {
			return p.WithQOS(policy.QOS{Name: "normal", Limits: policy.QOSLimits{MaxTRESPerUser: tl(t, reg, "gres/gpu=1")}})
		}},
		{"QOS added (in place)", func(p *policy.Policy) (*policy.Policy, error) { return p.WithQOS(policy.QOS{Name: "extra"}) }},
		{"user added (in place)", func(p *policy.Policy) (*policy.Policy, error) {
			return p.WithAssoc(policy.Assoc{Account: "chem", User: "dave"})
		}},
		{"account added (recount)", func(p *policy.Policy) (*policy.Policy, error) {
			return p.WithAssoc(policy.Assoc{Account: "bio", Parent: "science"})
		}},
		{"QOS removed (recount)", func(p *policy.Policy) (*policy.Policy, error) { return p.WithoutQOS("spare") }},
		{"partition QOS changed (recount)", func(p *policy.Policy) (*policy.Policy, error) {
			return p.WithPartitions([]policy.Partition{{Name: "p", QOS: "normal"}, {Name: "q"}})
		}},
		{"account moved (recount)", func(p *policy.Policy) (*policy.Policy, error) {
			return p.WithAssoc(policy.Assoc{Account: "chem"})
		}},
	}
	u := countAll(t, reg, p)
	subs := map[policy.JobID]policy.Subject{}
	for _, j := range updateJobs {
		s, err := p.Resolve(policy.JobRef{User: j.user, Account: j.account, Partition: j.part, QOS: j.qos})
		require.NoError(t, err)
		subs[j.id] = s
	}
	for _, c := range changes {
		p2, err := c.do(p)
		require.NoError(t, err, c.name)
		assert.Empty(t, u.Rebind(p2), c.name)
		assert.Same(t, p2, u.Policy(), c.name)
		assert.Equal(t, usageDigest(countAll(t, reg, p2), t0), usageDigest(u, t0), c.name)
		for _, j := range updateJobs {
			want, err := p2.Resolve(policy.JobRef{User: j.user, Account: j.account, Partition: j.part, QOS: j.qos})
			require.NoError(t, err)
			got, err := p2.Rebase(subs[j.id])
			require.NoError(t, err, c.name)
			assert.Equal(t, want.Ref(), got.Ref(), c.name)
			assert.Equal(t, p2.Constraints(want), p2.Constraints(got), "%s: job %d", c.name, j.id)
			subs[j.id] = got
		}
		// Ending a job after the change takes back what it counted.
		require.NoError(t, u.StopJob(1))
		require.NoError(t, u.StartJob(1, vec(t, reg, updateJobs[0].tres), 1, t0.Add(time.Hour)))
		assert.Equal(t, usageDigest(countAll(t, reg, p2), t0), usageDigest(u, t0), c.name)
		p = p2
	}
	u.Compact()
	assert.Equal(t, usageDigest(countAll(t, reg, p), t0), usageDigest(u, t0), "after Compact")
}

// The With* methods validate as New does and refuse removals of what is
// still named.
func TestPolicyUpdatesValidate(t *testing.T) {
	reg := newReg(t)
	p, err := policy.New(reg, updateConfig(t, reg))
	require.NoError(t, err)
	_, err = p.WithoutQOS("normal") // partition q's QOS
	require.ErrorIs(t, err, policy.ErrUnknownQOS)
	assert.Contains(t, err.Error(), `partition "q"`)
	_, err = p.WithoutQOS("nope")
	require.ErrorIs(t, err, policy.ErrUnknownQOS)
	_, err = p.WithoutAssoc(policy.AssocKey{Account: "science"})
	require.ErrorIs(t, err, policy.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "2 child")
	_, err = p.WithoutAssoc(policy.AssocKey{Account: "physics", User: "zed"})
	require.ErrorIs(t, err, policy.ErrUnknownAccount)
	p1, err := p.WithQOS(policy.QOS{Name: "high", Preempt: []string{"spare"}})
	require.NoError(t, err)
	_, err = p1.WithQOS(policy.QOS{Name: "spare", Preempt: []string{"high"}})
	require.ErrorIs(t, err, policy.ErrCyclicPreempt)
	_, err = p.WithAssoc(policy.Assoc{Account: "x", Parent: "nope"})
	require.ErrorIs(t, err, policy.ErrUnknownAccount)
	p2, err := p.WithoutAssoc(policy.AssocKey{Account: "chem", User: "carol"})
	require.NoError(t, err)
	assert.Equal(t, 0, p2.Children("chem"))
	assert.Equal(t, 1, p.Children("chem"), "p itself is unchanged")
	_, err = p2.Resolve(policy.JobRef{User: "carol", Account: "chem", Partition: "p"})
	require.ErrorIs(t, err, policy.ErrUnknownAccount)
}

// SamePreemptRanks tells when a change may reorder a queue sorted by
// preemption rank.
func TestSamePreemptRanks(t *testing.T) {
	reg := newReg(t)
	cfg := updateConfig(t, reg)
	cfg.PreemptType, cfg.PreemptMode = policy.PreemptQOS, policy.PreemptCancel
	p, err := policy.New(reg, cfg)
	require.NoError(t, err)
	limit, err := p.WithQOS(policy.QOS{Name: "normal", Priority: 7})
	require.NoError(t, err)
	assert.True(t, limit.SamePreemptRanks(p))
	preempt, err := p.WithQOS(policy.QOS{Name: "high", Priority: 100, Preempt: []string{"normal"}})
	require.NoError(t, err)
	assert.False(t, preempt.SamePreemptRanks(p))
}
