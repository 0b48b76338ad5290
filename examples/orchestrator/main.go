//go:build linux

// Command orchestrator is the control plane a builder would copy: a
// Sluice scheduler driven by the wall clock in a periodic cycle, every
// event journalled before it is applied, a buntdb accounting ledger, and
// a node agent that runs each job's command as a child process on this
// machine (confined by cgroups where the host allows). It survives being
// killed at any point: restarted on the same state directory it recovers
// the scheduler, finds the jobs still running, and neither loses a job,
// runs one twice, nor charges one twice. See README.md.
//
//	orchestrator run -state /tmp/orch -period 1s -cpus 4
//	orchestrator submit -state /tmp/orch -user ann -account lab -cpus 1 -time 10m -- sh -c 'sleep 5; date'
//	orchestrator cancel -state /tmp/orch <name>
//	orchestrator status -state /tmp/orch
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

func main() {
	if err := command(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "orchestrator:", err)
		os.Exit(1)
	}
}

// command runs one subcommand.
func command(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: orchestrator run|submit|cancel|status [flags] (shim is internal)")
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stderr)
	case "submit":
		return cmdSubmit(args[1:], stdout, stderr)
	case "cancel":
		return cmdCancel(args[1:], stderr)
	case "status":
		return cmdStatus(args[1:], stdout, stderr)
	case "shim":
		return runShim(args[1:])
	}
	return fmt.Errorf("unknown subcommand %q (want run, submit, cancel or status)", args[0])
}

func cmdRun(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opt Options
	fs.StringVar(&opt.StateDir, "state", "", "state directory (required)")
	fs.DurationVar(&opt.Period, "period", time.Second, "time between scheduling cycles")
	fs.StringVar(&opt.Cluster, "cluster", "local", "cluster name in the ledger (fixed at the state directory's creation)")
	fs.IntVar(&opt.CPUs, "cpus", runtime.NumCPU(), "CPUs of the node (fixed at the state directory's creation)")
	fs.Int64Var(&opt.MemoryMiB, "mem", 4096, "memory of the node in MiB (fixed at the state directory's creation)")
	fs.StringVar(&opt.CgroupRoot, "cgroup-root", "", "cgroup v2 directory to confine jobs under, e.g. /sys/fs/cgroup/sluice (empty: unconfined)")
	fs.Uint64Var(&opt.SnapshotEvery, "snapshot-every", 10000, "compact the journal with a snapshot once it holds this many events (0: never)")
	fs.BoolVar(&opt.ExitWhenIdle, "exit-when-idle", false, "exit once no job is pending or running and the inbox is empty")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if opt.StateDir == "" {
		return errors.New("run: -state is required")
	}
	opt.Log = log.New(stderr, "orchestrator: ", log.LstdFlags|log.Lmicroseconds)
	o, err := Open(opt)
	if err != nil {
		return err
	}
	defer o.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return o.Run(ctx)
}

func cmdSubmit(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	state := fs.String("state", "", "state directory (required)")
	var sub Submission
	fs.StringVar(&sub.Name, "name", "", "submission key, unique (default: generated)")
	fs.StringVar(&sub.User, "user", os.Getenv("USER"), "user")
	fs.StringVar(&sub.Account, "account", "default", "account")
	fs.IntVar(&sub.CPUs, "cpus", 1, "CPUs")
	fs.Int64Var(&sub.MemoryMiB, "mem", 0, "memory in MiB (0: none requested)")
	fs.StringVar(&sub.TimeLimit, "time", "", "time limit, a Go duration (default: the partition's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *state == "" {
		return errors.New("submit: -state is required")
	}
	sub.Command = fs.Args()
	if sub.Name == "" {
		sub.Name = newKey(time.Now())
	}
	if err := (records{*state}).put(sub); err != nil {
		return err
	}
	fmt.Fprintln(stdout, sub.Name)
	return nil
}

func cmdCancel(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	state := fs.String("state", "", "state directory (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *state == "" || fs.NArg() == 0 {
		return errors.New("cancel: usage: cancel -state DIR <name>…")
	}
	for _, name := range fs.Args() {
		if err := (records{*state}).requestCancel(name); err != nil {
			return err
		}
	}
	return nil
}

func cmdStatus(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	state := fs.String("state", "", "state directory (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(*state, "status.json"))
	if err != nil {
		return err
	}
	_, err = stdout.Write(b)
	return err
}
