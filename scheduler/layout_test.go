package scheduler_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/backfill"
	"github.com/sluicehq/sluice/gres"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/scheduler"
)

// layoutNode is a CPU-only node of sockets × cores × threads.
func layoutNode(name string, sockets, cores, threads int) scheduler.NodeConfig {
	return scheduler.NodeConfig{Name: name, CPUs: sockets * cores * threads, MemoryMiB: 64 << 10,
		Sockets: sockets, CoresPerSocket: cores, ThreadsPerCore: threads}
}

func layoutSched(t *testing.T, bf bool, nodes ...scheduler.NodeConfig) *scheduler.Scheduler {
	t.Helper()
	cfg := scheduler.Config{Nodes: nodes, Partitions: []scheduler.PartitionConfig{{Name: "p"}}}
	if bf {
		cfg.Backfill = &backfill.Config{}
	}
	s, err := scheduler.New(cfg)
	require.NoError(t, err)
	return s
}

// startedCPUs submits spec, runs a cycle and returns the CPU ids the job
// got on its (single) node.
func startedCPUs(t *testing.T, s *scheduler.Scheduler, at time.Time, spec scheduler.JobSpec) []int {
	t.Helper()
	if spec.TimeLimit == 0 {
		spec.TimeLimit = time.Hour
	}
	id := mustSubmit(t, s, at, spec)
	cyc := mustSchedule(t, s, at)
	for _, st := range cyc.Starts {
		if st.Job == id {
			require.Len(t, st.Alloc.Nodes, 1)
			return st.Alloc.Nodes[0].CPUs
		}
	}
	t.Fatalf("job %d did not start: %+v", id, cyc.Pending)
	return nil
}

func dist(t *testing.T, s string) scheduler.Distribution {
	t.Helper()
	d, err := scheduler.ParseDistribution(s)
	require.NoError(t, err)
	return d
}

// The CPU ids a job gets on an idle node, as Slurm's cons_tres allocates
// them within a node. Slurm's CPU management guide (cpu_management.html,
// examples 11–13, a node of 2 sockets × 4 cores, CPU ids 0-3 on socket 0
// and 4-7 on socket 1) shows the default allocation method within a node,
// cyclic, giving 6 tasks 3 CPUs on each socket (0 1 2 | 4 5 6), and the
// block method giving 4 CPUs on socket 0 and 2 on socket 1 (0 1 2 3 | 4 5).
// The second field of --distribution overrides the method. So a 4-task
// job on 2 sockets × 8 cores gets 0,1,8,9 (two CPUs on each socket, the
// lowest there; issue 17 wrote "1-2,8-9", which counts from one), block
// 0-3. A cyclic task keeps its CPUs on one socket; fcyclic deals each CPU
// to the next socket. CPU ids are Slurm's abstract ids: the threads of a
// core consecutive, so on 2 × 2 cores × 2 threads socket 1 starts at 4,
// and one thread per core (--hint=nomultithread) takes every other id.
func TestCPUSelectionSlurmVectors(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		sockets, cores, thread int
		spec                   scheduler.JobSpec
		want                   []int
	}{
		{"2x8 4 tasks default cyclic", 2, 8, 1, scheduler.JobSpec{Tasks: 4}, []int{0, 1, 8, 9}},
		{"2x8 4 tasks block:block", 2, 8, 1, scheduler.JobSpec{Tasks: 4, Distribution: dist(t, "block:block")}, []int{0, 1, 2, 3}},
		{"2x8 4 tasks *:cyclic", 2, 8, 1, scheduler.JobSpec{Tasks: 4, Distribution: dist(t, "*:cyclic")}, []int{0, 1, 8, 9}},
		{"2x4 6 tasks (example 11)", 2, 4, 1, scheduler.JobSpec{Tasks: 6}, []int{0, 1, 2, 4, 5, 6}},
		{"2x4 6 CPUs block (example 12)", 2, 4, 1, scheduler.JobSpec{Tasks: 2, CPUsPerTask: 3, Distribution: dist(t, "block:block")}, []int{0, 1, 2, 3, 4, 5}},
		{"2x4 2 tasks of 3 cyclic", 2, 4, 1, scheduler.JobSpec{Tasks: 2, CPUsPerTask: 3}, []int{0, 1, 2, 4, 5, 6}},
		{"2x4 1 task of 4 cyclic: one socket", 2, 4, 1, scheduler.JobSpec{Tasks: 1, CPUsPerTask: 4}, []int{0, 1, 2, 3}},
		{"2x4 1 task of 4 fcyclic", 2, 4, 1, scheduler.JobSpec{Tasks: 1, CPUsPerTask: 4, Distribution: dist(t, "block:fcyclic")}, []int{0, 1, 4, 5}},
		{"2x4 1 task of 6 cyclic: no socket holds it", 2, 4, 1, scheduler.JobSpec{Tasks: 1, CPUsPerTask: 6}, []int{0, 1, 2, 4, 5, 6}},
		{"2x2x2 2 tasks", 2, 2, 2, scheduler.JobSpec{Tasks: 2}, []int{0, 4}},
		{"2x2x2 3 tasks", 2, 2, 2, scheduler.JobSpec{Tasks: 3}, []int{0, 1, 4}},
		{"2x2x2 2 tasks nomultithread block", 2, 2, 2, scheduler.JobSpec{Tasks: 2, Hint: scheduler.HintNoMultithread, Distribution: dist(t, "block:block")}, []int{0, 2}},
		{"2x2x2 4 tasks nomultithread", 2, 2, 2, scheduler.JobSpec{Tasks: 4, Hint: scheduler.HintNoMultithread}, []int{0, 2, 4, 6}},
		{"2x2x2 4 tasks compute_bound", 2, 2, 2, scheduler.JobSpec{Tasks: 4, Hint: scheduler.HintComputeBound}, []int{0, 2, 4, 6}},
		{"1x8 4 tasks", 1, 8, 1, scheduler.JobSpec{Tasks: 4}, []int{0, 1, 2, 3}},
	} {
		s := layoutSched(t, false, layoutNode("n0", tc.sockets, tc.cores, tc.thread))
		assert.Equal(t, tc.want, startedCPUs(t, s, t0, tc.spec), tc.name)
	}
	// A node giving only CPUs has, as slurmctld infers, CPUs sockets of
	// one core: the lowest free ids, as before layouts.
	s := layoutSched(t, false, scheduler.NodeConfig{Name: "flat", CPUs: 16, MemoryMiB: 1 << 10})
	assert.Equal(t, []int{0, 1, 2, 3}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 4}))
	// Jobs after the first take the lowest free CPUs of each socket.
	s = layoutSched(t, false, layoutNode("n0", 2, 8, 1))
	assert.Equal(t, []int{0, 1, 8, 9}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 4}))
	assert.Equal(t, []int{2, 3, 10, 11}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 4}))
	assert.Equal(t, []int{4, 5, 6}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 1, CPUsPerTask: 3}))
	assert.Equal(t, []int{12, 13, 14}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 1, CPUsPerTask: 3}))
}

