package topology

import (
	"errors"
	"testing"
)

func TestDefectError(t *testing.T) {
	tests := []struct {
		d    Defect
		want string
	}{
		{Defect{File: "topology.conf", Line: 3, Err: ErrSyntax, Msg: "unknown key X="}, "topology.conf:3: topology: syntax error: unknown key X="},
		{Defect{File: "nodes.json", Err: ErrInvalidSpec, Msg: "no nodes"}, "nodes.json: topology: invalid cluster: no nodes"},
		{Defect{File: "f", Line: 1, Msg: "plain"}, "f:1: plain"},
		{Defect{Msg: "bare"}, "bare"},
	}
	for _, tt := range tests {
		if got := tt.d.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestDefects(t *testing.T) {
	one := &Defects{List: []Defect{{File: "a", Line: 1, Err: ErrDuplicate, Msg: "x"}}}
	if got := one.Error(); got != "a:1: topology: duplicate name: x" {
		t.Errorf("one defect: %q", got)
	}
	many := &Defects{List: []Defect{
		{File: "a", Line: 1, Err: ErrDuplicate, Msg: "x"},
		{File: "a", Line: 2, Err: ErrNotTree, Msg: "y"},
	}, More: 3}
	want := "5 defects:\na:1: topology: duplicate name: x\na:2: topology: not a tree: y\n(and 3 more, not listed)"
	if got := many.Error(); got != want {
		t.Errorf("many defects:\n%s\nwant\n%s", got, want)
	}
	var err error = many
	if !errors.Is(err, ErrNotTree) || !errors.Is(err, ErrDuplicate) || errors.Is(err, ErrSyntax) {
		t.Errorf("errors.Is does not see exactly the listed sentinels")
	}
	var d Defect
	if !errors.As(err, &d) || d.Line != 1 {
		t.Errorf("errors.As finds %+v, want the first defect", d)
	}
}
