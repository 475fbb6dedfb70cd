package hostlist

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want []string
	}{
		{"empty", "", nil},
		{"plain name", "login", []string{"login"}},
		{"list of names", "a,b,c", []string{"a", "b", "c"}},
		{"range", "n[1-3]", []string{"n1", "n2", "n3"}},
		{"range and number", "node[001-003,020]", []string{"node001", "node002", "node003", "node020"}},
		{"single number keeps its digits", "n[007]", []string{"n007"}},
		{"padding from first bound", "n[01-3]", []string{"n01", "n02", "n03"}},
		{"second bound width ignored", "n[1-03]", []string{"n1", "n2", "n3"}},
		{"padded range grows past width", "n[098-101]", []string{"n098", "n099", "n100", "n101"}},
		{"unpadded range grows", "n[8-11]", []string{"n8", "n9", "n10", "n11"}},
		{"zero", "n[0-1]", []string{"n0", "n1"}},
		{"width per range", "n[01-02,5]", []string{"n01", "n02", "n5"}},
		{"dash in prefix", "gpu-[1-2]", []string{"gpu-1", "gpu-2"}},
		{"suffix", "n[1-2]-ib", []string{"n1-ib", "n2-ib"}},
		{"no prefix", "[1-3]", []string{"1", "2", "3"}},
		{"cartesian product, leftmost slowest", "rack[0-1]_blade[0-2]", []string{
			"rack0_blade0", "rack0_blade1", "rack0_blade2",
			"rack1_blade0", "rack1_blade1", "rack1_blade2",
		}},
		{"adjacent groups", "[1-2][7,9]", []string{"17", "19", "27", "29"}},
		{"order kept", "n[3,1,2]", []string{"n3", "n1", "n2"}},
		{"duplicates kept", "n[1-2,2],n1", []string{"n1", "n2", "n2", "n1"}},
		{"several elements with brackets", "a[1-2],b,c[3]", []string{"a1", "a2", "b", "c3"}},
		{"single-value range", "n[5-5]", []string{"n5"}},
		{"large numbers", "n[999999999999999998-999999999999999999]", []string{"n999999999999999998", "n999999999999999999"}},
		{"dots and underscores", "switch.1.[1-2]", []string{"switch.1.1", "switch.1.2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Expand(tt.expr)
			if err != nil {
				t.Fatalf("Expand(%q): %v", tt.expr, err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Expand(%q) = %q, want %q", tt.expr, got, tt.want)
			}
		})
	}
}

func TestExpandErrors(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want string // a fragment of the message besides the expression
	}{
		{"descending range", "n[5-3]", `descending range "5-3"`},
		{"empty brackets", "n[]", `empty brackets "[]"`},
		{"non-numeric range", "n[a-c]", `non-numeric range "a-c"`},
		{"non-numeric number", "n[1,x]", `non-numeric range "x"`},
		{"missing lower bound", "n[-3]", `non-numeric range "-3"`},
		{"missing upper bound", "n[3-]", `non-numeric range "3-"`},
		{"double dash", "n[1-2-3]", `non-numeric range "1-2-3"`},
		{"unterminated range", "n[1-", `unterminated "[1-"`},
		{"unterminated bracket", "n[", `unterminated "["`},
		{"unterminated after comma", "n[1,", `unterminated "[1,"`},
		{"stray close", "n1]", `stray "]"`},
		{"stray close alone", "]", `stray "]"`},
		{"nested brackets", "n[1[2]]", `nested "["`},
		{"empty element", "a,,b", "offset 2: empty element"},
		{"leading comma", ",a", "offset 0: empty element"},
		{"trailing comma", "a,", "offset 2: empty element"},
		{"lone comma", ",", "empty element"},
		{"empty range in list", "n[1,,2]", `empty range in "[1,,2]"`},
		{"trailing comma in bracket", "n[1,]", `empty range in "[1,]"`},
		{"space", "a b", "white space"},
		{"tab", "a\tb", "white space"},
		{"newline", "a\n", "white space"},
		{"too many digits", "n[1234567890123456789]", "more than 18 digits"},
		{"too large", "n[0-1048576]", "more than 1048576 names"},
		{"too large product", "a[1-1024]b[1-1025]", "more than 1048576 names"},
		{"too large total", "a[1-1048576],b", "more than 1048576 names"},
		{"absurd range", "n[0-999999999999999999]", "more than 1048576 names"},
		{"absurd product", "a[0-999999999999999999]b[0-999999999999999999]c[0-999999999999999999]", "more than 1048576 names"},
		{"long names, many of them", strings.Repeat("x", 256) + "[0-1048575]", "more than 67108864 bytes of names"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Expand(tt.expr)
			if err == nil {
				t.Fatalf("Expand(%q) = %q, want an error", tt.expr, got)
			}
			if got != nil {
				t.Errorf("Expand(%q) returned names %q with its error", tt.expr, got)
			}
			if !errors.Is(err, ErrSyntax) {
				t.Errorf("error %v does not wrap ErrSyntax", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, fmt.Sprintf("%q", tt.expr)) || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not quote %q and contain %q", msg, tt.expr, tt.want)
			}
		})
	}
}

