package policy_test

import (
	"encoding"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/internal/texttest"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/topology"
)

func TestPolicyEnumsTextRoundTrip(t *testing.T) {
	texttest.Values(t, policy.PreemptNone, policy.PreemptPartitionPrio, policy.PreemptQOS)
	texttest.Values(t, policy.OverSubscribeNo, policy.OverSubscribeExclusive, policy.OverSubscribeYes, policy.OverSubscribeForce)
	texttest.Values(t, policy.PreemptOrderLeastLostWork, policy.PreemptOrderSlurm)
	texttest.Values(t, policy.ActionNone, policy.ActionCancel, policy.ActionRequeue, policy.ActionSuspend)
	texttest.Values(t, policy.UnitNone, policy.UnitCount, policy.UnitJobs, policy.UnitSeconds, policy.UnitTRESMinutes)
	texttest.Values(t, policy.OutcomePending, policy.OutcomeRunning, policy.OutcomeCompleted, policy.OutcomeFailed, policy.OutcomeCancelled)
	var levels []policy.Level
	for l := policy.Level(0); l.String() != "Level(10)"; l++ {
		levels = append(levels, l)
	}
	require.Len(t, levels, 10)
	texttest.Values(t, levels...)
	texttest.Values(t, policy.PreemptModeCluster, policy.PreemptOff, policy.PreemptCancel, policy.PreemptRequeue,
		policy.PreemptSuspend|policy.PreemptGang, policy.PreemptRequeue|policy.PreemptWithin|policy.PreemptPriority)
	texttest.Values(t, policy.QOSFlags(0), policy.QOSDenyOnLimit|policy.QOSNoReserve, policy.QOSFlags(1<<10-1))
	texttest.Values(t, policy.ResvFlags(0), policy.ResvMaint|policy.ResvIgnoreJobs, policy.ResvFlags(1<<12-1))

	j, err := json.Marshal(struct {
		T policy.PreemptType
		M policy.PreemptMode
		F policy.QOSFlags
		R policy.ResvFlags
		O policy.OverSubscribe
	}{policy.PreemptQOS, policy.PreemptSuspend | policy.PreemptGang, policy.QOSDenyOnLimit | policy.QOSNoReserve,
		policy.ResvMaint, policy.OverSubscribeForce})
	require.NoError(t, err)
	assert.JSONEq(t, `{"T":"preempt/qos","M":"SUSPEND,GANG","F":"DenyOnLimit,NoReserve","R":"MAINT","O":"FORCE"}`, string(j))
}

func TestPolicyEnumsRejectUnknownNames(t *testing.T) {
	for _, c := range []struct {
		v    encoding.TextUnmarshaler
		in   string
		want string
	}{
		{new(policy.PreemptType), "preempt/gang", "PreemptType"},
		{new(policy.OverSubscribe), "YES:4", "OverSubscribe"},
		{new(policy.PreemptOrder), "fifo", "PreemptOrder"},
		{new(policy.PreemptMode), "KILL", "PreemptMode"},
		{new(policy.QOSFlags), "DenyOnLimit,Fast", "QOS flags"},
		{new(policy.ResvFlags), "MONTHLY", "reservation flags"},
		{new(policy.Unit), "bytes", "Unit"},
		{new(policy.Reason), "Sleeping", "Reason"},
	} {
		err := c.v.UnmarshalText([]byte(c.in))
		require.Error(t, err, "%T %q", c.v, c.in)
		assert.Contains(t, err.Error(), c.want, "%T", c.v)
		assert.Contains(t, err.Error(), c.in, "%T", c.v)
	}
	for _, m := range []encoding.TextMarshaler{policy.PreemptType(9), policy.PreemptMode(7), policy.QOSFlags(1 << 20),
		policy.ResvFlags(1 << 20), policy.Reason(60000), policy.Unit(9)} {
		_, err := m.MarshalText()
		assert.Error(t, err, "%T %v", m, m)
	}
	var r policy.Reason
	require.NoError(t, r.UnmarshalText([]byte("qosmaxgrespERUSER")))
	assert.Equal(t, policy.ReasonQOSMaxGRESPerUser, r, "case-insensitive")
}

