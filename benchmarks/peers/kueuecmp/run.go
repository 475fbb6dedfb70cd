package kueuecmp

import (
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// Quality is what one answer looks like: placed or not, and the domains it
// spans per level (index 0 the top level), plus nodes.
type Quality struct {
	Placed bool
	Spans  []int
	Nodes  int
}

// Leaves returns the lowest-level domains spanned.
func (q Quality) Leaves() int {
	if len(q.Spans) == 0 {
		return 0
	}
	return q.Spans[len(q.Spans)-1]
}

// Result is one case on one inventory and free state.
type Result struct {
	Inventory string
	State     *FreeState
	Case      Case

	// Nanoseconds per decision: Phalanx Place; Kueue
	// FindTopologyAssignmentsForFlavor on a prebuilt snapshot; Kueue
	// Snapshot plus the decision; Kueue Snapshot alone.
	PhalanxNs, KueueNs, KueueCycleNs, SnapshotNs float64

	P, K Quality

	PhalanxReq    placement.Request
	PhalanxReason string
	PhalanxAssign []topology.NodeAlloc
	Kueue         KueueAnswer
}

// Verdict compares the answers: "=" same leaves, "P fewer", "K FEWER",
// "K ONLY" (Kueue placed, Phalanx did not), "P only", "both fail".
func (r *Result) Verdict() string {
	switch {
	case !r.P.Placed && !r.K.Placed:
		return "both fail"
	case !r.P.Placed:
		return "K ONLY"
	case !r.K.Placed:
		return "P only"
	case r.K.Leaves() < r.P.Leaves():
		return "K FEWER"
	case r.P.Leaves() < r.K.Leaves():
		return "P fewer"
	}
	return "="
}

// KueueWins reports whether Kueue found a tighter placement than Phalanx, or
// one where Phalanx found none.
func (r *Result) KueueWins() bool {
	v := r.Verdict()
	return v == "K FEWER" || v == "K ONLY"
}

// Timer measures nanoseconds per call: after a garbage collection, a
// warm-up and a calibration of the batch size (a batch takes at least a
// millisecond), Rounds rounds of at least RoundTime each; the fastest round
// is reported (other processes can only slow a round down). A round's time
// includes the garbage collection work that its allocations cause.
type Timer struct {
	Rounds    int
	RoundTime time.Duration
}

// NsPerOp measures f.
func (t Timer) NsPerOp(f func()) float64 {
	runtime.GC()
	f()
	batch := 1
	for {
		start := time.Now()
		for range batch {
			f()
		}
		if time.Since(start) >= time.Millisecond || batch >= 1<<20 {
			break
		}
		batch *= 2
	}
	rounds := max(t.Rounds, 1)
	samples := make([]float64, rounds)
	for r := range rounds {
		n := 0
		start := time.Now()
		for time.Since(start) < t.RoundTime || n == 0 {
			for range batch {
				f()
			}
			n += batch
		}
		samples[r] = float64(time.Since(start).Nanoseconds()) / float64(n)
	}
	return slices.Min(samples)
}

// Runner runs cases on one inventory and free state.
type Runner struct {
	Inv    Inventory
	State  *FreeState
	Kueue  *KueueEnv
	placer *placement.Placer
	buf    []topology.NodeAlloc
}

// NewRunner prepares both libraries for state fs of inventory inv.
func NewRunner(inv Inventory, fs *FreeState) (*Runner, error) {
	k, err := NewKueueEnv(inv.Cluster, fs)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", inv.Name, fs.Name, err)
	}
	return &Runner{
		Inv: inv, State: fs, Kueue: k,
		placer: placement.New(inv.Cluster, placement.Options{}),
		buf:    make([]topology.NodeAlloc, 0, inv.Cluster.NumNodes()),
	}, nil
}

// Place runs Phalanx once and checks its answer.
func (rn *Runner) Place(kc Case) (placement.Result, error) {
	req := kc.PhalanxRequest()
	res, err := rn.placer.Place(rn.State.State, &req, rn.buf)
	if err != nil {
		return res, fmt.Errorf("phalanx %s: %w", req.String(), err)
	}
	if res.Placed {
		if err := rn.State.State.CanAllocate(res.Assignment); err != nil {
			return res, fmt.Errorf("phalanx %s: invalid assignment: %w", req.String(), err)
		}
		if res.GPUs != kc.GPUs() {
			return res, fmt.Errorf("phalanx %s: %d GPUs assigned, want %d", req.String(), res.GPUs, kc.GPUs())
		}
	}
	return res, nil
}

