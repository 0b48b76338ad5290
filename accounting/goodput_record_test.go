package accounting

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/telemetry"
)

// goldenV1 is a ledger's whole key space as the version-1 encoder (the
// one before the goodput fields) wrote it for one job with a step: its
// bytes were produced by that code and must stay readable.
var goldenV1 = [][2]string{
	{"a:00000001", "{\"id\":1,\"cluster\":\"c\",\"account\":\"root\",\"since\":\"2024-03-01T00:00:00Z\",\"version\":1}"},
	{"a:00000002", "{\"id\":2,\"cluster\":\"c\",\"account\":\"phys\",\"parent_account\":\"root\",\"parent\":1,\"since\":\"2024-03-01T00:00:00Z\",\"version\":1}"},
	{"a:00000003", "{\"id\":3,\"cluster\":\"c\",\"account\":\"phys\",\"user\":\"alice\",\"parent\":2,\"since\":\"2024-03-01T00:00:00Z\",\"version\":1}"},
	{"ah:00000001:00000001", "{\"id\":1,\"cluster\":\"c\",\"account\":\"root\",\"since\":\"2024-03-01T00:00:00Z\",\"version\":1}"},
	{"ah:00000002:00000001", "{\"id\":2,\"cluster\":\"c\",\"account\":\"phys\",\"parent_account\":\"root\",\"parent\":1,\"since\":\"2024-03-01T00:00:00Z\",\"version\":1}"},
	{"ah:00000003:00000001", "{\"id\":3,\"cluster\":\"c\",\"account\":\"phys\",\"user\":\"alice\",\"parent\":2,\"since\":\"2024-03-01T00:00:00Z\",\"version\":1}"},
	{"ak:c|phys|alice|", "00000003"},
	{"ak:c|phys||", "00000002"},
	{"ak:c|root||", "00000001"},
	{"j:000000000000002a", "\x01\x0f\x03\x03\x02\x01(\x02\x05train\x05\x06\a\b\t\x00\n\xf8\xea\x88\xde\f<\xb4\x01\x90\x1c\xa08\x03\x00\x00\x02\x01\b\x02\x02\x04\x01\b\x03\x80\x80\x02\x04\x01\x02\x02\x05gpu01\x01\v\x03\xd0\x0f\x01\f\x01"},
	{"m:format", "sluice-ledger"},
	{"m:location", "UTC"},
	{"m:schema", "1"},
	{"m:seq:assoc", "0000000000000003"},
	{"rh:00000001:0065e11a80", "\x01\x02\x00\x00\x04\x01\xa0\xce\x01\x02\xc83\x03\x80\x80\xc83\x04\xe4\x19\x02\x01\xa0\v\x02\xe8\x02\x01\x01\x04\x01\xe0\x12\x02\xd8\x04\x03\x80\x80\xd8\x04\x04\xac\x02\x00"},
	{"rh:00000002:0065e11a80", "\x01\x02\x00\x00\x04\x01\xa0\xce\x01\x02\xc83\x03\x80\x80\xc83\x04\xe4\x19\x00\x01\x01\x04\x01\xe0\x12\x02\xd8\x04\x03\x80\x80\xd8\x04\x04\xac\x02\x00"},
	{"rh:00000003:0065e11a80", "\x01\x02\x00\x00\x04\x01\xa0\xce\x01\x02\xc83\x03\x80\x80\xc83\x04\xe4\x19\x00\x01\x01\x04\x01\xe0\x12\x02\xd8\x04\x03\x80\x80\xd8\x04\x04\xac\x02\x00"},
	{"rm:00000001:0065e11a80", "\x01\x01\x00\x01\x04\x01\x80\xe1\x01\x02\xa08\x03\x80\x80\xa08\x04\x90\x1c\x02\x01\xa0\v\x02\xe8\x02"},
	{"rm:00000002:0065e11a80", "\x01\x01\x00\x01\x04\x01\x80\xe1\x01\x02\xa08\x03\x80\x80\xa08\x04\x90\x1c\x00"},
	{"rm:00000003:0065e11a80", "\x01\x01\x00\x01\x04\x01\x80\xe1\x01\x02\xa08\x03\x80\x80\xa08\x04\x90\x1c\x00"},
	{"st:000000000000002a:0", "\x01\x06python\xd0\xef\x88\xde\f\xa0\xa2\x89\xde\f\x03\x00\x05gpu01\x02\x01\b\x02\x02\xb0T\x80\x80\x80\x80\x04"},
	{"t:00000001", "cpu"},
	{"t:00000002", "gres/gpu"},
	{"t:00000003", "mem"},
	{"t:00000004", "node"},
	{"t:00000005", "c"},
	{"t:00000006", "alice"},
	{"t:00000007", "phys"},
	{"t:00000008", "gpu"},
	{"t:00000009", "high"},
	{"t:0000000a", "Priority"},
	{"t:0000000b", "gpu01"},
	{"t:0000000c", "SchedMain"},
}