func TestReasonTextRoundTripsEveryReason(t *testing.T) {
	n := 0
	for r := policy.Reason(0); r < 1000; r++ {
		b, err := r.MarshalText()
		if err != nil {
			break
		}
		n++
		assert.Equal(t, r.String(), string(b))
		texttest.Values(t, r)
	}
	assert.Greater(t, n, 40, "every reason up to the last has a name")
	j, err := json.Marshal([]policy.Reason{policy.ReasonResources, policy.ReasonReqNodeNotAvailMaint})
	require.NoError(t, err)
	assert.Equal(t, `["Resources","ReqNodeNotAvail, Reserved for maintenance"]`, string(j))
}

func TestDurationTextSlurmFormat(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		text string
	}{
		{0, "0"},
		{90 * time.Minute, "01:30:00"},
		{36 * time.Hour, "1-12:00:00"},
		{time.Second, "00:00:01"},
		{1500 * time.Millisecond, "1.5s"},
		{-2 * time.Second, "-2s"},
		{policy.MaxLimitDuration + time.Hour, (policy.MaxLimitDuration + time.Hour).String()},
	} {
		b, err := policy.Duration(c.d).MarshalText()
		require.NoError(t, err)
		assert.Equal(t, c.text, string(b))
		a, j := texttest.RoundTrip(t, policy.Duration(c.d))
		assert.Equal(t, c.d, time.Duration(a), "%v", c.d)
		assert.Equal(t, c.d, time.Duration(j), "%v", c.d)
	}
	for in, want := range map[string]time.Duration{"UNLIMITED": 0, "infinite": 0, "90": 90 * time.Minute, "1-12": 36 * time.Hour,
		"10:30": 10*time.Minute + 30*time.Second, "2h": 2 * time.Hour} {
		var d policy.Duration
		require.NoError(t, d.UnmarshalText([]byte(in)), "%q", in)
		assert.Equal(t, want, time.Duration(d), "%q", in)
	}
	var d policy.Duration
	for _, bad := range []string{"", "1:2:3:4", "1-24", "soon", "5 hours"} {
		err := d.UnmarshalText([]byte(bad))
		require.Error(t, err, "%q", bad)
		assert.True(t, errors.Is(err, policy.ErrSyntax), "%q: %v", bad, err)
	}
}

func TestTRESLimitsTextKeepsNames(t *testing.T) {
	reg := newReg(t)
	l := tl(t, reg, "cpu=256,gres/gpu:h100=8,mem=1T,gres/gpu=16")
	b, err := l.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "cpu=256,mem=1048576,gres/gpu=16,gres/gpu:h100=8", string(b))

	var back policy.TRESLimits
	require.NoError(t, back.UnmarshalText(b))
	assert.False(t, back.Bound())
	_, limited := back.Get(gres.CPU)
	assert.False(t, limited, "unbound limits limit nothing")
	bound, err := back.Bind(reg)
	require.NoError(t, err)
	assert.Equal(t, l, bound)

	gpu := reg.MustLookup("gres/gpu")
	byID, err := policy.TRESLimitsOf(map[gres.ID]int64{gres.CPU: 4, gpu: 2})
	require.NoError(t, err)
	b, err = byID.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "cpu=4,"+gres.TRESName(gpu)+"=2", string(b), "an unnamed TRES is written by id")
	require.NoError(t, back.UnmarshalText(b))
	bound, err = back.Bind(reg)
	require.NoError(t, err)
	n, ok := bound.Get(gpu)
	assert.True(t, ok)
	assert.Equal(t, int64(2), n)

	require.NoError(t, back.UnmarshalText([]byte("gres/gpu=UNLIMITED, CPU=2K")))
	bound, err = back.Bind(reg)
	require.NoError(t, err)
	assert.Equal(t, tl(t, reg, "cpu=2048"), bound)
	for _, bad := range []string{"cpu", "cpu=", "cpu=1,cpu=2", "cpu=1.5", "cpu=x", "gres gpu=1", "=3"} {
		assert.Error(t, back.UnmarshalText([]byte(bad)), "%q", bad)
	}
	require.NoError(t, back.UnmarshalText([]byte("gres/fpga=1")))
	_, err = back.Bind(reg)
	require.ErrorIs(t, err, gres.ErrUnknownTRES)
	assert.Contains(t, err.Error(), "gres/fpga")
}