// Run decides case kc with both libraries (timing them with t when t is
// not nil) and checks both answers.
func (rn *Runner) Run(kc Case, t *Timer) (*Result, error) {
	c := rn.Inv.Cluster
	out := &Result{Inventory: rn.Inv.Name, State: rn.State, Case: kc, PhalanxReq: kc.PhalanxRequest()}

	res, err := rn.Place(kc)
	if err != nil {
		return nil, err
	}
	out.P = Quality{Placed: res.Placed, Nodes: res.Nodes, Spans: make([]int, c.Depth())}
	if res.Placed {
		copy(out.P.Spans, res.Spans[:c.Depth()])
		out.PhalanxAssign = slices.Clone(res.Assignment)
	} else {
		out.PhalanxReason = res.Reason.String()
	}

	snap, err := rn.Kueue.Snapshot()
	if err != nil {
		return nil, err
	}
	reqs := rn.Kueue.Requests(kc)
	ans, err := rn.Kueue.Answer(Decide(snap, reqs))
	if err != nil {
		return nil, err
	}
	out.Kueue = ans
	out.K = Quality{Placed: ans.Placed, Spans: make([]int, c.Depth())}
	if ans.Placed {
		if err := rn.checkKueue(kc, ans); err != nil {
			return nil, fmt.Errorf("%s/%s %s: %w", rn.Inv.Name, rn.State.Name, kc, err)
		}
		nodes := make([]int, 0, len(ans.PodsPerNode))
		for n := range ans.PodsPerNode {
			nodes = append(nodes, n)
		}
		out.K.Spans, out.K.Nodes = spans(c, nodes), len(nodes)
	}
	if kc.Constraint == RequiredLeaf {
		if out.P.Placed && out.P.Leaves() != 1 {
			return nil, fmt.Errorf("phalanx %s: required leaf but spans %d leaves", kc, out.P.Leaves())
		}
		if out.K.Placed && out.K.Leaves() != 1 {
			return nil, fmt.Errorf("kueue %s: required rack but spans %d racks", kc, out.K.Leaves())
		}
	}

	if t != nil {
		req := kc.PhalanxRequest()
		st := rn.State.State
		out.PhalanxNs = t.NsPerOp(func() { _, _ = rn.placer.Place(st, &req, rn.buf) })
		out.KueueNs = t.NsPerOp(func() { _ = Decide(snap, reqs) })
		out.KueueCycleNs = t.NsPerOp(func() {
			s, err := rn.Kueue.Snapshot()
			if err != nil {
				panic(err)
			}
			_ = Decide(s, reqs)
		})
		out.SnapshotNs = t.NsPerOp(func() {
			if _, err := rn.Kueue.Snapshot(); err != nil {
				panic(err)
			}
		})
	}
	return out, nil
}

// checkKueue verifies that Kueue's answer has every pod and fits the free
// GPUs of each node.
func (rn *Runner) checkKueue(kc Case, ans KueueAnswer) error {
	total := 0
	for n, pods := range ans.PodsPerNode {
		total += pods
		if free := rn.State.State.FreeCount(topology.NodeID(n)); pods*kc.PodGPUs > free {
			return fmt.Errorf("kueue puts %d pods x %d GPUs on %s with %d free", pods, kc.PodGPUs, rn.Inv.Cluster.NodeName(topology.NodeID(n)), free)
		}
	}
	if total != kc.Pods {
		return fmt.Errorf("kueue assigned %d pods, want %d", total, kc.Pods)
	}
	return nil
}

// spans counts the domains per level that nodes touch.
func spans(c *topology.Cluster, nodes []int) []int {
	out := make([]int, c.Depth())
	for l := range c.Depth() {
		seen := map[int]bool{}
		for _, n := range nodes {
			seen[c.NodeDomain(topology.NodeID(n), l)] = true
		}
		out[l] = len(seen)
	}
	return out
}

func popcount(m uint64) int { return bits.OnesCount64(m) }

