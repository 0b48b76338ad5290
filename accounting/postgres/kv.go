package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/btree"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/accounting"
)

// querier is what a transaction reads through: a pgx.Tx (View) or the
// lock-holding connection inside BEGIN (Update).
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// item is a buffered write: a value, or a deletion.
type item struct {
	k, v  string
	month time.Time // record keys: the partition month of v
	del   bool
}

func newOverlay() *btree.BTreeG[item] {
	return btree.NewG(32, func(a, b item) bool { return a.k < b.k })
}

// kvTx is a View (w == nil) or Update transaction.
type kvTx struct {
	b   *Backend
	ctx context.Context
	q   querier
	w   *btree.BTreeG[item] // buffered writes, nil in a View

	// stored records the partition month of record keys read from the
	// database in this Update (zero time: known absent), so a flush moves
	// a record to another month only when it has to.
	stored    map[string]time.Time
	newParts  map[int32]bool
	iterating bool

	ahead readAhead // rollup rows read ahead of Get

	fresh bool     // every record key written is new (Import): no moves
	extra []queued // statements sent with the commit, before COMMIT
}

type queued struct {
	sql  string
	args []any
}

// Record keys (accounting.RecordTime) live in sluice_records.
func isRecordKey(k string) bool { return strings.HasPrefix(k, "j:") || strings.HasPrefix(k, "st:") }

// recordRanges are the key ranges of record keys, in key order.
var recordRanges = [...][2]string{{"j:", "j;"}, {"st:", "st;"}}

func monthOf(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

func monthIndex(m time.Time) int32 { return int32(m.Year())*12 + int32(m.Month()) - 1 }

func (t *kvTx) Get(key string) (string, bool, error) {
	if t.w != nil {
		if it, ok := t.w.Get(item{k: key}); ok {
			return it.v, !it.del, nil
		}
	}
	if v, ok, hit, err := t.readAhead(key); hit || err != nil {
		return v, ok, err
	}
	return t.getDB(key)
}

// getDB reads key from the database.
func (t *kvTx) getDB(key string) (string, bool, error) {
	if !isRecordKey(key) {
		var v []byte
		err := t.q.QueryRow(t.ctx, `SELECT val FROM sluice_kv WHERE cluster = $1 AND key = $2`, t.b.cluster, []byte(key)).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("postgres: get %q: %w", key, err)
		}
		return string(v), true, nil
	}
	rows, err := t.q.Query(t.ctx, `SELECT val, month FROM sluice_records WHERE cluster = $1 AND key = $2`, t.b.cluster, []byte(key))
	if err != nil {
		return "", false, fmt.Errorf("postgres: get %q: %w", key, err)
	}
	var (
		v     []byte
		month time.Time
		n     int
	)
	for rows.Next() {
		n++
		if err := rows.Scan(&v, &month); err != nil {
			rows.Close()
			return "", false, fmt.Errorf("postgres: get %q: %w", key, err)
		}
	}
	if err := rows.Err(); err != nil {
		return "", false, fmt.Errorf("postgres: get %q: %w", key, err)
	}
	if n > 1 {
		return "", false, &accounting.CorruptError{Offset: -1, Key: key, Reason: fmt.Sprintf("stored in %d monthly partitions of sluice_records", n), Err: accounting.ErrCorrupt}
	}
	if t.w != nil {
		if t.stored == nil {
			t.stored = map[string]time.Time{}
		}
		t.stored[key] = month // zero when absent
	}
	return string(v), n == 1, nil
}

// Ascend pages through the database in key order (a few rows first, as
// most scans stop early, then up to maxPage at a time) and merges the
// transaction's buffered writes in. Each page is read before fn runs, so
// fn may read from the transaction.
func (t *kvTx) Ascend(from, to string, fn func(k, v string) bool) error {
	if to != "" && from >= to {
		return nil
	}
	t.iterating = true
	defer func() { t.iterating = false }()
	sql := t.rangeSQL(from, to)
	page := 16
	lo := from
	ov, ovOK := t.nextOverlay(from, to)
	for {
		var args []any
		if to == "" {
			args = []any{t.b.cluster, []byte(lo), page}
		} else {
			args = []any{t.b.cluster, []byte(lo), page, []byte(to)}
		}
		keys, vals, err := t.page(sql, args)
		if err != nil {
			return fmt.Errorf("postgres: scan [%q, %q): %w", from, to, err)
		}
		for i, k := range keys {
			for ovOK && ov.k < k {
				if !ov.del && !fn(ov.k, ov.v) {
					return nil
				}
				ov, ovOK = t.nextOverlay(ov.k+"\x00", to)
			}
			if ovOK && ov.k == k {
				if !ov.del && !fn(ov.k, ov.v) {
					return nil
				}
				ov, ovOK = t.nextOverlay(ov.k+"\x00", to)
				continue
			}
			if !fn(k, vals[i]) {
				return nil
			}
		}
		if len(keys) < page {
			break
		}
		lo = keys[len(keys)-1] + "\x00"
		page = min(page*4, maxPage)
	}
	for ovOK {
		if !ov.del && !fn(ov.k, ov.v) {
			return nil
		}
		ov, ovOK = t.nextOverlay(ov.k+"\x00", to)
	}
	return nil
}

