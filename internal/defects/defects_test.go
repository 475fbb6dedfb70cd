package defects

import (
	"errors"
	"strconv"
	"testing"

	"github.com/phalanx-sched/phalanx/topology"
)

func TestCollectorOrderAndBound(t *testing.T) {
	c := New(3)
	if c.Err() != nil || c.Len() != 0 {
		t.Fatal("empty collector reports defects")
	}
	c.File("main.conf")
	c.File("inc.conf")
	c.Addf("inc.conf", 1, topology.ErrSyntax, "in the include")
	c.Addf("main.conf", 9, topology.ErrSyntax, "late line")
	c.Addf("main.conf", 2, topology.ErrSyntax, "early line")
	c.Addf("main.conf", 1, topology.ErrSyntax, "past the bound %d", 4)
	c.Add(topology.Defect{File: "x", Msg: "past the bound too"})
	var ds *topology.Defects
	if !errors.As(c.Err(), &ds) {
		t.Fatalf("Err() = %v", c.Err())
	}
	if c.Len() != 5 || ds.More != 2 || len(ds.List) != 3 {
		t.Fatalf("Len %d, listed %d, more %d; want 5, 3, 2", c.Len(), len(ds.List), ds.More)
	}
	want := []string{"main.conf:2", "main.conf:9", "inc.conf:1"}
	for i, d := range ds.List {
		if got := d.File + ":" + strconv.Itoa(d.Line); got != want[i] {
			t.Errorf("defect %d at %s, want %s", i, got, want[i])
		}
	}
}

func TestCollectorDefaultBound(t *testing.T) {
	c := New(0)
	for i := range DefaultMax + 7 {
		c.Addf("f", i+1, topology.ErrSyntax, "defect %d", i)
	}
	var ds *topology.Defects
	if !errors.As(c.Err(), &ds) || len(ds.List) != DefaultMax || ds.More != 7 {
		t.Fatalf("listed %d, more %d", len(ds.List), ds.More)
	}
}
