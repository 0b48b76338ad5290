// Package postgres keeps Sluice's accounting ledger in PostgreSQL, for a
// site that outgrows one buntdb file or accounts for many clusters in one
// database, as slurmdbd does.
//
// It is not a second ledger: Backend implements accounting.Backend (an
// ordered key/value store with transactions) on PostgreSQL, and Open
// opens the ledger with accounting.New over it, so the association tree,
// usage, decay, rollups and reports are the same code as the memory and
// buntdb ledgers, and it passes the same conformance suite (package
// accounting/ledgertest).
//
// # Layout
//
// Every row is keyed by (cluster, key); a cluster's ledger is the rows
// of its cluster ID (table sluice_clusters). Job and step records
// ("j:", "st:") are in sluice_records, partitioned by range on the
// month (UTC) of the record's time as accounting.RecordTime gives it (a
// job's submit time, a step's start), with a partition created on demand
// the first time a month is written (created and then attached, under a
// transaction-level advisory lock, so readers and writers of other
// clusters are not blocked). Every other key (associations, usage, rollups, decisions,
// interned strings) is in sluice_kv. Keys and values are bytea, so keys
// sort in Go's byte order, as the Backend contract requires; reads of
// record keys go through the partitioned parent and see every month.
//
// # Writers, transactions, migrations
//
// Open takes a session advisory lock on the cluster, held by one
// connection taken out of the pool for the ledger's lifetime; a second
// writer of the same cluster fails with accounting.ErrLocked (as buntdb
// refuses a locked file), while any number of clusters write one
// database at once. If that connection is lost, so is the lock, and the
// ledger's Updates fail (with accounting.ErrFailed once the loss is seen)
// instead of writing unlocked. An Update buffers its writes in memory (its reads see
// them; scans merge them with the database in key order) and sends them
// with COMMIT in one round trip (a pgx batch of array upserts). It runs
// at READ COMMITTED: its statements touch only its own cluster's rows,
// which only the lock holder writes, so nothing changes under it and
// writers of other clusters never conflict with it. A View is a read-only
// REPEATABLE READ transaction: one snapshot. Reads that the ledger makes
// one key at a time are batched where the pattern is known: the ledger
// hands the rollup records a commit or a report will read to Prefetch
// (accounting.Prefetcher), and a Get of a rollup or job record reads the
// following rows with it.
//
// The schema is versioned by forward-only migrations (sluice_schema_migrations),
// applied at Open under their own advisory lock, so processes opening a
// new database at once migrate it once; a database migrated by newer
// code than this (a version above SchemaVersion) is refused with
// accounting.ErrSchemaVersion.
//
// # Moving a buntdb ledger
//
// Import copies any Backend (accounting.OpenBuntBackend) into a cluster
// in key order, a batch per transaction with a checkpoint, resuming after
// an interruption, and verifies the copy (Summarize: counts per prefix,
// bytes and a digest; VerifyLedgers: job records per cluster and rollup
// totals per association through the ledger API). Command
// cmd/ledger-migrate does this for a file.
package postgres