// One thread per core: a node with enough free CPUs but too few free
// cores cannot host the job; it waits on Resources, Explain shows the
// free-core deficit, and a job that could never have enough cores is
// rejected at submission.
func TestNoMultithreadNeedsFreeCores(t *testing.T) {
	s := layoutSched(t, true, layoutNode("n0", 1, 4, 2))
	_, err := s.Submit(t0, scheduler.JobSpec{Tasks: 5, Hint: scheduler.HintNoMultithread, TimeLimit: time.Hour})
	require.ErrorIs(t, err, scheduler.ErrUnsatisfiable)
	assert.Equal(t, []int{0, 1, 2, 3}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 4})) // cores 0 and 1
	id := mustSubmit(t, s, t0, scheduler.JobSpec{Tasks: 3, Hint: scheduler.HintNoMultithread, TimeLimit: time.Hour})
	cyc := mustSchedule(t, s, t0)
	require.Empty(t, cyc.Starts)
	assert.Equal(t, policy.ReasonResources, reasonOf(cyc, id))
	ex, err := s.Explain(t0, id, scheduler.ExplainOptions{})
	require.NoError(t, err)
	var need *scheduler.ResourceNeed
	for _, b := range ex.Blockers {
		if b.Kind == scheduler.BlockerResources {
			need = b.Need
		}
	}
	require.NotNil(t, need, "blockers %+v", ex.Blockers)
	// Three tasks without a node count may spread over nodes (tasks.go):
	// the one node's two free cores hold two of them.
	assert.Equal(t, 3, need.Tasks)
	assert.Equal(t, 2, need.TaskRoom)
	// With the node count fixed, the per-node need is three free cores.
	id2 := mustSubmit(t, s, t0, scheduler.JobSpec{Nodes: 1, Tasks: 3, Hint: scheduler.HintNoMultithread, TimeLimit: time.Hour})
	mustSchedule(t, s, t0)
	ex, err = s.Explain(t0, id2, scheduler.ExplainOptions{})
	require.NoError(t, err)
	need = nil
	for _, b := range ex.Blockers {
		if b.Kind == scheduler.BlockerResources {
			need = b.Need
		}
	}
	require.NotNil(t, need, "blockers %+v", ex.Blockers)
	assert.Equal(t, 0, need.FitNow)
	assert.Contains(t, need.Deficits, scheduler.Deficit{TRES: "free core (nomultithread)", PerNode: 3, Nodes: 0})
	require.NoError(t, s.Cancel(t0, id2))
	// Two free cores do hold two tasks, one thread each.
	require.NoError(t, s.Cancel(t0, id))
	assert.Equal(t, []int{4, 6}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 2, Hint: scheduler.HintNoMultithread}))
}

