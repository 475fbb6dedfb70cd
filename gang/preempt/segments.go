package preempt

import "github.com/phalanx-sched/phalanx/topology"

// Segments: when the lead member asks for segments of k nodes, each inside
// one domain of a level, enough nodes are not enough: the greedy of a
// scope counts the whole segments its nodes form per domain of that level
// and tries the preemptor only once there are enough of them.

// segStart counts the segments the scope's satisfied nodes form.
func (s *Searcher) segStart(sc *scope) {
	s.sc.segTotal = 0
	if !s.segmented() {
		return
	}
	first, end := s.scopeNodes(sc)
	for n := first; n < end; n++ {
		if s.sc.sat[n] {
			s.segAdd(n)
		}
	}
}

// segAdd counts node n as having the GPUs a pod needs.
func (s *Searcher) segAdd(n int) {
	d := 0
	if s.segLevel >= 0 {
		d = s.c.NodeDomain(topology.NodeID(n), s.segLevel)
	}
	c := s.sc.segCount[d]
	s.sc.segTotal += int((c+1)/int32(s.segSize) - c/int32(s.segSize))
	s.sc.segCount[d] = c + 1
}

// segEnd clears the counts of the scope's segment domains.
func (s *Searcher) segEnd(sc *scope) {
	if !s.segmented() {
		return
	}
	first, end := s.scopeNodes(sc)
	for n := first; n < end; n++ {
		d := 0
		if s.segLevel >= 0 {
			d = s.c.NodeDomain(topology.NodeID(n), s.segLevel)
		}
		s.sc.segCount[d] = 0
	}
}

func (s *Searcher) segmented() bool { return s.sc.nodeMode && s.segSize > 1 }

// segmentsOK reports whether the counted segments hold the lead member's
// pods.
func (s *Searcher) segmentsOK() bool {
	return !s.segmented() || s.sc.segTotal*s.segSize >= s.pods
}

// scopeNodes returns the node range of a scope.
func (s *Searcher) scopeNodes(sc *scope) (int, int) {
	if sc.level < 0 {
		return 0, s.c.NumNodes()
	}
	f, e := s.c.DomainRange(int(sc.level), int(sc.dom))
	return int(f), int(e)
}
