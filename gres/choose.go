package gres

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// DeviceRequest asks one node for Count devices of one kind.
type DeviceRequest struct {
	Name  string // GRES name, e.g. "gpu"
	Type  string // GRES type, e.g. "h100"; "" takes any type
	Count int    // how many; 0 yields an empty Placement
	// Cores are the job's logical CPUs on this node. When set, devices close
	// to them (whose Cores intersect them, or whose affinity is unknown) are
	// preferred right after NVLink connectivity; empty means no preference.
	Cores CoreSet
	// EnforceBinding (--gres-flags=enforce-binding) restricts the choice to
	// devices close to Cores; without Cores it has no effect.
	EnforceBinding bool
	// Order ranks NVLink against CPU affinity; the zero value is
	// NVLinkFirst. See DeviceOrder.
	Order DeviceOrder
	// CPUs, with EnforceBinding and Cores, is how many CPUs of Cores the
	// job binds to its devices (--gres-flags=enforce-binding: the job's
	// CPUs are those local to its devices). Only sets whose devices'
	// Cores, with BoundCores, hold at least CPUs of Cores are eligible,
	// and the best of them in Choose's order wins: a 2-GPU job of 5 CPUs
	// on sockets of 4 free CPUs takes GPUs on two sockets instead of the
	// best-connected pair on one. A set in which no device's affinity is
	// known binds no CPUs and meets any count. 0: no requirement beyond
	// each device being close to Cores.
	CPUs int
	// BoundCores are CPUs the job already binds (the Cores of its devices
	// chosen by earlier requests on the node); they count towards CPUs.
	BoundCores CoreSet
}

// DeviceOrder says which of NVLink connectivity and CPU affinity Choose
// ranks first. The criteria after them (PCIe closeness, what is left
// behind, lowest indices) are the same in both orders.
type DeviceOrder uint8

const (
	// NVLinkFirst (the default) maximises NVLink lanes among the chosen
	// devices first and CPU affinity (devices close to DeviceRequest.Cores)
	// second: a 2-GPU job takes an NVLink-bridged pair on the other socket
	// rather than two unbridged GPUs next to its cores. This deviates from
	// Slurm on purpose: for most multi-GPU jobs peer bandwidth matters more
	// than a socket hop on the host side.
	NVLinkFirst DeviceOrder = iota
	// AffinityFirst is Slurm's order (cons_tres): devices close to the
	// job's cores (its socket) first, and among those the best NVLink
	// connectivity. Sites that want Slurm's placements choose it.
	AffinityFirst
)

// String returns "nvlink-first" or "affinity-first".
func (o DeviceOrder) String() string {
	switch o {
	case NVLinkFirst:
		return "nvlink-first"
	case AffinityFirst:
		return "affinity-first"
	}
	return fmt.Sprintf("DeviceOrder(%d)", uint8(o))
}

// Score is the placement quality of a set of devices for a request, made of
// criteria compared lexicographically in field order (see Compare); larger
// is better in every field.
type Score struct {
	// NVLink is the sum of NVLink lanes over every pair of chosen devices.
	NVLink int
	// Affinity is how many chosen devices are close to the request's Cores
	// (0 when the request has none).
	Affinity int
	// PCIe is the sum over chosen pairs of their host-side closeness:
	// 0 SYS across sockets, 1 SYS within a socket, 2 NODE (same NUMA
	// node), 3 PHB, 4 PXB, 5 PIX (same PCIe switch), 6 same board.
	PCIe int
	// LeftoverNVLink and LeftoverPCIe are the same sums over the pairs of
	// free healthy devices of the requested name that the choice leaves:
	// how well connected the remainder stays for the next job.
	LeftoverNVLink int
	LeftoverPCIe   int
}

// Compare returns -1, 0 or +1 as a is worse than, equal to or better than
// b in Choose's default order (NVLinkFirst): NVLink, then Affinity, then
// PCIe, then LeftoverNVLink, then LeftoverPCIe.
func (a Score) Compare(b Score) int { return a.CompareIn(b, NVLinkFirst) }

// CompareIn is Compare in the given order: with AffinityFirst, Affinity
// is compared before NVLink.
func (a Score) CompareIn(b Score, o DeviceOrder) int {
	first, second := cmp.Compare(a.NVLink, b.NVLink), cmp.Compare(a.Affinity, b.Affinity)
	if o == AffinityFirst {
		first, second = second, first
	}
	return cmp.Or(first, second,
		cmp.Compare(a.PCIe, b.PCIe), cmp.Compare(a.LeftoverNVLink, b.LeftoverNVLink),
		cmp.Compare(a.LeftoverPCIe, b.LeftoverPCIe))
}