// gres.conf's Cores= names core indices, not CPU ids: on 2 sockets × 4
// cores × 2 threads, a GPU with Cores=4-7 (socket 1's cores) is close to
// CPUs 8-15, and the job's CPUs are taken there.
func TestDeviceCoresAreCoreIndices(t *testing.T) {
	cores, err := gres.ParseCoreSet("4-7")
	require.NoError(t, err)
	inv := gres.Inventory{Devices: []gres.Device{{Index: 0, Name: "gpu", NUMA: -1, Socket: 1, Cores: cores}}}
	nc := layoutNode("g0", 2, 4, 2)
	nc.Devices = inv
	s := layoutSched(t, false, nc)
	assert.Equal(t, []int{8, 9}, startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 2, GRESPerNode: gpus(1)}))
	s = layoutSched(t, false, nc)
	assert.Equal(t, []int{8, 9, 10, 11, 12, 13, 14, 15},
		startedCPUs(t, s, t0, scheduler.JobSpec{Tasks: 8, GRESPerNode: gpus(1), EnforceBinding: true}))
	// A core beyond the node's is a configuration error.
	bad, err := gres.ParseCoreSet("8")
	require.NoError(t, err)
	nc.Devices = gres.Inventory{Devices: []gres.Device{{Index: 0, Name: "gpu", NUMA: -1, Socket: 1, Cores: bad}}}
	_, err = scheduler.New(scheduler.Config{Nodes: []scheduler.NodeConfig{nc}, Partitions: []scheduler.PartitionConfig{{Name: "p"}}})
	require.ErrorIs(t, err, scheduler.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "core 8 beyond the node's 8 cores")
}

func TestNodeLayoutValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    scheduler.NodeConfig
		want string // "" valid
	}{
		{"2x8", scheduler.NodeConfig{CPUs: 16, Sockets: 2, CoresPerSocket: 8}, ""},
		{"2x8x2", scheduler.NodeConfig{CPUs: 32, Sockets: 2, CoresPerSocket: 8, ThreadsPerCore: 2}, ""},
		{"CPUs are cores", scheduler.NodeConfig{CPUs: 16, Sockets: 2, CoresPerSocket: 8, ThreadsPerCore: 2}, ""},
		{"sockets inferred", scheduler.NodeConfig{CPUs: 16, CoresPerSocket: 4}, ""},
		{"boards", scheduler.NodeConfig{CPUs: 16, Boards: 2, Sockets: 2, CoresPerSocket: 4}, ""},
		{"product mismatch", scheduler.NodeConfig{CPUs: 20, Sockets: 2, CoresPerSocket: 8}, "CPUs 20 is neither"},
		{"cores default 1", scheduler.NodeConfig{CPUs: 16, Sockets: 2}, "CPUs 16 is neither"},
		{"not a multiple", scheduler.NodeConfig{CPUs: 16, CoresPerSocket: 3}, "not a multiple"},
		{"negative", scheduler.NodeConfig{CPUs: 16, Sockets: -1}, "Sockets -1 out of range"},
		{"huge threads", scheduler.NodeConfig{CPUs: 16, ThreadsPerCore: 1 << 20}, "ThreadsPerCore 1048576 out of range"},
		{"device socket", scheduler.NodeConfig{CPUs: 16, Sockets: 2, CoresPerSocket: 8,
			Devices: gres.Inventory{Devices: []gres.Device{{Index: 0, Name: "gpu", NUMA: -1, Socket: 2}}}}, "device 0 on socket 2, the node has 2 socket(s)"},
	} {
		tc.n.Name = "n"
		cfg := scheduler.Config{Nodes: []scheduler.NodeConfig{tc.n}, Partitions: []scheduler.PartitionConfig{{Name: "p"}}}
		err := cfg.Validate()
		if tc.want == "" {
			assert.NoError(t, err, tc.name)
			continue
		}
		require.ErrorIs(t, err, scheduler.ErrInvalidConfig, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
		assert.Contains(t, err.Error(), `node "n"`, tc.name)
	}
}

