package priority

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// ShareRow is one association as sshare shows it. Values that sshare
// leaves blank are NaN: FairShare of accounts, LevelFS of FairShare=parent
// associations and of everything under classic, the root's NormUsage.
type ShareRow struct {
	// Index is the association's index in the tree.
	Index int
	// Account, User and Partition name the association (User empty for
	// accounts, Partition empty unless it is a partition association).
	Account, User, Partition string
	// Depth is the association's depth below the root (users count one
	// below their account); sshare indents by it.
	Depth int
	// Root marks the root association (sshare leaves RawShares blank).
	Root bool
	// RawShares is the raw shares.
	RawShares int64
	// SharesParent marks Fairshare=parent (sshare prints "parent").
	SharesParent bool
	// NormShares: Fair Tree, shares / Σ sibling shares; classic, the
	// product down the path.
	NormShares float64
	// RawUsage is the subtree's decayed usage (sshare prints it truncated).
	// In the dominant-share mode it is the dominant share in seconds.
	RawUsage float64
	// NormUsage is RawUsage / the root's RawUsage, capped at 1.
	NormUsage float64
	// EffectvUsage: Fair Tree, RawUsage / the fair-share parent's RawUsage;
	// classic, the propagated effective usage.
	EffectvUsage float64
	// FairShare is the user's fair-share factor.
	FairShare float64
	// LevelFS is Fair Tree's NormShares / EffectvUsage (+Inf without usage).
	LevelFS float64
}

// Row returns the sshare view of association i (false when out of range).
func (t *Tree) Row(i int) (ShareRow, bool) {
	if i < 0 || i >= len(t.nodes) {
		return ShareRow{}, false
	}
	nd := &t.nodes[i]
	nan := math.NaN()
	r := ShareRow{
		Index:        i,
		Account:      t.acct[i],
		User:         t.user[i],
		Partition:    t.part[i],
		Depth:        int(nd.depth),
		Root:         int32(i) == t.root,
		RawShares:    nd.shares,
		SharesParent: nd.useParent,
		NormShares:   nd.sNorm,
		RawUsage:     nd.agg,
		NormUsage:    normUsage(nd.agg, t.nodes[t.root].agg),
		EffectvUsage: nd.uEff,
		FairShare:    nan,
		LevelFS:      nan,
	}
	if r.Root {
		r.RawShares = t.rootShares
		r.NormUsage = nan
		r.EffectvUsage = 1
	}
	if nd.user {
		r.FairShare = nd.factor
	}
	if t.algo == FairTree && !nd.useParent && !r.Root {
		r.LevelFS = nd.lf.float64()
	}
	return r, true
}

// Shares returns the sshare view of every association in sshare's order:
// depth first from the root, each account's users (by name, then
// partition) before its sub-accounts (by name).
func (t *Tree) Shares() []ShareRow {
	rows := make([]ShareRow, 0, len(t.nodes))
	var walk func(x int32)
	var accts []int32
	walk = func(x int32) {
		r, _ := t.Row(int(x))
		rows = append(rows, r)
		nd := &t.nodes[x]
		for _, u := range t.uchild[nd.uStart:nd.uEnd] {
			r, _ := t.Row(int(u))
			rows = append(rows, r)
		}
		start := len(accts)
		for _, c := range t.dchild[nd.dStart:nd.dEnd] {
			if !t.nodes[c].user {
				accts = append(accts, c)
			}
		}
		mine := accts[start:]
		slices.SortFunc(mine, func(a, b int32) int { return strings.Compare(t.acct[a], t.acct[b]) })
		for k := range mine {
			walk(accts[start+k])
		}
		accts = accts[:start]
	}
	walk(t.root)
	return rows
}

// ShareFormat selects FormatShares' layout.
type ShareFormat struct {
	// Long adds NormUsage and, when LevelFS is set, Level FS (sshare -l).
	Long bool
	// LevelFS adds the Level FS column in long format (Fair Tree).
	LevelFS bool
	// Parsable prints "|"-separated fields with a trailing "|" (sshare -p)
	// instead of aligned columns.
	Parsable bool
	// NoHeader omits the header (sshare -n).
	NoHeader bool
	// Partitions adds the Partition column (sshare -m).
	Partitions bool
}