// TestNewBindsDecodedTRESLimits checks that a Config decoded from JSON
// limits what the original did once New binds it, and that an unknown
// TRES name is an error naming the QOS, the field and the name.
func TestNewBindsDecodedTRESLimits(t *testing.T) {
	reg := newReg(t)
	cfg := policy.Config{QOS: []policy.QOS{{Name: "normal", Limits: policy.QOSLimits{
		Limits: policy.Limits{MaxTRESPerJob: tl(t, reg, "gres/gpu=4")}}}}}
	j, err := json.Marshal(cfg)
	require.NoError(t, err)
	var decoded policy.Config
	require.NoError(t, json.Unmarshal(j, &decoded))
	assert.False(t, decoded.QOS[0].Limits.MaxTRESPerJob.Bound())
	e := newEnv(t, reg, decoded)
	assert.False(t, decoded.QOS[0].Limits.MaxTRESPerJob.Bound(), "New does not modify its argument")
	r := e.req("alice", "physics", "", "normal", "cpu=1,gres/gpu=5", 1, time.Hour)
	assert.Equal(t, policy.ReasonQOSMaxGRESPerJob, e.p.CheckStart(t0, r, e.u).Reason)
	r = e.req("alice", "physics", "", "normal", "cpu=1,gres/gpu=4", 1, time.Hour)
	assert.Equal(t, policy.ReasonNone, e.p.CheckStart(t0, r, e.u).Reason)

	var bad policy.Config
	require.NoError(t, json.Unmarshal([]byte(`{"QOS":[{"Name":"gpu","Limits":{"MaxTRESPerUser":"gres/tpu=1"}}]}`), &bad))
	_, err = policy.New(reg, bad)
	require.ErrorIs(t, err, policy.ErrInvalidConfig)
	require.ErrorIs(t, err, gres.ErrUnknownTRES)
	for _, want := range []string{`QOS "gpu"`, "MaxTRESPerUser", "gres/tpu"} {
		assert.Contains(t, err.Error(), want)
	}
	var badAssoc policy.Config
	require.NoError(t, json.Unmarshal([]byte(`{"Assocs":[{"Account":"physics","Limits":{"GrpTRES":"license/none=1"}}]}`), &badAssoc))
	_, err = policy.New(reg, badAssoc)
	require.ErrorIs(t, err, gres.ErrUnknownTRES)
	assert.Contains(t, err.Error(), `account "physics": GrpTRES`)
}

func TestPolicyConfigJSONRoundTrip(t *testing.T) {
	reg := newReg(t)
	cfg := policy.Config{
		QOS: []policy.QOS{
			{Name: "normal", Priority: 10, GraceTime: 90 * time.Second, PreemptMode: policy.PreemptRequeue,
				Flags: policy.QOSDenyOnLimit, Limits: policy.QOSLimits{
					Limits:         policy.Limits{GrpTRES: tl(t, reg, "gres/gpu=64"), MaxWall: 48 * time.Hour, GrpJobs: new(20)},
					MaxTRESPerUser: tl(t, reg, "gres/gpu:h100=8,cpu=128"), MaxJobsPerUser: new(0)}},
			{Name: "low", Preempt: nil, PreemptExemptTime: 10 * time.Minute},
		},
		Partitions: []policy.Partition{{Name: "gpu", QOS: "normal", MaxTime: 3 * 24 * time.Hour,
			OverSubscribe: policy.OverSubscribeYes, OverSubscribeCount: 2, TRESBillingWeights: "CPU=1.0,GRES/gpu=2.0",
			PreemptMode: policy.PreemptCancel, GraceTime: time.Minute}},
		Assocs: []policy.Assoc{{Account: "physics", Limits: policy.AssocLimits{
			Limits: policy.Limits{GrpWall: 1000 * time.Hour, MaxTRESPerNode: tl(t, reg, "cpu=32")}, MaxJobs: new(5)},
			QOS: []string{"normal", "low"}, DefaultQOS: "normal"},
			{Account: "physics", User: "alice"}},
		PreemptType:       policy.PreemptQOS,
		PreemptMode:       policy.PreemptRequeue,
		PreemptExemptTime: 5 * time.Minute,
		PreemptOrder:      policy.PreemptOrderSlurm,
	}
	want, err := policy.New(reg, cfg)
	require.NoError(t, err)
	j, err := json.Marshal(cfg)
	require.NoError(t, err)
	for _, s := range []string{`"MaxWall":"2-00:00:00"`, `"GraceTime":"00:01:30"`, `"GrpTRES":"gres/gpu=64"`,
		`"PreemptMode":"REQUEUE"`, `"OverSubscribe":"YES"`, `"PreemptType":"preempt/qos"`, `"PreemptExemptTime":"00:05:00"`,
		`"MaxTRESPerUser":"cpu=128,gres/gpu:h100=8"`, `"Flags":"DenyOnLimit"`, `"GrpWall":"41-16:00:00"`} {
		assert.Contains(t, string(j), s)
	}
	assert.NotContains(t, string(j), `"GraceTime":"0"`, "zero durations are omitted")
	var back policy.Config
	require.NoError(t, json.Unmarshal(j, &back))
	j2, err := json.Marshal(back)
	require.NoError(t, err)
	assert.JSONEq(t, string(j), string(j2))
	got, err := policy.New(reg, back)
	require.NoError(t, err)
	assert.Equal(t, want.Config(), got.Config(), "bound, the decoded config equals the original")
}

