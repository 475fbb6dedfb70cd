package backfill

import "math"

// Classes carry quiet walks (quietWalk) across a change of the world.
//
// A cycle whose world changed (a job ended, a node came back) tests every
// waiting job again, yet most of them fail as they did: of two thousand
// waiting jobs, a few dozen shapes are tested and the rest are answered
// by the same-shape failure cache, each after its record is read. A
// job's failure, when its stamp holds (skipTest), is a function of its
// shape, the length of its reservation prefix (its slot) and the world:
// every job of the same shape and slot fails on the same scratch
// contents, with the same reason. The class of such a job is that shape,
// slot and reason ID, in the book's version (which fixes what the slot
// blocks); the walk marks each job's key with its class when it leaves
// the job with its stamp holding (classMark), and notes the world in
// which a job of the class failed so. In a later world, the walk tests
// the first job of each class it meets, from its record; once one failed
// with the class's reason on its slot, that world's other jobs of the
// class are passed over, their records unread, as unchanged
// (classHolds): their tests would hit the failure just cached.
//
// A class is trusted only while the book is the version its jobs were
// marked in and now is before the earliest time one of them would move
// to a longer prefix (the least of their stamps' untils); an entry
// outside those is dead, and the jobs marked with it are tested. Each
// entry claimed gets a fresh serial, which the keys carry: a key whose
// entry was claimed again names nothing. Classes are used under the
// quiet walk's conditions but the world (no preemption, no strict order,
// no window, no job left the kept order since the last walk), and not
// while hold mode may hold (a job's eligibility moves with its wait).

// classEntry is one entry of the class table: the shape, slot, reason
// ID and book version of a class, the least until of the stamps of the
// jobs marked with it, the world in which a job of it last failed as
// the class says (ok), and its serial (0: empty).
type classEntry struct {
	shape, id, book uint64
	slot            int
	until           int64
	ok, serial      uint64
}

// classBits sizes the class table; classProbe is how many entries a
// class may take from its home on.
const (
	classBits  = 10
	classCap   = 1 << classBits
	classProbe = 8
)

// classWalk reports whether this walk may pass over jobs by their classes
// (keys, the kept ranking's, nil when the walk marks nothing).
func (c *cycle) classWalk(keys []keptKey) bool {
	e := c.e
	if keys == nil {
		// A walk that marks no key may change reasons: no class mark
		// made before it is to be trusted after.
		c.forgetClasses()
		return false
	}
	if c.classes == nil {
		// Here from the first walk that marks keys on, so that a key
		// marked keptGone reads an entry (whose serial is not its).
		c.classes = make([]classEntry, classCap)
	}
	return e.pre == nil && !e.cfg.Strict && !c.windowed && c.qwLeft == e.kr.left && !e.mayHold()
}

// forgetClasses empties the class table, so that no job is passed over
// by a class marked before.
func (c *cycle) forgetClasses() {
	if c.classesLive {
		clear(c.classes)
		c.classesLive = false
	}
}

// classHolds reports whether the job whose key is k may be passed over
// as unchanged in the world that is (classUntil).
func (c *cycle) classHolds(k *keptKey) bool {
	_, ok := c.classUntil(k, c.worldNow())
	return ok
}

// classUntil returns the until of the class of the job whose key is k,
// and whether the job may be passed over as unchanged in world w: its
// entry is still its class's, a job of the class failed as the class says
// in w (a world has one book version, so the entry's is the book's), and
// now is before the class's until.
func (c *cycle) classUntil(k *keptKey, w uint64) (int64, bool) {
	if k.class == 0 {
		return 0, false
	}
	en := &c.classes[k.class&(classCap-1)]
	return en.until, en.serial == k.class>>classBits && en.ok == w && c.nowNs < en.until
}

// classMark marks key k of job j, whose stamp holds in world w (markQuiet
// calls it when the walk leaves the job so), with its class, and notes
// that a job of the class failed so in w; with none when the walk passes
// over no job by its class, or the stamp's until is now.
func (c *cycle) classMark(k *keptKey, j *jobRec, w uint64) {
	s := &j.stamp
	if !c.classOn || c.nowNs >= s.until {
		k.class = 0
		return
	}
	ver := c.e.book.version
	h := int(((j.shapeID ^ uint64(s.slot)<<40 ^ s.id<<20 ^ ver) * 0x9e3779b97f4a7c15) >> (64 - classBits))
	if c.e.collide {
		h = 0 // every class in one window: entries told apart by their fields alone
	}
	at := -1
	for i := range classProbe {
		i := (h + i) & (classCap - 1)
		en := &c.classes[i]
		live := en.serial != 0 && en.book == ver && c.nowNs < en.until
		if live && en.shape == j.shapeID && en.slot == s.slot && en.id == s.id {
			en.until = min(en.until, s.until)
			en.ok = w
			k.class = en.serial<<classBits | uint64(i)
			return
		}
		if !live && at < 0 {
			at = i
		}
	}
	if at < 0 {
		at = h // a full window: its first entry goes
	}
	c.classSerial++
	c.classesLive = true
	c.classes[at] = classEntry{shape: j.shapeID, id: s.id, book: ver, slot: s.slot, until: s.until, ok: w, serial: c.classSerial}
	k.class = c.classSerial<<classBits | uint64(at)
}

// passClasses passes over the run of jobs from rank on whose classes
// hold (classHolds), and the jobs that left among them while their keys
// may be trusted (goneOK), and returns the rank after the run (rank
// itself when the first job's class does not hold). Each job passed over
// is marked quiet in the world that is, until its class's until at the
// latest (markQuiet).
func (c *cycle) passClasses(keys []keptKey, rank int) int {
	w := c.worldNow()
	until, n := int64(math.MaxInt64), 0
	for ; rank < len(keys); rank++ {
		k := &keys[rank]
		if k.class == keptGone && c.goneOK {
			continue
		}
		u, ok := c.classUntil(k, w)
		if !ok {
			break
		}
		k.quiet = w
		until = min(until, u)
		n++
	}
	if n > 0 {
		if c.qwWorld != w {
			c.qwWorld, c.qwUntil = w, math.MaxInt64
		}
		c.qwUntil = min(c.qwUntil, until)
		c.plan.Tested += n
		c.plan.Unchanged += n
		c.classSkips += n
	}
	return rank
}