// goldenV1Job and goldenV1Step are what goldenV1 holds.
var (
	goldenT0    = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	goldenV1Job = JobRecord{ID: 42, ArrayJobID: 40, ArrayTaskID: 2, Name: "train", Cluster: "c", User: "alice", Account: "phys", Assoc: 3,
		Partition: "gpu", QOS: "high", Submit: goldenT0.Add(time.Minute), Eligible: goldenT0.Add(2 * time.Minute),
		Start: goldenT0.Add(5 * time.Minute), End: goldenT0.Add(65 * time.Minute), TimeLimit: 2 * time.Hour, State: StateCompleted,
		ReqTRES: TRES{"cpu": 8, "gres/gpu": 2}, AllocTRES: TRES{"cpu": 8, "gres/gpu": 2, "mem": 32768, "node": 1},
		NodeList: "gpu01", GPUs: []NodeGPUs{{Node: "gpu01", Indices: []int{0, 1}}}, Reason: "Priority", Priority: 1000,
		Flags: []string{"SchedMain"}, Restarts: 1}
	goldenV1Step = StepRecord{Job: 42, Step: "0", Name: "python", Start: goldenT0.Add(6 * time.Minute), End: goldenT0.Add(60 * time.Minute),
		State: StateCompleted, NodeList: "gpu01", AllocTRES: TRES{"cpu": 8, "gres/gpu": 2}, CPUTime: 3 * time.Hour, MaxRSS: 1 << 30}
)