// Placement is a chosen set of devices on one node.
type Placement struct {
	Devices []int // device indices, increasing
	Score   Score
	// Quality in [0, 1] is the mean value of the chosen pairs relative to
	// the node's best pair, where a pair is worth 100 per NVLink lane plus
	// 10..70 for host-side closeness; 1 for fewer than two devices. It
	// measures how tightly connected the allocation is, for simulations.
	Quality float64
}

// exactBudget bounds the number of k-subsets the exact search enumerates;
// larger searches use greedy construction plus swap improvement.
const exactBudget = 5000

// maxSeeds bounds the greedy starts on large candidate sets.
const maxSeeds = 24

// Choose picks req.Count free, healthy devices named req.Name (of type
// req.Type, or any type when it is "") for one job, without allocating
// them (call Allocate with Placement.Devices). It maximises, in order:
//
//  1. NVLink lanes summed over the chosen pairs (NVSwitch pairs count the
//     GPU's full lane count);
//  2. the number of chosen devices close to req.Cores (CPU affinity; with
//     EnforceBinding only close devices are eligible at all) — with
//     req.Order AffinityFirst, Slurm's order, this comes first and NVLink
//     second;
//  3. host-side closeness summed over the chosen pairs: same board, same
//     PCIe switch (PIX), switch tree (PXB), host bridge, same NUMA node,
//     same socket, across sockets;
//  4. how well connected the free devices left behind stay (NVLink, then
//     host side), so a small job takes an orphan GPU instead of breaking a
//     free NVLink pair or island;
//
// and breaks remaining ties towards the lowest device indices. Devices
// that offer shares (Inventory.Shares) are left for shared use whenever
// the others hold the request (not with EnforceBinding). When at
// most 5000 subsets need enumerating — after skipping subsets that differ
// only by interchangeable ("twin") devices, so every request on 8 GPUs and
// most on 16 — the result is exactly optimal for this order. Beyond that
// (or with more than 64 candidates) it grows sets greedily from up to 24
// seeds, with a one-step lookahead for ties, and improves the best by
// swapping single devices until no swap helps (at most 4k+16 swaps):
// polynomial time, O((seeds +
// swaps)·k·m) for m candidates, and equal to the exact optimum's NVLink,
// affinity and PCIe score on about 98% of random instances.
//
// With EnforceBinding and a CPU count (req.CPUs), only sets whose
// devices bind that many of req.Cores are eligible, and the best of them
// in this order is chosen: the exact search skips the others; the greedy
// path prefers a bound set, repairs an unbound one by single swaps that
// bind more CPUs (the best-scoring first) and keeps it bound while it
// improves it.
//
// It fails with ErrInsufficientDevices when fewer than Count eligible
// devices are free or no set of them binds req.CPUs, and
// ErrInvalidRequest for a negative Count or CPUs, an empty Name or an
// unknown Order.
func (s *NodeDevices) Choose(req DeviceRequest) (Placement, error) {
	if req.Count < 0 || req.Name == "" || req.CPUs < 0 {
		return Placement{}, fmt.Errorf("%w: name %q count %d CPUs %d", ErrInvalidRequest, req.Name, req.Count, req.CPUs)
	}
	if req.Order > AffinityFirst {
		return Placement{}, fmt.Errorf("%w: %v", ErrInvalidRequest, req.Order)
	}
	aff := int64(1) << affShift // a close device's bonus: below one NVLink lane
	if req.Order == AffinityFirst {
		aff = 1 << affFirstShift // above every NVLink sum
	}
	if req.Count == 0 {
		return Placement{Quality: 1}, nil
	}
	t := s.t
	k := req.Count
	g, _ := t.group(req.Name, req.Type)
	all, _ := t.group(req.Name, "")
	free := s.freeIn(all)
	avail := s.freeIn(g)
	far := s.farFrom(avail, req.Cores)
	c := avail
	if req.EnforceBinding {
		c = c.andNot(far)
	}
	m := c.count()
	if m < k {
		return Placement{}, fmt.Errorf("%w: want %d %s, %d eligible of %d free", ErrInsufficientDevices, k, reqLabel(req), m, avail.count())
	}
	if !req.EnforceBinding {
		// Devices that offer shares (shards, MPS) are kept for shared use
		// while the others hold the request, as shares pack onto devices
		// already shared (ChooseShares).
		if rest := c.andNot(t.sharable); rest != c && rest.count() >= k {
			c = rest
		}
	}
	bind := s.newBinding(req, c)

	var candBuf [64]uint8
	var priBuf, secBuf [64]int64
	var bestBuf [64]uint8
	var prevBuf [64]int8
	cand := c.appendPositions(candBuf[:0])
	if bind != nil {
		if most := bind.most(cand, k); most < bind.need {
			return Placement{}, bind.shortErr(k, req, most)
		}
	}
	var pri1, sec1 []int64
	var best []uint8
	if m <= 64 {
		pri1, sec1 = priBuf[:m], secBuf[:m]
	} else {
		pri1, sec1 = make([]int64, m), make([]int64, m)
	}
	if k <= 64 {
		best = bestBuf[:k]
	} else {
		best = make([]uint8, k)
	}
	n := t.n
	var freeBuf [MaxDevices]uint8
	freePos := free.appendPositions(freeBuf[:0])
	for i, p := range cand {
		if !req.Cores.IsEmpty() && !far.has(int(p)) {
			pri1[i] = aff
		}
		var deg int64
		row := t.w[int(p)*n : int(p)*n+n]
		for _, q := range freePos {
			deg += row[q]
		}
		sec1[i] = -deg
	}

	found := true
	switch {
	case k == m:
		for i := range best {
			best[i] = uint8(i)
		}
	case k == 1:
		bi := -1
		for i := range m {
			if bind != nil && bind.covers(cand[i:i+1]) < bind.need {
				continue
			}
			if bi < 0 || pri1[i] > pri1[bi] || pri1[i] == pri1[bi] && sec1[i] > sec1[bi] {
				bi = i
			}
		}
		found = bi >= 0
		best[0] = uint8(max(bi, 0))
	case m <= 64 && s.exactFeasible(cand, k, &prevBuf):
		found = exactSearch(t.w, n, cand, pri1, sec1, prevBuf[:m], best, bind)
	default:
		found = greedySearch(t.w, n, cand, pri1, sec1, best, bind)
	}
	if !found {
		return Placement{}, bind.shortErr(k, req, bind.most(cand, k))
	}

	var sel devMask
	out := Placement{Devices: make([]int, k)}
	for i, li := range best {
		p := int(cand[li])
		sel.set(p)
		out.Devices[i] = t.inv.Devices[p].Index
	}
	out.Score, out.Quality = s.score(sel, free, far, !req.Cores.IsEmpty())
	return out, nil
}

