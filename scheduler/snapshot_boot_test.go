package scheduler

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/gres"
)

// TestSnapshotBootExtension checks the nodes section's minor-3 reboot
// extension: a rebooting node is read back rebooting, and a section that
// ends before the extension (minor 2 and older) reads with no reboot;
// a reboot of a node index that does not exist is refused.
func TestSnapshotBootExtension(t *testing.T) {
	cfg := Config{Partitions: []PartitionConfig{{Name: "p", Default: true}}}
	for _, n := range []string{"a", "b"} {
		cfg.Nodes = append(cfg.Nodes, NodeConfig{Name: n, CPUs: 2, Features: []string{"x", "m1"}, ChangeableFeatures: []string{"m1", "m2"}})
	}
	s, err := New(cfg)
	require.NoError(t, err)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, s.RebootNode(at, "b", "m2"))
	var full, ext senc
	require.NoError(t, s.snapNodes(&full))
	snapBoots(&ext, s)
	snapNodeTelemetry(&ext, s) // the minor-4 extension that follows it
	ids := make([]gres.ID, s.reg.Len())
	for k := range ids {
		ids[k] = gres.ID(k)
	}
	load := func(b []byte) (*Scheduler, error) {
		r, err := New(cfg)
		require.NoError(t, err)
		d := &sdec{b: b, sec: "nodes", ids: ids, nreg: s.reg.Len()}
		if _, err := r.loadNodes(d); err != nil {
			return nil, err
		}
		return r, d.done()
	}
	r, err := load(full.b)
	require.NoError(t, err)
	require.Equal(t, s.nodes[1].boot, r.nodes[1].boot)
	require.Equal(t, 1, r.boot.n)
	require.False(t, r.usable.Has(1), "a rebooting node takes no work")

	r, err = load(full.b[:len(full.b)-len(ext.b)])
	require.NoError(t, err)
	require.False(t, r.nodes[1].booting())
	require.Zero(t, r.boot.n)
	require.True(t, r.usable.Has(1))

	bad := append([]byte(nil), full.b[:len(full.b)-len(ext.b)]...)
	var e senc
	e.uvarint(1)
	e.uvarint(7) // no node 7
	e.time(at)
	e.uvarint(0)
	e.uvarint(0)
	_, err = load(append(bad, e.b...))
	require.ErrorContains(t, err, "no such node")

	// An index that does not fit an int is refused, not a panic.
	e = senc{}
	e.uvarint(1)
	e.uvarint(1 << 63)
	e.time(at)
	e.uvarint(0)
	e.uvarint(0)
	_, err = load(append(bad, e.b...))
	require.ErrorContains(t, err, "no such node")
}

// A snapshot whose rebooting node runs a job (which no event sequence
// makes) is refused as corrupt.
func TestSnapshotBootWithJobs(t *testing.T) {
	cfg := Config{Partitions: []PartitionConfig{{Name: "p", Default: true}}}
	cfg.Nodes = []NodeConfig{{Name: "a", CPUs: 2, Features: []string{"m1"}, ChangeableFeatures: []string{"m1", "m2"}}}
	s, err := New(cfg)
	require.NoError(t, err)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err = s.Submit(at, JobSpec{User: "u", Account: "a", Nodes: 1, TimeLimit: time.Hour})
	require.NoError(t, err)
	_, err = s.Schedule(at)
	require.NoError(t, err)
	require.NotEmpty(t, s.nodes[0].jobs)
	s.nodes[0].boot = nodeBoot{until: at.Add(time.Minute), features: []string{"m2"}}
	s.boot.nodes = grownSet(s.boot.nodes, 1)
	s.boot.nodes.Add(0)
	s.boot.n = 1
	var b bytes.Buffer
	require.NoError(t, s.Snapshot(&b))
	_, err = Restore(&b, RestoreOptions{})
	require.ErrorIs(t, err, ErrCorruptSnapshot)
	require.ErrorContains(t, err, "rebooting with jobs")
}