func goldenLedger(t *testing.T) Ledger {
	b := NewMemoryBackend()
	require.NoError(t, b.Update(func(w KVWriter) error {
		for _, kv := range goldenV1 {
			if err := w.Set(kv[0], kv[1]); err != nil {
				return err
			}
		}
		return nil
	}))
	l, err := New(b, Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// TestDecodeVersion1Records reads records written by the version-1
// encoder: they decode to what was written, with zero goodput fields.
func TestDecodeVersion1Records(t *testing.T) {
	l := goldenLedger(t)
	require.NoError(t, l.View(func(tx Tx) error {
		j, err := tx.Job(42)
		require.NoError(t, err)
		assert.Equal(t, goldenV1Job, j)
		steps, err := tx.Steps(42)
		require.NoError(t, err)
		assert.Equal(t, []StepRecord{goldenV1Step}, steps)
		n := 0
		require.NoError(t, tx.Jobs(JobQuery{User: "alice", From: goldenT0, To: goldenT0.Add(time.Hour)}, func(JobRecord) bool { n++; return true }))
		assert.Equal(t, 1, n, "the query's peek reads version 1")
		return nil
	}))
	for _, kv := range goldenV1 {
		if kv[0] == jobKey(42) {
			tm, ok, err := RecordTime(kv[0], kv[1])
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Equal(t, goldenV1Job.Submit, tm)
		}
	}
}

// TestEncodeWithoutGoodputIsVersion1 checks that a record without goodput
// fields is written byte for byte as version 1 wrote it.
func TestEncodeWithoutGoodputIsVersion1(t *testing.T) {
	l := goldenLedger(t)
	require.NoError(t, l.Update(func(tx Tx) error {
		require.NoError(t, tx.PutJob(goldenV1Job))
		return tx.PutStep(goldenV1Step)
	}))
	kl := l.(*kvLedger)
	require.NoError(t, kl.b.View(func(r KVReader) error {
		for _, kv := range goldenV1 {
			if kv[0] == jobKey(42) || kv[0] == stepKey(42, "0") {
				v, ok, err := r.Get(kv[0])
				require.NoError(t, err)
				require.True(t, ok)
				assert.Equal(t, kv[1], v, kv[0])
			}
		}
		return nil
	}))
}

// goodputUsage is a Usage with every field set (times in whole seconds).
func goodputUsage(at time.Time) telemetry.Usage {
	return telemetry.Usage{Samples: 120, HostSamples: 60, First: at, Last: at.Add(time.Hour),
		GPUSeconds: 7200, BusyGPUSeconds: 5400.5, UtilizationMax: 99.5, MemoryMaxMiB: 40960, MemoryMiBSeconds: 1.2e8,
		CoveredSeconds: 3600, PowerMaxWatts: 700.25, EnergyJoules: 3.6e6, IdleSeconds: 300, IdleSince: at.Add(50 * time.Minute),
		CPUSeconds: 14400.75, MemoryPeakBytes: 64 << 30}
}

// TestGoodputRoundTrip writes the goodput fields (version 2) and reads
// them back; the rest of the record is unchanged, and queries and
// RecordTime read the new version.
func TestGoodputRoundTrip(t *testing.T) {
	l := goldenLedger(t)
	j := goldenV1Job
	j.Usage = goodputUsage(j.Start)
	j.LaunchAttempts, j.LaunchFailures, j.LostGPUSeconds, j.PriorGPUSeconds, j.Quality = 3, 1, 1234.5, 600, 0.75
	st := goldenV1Step
	st.Usage = goodputUsage(st.Start)
	st.Usage.First = st.Usage.First.Add(300 * time.Millisecond) // stored in whole seconds
	require.NoError(t, l.Update(func(tx Tx) error {
		require.NoError(t, tx.PutJob(j))
		return tx.PutStep(st)
	}))
	st.Usage.First = st.Usage.First.Truncate(time.Second)
	require.NoError(t, l.View(func(tx Tx) error {
		got, err := tx.Job(42)
		require.NoError(t, err)
		assert.Equal(t, j, got)
		steps, err := tx.Steps(42)
		require.NoError(t, err)
		assert.Equal(t, []StepRecord{st}, steps)
		n := 0
		require.NoError(t, tx.Jobs(JobQuery{Account: "phys", From: goldenT0, To: goldenT0.Add(time.Hour)}, func(JobRecord) bool { n++; return true }))
		assert.Equal(t, 1, n)
		return nil
	}))
	kl := l.(*kvLedger)
	require.NoError(t, kl.b.View(func(r KVReader) error {
		for _, k := range []string{jobKey(42), stepKey(42, "0")} {
			v, _, err := r.Get(k)
			require.NoError(t, err)
			assert.Equal(t, byte(goodputVersion), v[0], k)
			tm, ok, err := RecordTime(k, v)
			require.NoError(t, err)
			assert.True(t, ok)
			assert.False(t, tm.IsZero())
		}
		return nil
	}))
	// Only some fields: each one alone round-trips.
	for name, mod := range map[string]func(*JobRecord){
		"attempts": func(j *JobRecord) { j.LaunchAttempts = 1 },
		"lost":     func(j *JobRecord) { j.LostGPUSeconds = 0.5 },
		"quality":  func(j *JobRecord) { j.Quality = 1 },
		"energy":   func(j *JobRecord) { j.Usage = telemetry.Usage{EnergyJoules: 42} },
		"host":     func(j *JobRecord) { j.Usage = telemetry.Usage{HostSamples: 2, CPUSeconds: 3} },
	} {
		want := goldenV1Job
		mod(&want)
		require.NoError(t, l.Update(func(tx Tx) error { return tx.PutJob(want) }), name)
		require.NoError(t, l.View(func(tx Tx) error {
			got, err := tx.Job(42)
			require.NoError(t, err)
			assert.Equal(t, want, got, name)
			return nil
		}))
	}
}

// TestGoodputValidation: nonsense is refused with an error naming the
// field, and nothing is written.
func TestGoodputValidation(t *testing.T) {
	base := goldenV1Job
	base.Usage = goodputUsage(base.Start)
	cases := map[string]struct {
		mod   func(*JobRecord)
		field string
	}{
		"negative attempts": {func(j *JobRecord) { j.LaunchAttempts = -1 }, "launch_attempts"},
		"negative failures": {func(j *JobRecord) { j.LaunchFailures = -1 }, "launch_failures"},
		// The codec reads counts up to MaxInt32: a larger one written would
		// make the record unreadable.
		"attempts > MaxInt32": {func(j *JobRecord) { j.LaunchAttempts = math.MaxInt32 + 1 }, "launch_attempts"},
		"failures > attempts": {func(j *JobRecord) { j.LaunchAttempts, j.LaunchFailures = 1, 2 }, "launch_failures"},
		"NaN lost":            {func(j *JobRecord) { j.LostGPUSeconds = math.NaN() }, "lost_gpu_seconds"},
		"Inf lost":            {func(j *JobRecord) { j.LostGPUSeconds = math.Inf(1) }, "lost_gpu_seconds"},
		"negative lost":       {func(j *JobRecord) { j.LostGPUSeconds = -1 }, "lost_gpu_seconds"},
		// 2 GPUs × 60 min = 7200 GPU-seconds allocated (+ 2 s rounding).
		"lost > allocated":  {func(j *JobRecord) { j.LostGPUSeconds = 7203 }, "lost_gpu_seconds"},
		"negative prior":    {func(j *JobRecord) { j.PriorGPUSeconds = -5 }, "prior_gpu_seconds"},
		"quality > 1":       {func(j *JobRecord) { j.Quality = 1.5 }, "alloc_quality"},
		"quality < 0":       {func(j *JobRecord) { j.Quality = -0.1 }, "alloc_quality"},
		"quality NaN":       {func(j *JobRecord) { j.Quality = math.NaN() }, "alloc_quality"},
		"util > 100":        {func(j *JobRecord) { j.Usage.BusyGPUSeconds = j.Usage.GPUSeconds * 1.01 }, "usage.busy_gpu_seconds"},
		"util max > 100":    {func(j *JobRecord) { j.Usage.UtilizationMax = 100.5 }, "usage.utilization_max"},
		"NaN energy":        {func(j *JobRecord) { j.Usage.EnergyJoules = math.NaN() }, "usage.energy_joules"},
		"Inf gpu seconds":   {func(j *JobRecord) { j.Usage.GPUSeconds = math.Inf(1) }, "usage.gpu_seconds"},
		"negative samples":  {func(j *JobRecord) { j.Usage.Samples = -1 }, "usage.samples"},
		"negative memory":   {func(j *JobRecord) { j.Usage.MemoryMaxMiB = -1 }, "usage.memory_max_mib"},
		"idle > covered":    {func(j *JobRecord) { j.Usage.IdleSeconds = 4000 }, "usage.idle_seconds"},
		"last before first": {func(j *JobRecord) { j.Usage.Last = j.Usage.First.Add(-time.Second) }, "usage.first"},
	}
	l := goldenLedger(t)
	for name, tc := range cases {
		j := base
		tc.mod(&j)
		err := j.Validate()
		require.ErrorIs(t, err, ErrInvalid, name)
		assert.Contains(t, err.Error(), tc.field, name)
		err = l.Update(func(tx Tx) error { return tx.PutJob(j) })
		assert.ErrorIs(t, err, ErrInvalid, name)
	}
	require.NoError(t, l.View(func(tx Tx) error {
		got, err := tx.Job(42)
		require.NoError(t, err)
		assert.Equal(t, goldenV1Job, got, "a refused record changes nothing")
		return nil
	}))
	st := goldenV1Step
	st.Usage = goodputUsage(st.Start)
	st.Usage.BusyGPUSeconds = 1e6
	err := st.Validate()
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "usage.busy_gpu_seconds")
	require.NoError(t, base.Validate(), "the base case is valid")
}

// The ledger stores whole seconds and checks the records it reads: a
// record PutJob accepts must read back. 1 GPU from 00:05:00.0 to
// 00:06:59.9 holds 119.9 GPU-seconds, but the stored record spans 119 s,
// so 120.5 lost GPU-seconds pass a check on the given times (119.9 + 1 s
// of rounding) and not on the stored ones (119 + 1).
func TestPutJobChecksLostWorkOnStoredTimes(t *testing.T) {
	l := goldenLedger(t)
	j := goldenV1Job
	j.Start, j.End = goldenT0.Add(5*time.Minute), goldenT0.Add(7*time.Minute-100*time.Millisecond)
	j.AllocTRES = TRES{"cpu": 8, "gres/gpu": 1, "mem": 32768, "node": 1}
	j.GPUs = []NodeGPUs{{Node: "gpu01", Indices: []int{0}}}
	j.LostGPUSeconds = 120.5
	err := l.Update(func(tx Tx) error { return tx.PutJob(j) })
	if err == nil {
		require.NoError(t, l.View(func(tx Tx) error {
			_, err := tx.Job(42)
			return err
		}), "a record PutJob accepted reads back")
		return
	}
	assert.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "lost_gpu_seconds")
}
