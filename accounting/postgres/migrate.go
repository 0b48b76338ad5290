package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/accounting"
)

// migration is one forward-only schema step. Versions are 1, 2, ... in
// order; a released migration is never changed, only followed by new ones.
type migration struct {
	version int
	name    string
	sql     string
}

var migrations = []migration{
	{1, "clusters, key/value rows, monthly job-record partitions", `
CREATE TABLE sluice_clusters (
	id   serial PRIMARY KEY,
	name text NOT NULL UNIQUE
);
-- Every ledger key that is not a job or step record.
CREATE TABLE sluice_kv (
	cluster int   NOT NULL REFERENCES sluice_clusters (id),
	key     bytea NOT NULL,
	val     bytea NOT NULL,
	PRIMARY KEY (cluster, key)
);
-- Job and step records, partitioned by the month (UTC) of the record's
-- time (accounting.RecordTime); partitions are created on demand.
CREATE TABLE sluice_records (
	cluster int   NOT NULL,
	month   date  NOT NULL,
	key     bytea NOT NULL,
	val     bytea NOT NULL,
	PRIMARY KEY (cluster, key, month)
) PARTITION BY RANGE (month);
`},
	{2, "import checkpoints", `
-- Progress of Import into a cluster: the last key copied, so an
-- interrupted import resumes after it.
CREATE TABLE sluice_imports (
	cluster    int PRIMARY KEY REFERENCES sluice_clusters (id),
	source     text NOT NULL,
	last_key   bytea NOT NULL,
	keys       bigint NOT NULL,
	done       boolean NOT NULL DEFAULT false,
	updated_at timestamptz NOT NULL DEFAULT now()
);
`},
}

// SchemaVersion is the database schema version this package migrates to
// (the last migration's). A database at a higher version, migrated by
// newer code, is refused.
const SchemaVersion = 2

// migrate applies pending migrations on conn under the migration
// advisory lock, each in its own transaction with its version row.
func migrate(ctx context.Context, conn *pgx.Conn) error {
	return migrateTo(ctx, conn, SchemaVersion)
}

// migrateTo applies the pending migrations up to version last.
func migrateTo(ctx context.Context, conn *pgx.Conn, last int) (err error) {
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, $2)`, lockClass, migrateLock); err != nil {
		return fmt.Errorf("postgres: migration lock: %w", err)
	}
	defer func() {
		if _, uerr := conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1, $2)`, lockClass, migrateLock); uerr != nil {
			err = errors.Join(err, fmt.Errorf("postgres: release migration lock: %w", uerr))
		}
	}()
	_, err = conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS sluice_schema_migrations (
	version    int PRIMARY KEY,
	name       text NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now()
)`)
	if err != nil {
		return fmt.Errorf("postgres: create sluice_schema_migrations: %w", err)
	}
	var cur int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM sluice_schema_migrations`).Scan(&cur); err != nil {
		return fmt.Errorf("postgres: read schema version: %w", err)
	}
	if cur > SchemaVersion {
		return fmt.Errorf("%w: postgres: database schema version %d is newer than this code's %d (upgrade Sluice)", accounting.ErrSchemaVersion, cur, SchemaVersion)
	}
	for _, m := range migrations {
		if m.version <= cur || m.version > last {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO sluice_schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres: migration %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}