func TestCompress(t *testing.T) {
	tests := []struct {
		name  string
		names []string
		want  string
	}{
		{"empty", nil, ""},
		{"one name", []string{"n1"}, "n1"},
		{"no digits", []string{"login", "head"}, "login,head"},
		{"run", []string{"n1", "n2", "n3"}, "n[1-3]"},
		{"run and single", []string{"n1", "n2", "n3", "n7"}, "n[1-3,7]"},
		{"padded run", []string{"node001", "node002", "node003", "node020"}, "node[001-003,020]"},
		{"unpadded run crosses a digit", []string{"n9", "n10", "n11"}, "n[9-11]"},
		{"padded run crosses its width", []string{"n098", "n099", "n100"}, "n[098-100]"},
		{"padding differs", []string{"n01", "n02", "n3"}, "n[01-02],n3"},
		{"padding differs within a run", []string{"n1", "n02"}, "n1,n02"},
		{"unpadded after padded", []string{"n08", "n09", "n10", "n11"}, "n[08-11]"},
		{"suffix", []string{"n1-ib", "n2-ib"}, "n[1-2]-ib"},
		{"suffix differs", []string{"n1-ib", "n2-eth"}, "n1-ib,n2-eth"},
		{"prefix differs", []string{"a1", "b2", "a3"}, "a1,b2,a3"},
		{"only adjacent names merge", []string{"a1", "b1", "a2"}, "a1,b1,a2"},
		{"unsorted", []string{"n3", "n1", "n2"}, "n[3,1-2]"},
		{"descending", []string{"n2", "n1"}, "n[2,1]"},
		{"duplicates", []string{"n1", "n1", "n2"}, "n[1,1-2]"},
		{"last digit run", []string{"rack0_blade1", "rack0_blade2", "rack1_blade0"}, "rack0_blade[1-2],rack1_blade0"},
		{"digits only", []string{"1", "2", "3"}, "[1-3]"},
		{"mixed", []string{"login", "n1", "n2", "gpu-01", "gpu-02"}, "login,n[1-2],gpu-[01-02]"},
		{"huge number kept", []string{"n1234567890123456789", "n1234567890123456790"}, "n1234567890123456789,n1234567890123456790"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compress(tt.names)
			if got != tt.want {
				t.Fatalf("Compress(%q) = %q, want %q", tt.names, got, tt.want)
			}
			back, err := Expand(got)
			if err != nil {
				t.Fatalf("Expand(%q): %v", got, err)
			}
			if !slices.Equal(back, tt.names) {
				t.Fatalf("Expand(%q) = %q, want %q", got, back, tt.names)
			}
		})
	}
}

// TestHostlistRoundTripProperty checks Expand(Compress(x)) == x on random
// lists drawn from a few prefixes, widths and suffixes, with runs,
// duplicates and shuffles.
func TestHostlistRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	prefixes := []string{"", "n", "node", "gpu-", "rack1_blade", "a.b"}
	suffixes := []string{"", "-ib", "x", ".eth0"}
	for iter := 0; iter < 5000; iter++ {
		var names []string
		for len(names) < 1+r.IntN(40) {
			switch r.IntN(5) {
			case 0: // a name without digits
				names = append(names, []string{"login", "head", "x-y"}[r.IntN(3)])
			case 1: // a duplicate
				if len(names) > 0 {
					names = append(names, names[r.IntN(len(names))])
				}
			default: // a run
				prefix := prefixes[r.IntN(len(prefixes))]
				suffix := suffixes[r.IntN(len(suffixes))]
				width := r.IntN(4)
				v := uint64(r.IntN(120))
				if r.IntN(10) == 0 {
					v = 999_999_999_999_999_990 + uint64(r.IntN(5))
				}
				for k := r.IntN(6); k >= 0; k-- {
					names = append(names, prefix+padHostNumber(v, width)+suffix)
					v++
				}
			}
		}
		if r.IntN(3) == 0 {
			r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		}
		expr := Compress(names)
		back, err := Expand(expr)
		if err != nil {
			t.Fatalf("names %q: Expand(%q): %v", names, expr, err)
		}
		if !slices.Equal(back, names) {
			t.Fatalf("names %q: Expand(%q) = %q", names, expr, back)
		}
	}
}

