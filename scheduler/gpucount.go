package scheduler

import (
	"errors"
	"fmt"
)

// The node count of a job with a --gpus total (GRESPerJob) that Slurm
// chooses. sbatch's -N page: without -N, Slurm allocates enough nodes to
// satisfy the per-job options (-n, -c, --gpus); with -N min-max, within
// the range. So `sbatch -n 8 --gpus=8` on 4-GPU nodes takes 2 nodes, and
// `-N 1-4 --gpus=12` 3 of them. Sluice fixes that count when the job is
// submitted (or updated): the fewest nodes, at least -N's minimum, on
// which the job's request — its tasks dealt ceil(Tasks/nodes) per node,
// one GPU of the total on each node and the rest spread over them (see
// spreadExtra) — could ever run, judged on the partition's nodes as
// configured (idle). The count does not grow with what is free when the
// job starts (the docs are silent on a --gpus job taking more nodes than
// its GPUs need; spreading one job's GPUs over more nodes than they need
// is what a GPU user avoids), and it is the job's count from then on —
// until node or partition configuration changes while the job waits,
// when it is chosen again (gpurecount.go): its
// backfill plan, limits, accounting and Explain read it like -N's.

// gpuCountChosen reports whether spec's node count is a --gpus total's to
// choose: a GRESPerJob without -N, or with -N min-max.
func gpuCountChosen(spec JobSpec) bool {
	return len(spec.GRESPerJob) > 0 && (spec.Nodes == 0 || spec.NodesMax > spec.Nodes)
}

// maxGPUCountTries bounds the node counts gpuNodeCount tries beyond the
// first (each a full check of the request).
const maxGPUCountTries = 256

// gpuNodeCount builds the job of spec with the fewest nodes in its range
// that could run it (see above). The job's spec keeps the Nodes and
// NodesMax it was given. A count is refused only for being unsatisfiable
// (ErrUnsatisfiable): any other error is the request's and is returned as
// it is; when no count in range can run it, the last count's reason is
// returned. With was set it chooses queued job was's count again
// (newJobFixed, gpurecount.go).
func (s *Scheduler) gpuNodeCount(spec JobSpec, accepting bool, was *job) (*job, error) {
	switch {
	case spec.Nodes < 0 || spec.Nodes > MaxNodesPerJob:
		return nil, fmt.Errorf("%w: Nodes %d out of range [0, %d]", ErrInvalidJob, spec.Nodes, MaxNodesPerJob)
	case spec.NodesMax < 0 || spec.NodesMax > MaxNodesPerJob:
		return nil, fmt.Errorf("%w: NodesMax %d out of range [0, %d]", ErrInvalidJob, spec.NodesMax, MaxNodesPerJob)
	}
	lo := minNodesOf(&spec)
	hi := spec.NodesMax
	if hi == 0 {
		// Every node takes at least one task and one of the GPUs.
		hi = MaxNodesPerJob
		if spec.Tasks > 0 {
			hi = spec.Tasks
		}
		var gpus int64
		for _, r := range spec.GRESPerJob {
			gpus = max(gpus, r.Count)
		}
		if gpus > 0 && gpus < int64(hi) {
			hi = int(gpus)
		}
	}
	hi = min(hi, len(s.nodes), lo+maxGPUCountTries)
	var last error
	for n := lo; n <= max(hi, lo); n++ {
		rs := spec
		rs.Nodes, rs.NodesMax = n, 0
		j, err := s.newJobFixed(rs, accepting, was)
		if err == nil {
			j.Spec.Nodes, j.Spec.NodesMax = spec.Nodes, spec.NodesMax
			return j, nil
		}
		if !errors.Is(err, ErrUnsatisfiable) {
			if last != nil {
				return nil, last // past what any count can hold (more nodes than tasks)
			}
			return nil, err
		}
		last = err
	}
	return nil, fmt.Errorf("no node count in [%d, %d] runs the GRESPerJob total: %w", lo, max(hi, lo), last)
}
