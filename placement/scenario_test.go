package placement

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/internal/datadriven"
	"github.com/phalanx-sched/phalanx/internal/testcluster"
	"github.com/phalanx-sched/phalanx/topology"
)

// TestScenarios runs testdata/*.txt. Commands:
//
//	cluster levels=a,b | gen=<generator>   (input: testcluster text)
//	state                                  (input: testcluster state text)
//	place nodes=N gpn=G | gpus=G  [exclusive] [required=L] [preferred=L]
//	      [max=K[@L]] [segment=S[@L]] [segments=S@L,S@L...]
//	      [excluded=n1,n2] [allowed=n1,n2] [label=words_of_AllowedLabel]
//	allocate                               (commit the last placement)
func TestScenarios(t *testing.T) {
	var (
		c    *topology.Cluster
		s    *topology.State
		p    *Placer
		last Result
	)
	datadriven.Glob(t, "testdata/*.txt", func(t *testing.T, d *datadriven.Case) string {
		switch d.Cmd {
		case "cluster":
			lv, _ := d.Get("levels")
			gen, _ := d.Get("gen")
			var levels []string
			if lv != "" {
				levels = strings.Split(lv, ",")
			}
			var err error
			c, err = testcluster.Parse(levels, gen, d.Input)
			if err != nil {
				return "error: " + err.Error()
			}
			s, p = topology.NewState(c), New(c, Options{})
			if gen != "" {
				return strings.SplitN(c.Describe(), "\n", 2)[0]
			}
			return c.Describe()
		case "state":
			if err := testcluster.ApplyState(s, d.Input); err != nil {
				d.Fatalf(t, "%v", err)
			}
			return s.Describe()
		case "place":
			req := parseRequest(t, d, c)
			res, err := p.Place(s, &req, nil)
			if err != nil {
				return "error: " + err.Error()
			}
			last = res
			return describeResult(c, s, &req, res)
		case "allocate":
			if err := s.Allocate(last.Assignment); err != nil {
				return "error: " + err.Error()
			}
			return s.Describe()
		}
		d.Fatalf(t, "unknown command")
		return ""
	})
}

func parseRequest(t *testing.T, d *datadriven.Case, c *topology.Cluster) Request {
	var req Request
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
		case "preferred":
			req.Preferred = a.Val
		case "max":
			k, l, _ := strings.Cut(a.Val, "@")
			req.MaxDomains, req.MaxDomainsLevel = atoi(k), l
		case "segment":
			k, l, _ := strings.Cut(a.Val, "@")
			req.SegmentSize, req.SegmentLevel = atoi(k), l
		case "segments":
			for i, layer := range strings.Split(a.Val, ",") {
				k, l, _ := strings.Cut(layer, "@")
				req.Segments[i] = Segment{Size: atoi(k), Level: l}
			}
		case "excluded", "allowed":
			set, err := c.NodeSet(strings.Split(a.Val, ",")...)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			if a.Key == "excluded" {
				req.Excluded = set
			} else {
				req.Allowed = set
			}
		case "label":
			req.AllowedLabel = strings.ReplaceAll(a.Val, "_", " ")
		default:
			d.Fatalf(t, "unknown argument %q", a.Key)
		}
	}
	return req
}

// describeResult renders a result for scenario files: a summary line, then
// the lowest-level domains that hold the assignment with its nodes as '@'.
func describeResult(c *topology.Cluster, s *topology.State, req *Request, res Result) string {
	if !res.Placed {
		return fmt.Sprintf("not placed (%s): %s", res.Reason.Code, res.Reason)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "placed %d nodes, %d GPUs, stranded %d", res.Nodes, res.GPUs, res.Stranded)
	if res.Within >= 0 {
		name := c.DomainName(res.Within, c.NodeDomain(topology.NodeID(res.Assignment[0].Node), res.Within))
		fmt.Fprintf(&b, " within %s %s", c.LevelName(res.Within), name)
	} else {
		b.WriteString(" across top-level domains")
	}
	b.WriteString("; spans")
	for l := range c.Depth() {
		fmt.Fprintf(&b, " %s=%d", c.LevelName(l), res.Spans[l])
	}
	if req.Preferred != "" {
		fmt.Fprintf(&b, "; preferred %s met: %v", req.Preferred, res.PreferenceMet)
	}
	names := make([]string, 0, len(res.Assignment))
	for _, a := range res.Assignment {
		names = append(names, c.NodeName(a.Node))
	}
	slices.Sort(names)
	fmt.Fprintf(&b, "\nnodes %s\n", topology.CompressHostlist(names))
	b.WriteString(testcluster.Draw(s, res.Assignment, false))
	return b.String()
}