func FuzzHostlist(f *testing.F) {
	for _, s := range []string{
		"", "n1", "a,b", "n[1-3]", "node[001-016,020]", "n[01-3]", "n[1-03]",
		"rack[0-1]_blade[0-2]", "n[1-2]-ib", "[1-3]", "gpu-[1-4]", "n[3,1,1-2]",
		"n[5-3]", "n[]", "n[a-c]", "n[1-", "n1]", "n[1[2]]", "a,,b", "a,",
		"n[0-1048576]", "a[0-999999999999999999]b[0-999999999999999999]",
		"n[098-100]", "n[9-10],x[0]", "sw.[1-2].[01-03]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		names, err := Expand(expr)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Expand(%q): error %v does not wrap ErrSyntax", expr, err)
			}
			if names != nil {
				t.Fatalf("Expand(%q): names with an error", expr)
			}
			return
		}
		if len(names) > MaxNames {
			t.Fatalf("Expand(%q): %d names, above the cap", expr, len(names))
		}
		c := Compress(names)
		back, err := Expand(c)
		if err != nil {
			t.Fatalf("Expand(%q) = %d names; Expand(Compress = %q): %v", expr, len(names), c, err)
		}
		if !slices.Equal(back, names) {
			t.Fatalf("round trip of %q through %q lost names", expr, c)
		}
	})
}

func TestCount(t *testing.T) {
	for _, expr := range []string{"", "a", "n[1-3],m", "rack[0-1]_blade[0-2]", "n[1-2,2],n1", "n[0-1048575]"} {
		names, err := Expand(expr)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := Count(expr); err != nil || n != len(names) {
			t.Errorf("Count(%q) = %d, %v; want %d", expr, n, err, len(names))
		}
	}
	for _, expr := range []string{"n[5-3]", "n[0-1048576]", "a[0-1024]b[0-1024]"} {
		_, want := Expand(expr)
		if n, err := Count(expr); err == nil || err.Error() != want.Error() || n != 0 {
			t.Errorf("Count(%q) = %d, %v; want the error %v", expr, n, err, want)
		}
	}
}

// TestExpandManyRanges: an expression of many ranges in one bracket
// (every other node of 8,000, as a node set is written) expands back:
// MaxBytes counts each name's length, not the bracket's (it counted the
// bracket's and refused what Compress writes), and a long name is still
// counted whole.
func TestExpandManyRanges(t *testing.T) {
	var names []string
	for n := 0; n < 8000; n += 2 {
		names = append(names, fmt.Sprintf("node%05d", n))
	}
	expr := Compress(names)
	if back, err := Expand(expr); err != nil || !slices.Equal(back, names) {
		t.Fatalf("Expand(Compress(every other node of 8,000)), %d bytes: %d names, error %t", len(expr), len(back), err != nil)
	}
	long := strings.Repeat("x", 57) + "[0-1048575]" // 64-byte names: at MaxBytes
	if n, err := Count(long); err != nil || n != MaxNames {
		t.Errorf("Count(57 letters and a million 7-digit numbers) = %d, %v", n, err)
	}
	if _, err := Count("x" + long); err == nil {
		t.Errorf("Count(58 letters and a million 7-digit numbers): no error, want one above MaxBytes")
	}
}

// TestExpandAllocations checks that a bracket element's names share one
// string: the allocations of Expand do not grow with the number of names.
func TestExpandAllocations(t *testing.T) {
	small := testing.AllocsPerRun(20, func() { _, _ = Expand("node[0000001-0000010]") })
	large := testing.AllocsPerRun(20, func() { _, _ = Expand("node[0000001-0100000]") })
	if large > small+40 {
		t.Errorf("Expand: %v allocations for 10 names, %v for 100,000; want about the same", small, large)
	}
}

