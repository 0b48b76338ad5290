package topology

import (
	"math/bits"
	"slices"
)

// hier is the internal form shared by every topology: a forest of groups
// (switches, aggregated blocks, NVLink domains) whose leaves hold nodes.
// Placement runs on per-group candidate counts, so whole subtrees are
// accepted or pruned by comparing one number.
type hier struct {
	parent   []int32
	children [][]int32
	level    []int32 // 0 for leaves, 1 + highest child level otherwise
	size     []int32 // nodes in the subtree
	roots    []int32
	maxLevel int32

	// Leaves in depth-first order; group g's leaves are
	// leafOrder[leafLo[g]:leafHi[g]].
	leafOrder      []int32
	leafLo, leafHi []int32
	leafOfNode     []int32 // node → leaf group, -1 outside the hierarchy

	// Each leaf's nodes as (word index, bit mask) pairs over NodeSet words,
	// so counting a leaf's candidates costs one AND+popcount per word it
	// touches, not one test per node.
	maskOff  []int32 // group g's pairs: [maskOff[g], maskOff[g+1])
	maskWord []int32
	maskBits []uint64

	byLevel     []int32 // groups by ascending level: children before parents
	maxLeafSize int32
	leafSizes   []int32 // leaf sizes, descending
	deep        bool    // some group at level ≥ 2: closeness tie-breaks matter
}

func newHier(numNodes int, parent []int32, children [][]int32, leafNodes [][]int32, roots []int32) *hier {
	ng := len(parent)
	h := &hier{
		parent: parent, children: children, roots: roots,
		level: make([]int32, ng), size: make([]int32, ng),
		leafLo: make([]int32, ng), leafHi: make([]int32, ng),
		leafOfNode: filled(numNodes, -1),
		maskOff:    make([]int32, ng+1),
	}
	// Depth-first order from the roots: leaf ranges and a post-order for
	// levels and sizes.
	var post []int32
	var visit func(g int32)
	visit = func(g int32) {
		h.leafLo[g] = int32(len(h.leafOrder))
		if len(children[g]) == 0 {
			h.leafOrder = append(h.leafOrder, g)
		}
		for _, c := range children[g] {
			visit(c)
		}
		h.leafHi[g] = int32(len(h.leafOrder))
		post = append(post, g)
	}
	for _, r := range roots {
		visit(r)
	}
	for _, g := range post {
		if len(children[g]) == 0 {
			h.size[g] = int32(len(leafNodes[g]))
			continue
		}
		lv := int32(0)
		for _, c := range children[g] {
			lv = max(lv, h.level[c]+1)
			h.size[g] += h.size[c]
		}
		h.level[g] = lv
		h.maxLevel = max(h.maxLevel, lv)
	}
	h.deep = h.maxLevel >= 2
	for g := range ng {
		h.maskOff[g] = int32(len(h.maskWord))
		if len(children[g]) == 0 {
			nodes := slices.Clone(leafNodes[g])
			slices.Sort(nodes)
			for _, nd := range nodes {
				h.leafOfNode[nd] = int32(g)
				w := nd >> 6
				if k := len(h.maskWord); k > int(h.maskOff[g]) && h.maskWord[k-1] == w {
					h.maskBits[k-1] |= 1 << (uint(nd) & 63)
				} else {
					h.maskWord = append(h.maskWord, w)
					h.maskBits = append(h.maskBits, 1<<(uint(nd)&63))
				}
			}
			h.maxLeafSize = max(h.maxLeafSize, h.size[g])
			h.leafSizes = append(h.leafSizes, h.size[g])
		}
	}
	h.maskOff[ng] = int32(len(h.maskWord))
	h.byLevel = make([]int32, ng)
	for i := range h.byLevel {
		h.byLevel[i] = int32(i)
	}
	slices.SortStableFunc(h.byLevel, func(a, b int32) int { return int(h.level[a] - h.level[b]) })
	slices.SortFunc(h.leafSizes, func(a, b int32) int { return int(b - a) })
	return h
}

// leafCount returns |cand ∩ leaf g|.
func (h *hier) leafCount(cand NodeSet, g int32) int32 {
	c := 0
	for k := h.maskOff[g]; k < h.maskOff[g+1]; k++ {
		if w := int(h.maskWord[k]); w < len(cand.words) {
			c += bits.OnesCount64(cand.words[w] & h.maskBits[k])
		}
	}
	return int32(c)
}

// count fills counts (len = number of groups) with each group's candidate
// count; with seg > 1 a leaf counts only whole segments of seg nodes.
func (h *hier) count(cand NodeSet, seg int, counts []int32) { h.fill(&cand, seg, counts) }

// structural fills counts as if every node were a candidate.
func (h *hier) structural(seg int, counts []int32) { h.fill(nil, seg, counts) }

