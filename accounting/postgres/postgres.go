package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/accounting"
)

// Options say which cluster's ledger to open and how.
type Options struct {
	// Cluster names the ledger's namespace in the database (required):
	// every row is keyed by it, and one writer at a time holds it.
	Cluster string
	// Timeout bounds each View and Update (0 = no limit).
	Timeout time.Duration
}

// Validate checks that Cluster is set, valid UTF-8 and at most 255 bytes,
// and that Timeout is not negative.
func (o Options) Validate() error {
	switch {
	case o.Cluster == "":
		return fmt.Errorf("%w: postgres: Options.Cluster is empty", accounting.ErrInvalidConfig)
	case len(o.Cluster) > 255 || !utf8.ValidString(o.Cluster):
		return fmt.Errorf("%w: postgres: cluster name %q is not UTF-8 of at most 255 bytes", accounting.ErrInvalidConfig, o.Cluster)
	case o.Timeout < 0:
		return fmt.Errorf("%w: postgres: Timeout %v is negative", accounting.ErrInvalidConfig, o.Timeout)
	}
	return nil
}

// Advisory lock keys: (lockClass, cluster ID) is a cluster's writer lock,
// (lockClass, migrateLock) serialises migrations and (lockClass,
// partitionLock) partition creation. Cluster IDs start at 1.
const (
	lockClass     int32 = 0x534c5543 // "SLUC"
	migrateLock   int32 = 0
	partitionLock int32 = -1
)

// Backend is an accounting.Backend on PostgreSQL: the key/value store of
// one cluster's ledger, in tables shared by every cluster of the
// database. It holds one connection for its lifetime, taken out of the
// pool: that connection holds the cluster's writer lock (a session
// advisory lock) and runs every Update, so writes stop if the lock is
// lost. Views run on the pool's other connections. Use Open for a Ledger
// on it.
type Backend struct {
	pool    *pgxpool.Pool
	opts    Options
	cluster int32

	closed atomic.Bool

	mu     sync.Mutex // serialises Updates and Close, guards the fields below
	conn   *pgx.Conn  // holds the writer lock; runs Updates
	parts  map[int32]bool
	failed error
}

// Open opens (creating it when new) the ledger of cluster opts.Cluster
// in the database behind pool: it applies pending migrations, takes the
// cluster's writer lock and opens the ledger with accounting.New. A
// cluster another Backend has open fails with accounting.ErrLocked; a
// database migrated by newer code fails with accounting.ErrSchemaVersion.
// Closing the ledger releases the lock and the connection; the pool stays
// the caller's.
func Open(ctx context.Context, pool *pgxpool.Pool, opts Options, cfg accounting.Config) (accounting.Ledger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b, err := OpenBackend(ctx, pool, opts)
	if err != nil {
		return nil, err
	}
	l, err := accounting.New(b, cfg)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("postgres: cluster %q: %w", opts.Cluster, err)
	}
	return l, nil
}

// OpenBackend is Open without the ledger: the Backend of cluster
// opts.Cluster, for the conformance suite, Import, or a ledger opened
// with accounting.New.
func OpenBackend(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Backend, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if pool == nil {
		return nil, fmt.Errorf("%w: postgres: nil pool", accounting.ErrInvalidConfig)
	}
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	conn := pc.Hijack()
	b := &Backend{pool: pool, opts: opts, conn: conn, parts: map[int32]bool{}}
	if err := b.open(ctx); err != nil {
		_ = conn.Close(context.Background())
		return nil, err
	}
	return b, nil
}

