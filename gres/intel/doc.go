// Package intel is a node driver for Intel data-centre GPUs (Data Center
// GPU Max "Ponte Vecchio", Flex) that reads only sysfs: pure Go, no cgo,
// no vendor library, so it builds and runs wherever the kernel's i915 or
// xe driver is loaded. A Driver implements gres.Discoverer,
// gres.HealthWatcher and gres.TelemetrySampler:
//
//	d, err := intel.Open(intel.Options{})   // Root "/" reads the real /sys
//	disc, err := d.Discover(ctx)            // inventory, device files, warnings
//	evs, err := d.PollHealth(ctx, time.Second)
//	samples, err := d.Sample(ctx)
//
// What it reads, below Options.Root:
//
//	sys/class/drm/card<N>              DRM card minor; dev = "226:<N>"
//	  device -> PCI function           vendor 0x8086, device id (Models), numa_node,
//	                                   local_cpulist, uevent PCI_SLOT_NAME, driver link
//	  gt/gt<K>/                        i915: one directory per tile
//	    rc6_residency_ms               idle time → Utilization
//	    error_counter/fatal_*          fatal error counts → health (i915 backport)
//	  lmem_total_bytes, lmem_avail_bytes   device memory (i915 backport)
//	  device/tile<K>/                  xe: one directory per tile
//	    physical_vram_size_bytes       the tile's memory
//	    gt<G>/gtidle/idle_residency_ms idle time → Utilization
//	  device/i915.iaf.<M>/iaf_fabric_id    Xe Link (Intel Accelerator Fabric) present
//	  device/hwmon/hwmon<H>/energy1_input (µJ), power1_input (µW)
//	sys/class/drm/renderD<M>           render node; its device link names the card's
//	                                   PCI function, dev = "226:<M>"
//	sys/devices/system/cpu/cpu<C>/topology/physical_package_id   socket
//
// By default every tile of a multi-tile card (the Max 1550 has two) is a
// device of its own, typed "max_1550_tile", as Level Zero's default FLAT
// hierarchy shows them to programs; Options.Composite lists whole cards
// instead ("max_1550"). Placements maps each device to its card and
// tile. A job allocated one tile still needs its card's device files:
// cgroup device rules confine DRM minors, not tiles.
//
// Links: tiles of one card share a board; cards with Xe Link are taken as
// wired all-to-all (sysfs does not expose the port topology) with the
// card's Xe Link ports spread evenly over its peers, as gres.Link values
// with Fabric gres.FabricXeLink, so the best-connected device choice
// ranks them as it ranks NVLink lanes. Cards without Xe Link (Flex, or
// the xe driver, which does not expose it) have PCIe levels only: NODE on
// one NUMA node, SYS across. What the driver could not read becomes a
// warning in Discovery.Warnings and a documented fallback, never a
// guess presented as a reading: unknown telemetry is -1.
//
// Package inteltest writes fixture machines' sysfs trees (an 8 × Max 1550
// node with Xe Link, the same under xe, a 4 × Flex 170 node); the tests
// run the gresdriver conformance suite on each.
package intel