func reqLabel(req DeviceRequest) string {
	if req.Type == "" {
		return req.Name
	}
	return req.Name + ":" + req.Type
}

// farFrom returns the devices of c whose known affinity misses cores.
func (s *NodeDevices) farFrom(c devMask, cores CoreSet) devMask {
	var far devMask
	if cores.IsEmpty() {
		return far
	}
	for wi, word := range c {
		for word != 0 {
			p := wi<<6 + bits.TrailingZeros64(word)
			word &= word - 1
			if dc := s.t.inv.Devices[p].Cores; !dc.IsEmpty() && !dc.Intersects(cores) {
				far.set(p)
			}
		}
	}
	return far
}

// Evaluate scores an arbitrary set of device indices for req as Choose
// would score it, against the node's current free devices. The devices
// need not be free or match req; use it to compare placements or to
// measure one made elsewhere. It fails on unknown or repeated indices.
func (s *NodeDevices) Evaluate(indices []int, req DeviceRequest) (Placement, error) {
	sel, err := s.maskOf("evaluate", indices)
	if err != nil {
		return Placement{}, err
	}
	all, _ := s.t.group(req.Name, "")
	free := s.freeIn(all)
	var everything devMask
	for p := range s.t.n {
		everything.set(p)
	}
	far := s.farFrom(everything, req.Cores)
	out := Placement{Devices: s.appendIndices(make([]int, 0, len(indices)), sel)}
	out.Score, out.Quality = s.score(sel, free, far, !req.Cores.IsEmpty())
	return out, nil
}

// score computes the Score and Quality of the set sel.
func (s *NodeDevices) score(sel, free, far devMask, hasCores bool) (Score, float64) {
	t := s.t
	var buf [64]uint8
	ps := sel.appendPositions(buf[:0])
	var sc Score
	var value int64
	for a, p := range ps {
		if hasCores && !far.has(int(p)) {
			sc.Affinity++
		}
		for _, q := range ps[a+1:] {
			w := t.w[int(p)*t.n+int(q)]
			sc.NVLink += int(w >> nvShift)
			sc.PCIe += int(w & lowMask)
			value += pairValue(w)
		}
	}
	var lbuf [64]uint8
	left := free.andNot(sel).appendPositions(lbuf[:0])
	for a, p := range left {
		for _, q := range left[a+1:] {
			w := t.w[int(p)*t.n+int(q)]
			sc.LeftoverNVLink += int(w >> nvShift)
			sc.LeftoverPCIe += int(w & lowMask)
		}
	}
	k := len(ps)
	if k < 2 || t.bestPair == 0 {
		return sc, 1
	}
	return sc, float64(value) / (float64(k*(k-1)/2) * float64(t.bestPair))
}

