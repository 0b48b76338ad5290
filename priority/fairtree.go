package priority

import "slices"

// Fair Tree, as Slurm implements it (src/plugins/priority/multifactor/
// fair_tree.c, read for behaviour only):
//
//   - Every association gets, relative to its fair-share siblings,
//     S = shares / Σ sibling shares (NormShares), U = usage / parent usage
//     (EffectvUsage; 0 when the parent has none) and Level FS = S / U, with
//     S == 0 giving 0 (checked first) and U == 0 giving +Inf. A user with
//     FairShare=parent gets +Inf; an account with FairShare=parent gets
//     NO_VAL (its children were handed to the nearest ancestor that is not
//     FairShare=parent, so it has none left).
//   - S is a float64 quotient; U and Level FS are x87 long doubles, which
//     xfloat reproduces, because ties are found by exact comparison.
//   - Siblings are sorted by Level FS descending, users before accounts on
//     equal values, then (Sluice's deterministic choice where Slurm's qsort
//     leaves it open) input order.
//   - A depth-first walk assigns ranks: rank = rnt = number of users; an
//     association is tied when it is the first child of a tied account or
//     its Level FS equals the previous sibling's (the walk starts with
//     NO_VAL as "previous"). A user that is not tied takes rank = rnt;
//     every user gets factor = rank / users and decrements rnt. An account
//     passes its tie on to its first child.
//   - Slurm documents that tied sibling accounts have their children merged
//     before descending. Its code never merges (the tie counter stops at
//     the first account), so tied accounts are walked one after the other,
//     each starting tied. Sluice follows the code.

// levelFS computes x's EffectvUsage and Level FS.
func (t *Tree) levelFS(x int32) {
	nd := &t.nodes[x]
	var u xfloat
	if pa := t.nodes[nd.fsParent].agg; pa != 0 {
		u = xfQuo(xfFromFloat64(nd.agg), xfFromFloat64(pa))
	}
	nd.uEff = u.float64()
	switch {
	case nd.useParent && nd.user:
		nd.lf = xfInf
	case nd.useParent:
		nd.lf = xfNoVal
	case nd.sNorm == 0:
		nd.lf = xfZero
	default:
		nd.lf = xfQuo(xfFromFloat64(nd.sNorm), u)
	}
}

// sortGroup recomputes the Level FS of p's fair-share children and sorts
// them.
func (t *Tree) sortGroup(p int32) {
	nd := &t.nodes[p]
	g := t.group[nd.gStart:nd.gEnd]
	t.sortedGroups++
	for _, c := range g {
		t.levelFS(c)
	}
	if len(g) < 2 {
		return
	}
	nodes := t.nodes
	slices.SortFunc(g, func(a, b int32) int {
		na, nb := &nodes[a], &nodes[b]
		if c := xfCmp(nb.lf, na.lf); c != 0 {
			return c
		}
		if na.user != nb.user {
			if na.user {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
}

// rankFromRoot walks the tree and assigns ranks, descending only into
// accounts whose subtree changed or whose entering state differs from the
// cached one.
func (t *Tree) rankFromRoot() {
	r := &t.nodes[t.root]
	if !r.dirtySub {
		return
	}
	rank, rnt := t.users, t.users
	t.rankGroup(t.root, &rank, &rnt, false)
	r.dirtySub = false
}

func (t *Tree) rankGroup(p int32, rank, rnt *uint32, accountTied bool) {
	nodes := t.nodes
	users := float64(t.users)
	prev := xfNoVal
	t.rankedGroups++
	pn := &nodes[p]
	for i, c := range t.group[pn.gStart:pn.gEnd] {
		nc := &nodes[c]
		tied := i == 0 && accountTied
		if !tied {
			tied = xfCmp(prev, nc.lf) == 0
		}
		if nc.user {
			if !tied {
				*rank = *rnt
			}
			nc.factor = float64(*rank) / users
			*rnt--
		} else if !nc.dirtySub && nc.inRank == *rank && nc.inRnt == *rnt && nc.inTied == tied {
			// Same subtree, same entering state: same result.
			*rnt -= nc.usersIn
			*rank = nc.outRank
		} else {
			nc.inRank, nc.inRnt, nc.inTied = *rank, *rnt, tied
			t.rankGroup(c, rank, rnt, tied)
			nc.outRank = *rank
			nc.dirtySub = false
		}
		prev = nc.lf
	}
}
