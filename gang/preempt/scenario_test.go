package preempt

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/gang"
	"github.com/phalanx-sched/phalanx/internal/datadriven"
	"github.com/phalanx-sched/phalanx/internal/testcluster"
	"github.com/phalanx-sched/phalanx/placement"
	"github.com/phalanx-sched/phalanx/topology"
)

// scenario is the state of one scenario file.
type scenario struct {
	c     *topology.Cluster
	l     *gang.Ledger
	cands []Candidate
}

// TestScenarios runs testdata/*.txt. Commands:
//
//	cluster levels=a,b | gen=<generator>   (input: testcluster text)
//	run id=X class=N policy=P cost=S [exempt] <shape> [in=domain] [on=n1,n2]
//	       start running gang X (admitted where it fits, inside the
//	       lowest-level domain or on the nodes named); S in GPU-seconds
//	gangs                                  draw which gang holds each node
//	try [release=X,Y] <shape>              admit a gang with X, Y released
//	preempt class=N <shape> [maxwork=W] [exact=K]
//	       search victims for a gang of class N
//
// A shape is nodes=N [gpn=G] | gpus=G, [exclusive] [required=L]
// [max=K[@L]] [segment=S[@L]] [colocate=L].
func TestScenarios(t *testing.T) {
	var sc scenario
	datadriven.Glob(t, "testdata/*.txt", func(t *testing.T, d *datadriven.Case) string {
		switch d.Cmd {
		case "cluster":
			return sc.cluster(t, d)
		case "run":
			return sc.run(t, d)
		case "gangs":
			return sc.draw()
		case "try":
			return sc.try(t, d)
		case "preempt":
			return sc.preempt(t, d)
		}
		d.Fatalf(t, "unknown command")
		return ""
	})
}

func (sc *scenario) cluster(t *testing.T, d *datadriven.Case) string {
	d.Only(t, "levels", "gen")
	lv, _ := d.Get("levels")
	gen, _ := d.Get("gen")
	var levels []string
	if lv != "" {
		levels = strings.Split(lv, ",")
	}
	c, err := testcluster.Parse(levels, gen, d.Input)
	if err != nil {
		return "error: " + err.Error()
	}
	*sc = scenario{c: c, l: gang.NewLedger(c, gang.Options{})}
	return c.Describe()
}

// shape parses the gang arguments of a command into a one-member spec
// (with co-location when asked); other keys are left to the caller.
func (sc *scenario) shape(t *testing.T, d *datadriven.Case, id string) *gang.Spec {
	var req placement.Request
	g := &gang.Spec{ID: id}
	atoi := func(v string) int {
		n, err := strconv.Atoi(v)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		return n
	}
	for _, a := range d.Args {
		switch a.Key {
		case "nodes":
			req.Nodes = atoi(a.Val)
		case "gpn":
			req.GPUsPerNode = atoi(a.Val)
		case "gpus":
			req.GPUs = atoi(a.Val)
		case "exclusive":
			req.Exclusive = true
		case "required":
			req.Required = a.Val
		case "max":
			k, l, _ := strings.Cut(a.Val, "@")
			req.MaxDomains, req.MaxDomainsLevel = atoi(k), l
		case "segment":
			k, l, _ := strings.Cut(a.Val, "@")
			req.SegmentSize, req.SegmentLevel = atoi(k), l
		case "colocate":
			g.Colocate = gang.Colocation{Level: a.Val, Required: true}
		case "in", "on":
			req.Allowed = sc.nodes(t, d, a.Key, a.Val)
		}
	}
	g.Members = []gang.Member{{Name: "w", Request: req}}
	return g
}

// nodes returns the nodes of a lowest-level domain (in=) or named (on=).
func (sc *scenario) nodes(t *testing.T, d *datadriven.Case, key, val string) *bitset.BitSet {
	if key == "on" {
		set, err := sc.c.NodeSet(strings.Split(val, ",")...)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		return set
	}
	low := sc.c.Depth() - 1
	dom, ok := sc.c.DomainIndex(low, val)
	if !ok {
		d.Fatalf(t, "unknown domain %q", val)
	}
	return sc.c.DomainNodes(low, dom, nil)
}

var shapeKeys = []string{"nodes", "gpn", "gpus", "exclusive", "required", "max", "segment", "colocate"}

