// Package topology models where a cluster's nodes sit in its network and
// chooses which nodes a multi-node job gets.
//
// # Node sets
//
// NodeSet is a bitset over node indices 0..n-1 with the set algebra a
// planner needs (and, or, and-not, count, iterate, first-N). In-place
// operations never allocate; at 10,000 nodes a set is 157 words.
//
// # The cluster graph
//
// A Graph is built once from a plain Config (or from Slurm's topology.conf
// with ParseTopologyConf) and is immutable afterwards. It holds:
//
//   - a switch tree of any depth (Slurm topology/tree): leaf switches list
//     nodes, upper switches list switches; every Switch knows its level,
//     parent, children and the NodeSet of its subtree;
//   - or base blocks with enforced BlockSizes (Slurm topology/block);
//   - and, optionally, multi-node NVLink domains (GB200/GB300 NVL72-style
//     racks of 18 nodes × 4 GPUs on one NVLink fabric).
//
// Node and switch lists accept Slurm hostlist expressions; ExpandHostlist
// and CompressHostlist convert between "tux[0-3,8]" and names, keeping zero
// padding.
//
// # Placement
//
// Graph.Select takes the candidate nodes (those that can take the job's
// per-node request now — the caller decides that), a node count and
// optional Constraints (Slurm's --switches count, --segment, NVLink domain
// mode), and returns the nodes with the least spread plus a Quality score
// that simulations can average. Internally every topology is a hierarchy
// of groups whose leaves hold nodes; per-group candidate counts are
// computed with one AND+popcount per bitset word of each leaf and summed up
// the tree, so whole switches, blocks and domains are accepted or pruned
// by a single comparison. Among equally good choices the tighter group is
// preferred, so small jobs fill partly used switches and domains and leave
// whole ones free.
//
// gonum's graph packages were considered for the switch tree: with at most
// one parent per switch, cycle detection, levels and lowest common
// ancestors are a few lines over a parent array, and the placement needs
// per-group counts and depth-first leaf ranges that a general graph type
// would not provide, so the package does not use them.
//
// Nothing here does I/O, starts goroutines or reads the clock; results are
// deterministic (ties are broken by configuration order and node index).
package topology
