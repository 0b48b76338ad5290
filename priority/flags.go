package priority

import (
	"fmt"
	"strings"
)

// Flags is the set of PriorityFlags (slurm.conf) that change priority
// arithmetic. The zero value is Slurm's default: Fair Tree fair-share, all
// factors normalised, age accruing only while a job is eligible.
//
// Unlike Slurm, whose internal FAIR_TREE bit is set by default and cleared by
// NO_FAIR_TREE, Sluice stores NO_FAIR_TREE, so the zero value is the default.
type Flags uint32

// The individual flags.
const (
	// AccrueAlways: age is measured from the submit time, ignoring holds,
	// dependencies, begin times and accrue limits (Job.AccrueStart unused).
	AccrueAlways Flags = 1 << iota
	// MaxTRES makes billing the maximum of the node TRES instead of the sum.
	// It is a billing rule, applied by the scheduler to a job's billing
	// (scheduler.Config.BillingMode, gres.BillingMaxTRES); the priority
	// engine accepts and ignores it.
	MaxTRES
	// SmallRelativeToTime divides the job size by its time limit in minutes.
	SmallRelativeToTime
	// DepthOblivious selects the depth-oblivious variant of classic
	// fair-share; it implies NoFairTree.
	DepthOblivious
	// CalculateRunning asks the caller to recompute priorities of running
	// and suspended jobs too, not only of pending jobs. The engine computes
	// whatever jobs it is given; see Config.Recalculate.
	CalculateRunning
	// NoFairTree selects classic fair-share instead of Fair Tree.
	NoFairTree
	// IncrOnly: a job's priority never decreases (Job.PrevPriority is kept
	// when the new value is not larger).
	IncrOnly
	// NoNormalAssoc uses the raw association priority as the factor.
	NoNormalAssoc
	// NoNormalPart uses the raw partition PriorityJobFactor as the factor.
	NoNormalPart
	// NoNormalQOS uses the raw QOS priority as the factor.
	NoNormalQOS
	// NoNormalTRES uses raw TRES counts as the TRES factors.
	NoNormalTRES
	// MaxTRESGRES is the billing rule max(cpu, mem, node) + Σ GRES; like
	// MaxTRES it is applied by the scheduler and ignored here.
	MaxTRESGRES

	// NoNormalAll sets every NO_NORMAL_* flag.
	NoNormalAll = NoNormalAssoc | NoNormalPart | NoNormalQOS | NoNormalTRES

	allFlags = AccrueAlways | MaxTRES | SmallRelativeToTime | DepthOblivious |
		CalculateRunning | NoFairTree | IncrOnly | NoNormalAll | MaxTRESGRES
)

// flagNames lists the slurm.conf spelling of each flag in String order.
var flagNames = []struct {
	f    Flags
	name string
}{
	{AccrueAlways, "ACCRUE_ALWAYS"},
	{MaxTRES, "MAX_TRES"},
	{SmallRelativeToTime, "SMALL_RELATIVE_TO_TIME"},
	{DepthOblivious, "DEPTH_OBLIVIOUS"},
	{CalculateRunning, "CALCULATE_RUNNING"},
	{NoFairTree, "NO_FAIR_TREE"},
	{IncrOnly, "INCR_ONLY"},
	{NoNormalAssoc, "NO_NORMAL_ASSOC"},
	{NoNormalPart, "NO_NORMAL_PART"},
	{NoNormalQOS, "NO_NORMAL_QOS"},
	{NoNormalTRES, "NO_NORMAL_TRES"},
	{MaxTRESGRES, "MAX_TRES_GRES"},
}

// ParseFlags parses a PriorityFlags value as written in slurm.conf: a
// comma-separated, case-insensitive list such as
// "ACCRUE_ALWAYS,NO_NORMAL_ALL". FAIR_TREE (the default) is accepted and sets
// nothing; DEPTH_OBLIVIOUS also sets NO_FAIR_TREE, as in Slurm. An empty
// string gives the zero value. Unknown or empty items are an error wrapping
// ErrSyntax.
func ParseFlags(s string) (Flags, error) {
	var f Flags
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	for item := range strings.SplitSeq(s, ",") {
		name := strings.ToUpper(strings.TrimSpace(item))
		switch name {
		case "":
			return 0, fmt.Errorf("%w: PriorityFlags %q: empty item", ErrSyntax, s)
		case "FAIR_TREE":
			continue
		case "NO_NORMAL_ALL":
			f |= NoNormalAll
			continue
		}
		found := false
		for _, fn := range flagNames {
			if fn.name == name {
				f |= fn.f
				found = true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("%w: PriorityFlags %q: unknown flag %q", ErrSyntax, s, strings.TrimSpace(item))
		}
	}
	if f&DepthOblivious != 0 {
		f |= NoFairTree
	}
	return f, nil
}

// String returns the flags in slurm.conf spelling, comma-separated, in a
// fixed order ("" for none). ParseFlags(f.String()) == f for every valid f
// that has NoFairTree set whenever DepthOblivious is.
func (f Flags) String() string {
	var b strings.Builder
	for _, fn := range flagNames {
		if f&fn.f != 0 {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(fn.name)
		}
	}
	if rest := f &^ allFlags; rest != 0 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "0x%x", uint32(rest))
	}
	return b.String()
}

// Algorithm is a fair-share algorithm.
type Algorithm uint8

// The fair-share algorithms.
const (
	// FairTree is Slurm's default since 19.05: users ranked by a
	// depth-first walk of the tree sorted by Level FS.
	FairTree Algorithm = iota
	// Classic is 2^(-UE/S/d) with effective usage propagated down the tree
	// (PriorityFlags=NO_FAIR_TREE).
	Classic
	// ClassicDepthOblivious is classic with the depth-oblivious effective
	// usage (PriorityFlags=DEPTH_OBLIVIOUS).
	ClassicDepthOblivious
)

// String returns "fair_tree", "classic" or "depth_oblivious".
func (a Algorithm) String() string {
	switch a {
	case FairTree:
		return "fair_tree"
	case Classic:
		return "classic"
	case ClassicDepthOblivious:
		return "depth_oblivious"
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// FairShareAlgorithm returns the algorithm the flags select: depth-oblivious
// when DepthOblivious is set, classic when NoFairTree is set, Fair Tree
// otherwise.
func (f Flags) FairShareAlgorithm() Algorithm {
	switch {
	case f&DepthOblivious != 0:
		return ClassicDepthOblivious
	case f&NoFairTree != 0:
		return Classic
	}
	return FairTree
}