// exactFeasible links each of the m ≤ 64 candidates to the previous
// candidate that is its twin (prev[i], or -1) and reports whether the
// number of twin-canonical k-subsets — subsets that take twins in index
// order — is at most exactBudget. That number is the coefficient of x^k in
// the product over twin chains of (1 + x + … + x^len).
func (s *NodeDevices) exactFeasible(cand []uint8, k int, prev *[64]int8) bool {
	m := len(cand)
	var chainLen [64]int8
	var head [64]int8
	for i := range m {
		prev[i] = -1
		head[i] = int8(i)
		tw := s.t.twin[cand[i]]
		for j := i - 1; j >= 0; j-- {
			if s.t.twin[cand[j]] == tw {
				prev[i] = int8(j)
				head[i] = head[j]
				break
			}
		}
		chainLen[head[i]]++
	}
	const limit = exactBudget + 1
	var dp, pre [65]int64
	dp[0] = 1
	for h := range m {
		L := int(chainLen[h])
		if L == 0 {
			continue
		}
		pre[0] = dp[0]
		for j := 1; j <= k; j++ {
			pre[j] = pre[j-1] + dp[j]
		}
		for j := 0; j <= k; j++ {
			v := pre[j]
			if j-L-1 >= 0 {
				v -= pre[j-L-1]
			}
			dp[j] = min(v, limit)
		}
	}
	return dp[k] <= exactBudget
}

// exactSearch enumerates the k-subsets (k = len(best)) of the m ≤ 64
// candidates in lexicographic order, keeping the best (primary, secondary)
// objective; the first of equal subsets (lowest indices) wins. primary =
// Σ pair weights + Σ pri1; secondary = Σ pair weights + Σ sec1.
//
// Symmetry breaking: a candidate whose twin prev[i] (an interchangeable
// device with a lower index) is not in the subset is skipped. This loses
// nothing: swapping a twin for its lower twin keeps the objective and makes
// the subset lexicographically smaller, so the lowest-index optimum always
// takes twins in order (twins have the same affinity, so the swap binds
// the same CPUs).
//
// With a binding (nil: none), only subsets that bind enough CPUs count;
// it reports false when none does.
func exactSearch(w []int64, n int, cand []uint8, pri1, sec1 []int64, prev []int8, best []uint8, bind *binding) bool {
	m, k := len(cand), len(best)
	var idx [65]uint8
	var pos [64]int
	var in [64]bool
	var pp, ps [65]int64
	bestP, bestS := int64(math.MinInt64), int64(math.MinInt64)
	found := false
	d := 0
	for {
		i := int(idx[d])
		if i > m-(k-d) {
			if d == 0 {
				break
			}
			d--
			in[idx[d]] = false
			idx[d]++
			continue
		}
		if pv := prev[i]; pv >= 0 && !in[pv] {
			idx[d]++
			continue
		}
		p := int(cand[i])
		row := w[p*n : p*n+n]
		var add int64
		for _, q := range pos[:d] {
			add += row[q]
		}
		P, S := pp[d]+add+pri1[i], ps[d]+add+sec1[i]
		if d == k-1 {
			if (P > bestP || P == bestP && S > bestS) && bind.okLeaf(pos[:d], p) {
				found = true
				bestP, bestS = P, S
				copy(best, idx[:d])
				best[d] = uint8(i)
			}
			idx[d]++
			continue
		}
		in[i] = true
		pos[d] = p
		pp[d+1], ps[d+1] = P, S
		d++
		idx[d] = uint8(i + 1)
	}
	return found
}

