package preempt

import (
	"fmt"

	"github.com/phalanx-sched/phalanx/gang"
)

// VerdictCode classifies the outcome of a search.
type VerdictCode uint8

const (
	// Found: releasing the victims lets the preemptor in.
	Found VerdictCode = iota
	// Fits: the preemptor fits without preempting anything.
	Fits
	// NoVictims: even with every lower-class running gang stopped
	// (protected ones included) the preemptor would not fit, or there is
	// no lower-class gang at all.
	NoVictims
	// Exempt: only stopping gangs inside their exempt time would make
	// room.
	Exempt
	// NotPreemptible: only stopping gangs whose policy is Never would
	// make room.
	NotPreemptible
	// Protected: only stopping both gangs inside their exempt time and
	// gangs whose policy is Never would make room.
	Protected
	// SearchBound: stopping every preemptible lower-class gang would make
	// room, but the search found no victim set within Options.MaxWork (or
	// its heuristic found none: a search without the exact stage does not
	// try every set).
	SearchBound
	// BadInput: Find refused the request or a candidate (it returned an
	// error) and searched nothing.
	BadInput
)

var codeNames = [...]string{"found", "fits", "no-victims", "exempt", "not-preemptible", "protected", "search-bound", "bad-input"}

// String returns a short stable name for the code.
func (c VerdictCode) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", uint8(c))
}

// Explanation says what the search concluded, in terms a user understands.
// It is a plain value (Find allocates nothing to report it); String
// renders it.
type Explanation struct {
	// Code is the outcome.
	Code VerdictCode
	// Class is the preemptor's class.
	Class int
	// Lower counts the running gangs of a lower class; Exempt and Never
	// count those of them inside their exempt time (with a policy other
	// than Never) and those whose policy is Never.
	Lower, Exempt, Never int
	// Admission says, for NoVictims with Lower above zero, why the
	// preemptor would not fit even with every lower-class gang stopped.
	Admission gang.Admission
	// Work is the trial admissions made (SearchBound).
	Work int
}

// String renders the reason, for example "no lower-class victims in any
// domain that could hold it: with every lower-class gang stopped (12
// gangs), member worker: needs 16 nodes with 8 free GPUs under one leaf;
// the best leaf has 12".
func (r Explanation) String() string {
	switch r.Code {
	case Found:
		return "victims found"
	case Fits:
		return "fits without preemption"
	case NoVictims:
		if r.Lower == 0 {
			return fmt.Sprintf("no lower-class victims in any domain that could hold it: no running gang has a class below %d", r.Class)
		}
		return fmt.Sprintf("no lower-class victims in any domain that could hold it: with every lower-class gang stopped (%s), %s", gangs(r.Lower), r.Admission)
	case Exempt:
		return fmt.Sprintf("the only victims are inside their exempt time (%s of class below %d)", gangs(r.Exempt), r.Class)
	case NotPreemptible:
		return fmt.Sprintf("the only victims cannot be preempted (%s of class below %d with policy never)", gangs(r.Never), r.Class)
	case Protected:
		return fmt.Sprintf("the only victims are inside their exempt time (%s) or cannot be preempted (%s with policy never)", gangs(r.Exempt), gangs(r.Never))
	case SearchBound:
		return fmt.Sprintf("no victim set found in %d trial admissions, though stopping every preemptible lower-class gang would make room", r.Work)
	case BadInput:
		return "no search: the request or a candidate was refused"
	}
	return r.Code.String()
}

// Error lets an Explanation be returned as an error by callers that want one.
func (r Explanation) Error() string { return r.String() }

func gangs(n int) string {
	if n == 1 {
		return "1 gang"
	}
	return fmt.Sprintf("%d gangs", n)
}

// explain fills out.Reason when no victim set was found. room reports
// whether stopping every preemptible lower-class gang makes room (the
// search then ran out of budget). Otherwise it tries, in turn, also
// stopping the lower-class gangs inside their exempt time, those with
// policy Never, and both, to say which protection keeps the preemptor
// out; a candidate refused by the state is an error.
func (s *Searcher) explain(room bool, out *Verdict) error {
	r := &out.Reason
	defer func() { out.Work = s.tries }()
	if room {
		r.Code, r.Work = SearchBound, s.tries
		return nil
	}
	for i := range s.cands {
		c := &s.cands[i]
		if c.Class >= s.req.Class {
			continue
		}
		r.Lower++
		switch {
		case c.Policy == Never:
			r.Never++
		case c.Exempt:
			r.Exempt++
		}
	}
	r.Code, r.Admission = NoVictims, s.lastFail
	if r.Lower == 0 {
		return nil
	}
	tries := [...]struct {
		exempt, never bool
		code          VerdictCode
	}{{true, false, Exempt}, {false, true, NotPreemptible}, {true, true, Protected}}
	for _, t := range tries {
		if t.exempt && r.Exempt == 0 || t.never && r.Never == 0 {
			continue
		}
		fits, err := s.fitsWithProtected(t.exempt, t.never)
		if err != nil || fits {
			r.Code = t.code
			return err
		}
	}
	// Every lower-class gang stopped: why it still does not fit (the last
	// try above stopped them all, when there was one).
	if r.Exempt+r.Never == 0 {
		if _, err := s.fitsWithProtected(false, false); err != nil {
			return err
		}
	}
	r.Admission = s.lastFail
	return nil
}

// fitsWithProtected releases every eligible candidate and, as asked, the
// lower-class ones inside their exempt time and those with policy Never,
// and reports whether the preemptor then fits (leaving the failure in
// s.lastFail when not).
func (s *Searcher) fitsWithProtected(exempt, never bool) (bool, error) {
	s.cur = append(s.cur[:0], s.elig...)
	for i := range s.cands {
		c := &s.cands[i]
		if c.Class >= s.req.Class || c.Preemptible(s.req.Class) {
			continue
		}
		if c.Policy == Never && never || c.Policy != Never && c.Exempt && exempt {
			s.cur = append(s.cur, int32(i))
		}
	}
	if err := s.apply(s.cur); err != nil {
		return false, err
	}
	return s.admit(s.req.Gang), nil
}