func (sc *scenario) run(t *testing.T, d *datadriven.Case) string {
	d.Only(t, append([]string{"id", "class", "policy", "cost", "exempt", "in", "on"}, shapeKeys...)...)
	id, _ := d.Get("id")
	pol, _ := d.Get("policy")
	p, ok := ParsePolicy(pol)
	if !ok {
		d.Fatalf(t, "policy %q", pol)
	}
	g := sc.shape(t, d, id)
	res, err := sc.l.Admit(g)
	if err != nil {
		return "error: " + err.Error()
	}
	if !res.Admitted {
		return "not admitted: " + res.String()
	}
	a, _ := sc.l.Get(id)
	sc.cands = append(sc.cands, Candidate{
		ID: id, Alloc: a, Class: d.Int(t, "class", 0), Policy: p,
		Exempt: d.Has("exempt"), Cost: int64(d.Int(t, "cost", 0)),
	})
	return fmt.Sprintf("%s: %d GPUs on %s", id, a.GPUs(), sc.hostlist(a))
}

func (sc *scenario) hostlist(a *gang.Allocation) string {
	var names []string
	for _, m := range a.Members {
		for _, e := range m.Assignment {
			names = append(names, sc.c.NodeName(e.Node))
		}
	}
	slices.Sort(names)
	return topology.CompressHostlist(names)
}

// draw shows, per lowest-level domain, which gang holds each node: its
// ID's first letter, '*' for several gangs, '.' for none.
func (sc *scenario) draw() string {
	var b strings.Builder
	low := sc.c.Depth() - 1
	for dom := range sc.c.NumDomains(low) {
		first, end := sc.c.DomainRange(low, dom)
		fmt.Fprintf(&b, "%-8s ", sc.c.DomainName(low, dom))
		for n := first; n < end; n++ {
			ch := byte('.')
			for _, c := range sc.cands {
				if c.Alloc.OnNode(topology.NodeID(n)) {
					if ch == '.' {
						ch = c.ID[0]
					} else {
						ch = '*'
					}
				}
			}
			b.WriteByte(ch)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// try admits a gang on a copy of the state with the named gangs released.
func (sc *scenario) try(t *testing.T, d *datadriven.Case) string {
	d.Only(t, append([]string{"release"}, shapeKeys...)...)
	st := sc.l.State().Clone()
	if ids, ok := d.Get("release"); ok {
		for _, id := range strings.Split(ids, ",") {
			a, ok := sc.l.Get(id)
			if !ok {
				d.Fatalf(t, "unknown gang %s", id)
			}
			for _, m := range a.Members {
				if err := st.Release(m.Assignment); err != nil {
					d.Fatalf(t, "%v", err)
				}
			}
		}
	}
	var a gang.Allocation
	res, err := gang.NewAdmitter(sc.c, gang.Options{}).Admit(st, sc.shape(t, d, "try"), &a)
	if err != nil {
		return "error: " + err.Error()
	}
	if !res.Admitted {
		return "does not fit: " + res.String()
	}
	return "fits on " + sc.hostlist(&a)
}

func (sc *scenario) preempt(t *testing.T, d *datadriven.Case) string {
	d.Only(t, append([]string{"class", "maxwork", "exact", "in", "on"}, shapeKeys...)...)
	o := DefaultOptions()
	o.MaxWork = d.Int(t, "maxwork", o.MaxWork)
	o.ExactCandidates = d.Int(t, "exact", o.ExactCandidates)
	s, err := NewSearcher(sc.c, o)
	if err != nil {
		return "error: " + err.Error()
	}
	req := &Preemptor{Gang: sc.shape(t, d, "urgent"), Class: d.Int(t, "class", 0)}
	var res Verdict
	if err := s.Find(sc.l.State(), req, sc.cands, &res); err != nil {
		return "error: " + err.Error()
	}
	return sc.describe(&res)
}

// describe renders a result: the victims and the order's measures, then
// the preemptor's nodes ('@') on the state with the victims released.
func (sc *scenario) describe(res *Verdict) string {
	if !res.Found {
		return fmt.Sprintf("no victims (%s): %s", res.Reason.Code, res.Reason)
	}
	var b strings.Builder
	if res.Reason.Code == Fits {
		b.WriteString("fits without preemption")
	} else {
		fmt.Fprintf(&b, "preempt %s: highest class %d, %d GPU-s lost, %s, %d GPUs, %s",
			strings.Join(res.IDs, ","), res.MaxClass, res.Cost, plural(len(res.Victims), "gang"), res.GPUs,
			plural(res.Domains, sc.c.LevelName(sc.c.Depth()-1)))
		if res.Exact {
			b.WriteString("; exact")
		}
	}
	fmt.Fprintf(&b, "\nurgent on %s\n", sc.hostlist(&res.Allocation))
	st := sc.l.State().Clone()
	for _, v := range res.Victims {
		for _, m := range sc.cands[v].Alloc.Members {
			if err := st.Release(m.Assignment); err != nil {
				return "error: " + err.Error()
			}
		}
	}
	var all []topology.NodeAlloc
	for _, m := range res.Allocation.Members {
		all = append(all, m.Assignment...)
	}
	b.WriteString(testcluster.Draw(st, all, true))
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
