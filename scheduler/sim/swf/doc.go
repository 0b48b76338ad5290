// Package swf reads and writes the Standard Workload Format (SWF) of the
// Parallel Workloads Archive, and maps its jobs onto a Sluice cluster for
// the simulator (package sim).
//
// # Format
//
// An SWF file is a header of comment lines starting with ';' — of which
// "; Key: Value" lines such as MaxProcs, MaxNodes and UnixStartTime
// describe the machine — followed by one line per job of 18
// whitespace-separated numbers (see the Field constants); -1 means
// unknown. Lines are sorted by submit time.
//
// # Cleaning policy
//
// The Reader streams a trace line by line and applies this policy, in
// this order, to every job line:
//
//  1. A line that is not 18 numbers, or has a value below -1, a time
//     beyond 100 years, a processor count beyond 2^24, or more than 64 KiB,
//     is dropped as malformed (ErrSyntax).
//  2. An unknown submit time drops the job (ErrNoSubmit).
//  3. A run time that is unknown or ≤ 0 drops the job (ErrNoRuntime).
//  4. The processor count is the allocated processors, or the requested
//     ones when those are unknown (Options.ProcsFrom chooses otherwise);
//     when neither is positive the job is dropped (ErrNoProcs).
//  5. A job larger than the machine (Options.Procs, else the header's
//     MaxProcs, else MaxNodes) is clipped to the whole machine (counted in
//     Stats.Clipped) or, with RejectOversize, dropped (ErrTooLarge).
//  6. A submit time earlier than the previous kept job's drops the job
//     (ErrOutOfOrder): the simulator needs arrivals in order.
//  7. An unknown or zero requested time (the user's estimate) becomes the
//     run time (Stats.EstimateFilled). A run time beyond the requested time
//     is kept and counted (Stats.Overrun); the simulated scheduler ends
//     such a job at its limit, as Slurm would.
//
// Every dropped line is counted by reason in Stats, and the first ones are
// kept as *LineError values naming the line, the field and its value. With
// Options.Strict, Read returns that error instead of skipping the line.
// The reader never panics on any input (it is fuzzed).
//
// # Mapping onto a cluster
//
// A Machine turns processors into nodes (single-CPU nodes, or whole nodes
// of k processors), builds the scheduler.Config of the cluster and turns
// records into sim.Job values; Source streams a Reader into the simulator.
// The Writer writes simulated jobs back as SWF, with wait and run times
// filled in, so that other tools can read the result.
package swf
