package priority

import "math"

// Classic fair-share (PriorityFlags=NO_FAIR_TREE), as Slurm's
// priority/multifactor plugin computes it (read for behaviour only):
//
//   - NormShares S: the product, from the association up to the root, of
//     shares / Σ sibling shares, skipping FairShare=parent ancestors; 0 when
//     a level's sibling shares sum to 0. A FairShare=parent association
//     takes its fair-share parent's S.
//   - NormUsage UN = usage / root usage, capped at 1 (0 when the root has
//     none).
//   - EffectvUsage UE, top-down: UN directly under the root; the fair-share
//     parent's UE for FairShare=parent; otherwise
//     UE = UN + (UE_parent − UN) × shares / Σ sibling shares
//     (UE_parent when the sibling shares sum to 0).
//   - Depth-oblivious (PriorityFlags=DEPTH_OBLIVIOUS) replaces the last
//     rule: R_p = UE_p/S_p, r_l = (UN/S) / (Σ sibling UN / S_p),
//     k = 1 when ln R_p · ln r_l ≥ 0 (or either is 0) else
//     1/(1 + (5 ln R_p)²), UE = R_p · r_l^k · S; it falls back to UE = UN
//     when S, S_p, UE_p or UN is 0.
//   - Factor F = 2^(−(UE/S)/FairShareDampeningFactor), 0 when S ≤ 0, using
//     the fair-share parent's UE and S for FairShare=parent associations.
//     The root's UE and S count as 1.
//
// Slurm computes UE in long double and F with the C library's pow; Sluice
// uses float64 and math.Pow, so factors agree to about 1e-15, not bit for
// bit. Classic has no ranking, so this cannot reorder tied jobs the way a
// Fair Tree precision difference could.

func (t *Tree) computeClassic() {
	nodes := t.nodes
	root := &nodes[t.root]
	rootAgg := root.agg
	root.uEff = 1
	oblivious := t.algo == ClassicDepthOblivious
	var siblingUN []float64
	if oblivious {
		// Σ UN of each group's members that are not FairShare=parent,
		// summed in group order.
		siblingUN = make([]float64, len(nodes))
		for _, x := range t.bfsOrder[1:] {
			if nd := &nodes[x]; !nd.useParent {
				siblingUN[nd.fsParent] += normUsage(nd.agg, rootAgg)
			}
		}
	}
	for _, x := range t.bfsOrder[1:] {
		nd := &nodes[x]
		un := normUsage(nd.agg, rootAgg)
		fp := &nodes[nd.fsParent]
		switch {
		case nd.fsParent == t.root:
			nd.uEff = un
		case nd.useParent:
			nd.uEff = fp.uEff
		case oblivious:
			nd.uEff = un
			if nd.sNorm != 0 && fp.sNorm != 0 && fp.uEff != 0 && un != 0 {
				ratioP := fp.uEff / fp.sNorm
				ratioS := siblingUN[nd.fsParent] / fp.sNorm
				ratioL := (un / nd.sNorm) / ratioS
				k := 1.0
				if ratioP != 0 && ratioL != 0 && math.Log(ratioP)*math.Log(ratioL) < 0 {
					k = 1 / (1 + math.Pow(5*math.Log(ratioP), 2))
				}
				nd.uEff = float64(float64(ratioP*math.Pow(ratioL, k)) * nd.sNorm)
			}
		case fp.levelShares == 0:
			nd.uEff = fp.uEff
		default:
			r := float64(nd.shares) / float64(fp.levelShares)
			nd.uEff = un + float64((fp.uEff-un)*r)
		}
		fa := nd
		if nd.useParent {
			fa = fp
		}
		if fa.sNorm <= 0 {
			nd.factor = 0
		} else {
			nd.factor = math.Pow(2, -((fa.uEff / fa.sNorm) / t.damp))
		}
	}
}

// normUsage is Slurm's usage_norm: usage / root usage, capped at 1.
func normUsage(agg, rootAgg float64) float64 {
	if rootAgg == 0 {
		return 0
	}
	return min(agg/rootAgg, 1)
}
