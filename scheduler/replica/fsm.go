package replica

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sluicehq/sluice/scheduler"
	"github.com/sluicehq/sluice/scheduler/journal"
)

// Record types: the first byte of a log entry's data.
const (
	recEntry byte = 'E' // a scheduler.Entry in the journal's record form
	recAck   byte = 'A' // the consumer's acknowledgement of deliveries
)

// snapshotMagic starts a replica snapshot: the replica's own state, then
// the scheduler's snapshot.
const snapshotMagic = "SLUICE-REPLICA\x01\n"

// Delivery is one cycle's decisions, handed to the consumer by the leader.
type Delivery struct {
	// Index is the log index of the ScheduleEvent that ran the cycle: the
	// idempotency key. A delivery is handed out again (by a new leader)
	// until an Ack of its index is committed; the consumer acts on each
	// index once.
	Index uint64
	// Cycle is the cycle's outcome: starts, ends, preemptions, resumes,
	// power actions and their audit records. Its Pending list is left
	// out (nil): that is the plan, derived state, which Read shows.
	Cycle scheduler.Cycle
}

// state is what the replica keeps beside the scheduler, replicated like
// it: part of every snapshot and of the digest.
type state struct {
	// Applied is the log index of the last command applied.
	Applied uint64
	// Latest is the latest time of an entry applied, failed ones
	// included (the scheduler's clock counts only those that applied).
	Latest time.Time
	// Cycles counts the cycles applied (each one a Delivery).
	Cycles uint64
	// Acked counts the deliveries acknowledged.
	Acked uint64
	// Undelivered holds the deliveries not acknowledged yet, by index.
	Undelivered []Delivery
}

// response is what applying a log entry gives the replica that proposed
// it (raft's ApplyFuture.Response).
type response struct {
	res scheduler.Result
	err error
}

// fsm is the Raft state machine: the scheduler and the replica's state.
// Apply, Snapshot and Restore are called by raft; the replica reads under
// mu.
type fsm struct {
	mu    sync.Mutex
	s     *scheduler.Scheduler
	st    state
	codec *journal.Codec
	// restore rebuilds a scheduler from its snapshot.
	restore scheduler.RestoreOptions
	// notify is signalled when a delivery is added.
	notify chan struct{}
}

var _ raft.FSM = (*fsm)(nil)

// Apply applies one committed log entry. An entry that fails changes
// nothing, on every replica alike; the error goes back to the proposer.
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.Applied = l.Index
	if len(l.Data) == 0 {
		return response{err: fmt.Errorf("replica: log entry %d is empty", l.Index)}
	}
	switch l.Data[0] {
	case recEntry:
		e, err := f.codec.DecodeEntry(l.Data[1:])
		if err != nil {
			return response{err: fmt.Errorf("replica: log entry %d: %w", l.Index, err)}
		}
		if e.At.After(f.st.Latest) {
			f.st.Latest = e.At
		}
		res, err := f.s.Apply(e.At, e.Event)
		if err == nil && res.Cycle != nil {
			c := *res.Cycle
			c.Pending = nil
			f.st.Cycles++
			f.st.Undelivered = append(f.st.Undelivered, Delivery{Index: l.Index, Cycle: c})
			select {
			case f.notify <- struct{}{}:
			default:
			}
		}
		return response{res: res, err: err}
	case recAck:
		idx, err := decodeAck(l.Data[1:])
		if err != nil {
			return response{err: fmt.Errorf("replica: log entry %d: %w", l.Index, err)}
		}
		f.ack(idx)
		return response{}
	}
	return response{err: fmt.Errorf("replica: log entry %d: unknown record type %q", l.Index, l.Data[0])}
}

// ack drops the deliveries of the indices given; an index not held (acked
// already, or never a cycle) is ignored, so that an ack may be repeated.
func (f *fsm) ack(idx []uint64) {
	f.st.Undelivered = slices.DeleteFunc(f.st.Undelivered, func(d Delivery) bool {
		if slices.Contains(idx, d.Index) {
			f.st.Acked++
			return true
		}
		return false
	})
}

