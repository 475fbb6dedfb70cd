package preempt

import (
	"math/rand/v2"
	"testing"
)

func TestDebugSeed(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(2374), 16))
	in := randomInstance(r)
	t.Log(in.c.Describe(), in.l.State().Describe(), in.l.Describe())
	t.Logf("req %+v", in.req.Gang)
	for _, c := range in.cands {
		t.Logf("%s class %d pol %v ex %v cost %d", c.ID, c.Class, c.Policy, c.Exempt, c.Cost)
	}
	s, _ := NewSearcher(in.c, Options{MaxWork: 1 << 16, ExactCandidates: 0})
	var res Result
	err := s.Find(in.l.State(), &in.req, in.cands, &res)
	t.Logf("%v %+v", err, res)
}
