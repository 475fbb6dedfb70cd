package backfill

import "time"

// The reasons a plan lists when it lists only changes
// (Config.OnlyChangedWaits) are interned: each distinct content (job and
// priority aside) gets an ID, kept in the job's record with the reason.
// A same-shape failure carries its ID, so a job that fails the same way
// as last cycle costs one comparison of IDs instead of one of two
// 552-byte records; other jobs pay a hash and a comparison in the table.
// IDs are never reused: an ID names one content for the engine's
// lifetime (a content may get a second ID after the bounded table forgot
// it). So equal IDs mean an unchanged reason; unequal ones are checked
// against the job's last reason before the job is listed, which makes
// the listing exact: a job is listed exactly when its reason changed.
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
// adding the content to the table if it is not there: under the ID of
// job j's last reason when that says the same (j may be nil), else under
// a new ID.
func (e *Engine) waitID(w *Waiting, j *jobRec) uint64 {
	if e.waits == nil {
		e.waits = make([]internedWait, waitTableCap)
	}
	job, prio := w.Job, w.Priority
	w.Job, w.Priority = "", 0
	defer func() { w.Job, w.Priority = job, prio }()
	h := waitHash(w)
	home := int(h % waitTableCap)
	for i := range waitProbe {
		if x := &e.waits[(home+i)%waitTableCap]; x.id != 0 && x.hash == h && equalWaits(&x.w, w) {
			return x.id
		}
	}
	var id uint64
	if j != nil {
		id = keepID(j, w)
	}
	if id == 0 {
		e.waitSeq++
		id = e.waitSeq
	}
	e.evict++
	at := (home + int(e.evict%waitProbe)) % waitTableCap
	for i := range waitProbe {
		if e.waits[(home+i)%waitTableCap].id == 0 {
			at = (home + i) % waitTableCap
			break
		}
	}
	e.waits[at] = internedWait{w: *w, hash: h, id: id}
	if w.Hold != nil { // the table's own: the plan lists w's
		hs := *w.Hold
		e.waits[at].w.Hold = &hs
	}
	return id
}

// keepID returns j's reason's ID if w says the same as j's last reason
// (job and priority aside), else 0: the ID to intern w under on a table
// miss, and proof that j's reason did not change when the table gave
// the same content another ID (after forgetting it once).
func keepID(j *jobRec, w *Waiting) uint64 {
	if j.waitID != 0 && sameReason(w, j) {
		return j.waitID
	}
	return 0
}

// sameReason reports whether w says the same as job j's last reason, job
// and priority aside (w is left as it was).
func sameReason(w *Waiting, j *jobRec) bool {
	if j.waitID == 0 || w.Code != j.wait.Code || w.Blocker != j.wait.Blocker {
		return false // a cheap difference first: most changed reasons have one
	}
	job, p := w.Job, w.Priority
	w.Job, w.Priority = j.wait.Job, j.wait.Priority
	same := equalWaits(w, &j.wait)
	w.Job, w.Priority = job, p
	return same
}

// equalWaits reports whether a and b say the same: every field equal,
// a hold's status compared by content (a new one is made every cycle).
func equalWaits(a, b *Waiting) bool {
	ha, hb := a.Hold, b.Hold
	if (ha == nil) != (hb == nil) || ha != nil && *ha != *hb {
		return false
	}
	a.Hold = hb
	same := *a == *b
	a.Hold = ha
	return same
}

// waitHash hashes the content of w (equal contents hash equal; the table
// compares whole contents), finished by a mix that spreads every input
// bit over the low bits the table indexes by.
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
	str(w.Detail)
	r := &w.Reason
	mix(uint64(r.Code))
	str(r.Level)
	mix(uint64(r.Need))
	mix(uint64(r.Have))
	x := &r.Excluded
	mix(uint64(x.Down) ^ uint64(x.Drained)<<16 ^ uint64(x.OutsideAllowed)<<32 ^ uint64(x.InExcluded)<<48)
	mix(uint64(x.ShortOfGPUs))
	mix(uint64(w.Spans))
	mix(uint64(w.NoSlot))
	mix(uint64(w.PreemptPromised))
	if p := &w.Preempt; w.PreemptTried {
		mix(1 + uint64(p.Code))
		if w.PreemptReclaim {
			mix(1)
		}
		mix(uint64(p.Lower) ^ uint64(p.Exempt)<<20 ^ uint64(p.Never)<<40)
		mix(uint64(p.Work))
	}
	// A final avalanche (MurmurHash3's): the multiply above moves bits
	// only upwards, so without it times in whole seconds (the low bits of
	// their nanoseconds all zero) would share a few slots.
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// unixNanos returns t in nanoseconds since 1970, or 0 for the zero time.
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