func encodeAck(idx []uint64) []byte {
	b := binary.AppendUvarint([]byte{recAck}, uint64(len(idx)))
	for _, i := range idx {
		b = binary.AppendUvarint(b, i)
	}
	return b
}

func decodeAck(b []byte) ([]uint64, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errors.New("ack: bad count")
	}
	b = b[k:]
	out := make([]uint64, 0, n)
	for range n {
		x, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errors.New("ack: bad index")
		}
		out = append(out, x)
		b = b[k:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("ack: %d bytes after the indices", len(b))
	}
	return out, nil
}

// Snapshot writes the whole state into memory (the scheduler is not a
// persistent structure, so raft's Apply waits for this), and hands it to
// raft to persist.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var buf bytes.Buffer
	if err := f.write(&buf); err != nil {
		return nil, err
	}
	return memSnapshot(buf.Bytes()), nil
}

// write writes the replica snapshot: magic, the length of the replica
// state's gob, the gob, then the scheduler's snapshot. Both parts are
// deterministic, so equal states write equal bytes.
func (f *fsm) write(w io.Writer) error {
	var st bytes.Buffer
	if err := gob.NewEncoder(&st).Encode(&f.st); err != nil {
		return fmt.Errorf("replica: snapshot: replica state: %w", err)
	}
	hdr := binary.AppendUvarint([]byte(snapshotMagic), uint64(st.Len()))
	if _, err := w.Write(hdr); err != nil {
		return fmt.Errorf("replica: snapshot: %w", err)
	}
	if _, err := w.Write(st.Bytes()); err != nil {
		return fmt.Errorf("replica: snapshot: %w", err)
	}
	if err := f.s.Snapshot(w); err != nil {
		return fmt.Errorf("replica: snapshot: %w", err)
	}
	return nil
}

// Restore replaces the state with a snapshot's. On error the state is
// left as it was.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	s, st, err := readSnapshot(rc, f.restore)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.s, f.st = s, st
	f.mu.Unlock()
	select {
	case f.notify <- struct{}{}:
	default:
	}
	return nil
}

// readSnapshot reads what write wrote.
func readSnapshot(r io.Reader, opts scheduler.RestoreOptions) (*scheduler.Scheduler, state, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != snapshotMagic {
		return nil, state{}, fmt.Errorf("replica: restore: not a replica snapshot (header %q): %v", magic, err)
	}
	n, err := binary.ReadUvarint(br)
	if err != nil || n > 1<<40 {
		return nil, state{}, fmt.Errorf("replica: restore: replica state length: %v", err)
	}
	var st state
	if err := gob.NewDecoder(io.LimitReader(br, int64(n))).Decode(&st); err != nil {
		return nil, state{}, fmt.Errorf("replica: restore: replica state: %w", err)
	}
	s, err := scheduler.Restore(br, opts)
	if err != nil {
		return nil, state{}, fmt.Errorf("replica: restore: %w", err)
	}
	return s, st, nil
}

// memSnapshot is a snapshot held in memory.
type memSnapshot []byte

// Persist writes the snapshot to the sink.
func (m memSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(m); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("replica: persist snapshot: %w", err)
	}
	return sink.Close()
}

// Release drops nothing: the bytes are the garbage collector's.
func (memSnapshot) Release() {}

// digest returns the sha256 of the replica snapshot.
func (f *fsm) digest() ([32]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := sha256.New()
	if err := f.write(h); err != nil {
		return [32]byte{}, err
	}
	var d [32]byte
	h.Sum(d[:0])
	return d, nil
}

// undelivered returns the deliveries not acknowledged whose index is not
// in skip, in index order.
func (f *fsm) undelivered(skip map[uint64]bool) []Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Delivery
	for _, d := range f.st.Undelivered {
		if !skip[d.Index] {
			out = append(out, d)
		}
	}
	return out
}

// latest is the latest time in the log applied: the floor of the next
// proposal's.
func (f *fsm) latest() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.s.LastEventTime(); t.After(f.st.Latest) {
		return t // an Initial state's clock
	}
	return f.st.Latest
}
