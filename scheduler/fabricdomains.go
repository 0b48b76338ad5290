package scheduler

import (
	"github.com/sluicehq/sluice/topology"
)

// Multi-node NVLink domains discovered, not configured: a node whose
// device inventory reports an NVLink fabric (gres.Inventory.Fabric, read
// by the NVML driver from each GPU's fabric cluster UUID and clique ID)
// is in the domain of that fabric, so GB200 NVL72-style racks need no
// topology.Config.Domains. Configured domains take precedence: when
// Config.Topology lists Domains, the hardware's are not used.

// FabricDomains returns the multi-node NVLink domains that the nodes'
// inventories report: one per distinct gres.Inventory.Fabric, named by
// its key ("<cluster UUID>/<clique ID>"), in order of first appearance,
// each with its nodes in configuration order. Nodes without a fabric are
// in none; nil when no node has one.
func FabricDomains(nodes []NodeConfig) []topology.DomainConfig {
	var out []topology.DomainConfig
	at := map[string]int{}
	for i := range nodes {
		key := nodes[i].Devices.Fabric.String()
		if key == "" {
			continue
		}
		k, ok := at[key]
		if !ok {
			k = len(out)
			at[key] = k
			out = append(out, topology.DomainConfig{Name: key})
		}
		out[k].Nodes = append(out[k].Nodes, nodes[i].Name)
	}
	return out
}

// topologyConfig is the topology the scheduler builds its graph from:
// Config.Topology, with the domains FabricDomains finds when it lists
// none; nil when there is neither.
func (c *Config) topologyConfig() *topology.Config {
	if c.Topology != nil && len(c.Topology.Domains) > 0 {
		return c.Topology
	}
	fd := FabricDomains(c.Nodes)
	switch {
	case fd == nil:
		return c.Topology
	case c.Topology == nil:
		return &topology.Config{Domains: fd}
	}
	tc := *c.Topology
	tc.Domains = fd
	return &tc
}