// fill is count, or structural when cand is nil.
func (h *hier) fill(cand *NodeSet, seg int, counts []int32) {
	for _, g := range h.byLevel {
		counts[g] = 0
		if len(h.children[g]) > 0 {
			continue
		}
		c := h.size[g]
		if cand != nil {
			c = h.leafCount(*cand, g)
		}
		if seg > 1 {
			c -= c % int32(seg)
		}
		counts[g] = c
	}
	h.sumUp(counts)
}

func (h *hier) sumUp(counts []int32) {
	for _, g := range h.byLevel {
		if p := h.parent[g]; p >= 0 {
			counts[p] += counts[g]
		}
	}
}

// lca returns the lowest common ancestor of groups a and b, or -1.
func (h *hier) lca(a, b int32) int32 {
	for a != b {
		if a < 0 || b < 0 {
			return -1
		}
		switch la, lb := h.level[a], h.level[b]; {
		case la < lb:
			a = h.parent[a]
		case lb < la:
			b = h.parent[b]
		default:
			a, b = h.parent[a], h.parent[b]
		}
	}
	return a
}

// spread returns the leaves a set touches and the level of their lowest
// common group (maxLevel+1 when they share none).
func (h *hier) spread(set NodeSet) (units int, level int) {
	lca := int32(-1)
	seen := make(map[int32]struct{})
	split := false
	for i := range set.All() {
		if i >= len(h.leafOfNode) {
			break
		}
		l := h.leafOfNode[i]
		if l < 0 {
			continue
		}
		if _, ok := seen[l]; ok {
			continue
		}
		seen[l] = struct{}{}
		units++
		switch {
		case split:
		case lca < 0:
			lca = l
		default:
			if lca = h.lca(lca, l); lca < 0 {
				split = true
			}
		}
	}
	if units == 0 {
		return 0, 0
	}
	if split {
		return units, int(h.maxLevel) + 1
	}
	return units, int(h.level[lca])
}

// minUnits returns the fewest leaves that n nodes could occupy with every
// node free.
func (h *hier) minUnits(n int) int {
	k, sum := 0, 0
	for _, s := range h.leafSizes {
		if sum >= n {
			break
		}
		sum += int(s)
		k++
	}
	return max(k, 1)
}

// minLevel returns the lowest level of a group holding at least n nodes,
// or maxLevel+1 when no group does.
func (h *hier) minLevel(n int) int {
	best := int(h.maxLevel) + 1
	for g, s := range h.size {
		if int(s) >= n && int(h.level[g]) < best {
			best = int(h.level[g])
		}
	}
	return best
}

// pick is one leaf of a placement and how many of its candidates to take.
type pick struct {
	leaf int32
	take int32
}

// placer holds the scratch state of one placement on a hierarchy.
type placer struct {
	h      *hier
	counts []int32
	hist   []int32 // per-count histogram, len maxLeafSize+1
	// Bucketed leaves of the chosen group: leaves with count c are
	// bucket[start[c]:start[c+1]], in depth-first order.
	start  []int32
	bucket []int32
	used   []bool
	picks  []pick
}

func newPlacer(h *hier) *placer {
	return &placer{
		h:      h,
		counts: make([]int32, len(h.parent)),
		hist:   make([]int32, h.maxLeafSize+1),
		start:  make([]int32, h.maxLeafSize+2),
	}
}

// leafGroupScore is the score formula of Quality for a group: the placement
// would span minLeaves leaves under a group of the given level.
func groupScore(minU, minL, units, level int) float64 {
	return 0.5*float64(minU)/float64(units) + 0.5*float64(minL+1)/float64(level+1)
}

// minLeavesIn returns the fewest leaves of group g whose counts sum to n.
func (p *placer) minLeavesIn(g int32, n int) int {
	h := p.h
	clear(p.hist)
	for _, l := range h.leafOrder[h.leafLo[g]:h.leafHi[g]] {
		p.hist[p.counts[l]]++
	}
	k, need := 0, n
	for c := len(p.hist) - 1; c > 0 && need > 0; c-- {
		avail := int(p.hist[c])
		if avail == 0 {
			continue
		}
		t := min(avail, (need+c-1)/c)
		k += t
		need -= t * c
	}
	return k
}

