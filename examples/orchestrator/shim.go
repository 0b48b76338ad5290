//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// shimLockFD is the descriptor of the run's lock file in the shim: the
// LocalAgent passes it as the first of cmd.ExtraFiles, already flocked.
const shimLockFD = 3

// runShim is the "shim" subcommand: shim <run dir> -- <command…>. It runs
// the command in a process group of its own, waits for it, and writes its
// exit code to <run dir>/exit (atomically), holding the run's lock (fd 3)
// until then. SIGTERM makes it SIGKILL the command's group; SIGHUP and
// SIGINT are ignored (the shim outlives the control loop and any terminal).
func runShim(args []string) error {
	if len(args) < 3 || args[1] != "--" {
		return errors.New("shim: usage: shim <run dir> -- <command> [args…]")
	}
	dir, argv := args[0], args[2:]
	// The lock is the shim's alone: the job must not hold it (a daemon
	// it leaves behind would keep the run "running" forever).
	unix.CloseOnExec(shimLockFD)
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	// For Kill; written before the command starts, so that a run whose
	// command runs has a pid file.
	if err := writeFileAtomic(filepath.Join(dir, "pid"), []byte(strconv.Itoa(os.Getpid())+"\n")); err != nil {
		return err
	}

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	code := 0
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "shim: %v\n", err)
		code = 127 // as a shell reports a command it cannot run
	} else {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var werr error
	wait:
		for {
			select {
			case werr = <-done:
				break wait
			case <-term:
				// The command is not reaped yet (done has not fired), so
				// its pid — its group's id — is still its own.
				_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
			}
		}
		code = exitCode(cmd.ProcessState, werr)
	}
	return writeFileAtomic(filepath.Join(dir, "exit"), []byte(strconv.Itoa(code)+"\n"))
}

// exitCode is a finished command's exit code as a shell gives it: its
// status, or 128+n when signal n killed it.
func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		return 127
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if c := ps.ExitCode(); c >= 0 {
		return c
	}
	if err != nil {
		return 1
	}
	return 0
}

// writeFileAtomic writes b to path through a temporary file, fsynced and
// renamed, and fsyncs the directory: after a crash path holds b or
// nothing (or what it held before).
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// syncDir fsyncs directory dir (making the entries created or renamed in
// it durable).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// flockNB takes an exclusive flock on f without waiting.
func flockNB(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}
