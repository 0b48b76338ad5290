package topology

import "errors"

// Sentinel errors. Every error returned by this package wraps one of them
// (use errors.Is); the message names the offending field, value or line.
var (
	// ErrSyntax reports malformed text: a hostlist expression or a
	// topology.conf line.
	ErrSyntax = errors.New("syntax error")
	// ErrTooLarge reports a hostlist or configuration larger than the
	// package's explicit limits (MaxHostlistHosts, MaxNodes).
	ErrTooLarge = errors.New("too large")
	// ErrDuplicateName reports a node, switch, block or domain name given
	// twice.
	ErrDuplicateName = errors.New("duplicate name")
	// ErrUnknownNode reports a node name that is not in Config.Nodes.
	ErrUnknownNode = errors.New("unknown node")
	// ErrUnknownSwitch reports a child switch name that no SwitchName
	// defines.
	ErrUnknownSwitch = errors.New("unknown switch")
	// ErrCycle reports switches that are (transitively) their own parent.
	ErrCycle = errors.New("switch cycle")
	// ErrMultipleParents reports a switch listed as the child of two
	// switches (the network must be a tree).
	ErrMultipleParents = errors.New("switch has more than one parent")
	// ErrOverlap reports a node under two leaf switches, in two blocks or in
	// two NVLink domains.
	ErrOverlap = errors.New("node in two groups")
	// ErrMultipleRoots reports a switch tree with several roots while
	// Config.SingleRoot is set.
	ErrMultipleRoots = errors.New("switch tree has more than one root")
	// ErrUnattached reports a node that a tree or block topology leaves
	// out (Slurm requires every node to be connected to a leaf switch or to
	// be in a block).
	ErrUnattached = errors.New("node not in the topology")
	// ErrInvalidConfig reports any other inconsistent configuration (a
	// switch with both nodes and switches, bad BlockSizes, a tree and
	// blocks at once, an empty name…).
	ErrInvalidConfig = errors.New("invalid topology config")

	// ErrBadRequest reports invalid placement arguments (a node count below
	// one, a segment size that does not divide it, a candidate set longer
	// than the graph, a domain request on a graph without domains).
	ErrBadRequest = errors.New("invalid placement request")
	// ErrNeverFits reports a request that no placement could satisfy even
	// with every node of the graph free (it would pend forever).
	ErrNeverFits = errors.New("request can never be satisfied by this topology")
	// ErrNoPlacement reports a request that cannot be placed on the current
	// candidates but would fit on an emptier cluster.
	ErrNoPlacement = errors.New("no placement among the candidates")
)