// choose selects the group to place n nodes under: the one whose best
// placement scores highest (fewest leaves relative to the ideal, lowest
// level), then the lower level, then the tighter fit (fewer candidates, so
// that bigger free groups stay whole), then depth-first order. Groups above
// levelCap are not considered. With maxLeaves > 0, the best group whose
// placement needs at most maxLeaves leaves wins when one exists (met);
// otherwise the best group overall (not met). ok is false when no group
// within levelCap holds n candidates.
func (p *placer) choose(n int, levelCap int32, maxLeaves int) (best int32, leaves int, met, ok bool) {
	h := p.h
	minU, minL := h.minUnits(n), h.minLevel(n)
	// A single leaf is the ideal: take the tightest one.
	best = -1
	for _, l := range h.leafOrder {
		if c := p.counts[l]; int(c) >= n && (best < 0 || c < p.counts[best]) {
			best = l
		}
	}
	if best >= 0 {
		return best, 1, true, true
	}
	type cand struct {
		g      int32
		leaves int
		score  float64
	}
	better := func(a, b cand) bool { // a strictly better than b
		if a.score != b.score {
			return a.score > b.score
		}
		if h.level[a.g] != h.level[b.g] {
			return h.level[a.g] < h.level[b.g]
		}
		if p.counts[a.g] != p.counts[b.g] {
			return p.counts[a.g] < p.counts[b.g]
		}
		return h.leafLo[a.g] < h.leafLo[b.g] || (h.leafLo[a.g] == h.leafLo[b.g] && h.level[a.g] < h.level[b.g])
	}
	var top, topMet cand
	top.g, topMet.g = -1, -1
	for g := range int32(len(h.parent)) {
		if len(h.children[g]) == 0 || int(p.counts[g]) < n || h.level[g] > levelCap {
			continue
		}
		k := p.minLeavesIn(g, n)
		c := cand{g: g, leaves: k, score: groupScore(minU, minL, k, int(h.level[g]))}
		if top.g < 0 || better(c, top) {
			top = c
		}
		if maxLeaves > 0 && k <= maxLeaves && (topMet.g < 0 || better(c, topMet)) {
			topMet = c
		}
	}
	switch {
	case topMet.g >= 0:
		return topMet.g, topMet.leaves, true, true
	case top.g >= 0:
		return top.g, top.leaves, maxLeaves <= 0, true
	}
	return -1, 0, false, false
}

// fill chooses the leaves of group g for n nodes, k being the fewest leaves
// that can hold them (from minLeavesIn). Among the k-leaf choices it takes
// the one whose candidate counts, sorted in decreasing order, are
// lexicographically smallest: the largest leaf used is as small as
// possible, then the next, and so on, so large free leaves stay whole; the
// last leaf is the tightest that fits the remainder. Every leaf but the
// last is taken whole. On deep trees, among leaves with equal counts the
// one closest to those already chosen wins.
func (p *placer) fill(g int32, n, k int) []pick {
	h := p.h
	p.picks = p.picks[:0]
	if len(h.children[g]) == 0 {
		return append(p.picks, pick{leaf: g, take: int32(n)})
	}
	leaves := h.leafOrder[h.leafLo[g]:h.leafHi[g]]
	// Counting sort of the leaves by candidate count (stable: depth-first).
	clear(p.start)
	for _, l := range leaves {
		p.start[p.counts[l]+1]++
	}
	for c := 1; c < len(p.start); c++ {
		p.start[c] += p.start[c-1]
	}
	if cap(p.bucket) < len(leaves) {
		p.bucket = make([]int32, len(leaves))
		p.used = make([]bool, len(leaves))
	}
	p.bucket = p.bucket[:len(leaves)]
	p.used = p.used[:len(leaves)]
	clear(p.used)
	clear(p.hist)
	for _, l := range leaves {
		c := p.counts[l]
		p.bucket[p.start[c]+p.hist[c]] = l
		p.hist[c]++ // hist[c] = leaves still available with count c
	}
	maxC := len(p.hist) - 1
	if maxC == 0 {
		return p.picks
	}
	closeness := h.deep && h.level[g] >= 2
	r, m := n, k
	for r > 0 {
		m = max(m, 1)
		// The largest leaf of the remaining m is as small as possible: the
		// smallest c such that the m largest available counts ≤ c reach r
		// (feasibility grows with c, so binary search).
		lo, hi := 1, maxC
		for lo < hi {
			mid := (lo + hi) / 2
			if p.topBelow(mid, m) >= r {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		c := lo
		for c > 0 && p.hist[c] == 0 { // defensive: c always has a leaf
			c--
		}
		if c == 0 {
			break
		}
		// Choose within bucket c.
		bi := int32(-1)
		bestLv := int32(1 << 30)
		for j := p.start[c]; j < p.start[c+1]; j++ {
			if p.used[j] {
				continue
			}
			if !closeness || len(p.picks) == 0 {
				bi = j
				break
			}
			lv := int32(1 << 30)
			for _, pk := range p.picks {
				if a := h.lca(pk.leaf, p.bucket[j]); a >= 0 {
					lv = min(lv, h.level[a])
				}
			}
			if lv < bestLv {
				bi, bestLv = j, lv
			}
		}
		p.used[bi] = true
		p.hist[c]--
		take := min(c, r)
		p.picks = append(p.picks, pick{leaf: p.bucket[bi], take: int32(take)})
		r -= take
		m--
	}
	return p.picks
}

// topBelow returns the sum of the m largest available leaf counts that are
// at most c.
func (p *placer) topBelow(c, m int) int {
	sum := 0
	for ; c > 0 && m > 0; c-- {
		t := min(int(p.hist[c]), m)
		sum += t * c
		m -= t
	}
	return sum
}
