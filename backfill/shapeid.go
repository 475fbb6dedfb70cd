package backfill

import "github.com/phalanx-sched/phalanx/placement"

// The same-shape failure cache confirmed a hash match by comparing the
// two jobs' shapes: 200 bytes of request fields and strings, and the
// member's bounds, the job's class and queue, read from three places per
// job. Each simple job is instead given, when it is accepted, the number
// of its shape in a bounded table, and the cache compares numbers. A
// number names one shape for the engine's lifetime (numbers are never
// reused), so equal numbers mean equal shapes; a shape evicted from the
// table and seen again gets a new number, which costs cache hits between
// jobs numbered before and after, never a wrong answer.

const (
	shapeTableCap = 1024 // slots
	shapeProbe    = 8    // slots tried from a request's home
)

// shapeFields is what two jobs of the same shape share: the request and
// bounds of their one member, their class and their queue.
type shapeFields struct {
	req                     placement.Request
	min, step, class, queue int
}

type shapeSlot struct {
	id   uint64 // 0: empty
	hash uint64
	sh   shapeFields
}

// shapeTable numbers distinct shapes (see above).
type shapeTable struct {
	slots []shapeSlot // made when first needed
	last  uint64      // the last number given
	evict int         // the next slot a full probe window gives up
}

// id returns the number of shape sh, whose shapeHash is h.
func (t *shapeTable) id(h uint64, sh *shapeFields) uint64 {
	if t.slots == nil {
		t.slots = make([]shapeSlot, shapeTableCap)
	}
	home := int((h * 0x9e3779b97f4a7c15) >> (64 - 10)) // shapeTableCap = 1<<10
	at := -1
	for i := range shapeProbe {
		s := &t.slots[(home+i)%shapeTableCap]
		if s.id == 0 {
			at = (home + i) % shapeTableCap
			break
		}
		if s.hash == h && s.sh == *sh {
			return s.id
		}
	}
	if at < 0 {
		at = (home + t.evict) % shapeTableCap
		t.evict = (t.evict + 1) % shapeProbe
	}
	t.last++
	t.slots[at] = shapeSlot{id: t.last, hash: h, sh: *sh}
	return t.last
}
