// Package sysfs reads Linux sysfs attribute files for the gres node
// drivers that read sysfs (gres/amd, gres/intel, and gres/nvml for what
// NVML does not tell). The kernel's sysfs rules put one value in a file,
// as text ending in a newline; each reader here takes a file path (the
// caller joins it below its root, so tests read a tree in a temporary
// directory), reads at most 64 KiB of it, and parses one kind of value:
// a trimmed line, a decimal or hexadecimal number, a PCI id, a device
// number "major:minor", a CPU list, a NUMA node or socket id. It also
// lists numbered entries of a directory (card0, renderD128, KFD nodes),
// reads uevent files and symbolic link targets.
//
// Values in an unexpected format are errors wrapping ErrMalformed that
// name the file; files that cannot be read are the os errors.
package sysfs