// FormatDuration renders nanoseconds in a short human unit.
func FormatDuration(ns float64) string {
	switch {
	case ns < 1e3:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e4:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	case ns < 1e6:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	case ns < 1e7:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
	return fmt.Sprintf("%.1f ms", ns/1e6)
}

func ratio(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	x := a / b
	if x >= 10 {
		return fmt.Sprintf("%.0f×", x)
	}
	return fmt.Sprintf("%.1f×", x)
}

// Table renders the results of one inventory as a markdown table.
func Table(results []*Result) string {
	var b strings.Builder
	b.WriteString("| state | request | Phalanx | Kueue decision | Kueue snapshot + decision | speed-up (decision) | speed-up (with snapshot) | leaves P / K | spines P / K | placed P / K | verdict |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|:-:|:-:|:-:|---|\n")
	for _, r := range results {
		v := r.Verdict()
		if r.KueueWins() {
			v = "**" + v + "**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.State.Name, r.Case, FormatDuration(r.PhalanxNs), FormatDuration(r.KueueNs), FormatDuration(r.KueueCycleNs),
			ratio(r.KueueNs, r.PhalanxNs), ratio(r.KueueCycleNs, r.PhalanxNs),
			pair(r.P, r.K, Quality.Leaves), pair(r.P, r.K, spinesOf), yesNo(r.P.Placed)+" / "+yesNo(r.K.Placed), v)
	}
	return b.String()
}

func spinesOf(q Quality) int {
	if len(q.Spans) < 2 {
		return 1
	}
	return q.Spans[1]
}

func pair(p, k Quality, f func(Quality) int) string {
	s := func(q Quality) string {
		if !q.Placed {
			return "-"
		}
		return fmt.Sprint(f(q))
	}
	return s(p) + " / " + s(k)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Summary states, per inventory, the smallest speed-ups and the goal
// checks: Phalanx at least 100× (issue 4) and 300× (issue 14) faster per
// decision, naming the cases below 300×, and never on more leaves.
func Summary(results []*Result) string {
	if len(results) == 0 {
		return ""
	}
	minD, minC := 1e18, 1e18
	var minDCase, minCCase *Result
	fast := 0
	var slow []string // the cases below 300×
	for _, r := range results {
		if d := r.KueueNs / r.PhalanxNs; d < minD {
			minD, minDCase = d, r
		}
		if c := r.KueueCycleNs / r.PhalanxNs; c < minC {
			minC, minCCase = c, r
		}
		if r.KueueNs >= 100*r.PhalanxNs {
			fast++
		}
		if r.KueueNs < 300*r.PhalanxNs {
			// Rounded down: a case just below the goal never reads 300×.
			slow = append(slow, fmt.Sprintf("%s, %s: %d×", r.State.Name, r.Case, int(r.KueueNs/r.PhalanxNs)))
		}
	}
	var wins []string
	for _, r := range results {
		if r.KueueWins() {
			wins = append(wins, fmt.Sprintf("%s %s (%s)", r.State.Name, r.Case, r.Verdict()))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "- Smallest speed-up against Kueue's decision alone: %s (%s, %s).\n", ratio(minD, 1), minDCase.State.Name, minDCase.Case)
	fmt.Fprintf(&b, "- Smallest speed-up against Kueue's snapshot + decision: %s (%s, %s).\n", ratio(minC, 1), minCCase.State.Name, minCCase.Case)
	fmt.Fprintf(&b, "- Cases where Phalanx is at least 100× faster than Kueue's decision alone: %d of %d.\n", fast, len(results))
	fmt.Fprintf(&b, "- Cases where Phalanx is at least 300× faster than Kueue's decision alone: %d of %d", len(results)-len(slow), len(results))
	if len(slow) > 0 {
		fmt.Fprintf(&b, "; below it: %s", strings.Join(slow, "; "))
	}
	b.WriteString(".\n")
	if len(wins) == 0 {
		fmt.Fprintf(&b, "- Kueue never spans fewer leaves than Phalanx, and never places a request Phalanx leaves unplaced.\n")
	} else {
		fmt.Fprintf(&b, "- **KUEUE BEATS PHALANX in %d case(s): %s. See the details below.**\n", len(wins), strings.Join(wins, "; "))
	}
	return b.String()
}

// Details describes a case fully: state, request, both answers, so that it
// can be reproduced as a Phalanx scenario.
func Details(r *Result) string {
	var b strings.Builder
	c := r.State.State.Cluster()
	low := c.Depth() - 1
	fmt.Fprintf(&b, "#### %s / %s: %s — %s\n\n", r.Inventory, r.State.Name, r.Case, r.Verdict())
	if r.State.Skewed {
		fmt.Fprintf(&b, "State: kueuecmp.FragmentSkewed(topology.NewState(c), seed %d): %d jobs.\n", r.State.Seed, len(r.State.Jobs))
	} else if r.State.Busy > 0 {
		fmt.Fprintf(&b, "State: kueuecmp.Fragment(topology.NewState(c), seed %d, busy %.2f): %d jobs.\n", r.State.Seed, r.State.Busy, len(r.State.Jobs))
	} else {
		b.WriteString("State: empty.\n")
	}
	fmt.Fprintf(&b, "Phalanx request: %s (%s).\n", goLiteral(r.PhalanxReq), r.PhalanxReq.String())
	fmt.Fprintf(&b, "Kueue request: 1 PodSet, count %d, %d nvidia.com/gpu per pod, topologyRequest %s.\n\n", r.Case.Pods, r.Case.PodGPUs, kueueTopologyRequest(r.Case.Constraint))

	involved := map[int]bool{}
	pByLeaf := map[int][]string{}
	for _, a := range r.PhalanxAssign {
		d := c.NodeDomain(topology.NodeID(a.Node), low)
		involved[d] = true
		pByLeaf[d] = append(pByLeaf[d], fmt.Sprintf("%s:%d", c.NodeName(topology.NodeID(a.Node)), popcount(a.GPUs)))
	}
	kByLeaf := map[int][]string{}
	for n, pods := range r.Kueue.PodsPerNode {
		d := c.NodeDomain(topology.NodeID(n), low)
		involved[d] = true
		kByLeaf[d] = append(kByLeaf[d], fmt.Sprintf("%s:%d", c.NodeName(topology.NodeID(n)), pods*r.Case.PodGPUs))
	}
	answer := func(name string, q Quality, reason string, byLeaf map[int][]string) {
		if !q.Placed {
			fmt.Fprintf(&b, "%s: not placed: %s\n", name, reason)
			return
		}
		fmt.Fprintf(&b, "%s: %d nodes on %d leaves, spans per level %v (node:GPUs per leaf)\n", name, q.Nodes, q.Leaves(), q.Spans)
		leaves := make([]int, 0, len(byLeaf))
		for d := range byLeaf {
			leaves = append(leaves, d)
		}
		sort.Ints(leaves)
		for _, d := range leaves {
			names := byLeaf[d]
			sort.Strings(names)
			fmt.Fprintf(&b, "    %s (%s): %s\n", c.DomainName(low, d), path(c, d), strings.Join(names, " "))
		}
	}
	b.WriteString("```\n")
	answer("Phalanx", r.P, r.PhalanxReason, pByLeaf)
	answer("Kueue", r.K, r.Kueue.Reason, kByLeaf)
	b.WriteString("```\n\nFree state (one line per leaf, one character per node: '.' idle, '#' full, digit = free GPUs):\n\n```\n")
	desc := strings.Split(strings.TrimRight(r.State.State.Describe(), "\n"), "\n")
	b.WriteString(desc[0] + "\n")
	for d, line := range desc[1:] {
		if c.NumDomains(low) <= 32 || involved[d] {
			b.WriteString(line + "\n")
		}
	}
	b.WriteString("```\n")
	return b.String()
}

// path names the ancestors of leaf d, top down.
func path(c *topology.Cluster, d int) string {
	low := c.Depth() - 1
	names := []string{}
	for l := low - 1; l >= 0; l-- {
		// The leaf's first node tells its ancestor at every level.
		first, _ := c.DomainRange(low, d)
		names = append([]string{c.DomainName(l, c.NodeDomain(first, l))}, names...)
	}
	return strings.Join(names, "/")
}

// goLiteral renders the fields of a request that the cases set.
func goLiteral(r placement.Request) string {
	var f []string
	if r.Nodes > 0 {
		f = append(f, fmt.Sprintf("Nodes: %d", r.Nodes))
	}
	if r.GPUsPerNode > 0 {
		f = append(f, fmt.Sprintf("GPUsPerNode: %d", r.GPUsPerNode))
	}
	if r.GPUs > 0 {
		f = append(f, fmt.Sprintf("GPUs: %d", r.GPUs))
	}
	if r.Required != "" {
		f = append(f, fmt.Sprintf("Required: %q", r.Required))
	}
	if r.Preferred != "" {
		f = append(f, fmt.Sprintf("Preferred: %q", r.Preferred))
	}
	return "placement.Request{" + strings.Join(f, ", ") + "}"
}

func kueueTopologyRequest(c Constraint) string {
	switch c {
	case RequiredLeaf:
		return fmt.Sprintf("{required: %s}", LevelLabel("leaf"))
	case PreferredSpine:
		return fmt.Sprintf("{preferred: %s}", LevelLabel("spine"))
	}
	return "{unconstrained: true}"
}