const maxPage = 4096

func (t *kvTx) page(sql string, args []any) ([]string, []string, error) {
	rows, err := t.q.Query(t.ctx, sql, args...)
	if err != nil {
		return nil, nil, err
	}
	var keys, vals []string
	for rows.Next() {
		raw := rows.RawValues()
		keys = append(keys, string(raw[0]))
		vals = append(vals, string(raw[1]))
	}
	return keys, vals, rows.Err()
}

// rangeSQL returns the paging query for [from, to): over sluice_kv,
// sluice_records or both (merged in key order), with parameters cluster,
// lower bound, limit and (when to != "") upper bound. Rows come in the
// binary format (the result-format default for bytea is text hex).
func (t *kvTx) rangeSQL(from, to string) string {
	cond := "cluster = $1 AND key >= $2"
	if to != "" {
		cond += " AND key < $4"
	}
	kv, rec := false, false
	for _, r := range recordRanges {
		if from < r[1] && (to == "" || to > r[0]) {
			rec = true
		}
	}
	inside := false
	for _, r := range recordRanges {
		if from >= r[0] && to != "" && to <= r[1] {
			inside = true
		}
	}
	kv = !inside
	switch {
	case kv && rec:
		return "SELECT key, val FROM sluice_kv WHERE " + cond + " UNION ALL SELECT key, val FROM sluice_records WHERE " + cond + " ORDER BY key LIMIT $3"
	case rec:
		return "SELECT key, val FROM sluice_records WHERE " + cond + " ORDER BY key LIMIT $3"
	}
	return "SELECT key, val FROM sluice_kv WHERE " + cond + " ORDER BY key LIMIT $3"
}

// nextOverlay returns the first buffered write with a key in [from, to).
func (t *kvTx) nextOverlay(from, to string) (item, bool) {
	if t.w == nil {
		return item{}, false
	}
	var it item
	var ok bool
	t.w.AscendGreaterOrEqual(item{k: from}, func(i item) bool {
		it, ok = i, to == "" || i.k < to
		return false
	})
	return it, ok
}

var errWriteWhileIterating = fmt.Errorf("%w: postgres: write while iterating (collect keys first)", accounting.ErrInvalid)

func (t *kvTx) check() error {
	if t.w == nil {
		return fmt.Errorf("postgres: %w", accounting.ErrReadOnly)
	}
	if t.iterating {
		return errWriteWhileIterating
	}
	return nil
}

// Set buffers val under key. A job or step record's value must carry its
// time (accounting.RecordTime); one that does not is refused as corrupt.
func (t *kvTx) Set(key, val string) error {
	if err := t.check(); err != nil {
		return err
	}
	it := item{k: key, v: val}
	if isRecordKey(key) {
		tm, _, err := accounting.RecordTime(key, val)
		if err != nil {
			return fmt.Errorf("postgres: set: %w", err)
		}
		it.month = monthOf(tm)
	}
	t.w.ReplaceOrInsert(it)
	return nil
}

// Delete buffers the removal of key.
func (t *kvTx) Delete(key string) error {
	if err := t.check(); err != nil {
		return err
	}
	t.w.ReplaceOrInsert(item{k: key, del: true})
	return nil
}

