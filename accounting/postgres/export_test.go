package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/accounting"
)

// BulkLoad copies key/value pairs into b's cluster with COPY, creating
// the partitions they need: the benchmarks' fast path for loading
// millions of records. Every key must be new.
func BulkLoad(ctx context.Context, b *Backend, keys, vals []string) error {
	var recs, kvs [][]any
	months := map[int32]bool{}
	var need []item
	for i, k := range keys {
		if !isRecordKey(k) {
			kvs = append(kvs, []any{b.cluster, []byte(k), []byte(vals[i])})
			continue
		}
		tm, _, err := accounting.RecordTime(k, vals[i])
		if err != nil {
			return err
		}
		m := monthOf(tm)
		if !months[monthIndex(m)] {
			months[monthIndex(m)] = true
			need = append(need, item{k: k, month: m})
		}
		recs = append(recs, []any{b.cluster, m, []byte(k), []byte(vals[i])})
	}
	err := b.update(func(t *kvTx) error {
		ms := map[int32]time.Time{}
		for _, it := range need {
			ms[monthIndex(it.month)] = it.month
		}
		return t.ensurePartitions(ms)
	})
	if err != nil {
		return err
	}
	if _, err := b.pool.CopyFrom(ctx, pgx.Identifier{"sluice_records"}, []string{"cluster", "month", "key", "val"}, pgx.CopyFromRows(recs)); err != nil {
		return fmt.Errorf("copy records: %w", err)
	}
	if _, err := b.pool.CopyFrom(ctx, pgx.Identifier{"sluice_kv"}, []string{"cluster", "key", "val"}, pgx.CopyFromRows(kvs)); err != nil {
		return fmt.Errorf("copy kv: %w", err)
	}
	return nil
}

// MigrateTo applies the migrations up to version last to the database of
// pool, as code of that version would.
func MigrateTo(ctx context.Context, pool *pgxpool.Pool, last int) error {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return migrateTo(ctx, c.Conn(), last)
}
