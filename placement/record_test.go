package placement

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bits-and-blooms/bitset"

	"github.com/phalanx-sched/phalanx/topology"
)

// TestRequestRecordRoundTrip: every field of a Request survives Record,
// JSON and back, the segment layers included (they were dropped, so a
// restored request could cross the domains its layers required).
func TestRequestRecordRoundTrip(t *testing.T) {
	c := topology.Default2000()
	set := func(nodes ...int) func() *Request {
		return func() *Request {
			s := c.NewNodeSet()
			for _, n := range nodes {
				s.Set(uint(n))
			}
			return &Request{Nodes: 2, GPUsPerNode: 8, Allowed: s, Excluded: c.NewNodeSet(), AllowedLabel: "outside queue q's pool"}
		}
	}
	for _, tc := range []struct {
		name string
		req  func() *Request
	}{
		{"nodes", func() *Request { return &Request{Nodes: 4, GPUsPerNode: 4, Required: "leaf", Preferred: "spine"} }},
		{"GPU total", func() *Request { return &Request{GPUs: 12, Exclusive: true, MaxDomains: 2, MaxDomainsLevel: "leaf"} }},
		{"one segment layer", func() *Request { return &Request{Nodes: 8, GPUsPerNode: 8, SegmentSize: 4, SegmentLevel: "leaf"} }},
		{"two segment layers", func() *Request {
			return &Request{Nodes: 16, GPUsPerNode: 8, Segments: [MaxSegmentLayers]Segment{{Size: 8, Level: "spine"}, {Size: 4, Level: "leaf"}}}
		}},
		{"three segment layers", func() *Request {
			return &Request{Nodes: 16, GPUsPerNode: 8, Segments: [MaxSegmentLayers]Segment{{Size: 16, Level: "core"}, {Size: 8, Level: "spine"}, {Size: 4, Level: "leaf"}}}
		}},
		{"node sets", set(3, 4, 200)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.req()
			if err := want.Validate(c); err != nil {
				t.Fatalf("the test's request: %v", err)
			}
			rec := want.Record(c)
			data, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			var back RequestRecord
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			got, err := back.Request(c)
			if err != nil {
				t.Fatal(err)
			}
			if !sameNodeSet(got.Allowed, want.Allowed) || !sameNodeSet(got.Excluded, want.Excluded) {
				t.Fatalf("node sets: %s", data)
			}
			got.Allowed, got.Excluded, want.Allowed, want.Excluded = nil, nil, nil, nil
			if got != *want {
				t.Fatalf("read back %+v from %s, want %+v", got, data, *want)
			}
		})
	}
	t.Run("too many layers", func(t *testing.T) {
		rec := RequestRecord{Nodes: 16, Segments: make([]Segment, MaxSegmentLayers+1)}
		if _, err := rec.Request(c); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "4 segment layers, at most 3") {
			t.Fatalf("Request: %v", err)
		}
	})
}

// sameNodeSet reports whether a and b are both nil or hold the same
// nodes.
func sameNodeSet(a, b *bitset.BitSet) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}