// TestCompressNamesExpandCannotWrite checks that names holding ',', '[',
// ']', white space or control characters, and the empty name, are written
// as they are, never merged into a bracket group with their neighbours
// (which would turn them into other names), while the names around them
// are compressed as usual.
func TestCompressNamesExpandCannotWrite(t *testing.T) {
	tests := []struct {
		name  string
		names []string
		want  string
	}{
		{"comma", []string{"a,1", "a,2"}, "a,1,a,2"},
		{"open bracket", []string{"a[1", "a[2"}, "a[1,a[2"},
		{"close bracket", []string{"a]1", "a]2"}, "a]1,a]2"},
		{"brackets", []string{"a[1]", "a[2]"}, "a[1],a[2]"},
		{"blank", []string{"a 1", "a 2"}, "a 1,a 2"},
		{"tab", []string{"a\t1", "a\t2"}, "a\t1,a\t2"},
		{"control", []string{"a\x011", "a\x012", "a\x7f3"}, "a\x011,a\x012,a\x7f3"},
		{"empty name", []string{"n1", "", "n2"}, "n1,,n2"},
		{"splits a run", []string{"n1", "n2", "n,3", "n4", "n5"}, "n[1-2],n,3,n[4-5]"},
		{"bracket digits not merged", []string{"n[1]", "n[2]", "n3"}, "n[1],n[2],n3"},
		{"doc example", []string{"n1", "n2", "a[1", "n3"}, "n[1-2],a[1,n3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Compress(tt.names); got != tt.want {
				t.Fatalf("Compress(%q) = %q, want %q", tt.names, got, tt.want)
			}
		})
	}
}

// writable reports whether Expand can give name back: a name that is not
// empty and holds none of ',', '[', ']', white space or control
// characters.
func writable(name string) bool {
	return name != "" && !strings.ContainsFunc(name, func(r rune) bool {
		return r == ',' || r == '[' || r == ']' || r <= ' ' || r == 0x7f
	})
}

// TestCompressRoundTripWithAnyNames sorts random lists of names, some of
// them holding the characters a hostlist cannot write, and checks
// Compress: a list of writable names expands back to itself; in any list
// each unwritable name stands alone, as it is, and the writable runs
// between them are compressed and expand back to themselves.
func TestCompressRoundTripWithAnyNames(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"n", "gpu-", "a", "x.y", ",", "[", "]", " ", "\t", "\x01", "-", "_"}
	name := func() string {
		var b strings.Builder
		for k := r.IntN(4); k >= 0; k-- {
			if r.IntN(2) == 0 {
				b.WriteString(pieces[r.IntN(len(pieces))])
			} else {
				b.WriteString(padHostNumber(uint64(r.IntN(30)), r.IntN(3)))
			}
		}
		return b.String()
	}
	for iter := 0; iter < 5000; iter++ {
		var names []string
		for k := r.IntN(30); k >= 0; k-- {
			switch n := name(); {
			case r.IntN(4) == 0 && len(names) > 0: // a run after the last name
				h, ok := splitHostName(names[len(names)-1])
				if !ok {
					names = append(names, n)
					continue
				}
				for v := h.value + 1; v < h.value+uint64(2+r.IntN(4)); v++ {
					names = append(names, h.prefix+padHostNumber(v, len(h.digits))+h.suffix)
				}
			default:
				names = append(names, n)
			}
		}
		if r.IntN(10) == 0 {
			names = append(names, "")
		}
		slices.Sort(names)
		for _, n := range names {
			if Writable(n) != writable(n) {
				t.Fatalf("Writable(%q) = %v", n, Writable(n))
			}
		}
		expr := Compress(names)
		// Build the expected result: unwritable names as they are, runs
		// of writable names compressed on their own.
		var parts []string
		run := 0
		for i := 0; i <= len(names); i++ {
			if i < len(names) && writable(names[i]) {
				continue
			}
			if i > run {
				seg := Compress(names[run:i])
				back, err := Expand(seg)
				if err != nil || !slices.Equal(back, names[run:i]) {
					t.Fatalf("names %q: Expand(Compress) of %q = %q, %v", names, seg, back, err)
				}
				parts = append(parts, seg)
			}
			if i < len(names) {
				parts = append(parts, names[i])
			}
			run = i + 1
		}
		if want := strings.Join(parts, ","); expr != want {
			t.Fatalf("Compress(%q) = %q, want %q", names, expr, want)
		}
		if !slices.ContainsFunc(names, func(n string) bool { return !writable(n) }) {
			back, err := Expand(expr)
			if err != nil || !slices.Equal(back, names) {
				t.Fatalf("Expand(Compress(%q)) = %q, %v", names, back, err)
			}
		}
	}
}
