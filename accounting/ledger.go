package accounting

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// SchemaVersion is the version of the stored record layout this package
// writes and reads. A ledger with another version fails to open with
// ErrSchemaVersion.
const SchemaVersion = 1

const formatName = "sluice-ledger"

// Ledger is the accounting store of a control plane: associations, usage,
// job and step records, decision audit records, node events and rollups.
// Access is through closure-scoped transactions, as in buntdb: View for a
// consistent read-only snapshot, Update for an atomic read-write
// transaction. Implementations are safe for concurrent use; Updates are
// serialised and exclude Views while they run.
//
// Implementations in this package: NewMemory (in memory, for tests and
// simulations) and OpenBunt (one durable file). Both are the same ledger
// logic (New) over different Backends, and both pass the conformance
// suite in package ledgertest, which any other implementation can run.
type Ledger interface {
	// View runs fn in a read-only transaction. Writes inside fail with
	// ErrReadOnly. The Tx must not be used after fn returns.
	View(fn func(tx Tx) error) error
	// Update runs fn in a read-write transaction. If fn returns nil, all
	// its writes are committed atomically (and durably, as the
	// implementation's sync policy promises) before Update returns; if fn
	// returns an error or a write fails, none of them are, and that error
	// is returned.
	Update(fn func(tx Tx) error) error
	// Config returns the usage policy the ledger was opened with.
	Config() Config
	// Close releases the ledger. Further calls fail with ErrClosed.
	Close() error
}

