package scheduler

// A --gpus total's node count chosen again (gpucount.go). Slurm decides
// the node count of a job without a fixed -N when it schedules it, so a
// count Sluice fixed at submission against nodes that have changed since
// would hold the job to a shape the cluster no longer offers (4 nodes of
// 4 GPUs and --gpus=8 chose 2; once each node has 2 GPUs, 2 nodes can
// never hold 8, while 4 could). So whenever node or partition
// configuration changes (AddNode, RemoveNode, UpdateNode, a partition
// added, updated or removed), every queued job whose count was chosen
// (gpuCountChosen) has it chosen again, by gpuNodeCount, the function
// Submit uses, against the new configuration; what was fixed at
// submission besides the count (the excluded and required nodes as
// resolved then, the partition's defaults, the time limit) stays as it
// was (newJobFixed with was). Everything the count derives — the
// per-node request and device requests, the GRESPerJob beyond one per
// node, tasks per node, the backfill views (bfPer, bfMin, bfSpread), the
// shape, the where request, the whole request (totalRequest), ReqNodes —
// is replaced together, and the job's estimate is dropped (the next
// cycle plans it again). Pending jobs count in the policy usage by their
// submission only (not their TRES), so the usage does not change; the
// job-size factor of multifactor priority reads the new count at the
// next priority calculation, as it reads node changes.
//
// A job for which no count in range can ever run (the GPUs exceed what
// the partition's nodes can hold together) keeps its count and request:
// it is then exactly a job of that fixed -N whose nodes changed under it,
// and gets that job's treatment — it stays pending (ReqNodeNotAvail when
// none of the nodes able to hold it is up, Resources otherwise), and
// Explain says its nodes are too few ("needs N node(s) able to hold it,
// only M exist") — until a later change lets a count run it again.
//
// The recount runs once the event's validation is done and its change
// applied, and cannot fail, so an event that fails changes nothing; the
// job is saved (touch, notePending) before it changes, so a recount
// inside a journaled cycle is taken back with the cycle.

// recountGPUJobs chooses again the node count of every pending job whose
// count a --gpus total chose, in partitions marked in parts (nil: every
// partition).
func (s *Scheduler) recountGPUJobs(parts []bool) {
	s.pending.Ascend(func(j *job) bool {
		if gpuCountChosen(j.Spec) && j.part >= 0 && (parts == nil || (j.part < len(parts) && parts[j.part])) {
			s.recountGPUs(j)
		}
		return true
	})
}

// recountGPUs chooses pending job j's node count again (see above). Its
// queue key (priority, tier, submit time, ID) does not change, so it may
// run while the pending queue is walked.
func (s *Scheduler) recountGPUs(j *job) {
	nj, err := s.gpuNodeCount(j.Spec, false, j)
	if err != nil || nj.part != j.part || nj.nodes == j.nodes {
		// No count can run it (it keeps its own, see above), or the same.
		return
	}
	s.touch(j)
	s.notePending(j)
	j.nodes, j.tpn, j.tasks = nj.nodes, nj.tpn, nj.tasks
	j.perNode, j.devReq, j.extra, j.extraTotal = nj.perNode, nj.devReq, nj.extra, nj.extraTotal
	j.bfPer, j.bfMin, j.bfSpread = nj.bfPer, nj.bfMin, nj.bfSpread
	j.shape, j.where = nj.shape, nj.where
	j.total = nil // totalRequest computes it again
	// Caches of the old request.
	j.chooserKeys = [2]string{}
	j.bfClaimed, j.bfClaimOf, j.bfClaimEpoch = nil, nil, 0
	j.whereOK, j.whereShape, j.whereGen = false, nil, 0
	j.whereBF = nil
	j.planTasks, j.planShares = nil, nil
	j.clearEstimate()
}