func TestReservationJSONRoundTrip(t *testing.T) {
	reg := newReg(t)
	r := policy.Reservation{Name: "maint", Start: t0, Duration: 4 * time.Hour, Nodes: topology.NodeSetOf(16, 0, 1, 2, 3, 9),
		TRES: vec(t, reg, "cpu=8,gres/gpu=2"), Users: []string{"root"}, Flags: policy.ResvMaint | policy.ResvIgnoreJobs}
	j, err := json.Marshal(r)
	require.NoError(t, err)
	for _, s := range []string{`"Duration":"04:00:00"`, `"Nodes":"16:{0-3,9}"`, `"Flags":"MAINT,IGNORE_JOBS"`, `"Start":"2025-03-03T08:00:00Z"`} {
		assert.Contains(t, string(j), s)
	}
	assert.NotContains(t, string(j), `"End"`, "a zero End is omitted")
	var back policy.Reservation
	require.NoError(t, json.Unmarshal(j, &back))
	assert.True(t, r.Nodes.Equal(back.Nodes))
	assert.Equal(t, r.Nodes.Len(), back.Nodes.Len())
	assert.True(t, r.TRES.Equal(back.TRES))
	back.Nodes, back.TRES = r.Nodes, r.TRES
	assert.Equal(t, r, back)
}

func FuzzReasonText(f *testing.F) {
	for _, s := range []string{"None", "Resources", "qosmaxgrespERUSER", "ReqNodeNotAvail, Reserved for maintenance", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { texttest.Fuzz[policy.Reason](t, s) })
}

func FuzzDurationText(f *testing.F) {
	for _, s := range []string{"0", "01:30:00", "1-12", "90", "UNLIMITED", "1.5s", "-2m", "99999-00:00:00", "1h2m3.5s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var d policy.Duration
		if d.UnmarshalText([]byte(s)) != nil {
			return
		}
		b, err := d.MarshalText()
		require.NoError(t, err)
		var e policy.Duration
		require.NoError(t, e.UnmarshalText(b), "%q → %q", s, b)
		require.Equal(t, d, e, "%q → %q", s, b)
	})
}

func FuzzTRESLimitsText(f *testing.F) {
	for _, s := range []string{"", "cpu=256,gres/gpu=16", "mem=1T,cpu=-1", "gres/gpu:h100=8,license/matlab=UNLIMITED", "tres7=2", "cpu=1,cpu=2"} {
		f.Add(s)
	}
	reg := newReg(f)
	f.Fuzz(func(t *testing.T, s string) {
		texttest.Fuzz[policy.TRESLimits](t, s)
		var l policy.TRESLimits
		if l.UnmarshalText([]byte(s)) != nil {
			return
		}
		bound, err := l.Bind(reg)
		if err != nil {
			return
		}
		// A bound value re-encodes, and its text binds to the same limits.
		b, err := bound.MarshalText()
		require.NoError(t, err)
		var again policy.TRESLimits
		require.NoError(t, again.UnmarshalText(b), "%q → %q", s, b)
		rebound, err := again.Bind(reg)
		require.NoError(t, err, "%q → %q", s, b)
		require.Equal(t, bound, rebound, "%q → %q", s, b)
	})
}

