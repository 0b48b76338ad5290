package scheduler

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/policy"
)

// The fuzzer's administration events: partitions, QOS and associations
// added, changed and removed, mostly valid, some hostile (unknown and
// duplicate names, bad states and limits, preemption cycles, removals of
// what is in use).

// fzPartNames are the partition names the generator uses: the cluster's
// (p0…p2) and new ones.
var fzPartNames = []string{"p0", "p1", "p2", "p3", "p4"}

// admin draws an administration event at op.At.
func (g *fzGen) admin(op fzOp) fzOp {
	s := g.src
	switch k := s.intn(16); {
	case k < 2:
		op.Kind, op.Part = fkAddPart, g.partition()
	case k < 6:
		op.Kind, op.Part = fkUpdatePart, g.partition()
	case k < 7:
		op.Kind = fkRemovePart
		op.Resv.Name = fzPick(s, append(fzPartNames, "nope", "")...)
	case k < 8:
		op.Kind, op.QOS = fkAddQOS, g.qos()
	case k < 11:
		op.Kind, op.QOS = fkUpdateQOS, g.qos()
	case k < 12:
		op.Kind = fkRemoveQOS
		op.Resv.Name = fzPick(s, append(fzQOS, "extra", "nope")...)
	case k < 15:
		op.Kind, op.Assoc = fkPutAssoc, g.assoc()
	default:
		op.Kind, op.Assoc = fkRemoveAssoc, g.assoc()
	}
	return op
}

// partition draws a partition configuration.
func (g *fzGen) partition() PartitionConfig {
	s := g.src
	p := PartitionConfig{Name: fzPick(s, fzPartNames...)}
	if s.chance(15) {
		p.Name = fzPick(s, "", "p 1", "p,2")
	}
	if !s.chance(3) {
		for k := range g.c.Nodes {
			if s.chance(2) {
				p.Nodes = append(p.Nodes, fzNodeName(k))
			}
		}
		if s.chance(20) {
			p.Nodes = append(p.Nodes, "nope")
		}
	}
	p.State = PartitionState(s.intn(9) / 2) // mostly UP; one in nine out of range
	if s.chance(3) {
		p.MaxTime = time.Duration(1+s.intn(600)) * time.Minute
		if s.chance(4) {
			p.DefaultTime = p.MaxTime / 2
		}
	}
	if s.chance(20) {
		p.MaxTime = fzPick(s, -time.Second, time.Nanosecond, MaxTimeLimit+time.Second)
	}
	if s.chance(4) {
		p.MinNodes, p.MaxNodes = fzPick(s, 0, 1, 2), fzPick(s, 0, 1, 3, -1)
	}
	p.PriorityTier = fzPick(s, 0, 1, 2, 5, 70000)
	p.PriorityJobFactor = fzPick(s, 0, 1, 3, 10)
	p.Default = s.chance(6)
	if s.chance(4) {
		p.QOS = fzPick(s, append(fzQOS, "nope")...)
	}
	if s.chance(8) {
		p.AllowQOS = []string{fzPick(s, fzQOS...)}
	}
	if s.chance(10) {
		p.DenyAccounts = []string{"acct2"}
	}
	if s.chance(8) {
		p.MaxCPUsPerNode = 1 + s.intn(8)
	}
	return p
}

// qos draws a QOS definition.
func (g *fzGen) qos() policy.QOS {
	s := g.src
	q := policy.QOS{Name: fzPick(s, append(fzQOS, "extra")...), Priority: uint32(s.intn(200))}
	if s.chance(15) {
		q.Name = fzPick(s, "", "a b", "x,y")
	}
	n := func() *int { return fzCount(s, 0, 1, 2, 4, -1) }
	if s.chance(3) {
		q.Limits.MaxJobsPerUser = n()
	}
	if s.chance(4) {
		q.Limits.GrpJobs = n()
	}
	if s.chance(5) {
		q.Limits.MaxSubmitJobsPerUser = n()
	}
	if s.chance(4) {
		q.Limits.MaxWall = fzPick(s, time.Hour, 10*time.Minute, -time.Second)
	}
	if s.chance(3) {
		q.Preempt = []string{fzPick(s, append(fzQOS, "nope")...)}
	}
	if s.chance(4) {
		q.GraceTime = time.Duration(s.intn(120)) * time.Second
	}
	if s.chance(6) {
		q.Flags |= policy.QOSDenyOnLimit
	}
	if s.chance(8) {
		q.Flags |= policy.QOSOverPartQOS
	}
	return q
}

