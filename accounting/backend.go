package accounting

import (
	"fmt"
	"sync"

	"github.com/google/btree"
)

// Backend is ordered key/value storage with atomic transactions: the seam
// a Ledger is built on (see New). Keys and values are byte strings; keys
// sort bytewise. Implementations: NewMemoryBackend (a copy-on-write
// B-tree) and the buntdb file behind OpenBunt. A server-database backend
// passes the same conformance suite (package ledgertest).
type Backend interface {
	// View runs fn in a read-only snapshot.
	View(fn func(KVReader) error) error
	// Update runs fn in a read-write transaction: if fn returns nil, its
	// writes are committed atomically (and made durable as the backend
	// promises) before Update returns; otherwise none of them are.
	Update(fn func(KVWriter) error) error
	// Close releases the backend.
	Close() error
}

// KVReader reads a backend snapshot.
type KVReader interface {
	// Get returns the value of key and whether it exists.
	Get(key string) (val string, ok bool, err error)
	// Ascend calls fn for every key in [from, to) in ascending order until
	// fn returns false; to == "" means no upper bound. fn must not write.
	Ascend(from, to string, fn func(key, val string) bool) error
}

// KVWriter reads and writes inside an Update.
type KVWriter interface {
	KVReader
	// Set stores val under key.
	Set(key, val string) error
	// Delete removes key; a missing key is not an error.
	Delete(key string) error
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

type kvItem struct{ k, v string }

// memoryBackend is a Backend on a copy-on-write google/btree: Update works
// on an O(1) clone and swaps it in on success, so a failed Update leaves
// nothing behind and readers see consistent snapshots. It starts no
// goroutines and does no I/O.
type memoryBackend struct {
	mu     sync.RWMutex
	tree   *btree.BTreeG[kvItem]
	closed bool
}

// NewMemoryBackend returns an empty in-memory Backend. It is safe for
// concurrent use: Views run in parallel, Updates one at a time.
func NewMemoryBackend() Backend {
	return &memoryBackend{tree: btree.NewG(32, func(a, b kvItem) bool { return a.k < b.k })}
}

func (m *memoryBackend) View(fn func(KVReader) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return ErrClosed
	}
	return fn(&memTx{t: m.tree})
}

func (m *memoryBackend) Update(fn func(KVWriter) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	tx := &memTx{t: m.tree.Clone(), writable: true}
	if err := fn(tx); err != nil {
		return err
	}
	m.tree = tx.t
	return nil
}

func (m *memoryBackend) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	m.tree = nil
	return nil
}

type memTx struct {
	t         *btree.BTreeG[kvItem]
	writable  bool
	iterating bool
}

func (t *memTx) Get(key string) (string, bool, error) {
	it, ok := t.t.Get(kvItem{k: key})
	return it.v, ok, nil
}

func (t *memTx) Ascend(from, to string, fn func(k, v string) bool) error {
	t.iterating = true
	defer func() { t.iterating = false }()
	it := func(i kvItem) bool { return fn(i.k, i.v) }
	if to == "" {
		t.t.AscendGreaterOrEqual(kvItem{k: from}, it)
	} else if from < to {
		t.t.AscendRange(kvItem{k: from}, kvItem{k: to}, it)
	}
	return nil
}

func (t *memTx) Set(key, val string) error {
	if err := t.check(); err != nil {
		return err
	}
	t.t.ReplaceOrInsert(kvItem{k: key, v: val})
	return nil
}

func (t *memTx) Delete(key string) error {
	if err := t.check(); err != nil {
		return err
	}
	t.t.Delete(kvItem{k: key})
	return nil
}

func (t *memTx) check() error {
	if !t.writable {
		return ErrReadOnly
	}
	if t.iterating {
		return errWriteWhileIterating
	}
	return nil
}

var errWriteWhileIterating = fmt.Errorf("%w: write while iterating (collect keys first)", ErrInvalid)