// --exclusive=user: a node shares only with the same user's jobs, both
// ways, in the main pass, in the backfill plan (an expected start after
// the other user's job ends, never on its node before), in Explain
// (UserExcluded), and after a snapshot restore.
func TestExclusiveUser(t *testing.T) {
	for _, bf := range []bool{false, true} {
		s := layoutSched(t, bf, layoutNode("n0", 2, 8, 1))
		ann := mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", Tasks: 2, TimeLimit: time.Hour})
		mustSchedule(t, s, t0)
		annExcl := mustSubmit(t, s, t0, scheduler.JobSpec{User: "ann", Tasks: 2, ExclusiveUser: true, TimeLimit: 2 * time.Hour})
		bob := mustSubmit(t, s, t0, scheduler.JobSpec{User: "bob", Tasks: 2, ExclusiveUser: true, TimeLimit: time.Hour,
			Distribution: dist(t, "*:cyclic"), Hint: scheduler.HintNoMultithread})
		cyc := mustSchedule(t, s, t0)
		require.Len(t, cyc.Starts, 1, "bf=%v", bf)
		assert.Equal(t, annExcl, cyc.Starts[0].Job, "bf=%v: ann's own --exclusive=user job shares with ann", bf)
		assert.Equal(t, policy.ReasonResources, reasonOf(cyc, bob), "bf=%v", bf)
		// Another user's plain job is kept off the node ann holds.
		carl := mustSubmit(t, s, t0, scheduler.JobSpec{User: "carl", Tasks: 1, TimeLimit: time.Hour})
		cyc = mustSchedule(t, s, t0)
		assert.Empty(t, cyc.Starts, "bf=%v", bf)
		assert.NotEqual(t, policy.ReasonNone, reasonOf(cyc, carl), "bf=%v", bf)
		if bf {
			j, ok := s.Job(bob)
			require.True(t, ok)
			assert.False(t, j.ExpectedStart.IsZero())
			assert.False(t, j.ExpectedStart.Before(t0.Add(2*time.Hour)), "bob's expected start %v: the node is ann's until her jobs end", j.ExpectedStart)
		}
		ex, err := s.Explain(t0, carl, scheduler.ExplainOptions{})
		require.NoError(t, err)
		found := false
		for _, b := range ex.Blockers {
			if b.Kind == scheduler.BlockerResources && b.Need != nil {
				assert.Equal(t, 1, b.Need.UserExcluded, "bf=%v", bf)
				assert.Equal(t, 0, b.Need.FitNow, "bf=%v", bf)
				found = true
			}
		}
		assert.True(t, found, "bf=%v: blockers %+v", bf, ex.Blockers)
		// A snapshot keeps the node ann's.
		var b bytes.Buffer
		require.NoError(t, s.Snapshot(&b))
		r, err := scheduler.Restore(&b, scheduler.RestoreOptions{})
		require.NoError(t, err)
		cyc = mustSchedule(t, r, t0.Add(time.Minute))
		assert.Empty(t, cyc.Starts, "bf=%v: restored", bf)
		js, _ := s.Job(bob)
		jr, ok := r.Job(bob)
		require.True(t, ok)
		assert.Equal(t, js.Spec, jr.Spec, "bf=%v: restored spec", bf)
		// When ann's jobs end, bob's job gets the node.
		for _, x := range []*scheduler.Scheduler{s, r} {
			require.NoError(t, x.Finish(t0.Add(2*time.Minute), ann, 0))
			require.NoError(t, x.Finish(t0.Add(2*time.Minute), annExcl, 0))
			cyc = mustSchedule(t, x, t0.Add(2*time.Minute))
			require.Len(t, cyc.Starts, 1, "bf=%v", bf)
			assert.Equal(t, bob, cyc.Starts[0].Job, "bf=%v", bf)
			assert.Equal(t, []int{0, 8}, cyc.Starts[0].Alloc.Nodes[0].CPUs, "bf=%v: cyclic over the restored layout", bf)
		}
	}
	_, err := layoutSched(t, false, layoutNode("n0", 1, 4, 1)).Submit(t0, scheduler.JobSpec{Exclusive: true, ExclusiveUser: true})
	require.ErrorIs(t, err, scheduler.ErrInvalidJob)
}

