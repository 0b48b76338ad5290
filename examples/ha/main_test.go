package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestRun runs the example: the leader is killed after acting on a cycle
// and before acknowledging it; a new leader hands that cycle out again
// under the same index, the launcher skips it, and at the end every
// committed cycle was acted on once, every job the cycles started was
// launched once, and the two live replicas have the same state.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	rep, err := run(&out, options{jobs: 20, seed: 2})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if rep.newLeader == "" || rep.newLeader == rep.oldLeader {
		t.Errorf("leader %q killed, new leader %q", rep.oldLeader, rep.newLeader)
	}
	by := rep.deliveredBy[rep.heldIndex]
	if len(by) != 2 || by[0] != rep.oldLeader || by[1] != rep.newLeader {
		t.Errorf("the unacknowledged cycle (index %d) was handed out by %v, want %s then %s", rep.heldIndex, by, rep.oldLeader, rep.newLeader)
	}
	if uint64(len(rep.deliveredBy)) != rep.cycles {
		t.Errorf("%d cycles committed, %d distinct indices delivered", rep.cycles, len(rep.deliveredBy))
	}
	for i, ids := range rep.deliveredBy {
		if slices.Contains(ids[1:], rep.oldLeader) || (len(ids) > 1 && !slices.Contains(ids, rep.newLeader)) {
			t.Errorf("index %d handed out by %v", i, ids)
		}
	}
	if rep.started != rep.startsSeen || rep.started == 0 {
		t.Errorf("the cycles started %d jobs, the launcher %d", rep.startsSeen, rep.started)
	}
	if !rep.digestsOK {
		t.Error("the live replicas' digests differ")
	}
	if strings.Contains(out.String(), "DUPLICATE") {
		t.Errorf("a job was launched twice:\n%s", out.String())
	}
}
