package scheduler

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/policy"
)

// A resources blocker without a ResourceNeed (where, reboot and task
// blockers) prints its Detail, not "<nil>".
func TestBlockerResourcesWithoutNeedPrintsDetail(t *testing.T) {
	b := Blocker{Kind: BlockerResources, Reason: policy.ReasonResources, Detail: "node(s) g0 rebooting for it"}
	got := b.String()
	if strings.Contains(got, "<nil>") || !strings.Contains(got, "node(s) g0 rebooting for it") {
		t.Fatalf("Blocker.String() = %q, want the detail", got)
	}
}