// Tx is a ledger transaction. Read methods see the transaction's own
// earlier writes. Methods that take now never read the clock; times are
// stored in whole seconds.
type Tx interface {
	// PutAssoc adds the association with a's key, or changes it: shares,
	// QOS, limits, and (for an account) ParentAccount, which moves it. The
	// cluster's root association (Account "root") is created on the first
	// PutAssoc for a cluster. A user association's account must exist, and
	// so must an account's parent. Every change is kept as a new version
	// with Since = now; a call that changes nothing adds no version. It
	// returns the stored association.
	PutAssoc(now time.Time, a Assoc) (Assoc, error)
	// MoveAssoc moves association id under parent (an account association
	// of the same cluster that is not inside id's subtree). A user
	// association takes parent's account name. Past job records and
	// rollups keep the tree as it was when the jobs ran.
	MoveAssoc(now time.Time, id, parent AssocID) (Assoc, error)
	// RemoveAssoc removes association id; it fails with ErrInUse while the
	// association has children. Its history, usage and rollups are kept.
	RemoveAssoc(now time.Time, id AssocID) error
	// Assoc returns the current version of association id; ErrNotFound if
	// there is none or it was removed.
	Assoc(id AssocID) (Assoc, error)
	// LookupAssoc returns the current association with key k.
	LookupAssoc(k AssocKey) (Assoc, error)
	// AssocAt returns the version of association id in effect at t;
	// ErrNotFound before it was added or after it was removed.
	AssocAt(id AssocID, t time.Time) (Assoc, error)
	// AssocHistory returns every version of association id, oldest first.
	AssocHistory(id AssocID) ([]Assoc, error)
	// Assocs calls fn for each current association of cluster ("" = all
	// clusters) in ID order until fn returns false. With removed set it
	// also yields removed associations (their last version, Removed set).
	Assocs(cluster string, removed bool, fn func(Assoc) bool) error

	// Charge adds the usage of one running job over [c.From, c.To) to its
	// association and every ancestor, to its QOS and to its partition QOS:
	// decayed fair-share usage and undecayed budget usage, per TRES and as
	// billing × UsageFactor. See Charge.
	Charge(c Charge) error
	// Usage returns association id's usage (its whole subtree) as of now,
	// with decay and resets applied. An association never charged has
	// zero usage.
	Usage(id AssocID, now time.Time) (Usage, error)
	// QOSUsage returns the usage of a QOS as of now.
	QOSUsage(qos string, now time.Time) (Usage, error)
	// ResetUsage clears the usage of every association and QOS as of now
	// (PriorityUsageResetPeriod=NOW, or an operator's reset). Charges for
	// intervals ending before now are ignored afterwards.
	ResetUsage(now time.Time) error

	// PutJob inserts or replaces the record of job j.ID. Recording a job
	// at submit, start and end (or only at end) are all fine: rollups
	// count a job's allocated TRES-time once it has an End, and its
	// eligible wait once it has a Start (or an End without a Start);
	// replacing a record replaces its contribution.
	PutJob(j JobRecord) error
	// Job returns the record of job id.
	Job(id JobID) (JobRecord, error)
	// Jobs calls fn for each record matching q, in job-ID order, until fn
	// returns false. Without q.OpenOnly it reads every record (there is no
	// time index, by design: see docs/accounting.md).
	Jobs(q JobQuery, fn func(JobRecord) bool) error
	// PutStep inserts or replaces a step record; its job must exist.
	PutStep(s StepRecord) error
	// Steps returns the steps of job id in step-name order.
	Steps(id JobID) ([]StepRecord, error)
	// ArchiveJobs writes every finished job whose End is before before
	// (with its steps) to w as JSON lines (see ReadArchive), oldest job ID
	// first, at most limit of them (0 = all), and deletes them from the
	// ledger. Rollups are kept, so reports over archived periods still
	// work. It returns the number archived. Nothing is deleted if writing
	// fails (if the transaction itself then fails, w holds records that
	// are still in the ledger: deduplicate archives by job ID). Putting an
	// archived job again counts it in the rollups a second time.
	ArchiveJobs(before time.Time, limit int, w io.Writer) (int, error)

	// PutDecision stores a decision audit record and returns its sequence
	// number (d.Seq is ignored).
	PutDecision(d Decision) (uint64, error)
	// Decisions calls fn for each decision matching q in (Time, Seq)
	// order until fn returns false.
	Decisions(q DecisionQuery, fn func(Decision) bool) error
	// PurgeDecisions deletes decisions with Time before before and returns
	// how many.
	PurgeDecisions(before time.Time) (int, error)

	// PutCapacity records a cluster's total TRES from c.Since on.
	PutCapacity(c Capacity) error
	// Capacities returns a cluster's capacity records, oldest first.
	Capacities(cluster string) ([]Capacity, error)
	// PutNodeEvent inserts or updates (same Cluster, Node, Start) a node
	// event.
	PutNodeEvent(e NodeEvent) error
	// NodeEvents calls fn for each event of cluster overlapping [from, to)
	// in (Start, Node) order.
	NodeEvents(cluster string, from, to time.Time, fn func(NodeEvent) bool) error
	// PutReservation inserts or updates (same Cluster, Name, Start) a
	// reservation.
	PutReservation(r Reservation) error
	// Reservations calls fn for each reservation of cluster overlapping
	// [from, to) in (Start, Name) order.
	Reservations(cluster string, from, to time.Time, fn func(Reservation) bool) error

	// Rollups calls fn for each non-empty bucket of level for association
	// id whose start is in [from, to), in time order: the allocated
	// TRES-seconds of finished jobs that ran under id or its subtree (as
	// the tree was when they ran), jobs ended, and (on cluster roots)
	// eligible waiting time. Zero from/to leave that side open.
	Rollups(id AssocID, level Level, from, to time.Time, fn func(Rollup) bool) error
	// Totals sums association id's rollups over [from, to), both rounded
	// down to the hour (in Location), reading whole months, whole days and
	// hours so that any range costs a handful of reads.
	Totals(id AssocID, from, to time.Time) (Totals, error)
	// ReservationUsage returns the hourly TRES-seconds of finished jobs that
	// ran in reservation name of cluster, for hour buckets starting in
	// [from, to).
	ReservationUsage(cluster, name string, from, to time.Time) ([]Rollup, error)
	// PurgeRollups deletes the buckets of level that end before before
	// (slurmdbd's PurgeUsageAfter; whole days or months only) and returns
	// how many. Purging hours keeps each day's total; purging days
	// removes hours and days; months are only removed at LevelMonth.
	PurgeRollups(level Level, before time.Time) (int, error)

	// Location returns the time zone of rollup buckets and reset
	// boundaries (Config.Location, UTC by default).
	Location() *time.Location
}

