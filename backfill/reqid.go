package backfill

import "github.com/phalanx-sched/phalanx/placement"

// The same-shape failure cache confirms a hash match by comparing the two
// jobs' requests, 200 bytes of fields and strings. Each simple job is
// instead given, when it is accepted, the number of its request in a
// bounded table, and the cache compares numbers. A number names one
// request value for the engine's lifetime (numbers are never reused), so
// equal numbers mean equal requests; a request evicted from the table and
// seen again gets a new number, which costs cache hits between jobs
// numbered before and after, never a wrong answer.

const (
	reqTableCap = 1024 // slots
	reqProbe    = 8    // slots tried from a request's home
)

type reqSlot struct {
	id   uint64 // 0: empty
	hash uint64
	req  placement.Request
}

// reqTable numbers distinct requests (see above).
type reqTable struct {
	slots []reqSlot // made when first needed
	last  uint64    // the last number given
	evict int       // the next slot a full probe window gives up
}

// id returns the number of request r, whose shapeHash-style hash is h.
func (t *reqTable) id(h uint64, r *placement.Request) uint64 {
	if t.slots == nil {
		t.slots = make([]reqSlot, reqTableCap)
	}
	home := int((h * 0x9e3779b97f4a7c15) >> (64 - 10)) // reqTableCap = 1<<10
	at := -1
	for i := range reqProbe {
		s := &t.slots[(home+i)%reqTableCap]
		if s.id == 0 {
			at = (home + i) % reqTableCap
			break
		}
		if s.hash == h && s.req == *r {
			return s.id
		}
	}
	if at < 0 {
		at = (home + t.evict) % reqTableCap
		t.evict = (t.evict + 1) % reqProbe
	}
	t.last++
	t.slots[at] = reqSlot{id: t.last, hash: h, req: *r}
	return t.last
}