// greedySearch grows a set from several seeds, adding each time the
// candidate with the best (primary, secondary) gain, keeps the best set,
// and improves it by best-improvement swaps until none helps.
//
// With a binding (nil: none) a set that binds enough CPUs beats one that
// does not; when no greedy set does, single swaps that bind more CPUs
// (the best-scoring first) repair the best one, and the improving swaps
// keep it bound. It reports false when no bound set was found.
func greedySearch(w []int64, n int, cand []uint8, pri1, sec1 []int64, best []uint8, bind *binding) bool {
	m, k := len(cand), len(best)
	wl := func(i, j int) int64 { return w[int(cand[i])*n+int(cand[j])] }

	// Seeds: one per distinct (affinity, free degree, candidate degree)
	// signature, best candidate degree first.
	// degC: total weight to the other candidates; partner: the best single
	// pair weight a candidate can still form (a one-step lookahead that
	// keeps greedy from filling early slots with orphans that leave nothing
	// to pair with).
	degC := make([]int64, m)
	partner := make([]int64, m)
	for i := range m {
		for j := range m {
			x := wl(i, j)
			degC[i] += x
			if j != i {
				partner[i] = max(partner[i], x)
			}
		}
	}
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(pri1[b], pri1[a]), cmp.Compare(degC[b], degC[a]), cmp.Compare(sec1[b], sec1[a]), cmp.Compare(a, b))
	})
	seeds := make([]int, 0, maxSeeds)
	for x, i := range order {
		if x > 0 {
			j := order[x-1]
			if pri1[i] == pri1[j] && degC[i] == degC[j] && sec1[i] == sec1[j] {
				continue
			}
		}
		seeds = append(seeds, i)
		if len(seeds) == maxSeeds {
			break
		}
	}

	gain := make([]int64, m)
	in := make([]bool, m)
	cur := make([]int, 0, k)
	bestSet := make([]int, 0, k)
	bestP, bestS := int64(math.MinInt64), int64(math.MinInt64)
	bestOK := false
	for _, seed := range seeds {
		clear(gain)
		clear(in)
		cur = cur[:0]
		var P, S int64
		add := func(j int) {
			P += gain[j] + pri1[j]
			S += gain[j] + sec1[j]
			in[j] = true
			cur = append(cur, j)
			for x := range m {
				gain[x] += wl(j, x)
			}
		}
		add(seed)
		for len(cur) < k {
			lookahead := k-len(cur) >= 2
			bj := -1
			for j := range m {
				if in[j] {
					continue
				}
				if bj < 0 {
					bj = j
					continue
				}
				if c := cmp.Compare(gain[j]+pri1[j], gain[bj]+pri1[bj]); c != 0 {
					if c > 0 {
						bj = j
					}
					continue
				}
				if lookahead && partner[j] != partner[bj] {
					if partner[j] > partner[bj] {
						bj = j
					}
					continue
				}
				if gain[j]+sec1[j] > gain[bj]+sec1[bj] {
					bj = j
				}
			}
			add(bj)
		}
		slices.Sort(cur)
		ok := bind.okIn(cand, in, -1, -1)
		if ok && !bestOK || ok == bestOK && (P > bestP || P == bestP && (S > bestS || S == bestS && slices.Compare(cur, bestSet) < 0)) {
			bestP, bestS, bestOK = P, S, ok
			bestSet = append(bestSet[:0], cur...)
		}
	}

	// Best-improvement swap local search from the best greedy set.
	clear(gain)
	clear(in)
	for _, i := range bestSet {
		in[i] = true
		for x := range m {
			gain[x] += wl(i, x)
		}
	}
	swap := func(i, j int) {
		in[i], in[j] = false, true
		for x := range m {
			gain[x] += wl(j, x) - wl(i, x)
		}
	}
	delta := func(i, j int) (dP, dS int64) {
		g := gain[j] - wl(i, j)
		return g + pri1[j] - gain[i] - pri1[i], g + sec1[j] - gain[i] - sec1[i]
	}
	for !bestOK {
		// Repair: the swap that binds more CPUs, the best-scoring first.
		have := bind.coverIn(cand, in, -1, -1)
		bi, bj := -1, -1
		var bdP, bdS int64
		for i := range m {
			for j := range m {
				if !in[i] || in[j] {
					continue
				}
				if dP, dS := delta(i, j); (bi < 0 || dP > bdP || dP == bdP && dS > bdS) && bind.coverIn(cand, in, i, j) > have {
					bi, bj, bdP, bdS = i, j, dP, dS
				}
			}
		}
		if bi < 0 {
			return false
		}
		swap(bi, bj)
		bestOK = bind.okIn(cand, in, -1, -1)
	}
	for range 4*k + 16 {
		bi, bj := -1, -1
		var bdP, bdS int64
		for i := range m {
			if !in[i] {
				continue
			}
			for j := range m {
				if in[j] {
					continue
				}
				if dP, dS := delta(i, j); (dP > bdP || dP == bdP && dS > bdS) && bind.okIn(cand, in, i, j) {
					bi, bj, bdP, bdS = i, j, dP, dS
				}
			}
		}
		if bi < 0 {
			break
		}
		swap(bi, bj)
	}
	x := 0
	for i := range m {
		if in[i] {
			best[x] = uint8(i)
			x++
		}
	}
	return true
}