// commit creates missing partitions, then sends every buffered write and
// COMMIT in one batch.
func (t *kvTx) commit() error {
	var (
		kvK, kvV, kvDel [][]byte
		recK, recV      [][]byte
		recM            []time.Time
		moveK, recDel   [][]byte
		moveM           []time.Time
		months          = map[int32]time.Time{}
	)
	t.w.Ascend(func(it item) bool {
		k := []byte(it.k)
		switch {
		case !isRecordKey(it.k) && it.del:
			kvDel = append(kvDel, k)
		case !isRecordKey(it.k):
			kvK, kvV = append(kvK, k), append(kvV, []byte(it.v))
		case it.del:
			recDel = append(recDel, k)
		default:
			recK, recV, recM = append(recK, k), append(recV, []byte(it.v)), append(recM, it.month)
			months[monthIndex(it.month)] = it.month
			if old, known := t.stored[it.k]; !t.fresh && !known || (!old.IsZero() && !old.Equal(it.month)) {
				moveK, moveM = append(moveK, k), append(moveM, it.month)
			}
		}
		return true
	})
	if err := t.ensurePartitions(months); err != nil {
		return err
	}
	var bt pgx.Batch
	c := t.b.cluster
	if len(kvDel) > 0 {
		bt.Queue(`DELETE FROM sluice_kv WHERE cluster = $1 AND key = ANY($2::bytea[])`, c, kvDel)
	}
	if len(kvK) > 0 {
		bt.Queue(`INSERT INTO sluice_kv (cluster, key, val) SELECT $1, k, v FROM unnest($2::bytea[], $3::bytea[]) AS n(k, v)
ON CONFLICT (cluster, key) DO UPDATE SET val = EXCLUDED.val`, c, kvK, kvV)
	}
	if len(recDel) > 0 {
		bt.Queue(`DELETE FROM sluice_records WHERE cluster = $1 AND key = ANY($2::bytea[])`, c, recDel)
	}
	if len(moveK) > 0 {
		bt.Queue(`DELETE FROM sluice_records r USING unnest($2::bytea[], $3::date[]) AS n(k, m)
WHERE r.cluster = $1 AND r.key = n.k AND r.month <> n.m`, c, moveK, moveM)
	}
	if len(recK) > 0 {
		bt.Queue(`INSERT INTO sluice_records (cluster, month, key, val) SELECT $1, m, k, v FROM unnest($2::bytea[], $3::date[], $4::bytea[]) AS n(k, m, v)
ON CONFLICT (cluster, key, month) DO UPDATE SET val = EXCLUDED.val`, c, recK, recM, recV)
	}
	for _, q := range t.extra {
		bt.Queue(q.sql, q.args...)
	}
	bt.Queue("COMMIT")
	if err := t.q.SendBatch(t.ctx, &bt).Close(); err != nil {
		return fmt.Errorf("postgres: commit cluster %q: %w", t.b.opts.Cluster, err)
	}
	return nil
}

// ensurePartitions creates the monthly partitions of sluice_records that
// months need and this backend has not seen, inside the transaction (so
// a rollback drops them too), under the partition-creation advisory lock.
// A partition is created as a table and then attached, which locks the
// parent only against other attaches, not against readers and writers of
// other clusters.
func (t *kvTx) ensurePartitions(months map[int32]time.Time) error {
	locked := false
	for idx, m := range months {
		if t.b.parts[idx] {
			continue
		}
		if !locked {
			if _, err := t.q.Exec(t.ctx, `SELECT pg_advisory_xact_lock($1, $2)`, lockClass, partitionLock); err != nil {
				return fmt.Errorf("postgres: partition lock: %w", err)
			}
			locked = true
		}
		name := fmt.Sprintf("sluice_records_y%04dm%02d", m.Year(), int(m.Month()))
		var exists bool
		if err := t.q.QueryRow(t.ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&exists); err != nil {
			return fmt.Errorf("postgres: partition %s: %w", name, err)
		}
		if !exists {
			lo, hi := m.Format(time.DateOnly), m.AddDate(0, 1, 0).Format(time.DateOnly)
			sql := fmt.Sprintf(`CREATE TABLE %[1]s (LIKE sluice_records INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
	CHECK (month >= DATE '%[2]s' AND month < DATE '%[3]s'));
ALTER TABLE sluice_records ATTACH PARTITION %[1]s FOR VALUES FROM ('%[2]s') TO ('%[3]s')`, name, lo, hi)
			if _, err := t.q.Exec(t.ctx, sql); err != nil {
				return fmt.Errorf("postgres: create partition %s: %w", name, err)
			}
		}
		if t.newParts == nil {
			t.newParts = map[int32]bool{}
		}
		t.newParts[idx] = true
	}
	return nil
}
