package backfill

import "time"

// The reasons a plan lists when it lists only changes
// (Config.OnlyChangedWaits) are interned: each distinct content (job and
// priority aside) gets an ID, kept in the job's record with the reason,
// so that an unchanged reason costs one comparison of IDs instead of
// one of two 552-byte records. IDs are never reused; the table is bounded,
// and a content it no longer holds gets a new ID when seen again (its
// jobs are then listed once more, which the doc allows).
const (
	waitTableCap = 1024
	waitProbe    = 8
)

// internedWait is one entry of the table: a reason's content and ID.
type internedWait struct {
	w    Waiting // Job and Priority zero
	hash uint64
	id   uint64 // 0: empty
}

// waitID returns the ID of w's content, its job and priority aside,
// adding the content to the table if it is not there.
func (e *Engine) waitID(w *Waiting) uint64 {
	if e.waits == nil {
		e.waits = make([]internedWait, waitTableCap)
	}
	job, prio := w.Job, w.Priority
	w.Job, w.Priority = "", 0
	defer func() { w.Job, w.Priority = job, prio }()
	h := waitHash(w)
	home := int(h % waitTableCap)
	for i := range waitProbe {
		if x := &e.waits[(home+i)%waitTableCap]; x.id != 0 && x.hash == h && x.w == *w {
			return x.id
		}
	}
	e.waitSeq++
	at := (home + int(e.waitSeq%waitProbe)) % waitTableCap
	for i := range waitProbe {
		if e.waits[(home+i)%waitTableCap].id == 0 {
			at = (home + i) % waitTableCap
			break
		}
	}
	e.waits[at] = internedWait{w: *w, hash: h, id: e.waitSeq}
	return e.waitSeq
}

// waitHash mixes the fields of w that tell reasons apart most often
// (equal contents hash equal; the table compares whole contents).
func waitHash(w *Waiting) uint64 {
	h := uint64(14695981039346656037)
	mix := func(v uint64) {
		h ^= v
		h *= 1099511628211
	}
	str := func(s string) {
		mix(uint64(len(s)))
		for i := 0; i < len(s); i++ {
			mix(uint64(s[i]))
		}
	}
	mix(uint64(w.Code))
	mix(uint64(unixNanos(w.Until)))
	str(w.Blocker)
	str(w.Member)
	r := &w.Reason
	mix(uint64(r.Code))
	mix(uint64(r.Need))
	mix(uint64(r.Have))
	mix(uint64(w.Spans))
	if w.PreemptTried {
		mix(1 + uint64(w.Preempt.Code))
	}
	return h
}

// unixNanos returns t in nanoseconds since 1970, or 0 for the zero time.
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
