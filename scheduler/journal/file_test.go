package journal

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/scheduler"
)

// writeEvents writes a journal file in dir holding the events of seqs (in
// that order), each a Schedule event, sealed and framed as Append would.
func writeEvents(t *testing.T, dir string, seqs ...uint64) {
	t.Helper()
	c := newCodec()
	require.NoError(t, writeFile(filepath.Join(dir, fileName), func(add func(string, []byte) error) error {
		for _, seq := range seqs {
			b, err := c.appendEntry([]byte{recBinary}, time.Unix(int64(seq), 0), scheduler.ScheduleEvent{})
			require.NoError(t, err)
			require.NoError(t, add(eventKey(seq), b))
		}
		return nil
	}))
}

// Records whose checksums are intact but whose sequence numbers go back
// are damage, named by the record; a gap is found by Recover.
func TestScanSequenceOrder(t *testing.T) {
	dir := t.TempDir()
	writeEvents(t, dir, 1, 2, 2, 3)
	_, err := Open(dir, Options{})
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Equal(t, uint64(2), ce.Seq)
	require.Contains(t, ce.Reason, "out of order")

	// Also at the end of the file: a record written whole is no torn write.
	dir = t.TempDir()
	writeEvents(t, dir, 1, 2, 1)
	_, err = Open(dir, Options{})
	require.ErrorAs(t, err, &ce)
	require.Equal(t, uint64(1), ce.Seq)

	dir = t.TempDir()
	writeEvents(t, dir, 1, 2, 4)
	j, err := Open(dir, Options{})
	require.NoError(t, err)
	defer j.Close()
	require.Equal(t, uint64(4), j.LastSeq())
	_, _, err = j.Recover(RecoverOptions{New: func() (*scheduler.Scheduler, error) {
		return scheduler.New(scheduler.Config{Nodes: []scheduler.NodeConfig{{Name: "n", CPUs: 1, MemoryMiB: 1}},
			Partitions: []scheduler.PartitionConfig{{Name: "p", Default: true}}})
	}})
	require.ErrorAs(t, err, &ce)
	require.Equal(t, uint64(4), ce.Seq)
	require.Contains(t, ce.Reason, "events 3 to 3 are missing")
}