// assoc draws an association.
func (g *fzGen) assoc() policy.Assoc {
	s := g.src
	a := policy.Assoc{Account: g.name("acct1", "acct2", "root")}
	if s.chance(2) {
		a.User = g.name("ann", "bob", "cy")
	} else if s.chance(3) {
		a.Parent = fzPick(s, "", "acct1", "acct2", "nope")
	}
	if a.User != "" && s.chance(8) {
		a.Partition = fzPick(s, fzPartNames...)
	}
	n := func() *int { return fzCount(s, 0, 1, 3, -2) }
	if s.chance(3) {
		a.Limits.MaxJobs = n()
	}
	if s.chance(4) {
		a.Limits.GrpJobs = n()
	}
	if s.chance(6) {
		a.Limits.MaxSubmitJobs = n()
	}
	if s.chance(5) {
		a.QOS = []string{fzPick(s, fzQOS...), fzPick(s, fzQOS...)}
	}
	if s.chance(5) {
		a.DefaultQOS = fzPick(s, append(fzQOS, "nope")...)
	}
	return a
}

// fzCount draws a job-count limit among vals.
func fzCount(s *fzSource, vals ...int) *int {
	v := fzPick(s, vals...)
	return &v
}

// fzAdminCall applies an administration event.
func fzAdminCall(s *Scheduler, now time.Time, op fzOp) error {
	switch op.Kind {
	case fkAddPart:
		return s.AddPartition(now, op.Part)
	case fkUpdatePart:
		return s.UpdatePartition(now, op.Part)
	case fkRemovePart:
		return s.RemovePartition(now, op.Resv.Name)
	case fkAddQOS:
		return s.AddQOS(now, op.QOS)
	case fkUpdateQOS:
		return s.UpdateQOS(now, op.QOS)
	case fkRemoveQOS:
		return s.RemoveQOS(now, op.Resv.Name)
	case fkPutAssoc:
		return s.PutAssoc(now, op.Assoc)
	case fkRemoveAssoc:
		return s.RemoveAssoc(now, op.Assoc.Account, op.Assoc.User, op.Assoc.Partition)
	}
	return fmt.Errorf("fuzz: unknown event kind %d", op.Kind)
}

// adminGoCode writes an administration event as its Go call.
func (op fzOp) adminGoCode(at string) string {
	lit := func(v any) string { return strings.ReplaceAll(fmt.Sprintf("%#v", v), "scheduler.", "") }
	switch op.Kind {
	case fkAddPart, fkUpdatePart:
		return fmt.Sprintf("s.%s(%s, %s)", op.Kind, at, lit(op.Part))
	case fkAddQOS, fkUpdateQOS:
		return fmt.Sprintf("s.%s(%s, %s)", op.Kind, at, lit(op.QOS))
	case fkRemovePart, fkRemoveQOS:
		return fmt.Sprintf("s.%s(%s, %q)", op.Kind, at, op.Resv.Name)
	case fkPutAssoc:
		return fmt.Sprintf("s.PutAssoc(%s, %s)", at, lit(op.Assoc))
	case fkRemoveAssoc:
		return fmt.Sprintf("s.RemoveAssoc(%s, %q, %q, %q)", at, op.Assoc.Account, op.Assoc.User, op.Assoc.Partition)
	}
	return "?"
}
