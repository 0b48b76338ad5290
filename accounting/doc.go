// Package accounting is Sluice's ledger: what slurmdbd keeps for Slurm.
//
// It stores the association tree (cluster → account → sub-account → user)
// with raw shares, QOS and limits, keeping every change as a version so a
// job record keeps the account it ran under; fair-share usage per
// association and QOS, decayed with PriorityDecayHalfLife (Slurm's
// per-interval approximation or the exact exponential) and reset by
// PriorityUsageResetPeriod, with undecayed budget usage kept separately
// for GrpTRESMins; job and step records with what sacct shows; decision
// audit records (why a job started, was preempted or requeued, with its
// priority breakdown and the jobs it competed with); node events,
// reservations and capacity for utilisation; and hourly, daily and
// monthly rollups, so reports over a year stay cheap.
//
// Access is through closure-scoped transactions in the style of buntdb:
//
//	err := l.Update(func(tx accounting.Tx) error {
//		if err := tx.PutJob(rec); err != nil {
//			return err
//		}
//		return tx.Charge(accounting.Charge{Assoc: rec.Assoc, TRES: rec.AllocTRES, From: rec.Start, To: rec.End})
//	})
//
// Two implementations share one logic (New) over a Backend: NewMemory for
// tests and simulations, and OpenBunt, one durable buntdb file (fsync per
// commit by default, checksummed records, a commit record per
// transaction, crash recovery that drops only an interrupted transaction,
// RepairBunt for damaged files, a stored schema version). Package
// accounting/postgres is the same logic over PostgreSQL, for many
// clusters in one database. Package ledgertest is the conformance suite
// any other implementation can run.
//
// Reports read a Tx: ClusterUtilization (sreport's cluster utilisation),
// AccountUsage (usage per account and user, for chargeback), TopUsers and
// ShareTree (the sshare tree: shares and usage; the fair-share factor is
// computed by package priority). JobWriter exports job records as CSV,
// sacct --parsable text or JSON.
//
// No function reads the clock: every time comes from the caller. Records
// store whole seconds. See docs/accounting.md for sizing and retention.
package accounting
