// Command init is the /init of the VM that .ci/cgroup-vm boots to run
// package gres/cgroup's real-kernel tests on a pure cgroup v2 hierarchy.
//
// As PID 1 it mounts /proc, /sys, /dev, /tmp and cgroup2 at
// /sys/fs/cgroup, runs /cgroup.test (the package's static test binary)
// with the arguments in /test.args, prints "SLUICE-VM-RESULT exit=N" on
// the console and powers the VM off.
//
// Run on the host as "init -pack OUT FILE…" it writes OUT, a newc cpio
// archive (an initramfs) holding this program as /init and each FILE
// under its base name, so the harness needs no cpio tool.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) >= 3 && os.Args[1] == "-pack" {
		if err := pack(os.Args[2], os.Args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, "pack:", err)
			os.Exit(1)
		}
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "usage: init -pack OUT FILE... (runs as /init only as PID 1)")
		os.Exit(2)
	}
	code := run()
	fmt.Printf("SLUICE-VM-RESULT exit=%d\n", code)
	unix.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	select {} // PID 1 must not exit
}

// run prepares the mounts and runs the tests; it returns their exit code.
func run() int {
	for _, m := range []struct{ src, dir, fstype string }{
		{"proc", "/proc", "proc"}, {"sysfs", "/sys", "sysfs"}, {"devtmpfs", "/dev", "devtmpfs"},
		{"tmpfs", "/tmp", "tmpfs"}, {"cgroup2", "/sys/fs/cgroup", "cgroup2"},
	} {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			fmt.Println("SLUICE-VM mkdir:", err)
			return 125
		}
		if err := unix.Mount(m.src, m.dir, m.fstype, 0, ""); err != nil {
			fmt.Printf("SLUICE-VM mount %s on %s: %v\n", m.fstype, m.dir, err)
			return 125
		}
	}
	b, _ := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	fmt.Printf("SLUICE-VM cgroup2 controllers: %s\n", strings.TrimSpace(string(b)))
	args, err := os.ReadFile("/test.args")
	if err != nil {
		fmt.Println("SLUICE-VM:", err)
		return 125
	}
	var argv []string
	sc := bufio.NewScanner(bytes.NewReader(args))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			argv = append(argv, l)
		}
	}
	cmd := exec.Command("/cgroup.test", argv...)
	cmd.Dir = "/tmp"
	cmd.Env = []string{"PATH=/", "HOME=/tmp", "TMPDIR=/tmp", "SLUICE_CGROUP_REAL=require"}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Println("SLUICE-VM:", err)
		return 125
	}
	return 0
}

// pack writes a newc cpio archive: this executable as /init, then files.
func pack(out string, files []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	ino := 1
	entry := func(name string, mode uint32, data []byte) {
		fmt.Fprintf(w, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
			ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
		ino++
		w.WriteString(name)
		w.WriteByte(0)
		pad(w, 110+len(name)+1)
		w.Write(data)
		pad(w, len(data))
	}
	add := func(name, path string) error {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		entry(name, unix.S_IFREG|0o755, data)
		return nil
	}
	if err := add("init", self); err != nil {
		return err
	}
	for _, p := range files {
		if err := add(filepath.Base(p), p); err != nil {
			return err
		}
	}
	entry("TRAILER!!!", 0, nil)
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// pad writes the zeros that align n bytes to 4.
func pad(w *bufio.Writer, n int) {
	for ; n%4 != 0; n++ {
		w.WriteByte(0)
	}
}