func FuzzPolicyEnumText(f *testing.F) {
	for _, s := range []string{"preempt/qos", "qos", "YES", "slurm", "SUSPEND,GANG", "WITHIN", "DenyOnLimit,NoReserve", "None",
		"MAINT,DAILY", "job QOS", "TRES-minutes", "COMPLETED", "REQUEUE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		texttest.Fuzz[policy.PreemptType](t, s)
		texttest.Fuzz[policy.PreemptMode](t, s)
		texttest.Fuzz[policy.OverSubscribe](t, s)
		texttest.Fuzz[policy.PreemptOrder](t, s)
		texttest.Fuzz[policy.PreemptAction](t, s)
		texttest.Fuzz[policy.QOSFlags](t, s)
		texttest.Fuzz[policy.ResvFlags](t, s)
		texttest.Fuzz[policy.Level](t, s)
		texttest.Fuzz[policy.Unit](t, s)
		texttest.Fuzz[policy.Outcome](t, s)
	})
}

func FuzzQOSJSON(f *testing.F) {
	f.Add(`{"Name":"normal","GraceTime":"00:01:30","Limits":{"MaxWall":"1-00:00:00","GrpTRES":"gres/gpu=4","GrpJobs":3}}`)
	f.Add(`{"Name":"x","PreemptMode":"SUSPEND,GANG","Flags":"NoReserve","UsageFactor":0.5}`)
	f.Fuzz(func(t *testing.T, s string) {
		var q policy.QOS
		if json.Unmarshal([]byte(s), &q) != nil {
			return
		}
		j, err := json.Marshal(q)
		if err != nil {
			// Only values no decoder produces fail to encode (NaN floats
			// cannot come from JSON); anything decoded must encode.
			t.Fatalf("%q decoded to %+v, which does not encode: %v", s, q, err)
		}
		var back policy.QOS
		require.NoError(t, json.Unmarshal(j, &back), "%s", j)
		j2, err := json.Marshal(back)
		require.NoError(t, err)
		require.JSONEq(t, string(j), string(j2))
	})
}

// TestReservationUpdateKeepsNodesWhenTRESDiffersOnlyInLength: a
// reservation decoded from JSON holds its TRES vector without trailing
// zeros; updating with it must keep the nodes of a NodeCount reservation
// as updating with the registry-length vector does.
func TestReservationUpdateKeepsNodesWhenTRESDiffersOnlyInLength(t *testing.T) {
	reg := newReg(t)
	ff := &firstFree{}
	b := policy.NewReservations(nNodes)
	r := policy.Reservation{Name: "gpu", Start: t0, Duration: time.Hour, NodeCount: 2, TRES: vec(t, reg, "cpu=8"), Users: []string{"alice"}}
	require.NoError(t, b.Add(r, ff.choose))
	j, err := json.Marshal(r)
	require.NoError(t, err)
	var decoded policy.Reservation
	require.NoError(t, json.Unmarshal(j, &decoded))
	require.NotEqual(t, len(r.TRES), len(decoded.TRES), "the text form drops trailing zeros")
	calls := len(ff.calls)
	require.NoError(t, b.Update(decoded, ff.choose))
	assert.Len(t, ff.calls, calls, "the nodes are kept, not chosen again")
}

func FuzzReservationJSON(f *testing.F) {
	f.Add(`{"Name":"maint","Start":"2025-03-03T08:00:00Z","Duration":"04:00:00","Nodes":"16:{0-3,9}","TRES":"cpu=8,tres5=2","Users":["root"],"Flags":"MAINT"}`)
	f.Add(`{"Name":"w","Start":"2025-03-03T08:00:00+01:00","End":"2025-03-03T09:00:00Z","NodeCount":2,"Flags":"WEEKLY,FLEX"}`)
	f.Fuzz(func(t *testing.T, s string) {
		var r policy.Reservation
		if json.Unmarshal([]byte(s), &r) != nil {
			return
		}
		j, err := json.Marshal(r)
		require.NoError(t, err, "%q decoded to %+v", s, r)
		var back policy.Reservation
		require.NoError(t, json.Unmarshal(j, &back), "%s", j)
		j2, err := json.Marshal(back)
		require.NoError(t, err)
		require.JSONEq(t, string(j), string(j2))
	})
}