func TestLayoutJSONRoundTrip(t *testing.T) {
	spec := scheduler.JobSpec{User: "ann", Tasks: 4, Distribution: dist(t, "cyclic:block:fcyclic,NoPack"),
		Hint: scheduler.HintNoMultithread, ExclusiveUser: true}
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"Distribution":"cyclic:block:fcyclic,NoPack"`)
	assert.Contains(t, string(b), `"Hint":"nomultithread"`)
	var back scheduler.JobSpec
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, spec, back)
	b, err = json.Marshal(scheduler.JobSpec{User: "bob"})
	require.NoError(t, err)
	assert.NotContains(t, string(b), "Distribution")
	assert.NotContains(t, string(b), "Hint")
	n := layoutNode("n0", 2, 8, 2)
	n.Boards = 1
	b, err = json.Marshal(n)
	require.NoError(t, err)
	var nb scheduler.NodeConfig
	require.NoError(t, json.Unmarshal(b, &nb))
	assert.Equal(t, n, nb)
	require.Error(t, json.Unmarshal([]byte(`{"Hint":"sometimes"}`), &back))
	require.Error(t, json.Unmarshal([]byte(`{"Distribution":"zigzag"}`), &back))
}

func TestParseDistribution(t *testing.T) {
	for in, want := range map[string]scheduler.Distribution{
		"":                     {},
		"block":                {Node: scheduler.DistBlock},
		"Cyclic:Block":         {Node: scheduler.DistCyclic, Socket: scheduler.DistBlock},
		"*:cyclic":             {Socket: scheduler.DistCyclic},
		"plane=4":              {Node: scheduler.DistPlane, PlaneSize: 4},
		"block:fcyclic:cyclic": {Node: scheduler.DistBlock, Socket: scheduler.DistFCyclic, Core: scheduler.DistCyclic},
		"arbitrary,Pack":       {Node: scheduler.DistArbitrary, Pack: scheduler.Pack},
		"*:*:block":            {Core: scheduler.DistBlock},
	} {
		got, err := scheduler.ParseDistribution(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		again, err := scheduler.ParseDistribution(got.String())
		require.NoError(t, err, got.String())
		assert.Equal(t, got, again, in)
	}
	for _, in := range []string{"zigzag", "fcyclic", "block:arbitrary", "plane=0", "plane=x", "block:plane=2",
		"a:b:c:d", "block,Squeeze", "block:block:block:block"} {
		_, err := scheduler.ParseDistribution(in)
		require.ErrorIs(t, err, scheduler.ErrInvalidJob, in)
		assert.Contains(t, err.Error(), "distribution", in)
	}
	for in, want := range map[string]scheduler.Hint{"": scheduler.HintNone, "NoMultithread": scheduler.HintNoMultithread,
		"multithread": scheduler.HintMultithread, "compute_bound": scheduler.HintComputeBound} {
		h, err := scheduler.ParseHint(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, h, in)
	}
	for _, in := range []string{"memory_bound", "hyper"} {
		_, err := scheduler.ParseHint(in)
		require.ErrorIs(t, err, scheduler.ErrInvalidJob, in)
	}
	for in, want := range map[string]scheduler.ExclusiveMode{"": scheduler.ExclusiveNode, "USER": scheduler.ExclusiveUser} {
		m, err := scheduler.ParseExclusive(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, m, in)
	}
	for _, in := range []string{"mcs", "topo", "everyone"} {
		_, err := scheduler.ParseExclusive(in)
		require.ErrorIs(t, err, scheduler.ErrInvalidJob, in)
	}
	var spec scheduler.JobSpec
	scheduler.ExclusiveUser.Apply(&spec)
	assert.True(t, spec.ExclusiveUser)
	assert.False(t, spec.Exclusive)
}

// FuzzParseDistribution: whatever parses prints to a form that parses
// back to the same value, and nothing panics.
func FuzzParseDistribution(f *testing.F) {
	for _, s := range []string{"", "block", "cyclic:cyclic", "plane=3:block", "*:fcyclic:block,NoPack", "arbitrary,Pack", "x:y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := scheduler.ParseDistribution(s)
		if err != nil {
			if !errors.Is(err, scheduler.ErrInvalidJob) {
				t.Fatalf("%q: error %v does not wrap ErrInvalidJob", s, err)
			}
			return
		}
		txt, err := d.MarshalText()
		if err != nil {
			t.Fatalf("%q parsed to %+v which does not marshal: %v", s, d, err)
		}
		back, err := scheduler.ParseDistribution(string(txt))
		if err != nil || back != d {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, d, txt, back, err)
		}
		_, _ = scheduler.ParseHint(s)
		_, _ = scheduler.ParseExclusive(s)
	})
}