// Format formats all rows of t like sshare (Level FS shown under Fair
// Tree in long format).
func (t *Tree) Format(f ShareFormat) string {
	f.LevelFS = t.algo == FairTree
	return FormatShares(t.Shares(), f)
}

type shareCol struct {
	name  string
	width int // negative: left-aligned
	value func(r *ShareRow) string
}

// FormatShares formats rows like sshare's default or long output:
// Account (indented by depth; a user row shows its account), User,
// RawShares, NormShares, RawUsage, [NormUsage], EffectvUsage, FairShare,
// [LevelFS]. Floating-point values print with six decimals, +Inf as "inf",
// NaN as blank; RawUsage prints truncated to an integer.
func FormatShares(rows []ShareRow, f ShareFormat) string {
	cols := []shareCol{
		{"Account", -20, func(r *ShareRow) string {
			return strings.Repeat(" ", r.Depth) + r.Account
		}},
		{"User", 10, func(r *ShareRow) string { return r.User }},
	}
	if f.Partitions {
		cols = append(cols, shareCol{"Partition", 12, func(r *ShareRow) string { return r.Partition }})
	}
	cols = append(cols,
		shareCol{"RawShares", 10, func(r *ShareRow) string {
			switch {
			case r.Root:
				return ""
			case r.SharesParent:
				return "parent"
			}
			return strconv.FormatInt(r.RawShares, 10)
		}},
		shareCol{"NormShares", 11, func(r *ShareRow) string { return fmtShareFloat(r.NormShares) }},
		shareCol{"RawUsage", 11, func(r *ShareRow) string { return fmtRawUsage(r.RawUsage) }},
	)
	if f.Long {
		cols = append(cols, shareCol{"NormUsage", 11, func(r *ShareRow) string { return fmtShareFloat(r.NormUsage) }})
	}
	cols = append(cols,
		shareCol{"EffectvUsage", 13, func(r *ShareRow) string { return fmtShareFloat(r.EffectvUsage) }},
		shareCol{"FairShare", 10, func(r *ShareRow) string { return fmtShareFloat(r.FairShare) }},
	)
	if f.Long && f.LevelFS {
		cols = append(cols, shareCol{"LevelFS", 10, func(r *ShareRow) string { return fmtShareFloat(r.LevelFS) }})
	}
	var b, line strings.Builder
	cell := func(s string, w int) {
		if f.Parsable {
			line.WriteString(s)
			line.WriteByte('|')
			return
		}
		line.WriteString(fitCell(s, w))
		line.WriteByte(' ')
	}
	flush := func() {
		s := line.String()
		if !f.Parsable {
			s = strings.TrimRight(s, " ")
		}
		b.WriteString(s)
		b.WriteByte('\n')
		line.Reset()
	}
	if !f.NoHeader {
		for _, c := range cols {
			cell(c.name, c.width)
		}
		flush()
		if !f.Parsable {
			for _, c := range cols {
				line.WriteString(strings.Repeat("-", abs(c.width)))
				line.WriteByte(' ')
			}
			flush()
		}
	}
	for i := range rows {
		for _, c := range cols {
			cell(c.value(&rows[i]), c.width)
		}
		flush()
	}
	return b.String()
}

// fitCell pads s to |w| (right-aligned when w > 0) and cuts a longer
// string to |w| with a '+' at the end, as Slurm's print_fields do.
func fitCell(s string, w int) string {
	aw := abs(w)
	if len(s) > aw {
		return s[:aw-1] + "+"
	}
	pad := strings.Repeat(" ", aw-len(s))
	if w < 0 {
		return s + pad
	}
	return pad + s
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func fmtShareFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return ""
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return strconv.FormatFloat(v, 'f', 6, 64)
}

func fmtRawUsage(v float64) string {
	if math.IsNaN(v) || v < 0 {
		return ""
	}
	if v >= 1<<64 {
		return strconv.FormatUint(math.MaxUint64, 10)
	}
	return strconv.FormatUint(uint64(v), 10)
}