// New returns a Ledger over backend b with usage policy cfg. On an empty
// backend it writes the schema version; otherwise it checks it
// (ErrSchemaVersion) and that cfg.Location matches the one the ledger was
// created with (ErrInvalidConfig).
func New(b Backend, cfg Config) (Ledger, error) {
	return newKVLedger(b, cfg)
}

// NewMemory returns an empty in-memory Ledger (New over NewMemoryBackend).
func NewMemory(cfg Config) (Ledger, error) {
	return New(NewMemoryBackend(), cfg)
}

type kvLedger struct {
	mu     sync.RWMutex
	b      Backend
	cfg    Config
	loc    *time.Location
	strs   []string // interned strings; ID i is strs[i-1]
	ids    map[string]uint32
	closed bool

	cacheMu    sync.Mutex
	assocCache map[AssocID][]Assoc // association versions, cleared when an Update changes any
}

func newKVLedger(b Backend, cfg Config) (*kvLedger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &kvLedger{b: b, cfg: cfg, loc: cfg.location(), ids: map[string]uint32{}}
	var initNeeded bool
	err := b.View(func(r KVReader) error {
		v, ok, err := r.Get(keySchema)
		if err != nil {
			return err
		}
		if !ok {
			empty := true
			if err := r.Ascend("", "", func(k, _ string) bool { empty = false; return false }); err != nil {
				return err
			}
			if !empty {
				return fmt.Errorf("%w: store holds data but no %q record (not a Sluice ledger)", ErrSchemaVersion, keySchema)
			}
			initNeeded = true
			return nil
		}
		if v != fmt.Sprint(SchemaVersion) {
			return fmt.Errorf("%w: stored version %q, this package reads %d", ErrSchemaVersion, v, SchemaVersion)
		}
		if f, _, err := r.Get(keyFormat); err != nil {
			return err
		} else if f != formatName {
			return fmt.Errorf("%w: format %q, want %q", ErrSchemaVersion, f, formatName)
		}
		loc, _, err := r.Get(keyLocation)
		if err != nil {
			return err
		}
		if loc != l.loc.String() {
			return fmt.Errorf("%w: ledger was created with Location %q, opened with %q (rollup buckets would not line up)", ErrInvalidConfig, loc, l.loc.String())
		}
		return l.loadStrings(r)
	})
	if err != nil {
		return nil, err
	}
	if initNeeded {
		err := b.Update(func(w KVWriter) error {
			for k, v := range map[string]string{keySchema: fmt.Sprint(SchemaVersion), keyFormat: formatName, keyLocation: l.loc.String()} {
				if err := w.Set(k, v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Meta and intern keys.
const (
	keySchema   = "m:schema"
	keyFormat   = "m:format"
	keyLocation = "m:location"
	keyAssocSeq = "m:seq:assoc"
	keyDecSeq   = "m:seq:decision"
	keyReset    = "m:reset"
	prefixStr   = "t:"
)

func (l *kvLedger) loadStrings(r KVReader) error {
	var bad error
	err := r.Ascend(prefixStr, prefixEnd(prefixStr), func(k, v string) bool {
		id, ok := parseHex(k[len(prefixStr):])
		if !ok || id != uint64(len(l.strs)+1) {
			bad = corruptKey(k, "interned string IDs are not contiguous (want %d)", len(l.strs)+1)
			return false
		}
		l.strs = append(l.strs, v)
		l.ids[v] = uint32(id)
		return true
	})
	if err != nil {
		return err
	}
	return bad
}

func (l *kvLedger) Config() Config { return l.cfg }

func (l *kvLedger) View(fn func(Tx) error) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	return l.b.View(func(r KVReader) error {
		return fn(&kvTx{l: l, r: r})
	})
}

func (l *kvLedger) Update(fn func(Tx) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	var tx *kvTx
	err := l.b.Update(func(w KVWriter) error {
		tx = newWriteTx(l, w)
		if err := fn(tx); err != nil {
			return err
		}
		return tx.flush()
	})
	if err != nil {
		return err
	}
	if tx.assocDirty {
		l.cacheMu.Lock()
		l.assocCache = nil
		l.cacheMu.Unlock()
	}
	for _, s := range tx.newStrs {
		l.strs = append(l.strs, s)
		l.ids[s] = uint32(len(l.strs))
	}
	return nil
}

func (l *kvLedger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	return l.b.Close()
}
