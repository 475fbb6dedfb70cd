package preempt

import (
	"fmt"
	"math/bits"

	"github.com/phalanx-sched/phalanx/gang"
	ibits "github.com/phalanx-sched/phalanx/internal/bits"
	"github.com/phalanx-sched/phalanx/topology"
)

// This file holds the scratch-state operations every stage uses: release
// and restore candidates on the work state, trial admissions, the cheap
// GPU bounds, and the key of a victim set.

// key orders victim sets: lower is better, compared field by field.
type key struct {
	class   int
	cost    int64
	count   int
	domains int
}

func (a key) less(b key) bool {
	switch {
	case a.class != b.class:
		return a.class < b.class
	case a.cost != b.cost:
		return a.cost < b.cost
	case a.count != b.count:
		return a.count < b.count
	}
	return a.domains < b.domains
}

// flatten copies candidate i's entries into s.flat (once per search, when
// it is first released), those on nodes that
// are down last (placement never offers them and the state refuses to
// allocate them again, so releases leave them alone), and counts its GPUs
// on schedulable nodes. A node the cluster does not have is an error.
func (s *Searcher) flatten(i int32) error {
	a := s.cands[i].Alloc
	s.fOff[i] = int32(len(s.flat))
	gpus, down := 0, 0
	for m := range a.Members {
		for _, e := range a.Members[m].Assignment {
			if e.Node < 0 || int(e.Node) >= len(s.nodeMask) {
				return fmt.Errorf("%w: %s (member %s): %w: node ID %d", ErrBadCandidate, s.cands[i].ID, a.Members[m].Name, topology.ErrUnknownNode, e.Node)
			}
			switch s.st.Status(e.Node) {
			case topology.Down:
				down++
				continue
			case topology.Up:
				gpus += bits.OnesCount64(e.GPUs)
			}
			s.flat = append(s.flat, e)
		}
	}
	s.fLive[i] = int32(len(s.flat))
	if down > 0 {
		for m := range a.Members {
			for _, e := range a.Members[m].Assignment {
				if s.st.Status(e.Node) == topology.Down {
					s.flat = append(s.flat, e)
				}
			}
		}
	}
	s.fEnd[i] = int32(len(s.flat))
	s.gpus[i] = int32(gpus)
	s.flatStamp[i] = s.findID
	return nil
}

// live returns candidate i's entries on nodes that are not down; all
// returns every entry.
func (s *Searcher) live(i int32) []topology.NodeAlloc { return s.flat[s.fOff[i]:s.fLive[i]] }
func (s *Searcher) all(i int32) []topology.NodeAlloc  { return s.flat[s.fOff[i]:s.fEnd[i]] }

// releaseCand returns candidate i's GPUs on the work state. An error means
// the candidate's allocation does not match the state.
func (s *Searcher) releaseCand(i int32) error {
	if s.flatStamp[i] != s.findID {
		if err := s.flatten(i); err != nil {
			return err
		}
	}
	if err := s.ws.Release(s.live(i)); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadCandidate, s.cands[i].ID, err)
	}
	s.rel[i] = true
	s.relList = append(s.relList, i)
	return nil
}

// mustRelease releases a candidate already validated by a release.
func (s *Searcher) mustRelease(i int32) {
	if err := s.releaseCand(i); err != nil {
		panic(fmt.Sprintf("preempt: validated candidate refused: %v", err))
	}
}

// restoreCand allocates candidate i's GPUs again (they were released and
// nothing holds them now).
func (s *Searcher) restoreCand(i int32) {
	if err := s.ws.Allocate(s.live(i)); err != nil {
		panic(fmt.Sprintf("preempt: restoring %s: %v", s.cands[i].ID, err))
	}
	s.rel[i] = false
}

// restoreOne restores candidate i and drops it from the released list.
func (s *Searcher) restoreOne(i int32) {
	s.restoreCand(i)
	for k, j := range s.relList {
		if j == i {
			s.relList = append(s.relList[:k], s.relList[k+1:]...)
			return
		}
	}
}

// resetWork makes the work state a copy of the caller's state again.
func (s *Searcher) resetWork() {
	if err := s.st.CopyInto(s.ws); err != nil {
		panic(fmt.Sprintf("preempt: %v", err))
	}
	for _, i := range s.relList {
		s.rel[i] = false
	}
	s.relList = s.relList[:0]
}