func (b *Backend) open(ctx context.Context) error {
	if err := migrate(ctx, b.conn); err != nil {
		return err
	}
	_, err := b.conn.Exec(ctx, `INSERT INTO sluice_clusters (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, b.opts.Cluster)
	if err != nil {
		return fmt.Errorf("postgres: register cluster %q: %w", b.opts.Cluster, err)
	}
	if err := b.conn.QueryRow(ctx, `SELECT id FROM sluice_clusters WHERE name = $1`, b.opts.Cluster).Scan(&b.cluster); err != nil {
		return fmt.Errorf("postgres: cluster %q: %w", b.opts.Cluster, err)
	}
	var got bool
	if err := b.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, lockClass, b.cluster).Scan(&got); err != nil {
		return fmt.Errorf("postgres: lock cluster %q: %w", b.opts.Cluster, err)
	}
	if !got {
		var pid int32
		_ = b.conn.QueryRow(ctx, `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objid = $2 AND objsubid = 2 AND granted`,
			lockClass, b.cluster).Scan(&pid)
		return fmt.Errorf("%w: postgres: cluster %q is open by another writer (advisory lock (%d, %d) held by backend pid %d)",
			accounting.ErrLocked, b.opts.Cluster, lockClass, b.cluster, pid)
	}
	return nil
}

// Cluster returns the name of the backend's cluster.
func (b *Backend) Cluster() string { return b.opts.Cluster }

func (b *Backend) ctx() (context.Context, context.CancelFunc) {
	if b.opts.Timeout > 0 {
		return context.WithTimeout(context.Background(), b.opts.Timeout)
	}
	return context.WithCancel(context.Background())
}

// View runs fn in a read-only REPEATABLE READ transaction on a pooled
// connection: every read sees one snapshot.
func (b *Backend) View(fn func(accounting.KVReader) error) error {
	if b.closed.Load() {
		return accounting.ErrClosed
	}
	ctx, cancel := b.ctx()
	defer cancel()
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("postgres: begin view: %w", err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	return fn(&kvTx{b: b, ctx: ctx, q: tx})
}

// Update runs fn in a READ COMMITTED transaction on the lock-holding
// connection, buffering its writes (reads see them) and sending them with
// the COMMIT in one round trip. READ COMMITTED is enough: every statement
// names this cluster, whose rows only the lock holder writes, so no
// other transaction changes what this one reads, and writers of other
// clusters never conflict with it (no serialisation failures to retry).
func (b *Backend) Update(fn func(accounting.KVWriter) error) error {
	return b.update(func(t *kvTx) error { return fn(t) })
}

func (b *Backend) update(fn func(*kvTx) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed.Load():
		return accounting.ErrClosed
	case b.failed != nil:
		return b.failed
	case b.conn.IsClosed():
		b.failed = fmt.Errorf("%w: postgres: cluster %q: the connection holding the writer lock is gone", accounting.ErrFailed, b.opts.Cluster)
		return b.failed
	}
	ctx, cancel := b.ctx()
	defer cancel()
	if b.conn.PgConn().TxStatus() != 'I' { // left open by a panic in an earlier fn
		if _, err := b.conn.Exec(ctx, "ROLLBACK"); err != nil {
			return fmt.Errorf("postgres: roll back an abandoned transaction: %w", err)
		}
	}
	if _, err := b.conn.Exec(ctx, "BEGIN ISOLATION LEVEL READ COMMITTED"); err != nil {
		return fmt.Errorf("postgres: begin: %w", err)
	}
	t := &kvTx{b: b, ctx: ctx, q: b.conn, w: newOverlay()}
	err := fn(t)
	if err == nil {
		err = t.commit()
	}
	if err != nil {
		if b.conn.PgConn().TxStatus() != 'I' {
			if _, rerr := b.conn.Exec(context.Background(), "ROLLBACK"); rerr != nil {
				err = errors.Join(err, fmt.Errorf("postgres: rollback: %w", rerr))
			}
		}
		return err
	}
	for m := range t.newParts {
		b.parts[m] = true
	}
	return nil
}

// Close releases the writer lock and the connection. Further calls fail
// with accounting.ErrClosed.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed.Load() {
		return accounting.ErrClosed
	}
	b.closed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if !b.conn.IsClosed() {
		_, err = b.conn.Exec(ctx, `SELECT pg_advisory_unlock($1, $2)`, lockClass, b.cluster)
	}
	return errors.Join(err, b.conn.Close(ctx))
}

var _ accounting.Backend = (*Backend)(nil)