// apply makes exactly the candidates of set released on the work state,
// restoring the others. It returns the first release error (for
// candidates not validated yet).
func (s *Searcher) apply(set []int32) error {
	s.nextEpoch()
	for _, i := range set {
		s.stamp[i] = s.epoch
	}
	if len(s.relList) > 2*len(set)+32 {
		s.resetWork() // cheaper than restoring one by one
	} else {
		k := 0
		for _, i := range s.relList {
			if s.stamp[i] == s.epoch {
				s.relList[k] = i
				k++
				continue
			}
			s.restoreCand(i)
		}
		s.relList = s.relList[:k]
	}
	for _, i := range set {
		if !s.rel[i] {
			if err := s.releaseCand(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// mustApply is apply for validated candidates.
func (s *Searcher) mustApply(set []int32) {
	if err := s.apply(set); err != nil {
		panic(fmt.Sprintf("preempt: validated candidate refused: %v", err))
	}
}

func (s *Searcher) nextEpoch() {
	s.epoch++
	if s.epoch == 0 {
		clear(s.stamp)
		s.epoch = 1
	}
}

// admit tries the gang g on the work state and, when it fits, leaves its
// placement in s.trial and releases it again, so the work state is
// unchanged either way. Each call is one unit of work.
func (s *Searcher) admit(g *gang.Spec) bool {
	s.tries++
	res, err := s.adm.Admit(s.ws, g, &s.trial)
	if err != nil {
		panic(fmt.Sprintf("preempt: validated gang refused: %v", err))
	}
	if !res.Admitted {
		s.lastFail = res
		return false
	}
	for m := range s.trial.Members {
		if err := s.ws.Release(s.trial.Members[m].Assignment); err != nil {
			panic(fmt.Sprintf("preempt: releasing a trial admission: %v", err))
		}
	}
	return true
}

// spend takes one unit of the search budget, reporting false when none is
// left.
func (s *Searcher) spend() bool {
	if s.budget <= 0 {
		return false
	}
	s.budget--
	return true
}

// boundOK is a necessary condition for the preemptor to fit on the work
// state: enough free GPUs in the cluster, and in some domain of the level
// the whole gang must sit in; enough nodes with the GPUs a pod of the lead
// member needs, in some domain of its level.
func (s *Searcher) boundOK() bool {
	if s.ws.FreeGPUs() < s.need {
		return false
	}
	if s.reqLevel >= 0 && !s.someDomain(s.reqLevel, func(d int) bool { return s.ws.DomainFreeGPUs(s.reqLevel, d) >= s.need }) {
		return false
	}
	switch {
	case s.lead < 0:
		return true
	case s.podLevel < 0:
		return s.podNodes(-1, 0) >= s.pods
	}
	return s.someDomain(s.podLevel, func(d int) bool { return s.podNodes(s.podLevel, d) >= s.pods })
}

// someDomain reports whether ok holds for a domain of level l.
func (s *Searcher) someDomain(l int, ok func(d int) bool) bool {
	for d := range s.c.NumDomains(l) {
		if ok(d) {
			return true
		}
	}
	return false
}

// podNodes counts the schedulable nodes of domain d of level l (the
// cluster for l < 0) that have the GPUs one pod needs on the work state:
// idle nodes for whole or exclusive nodes, else nodes with perPod free.
func (s *Searcher) podNodes(l, d int) int {
	first, end := 0, s.c.NumNodes()
	if l >= 0 {
		f, e := s.c.DomainRange(l, d)
		first, end = int(f), int(e)
	}
	switch {
	case s.perPod == 0:
		return ibits.Count(s.words.Idle, first, end)
	case s.perPod > s.c.MaxNodeGPUs():
		return 0
	}
	return ibits.Count(s.words.AvailWords(s.perPod), first, end)
}

// keyOf computes the key of a victim set.
func (s *Searcher) keyOf(set []int32) key {
	k := key{class: minInt, count: len(set)}
	for _, i := range set {
		k.class = max(k.class, s.cands[i].Class)
		k.cost += s.cands[i].Cost
	}
	k.domains = s.domainsOf(set)
	return k
}

const minInt = -int(^uint(0)>>1) - 1

// domainsOf counts the lowest-level domains holding GPUs of the set.
func (s *Searcher) domainsOf(set []int32) int {
	if s.low < 0 {
		return min(len(set), 1)
	}
	s.domEpoch++
	if s.domEpoch == 0 {
		clear(s.domMark)
		s.domEpoch = 1
	}
	n := 0
	for _, i := range set {
		for _, e := range s.all(i) {
			d := s.c.NodeDomain(e.Node, s.low)
			if s.domMark[d] != s.domEpoch {
				s.domMark[d] = s.domEpoch
				n++
			}
		}
	}
	return n
}

// markAlloc records the GPUs of a placement per node (s.nodeMask), so
// overlaps reports which candidates hold GPUs it uses; unmarkAlloc clears
// them again.
func (s *Searcher) markAlloc(a *gang.Allocation) {
	for m := range a.Members {
		for _, e := range a.Members[m].Assignment {
			s.nodeMask[e.Node] |= e.GPUs
		}
	}
}

func (s *Searcher) unmarkAlloc(a *gang.Allocation) {
	for m := range a.Members {
		for _, e := range a.Members[m].Assignment {
			s.nodeMask[e.Node] = 0
		}
	}
}

// overlaps reports whether candidate i holds a GPU marked by markAlloc.
func (s *Searcher) overlaps(i int32) bool {
	for _, e := range s.live(i) {
		if s.nodeMask[e.Node]&e.GPUs != 0 {
			return true
		}
	}
	return false
}
