package fairshare

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// slurmText is the Slurm example tree in the text form, children listed
// before parents on purpose.
const slurmText = `
# Slurm's classic fair-share example
u1 parent=B            # sole user of B
u2 parent=C shares=1
u3 parent=C shares=1
u4 parent=E
u5 parent=F
A  shares=40
B  parent=A shares=30
C  parent=A shares=10
D  parent=root shares=60
E  parent=D shares=25
F  parent=D shares=35
`

const slurmJSON = `{"accounts": [
	{"name": "A", "shares": 40}, {"name": "D", "parent": "root", "shares": 60},
	{"name": "B", "parent": "A", "shares": 30}, {"name": "C", "parent": "A", "shares": 10},
	{"name": "E", "parent": "D", "shares": 25}, {"name": "F", "parent": "D", "shares": 35},
	{"name": "u1", "parent": "B", "shares": 1},
	{"name": "u2", "parent": "C", "shares": 1}, {"name": "u3", "parent": "C", "shares": 1},
	{"name": "u4", "parent": "E", "shares": 1}, {"name": "u5", "parent": "F", "shares": 1}
]}`

// TestParsedTreesMatchCode: the text and JSON forms build the same tree
// (same factors) as the code in slurmExample.
func TestParsedTreesMatchCode(t *testing.T) {
	fromText, err := ParseText(slurmText)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := ParseJSON([]byte(slurmJSON))
	if err != nil {
		t.Fatal(err)
	}
	for name, spec := range map[string]TreeSpec{"text": fromText, "json": fromJSON} {
		t.Run(name, func(t *testing.T) {
			tr, err := BuildTree(spec, testConfig(Classic))
			if err != nil {
				t.Fatal(err)
			}
			ref := slurmExample(t, testConfig(Classic))
			for _, c := range []struct {
				a string
				u float64
			}{{"u1", 200}, {"u2", 250}, {"u4", 250}, {RootName, 300}} {
				if err := tr.Charge(c.a, c.u, t0); err != nil {
					t.Fatal(err)
				}
			}
			if tr.Len() != 11 || tr.Leaves() != 5 {
				t.Errorf("Len %d Leaves %d, want 11 and 5", tr.Len(), tr.Leaves())
			}
			for _, u := range []string{"u1", "u2", "u3", "u4", "u5"} {
				if a, b := mustFactor(t, tr, u, t0), mustFactor(t, ref, u, t0); a != b {
					t.Errorf("%s factor %v, from code %v", u, a, b)
				}
			}
		})
	}
}

// TestSpecRoundTrip: Tree.Spec -> String -> ParseText and -> JSON ->
// ParseJSON give back the same spec.
func TestSpecRoundTrip(t *testing.T) {
	spec := slurmExample(t, testConfig(FairTree)).Spec()
	spec.Accounts[0].Shares = 0.125 // a fraction survives both forms
	strip := func(s TreeSpec) TreeSpec {
		for i := range s.Accounts {
			s.Accounts[i].Source = ""
		}
		return s
	}
	back, err := ParseText(spec.String())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(spec, strip(back)); diff != "" {
		t.Errorf("text round trip (-want +got):\n%s", diff)
	}
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	back, err = ParseJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(spec, strip(back)); diff != "" {
		t.Errorf("JSON round trip of\n%s\n(-want +got):\n%s", data, diff)
	}
}

// TestBadTrees is acceptance point 6 for trees: negative shares, cycles,
// unknown parents and the rest are errors that name the account.
func TestBadTrees(t *testing.T) {
	for _, tc := range []struct {
		name   string
		text   string // text form, or
		json   string // JSON form
		want   error
		naming []string
	}{
		{name: "negative shares (text)", text: "a\nb parent=a shares=-3", want: ErrBadShares, naming: []string{`"b"`, "-3", "line 2"}},
		{name: "negative shares (JSON)", json: `{"accounts":[{"name":"a","shares":-1}]}`, want: ErrBadShares, naming: []string{`"a"`, "accounts[0]"}},
		{name: "infinite shares", text: "a shares=+Inf", want: ErrBadShares, naming: []string{`"a"`}},
		{name: "NaN shares", text: "a shares=NaN", want: ErrBadShares, naming: []string{`"a"`}},
		{name: "cycle", text: "x\na parent=b\nb parent=c\nc parent=a", want: ErrCycle, naming: []string{"a -> b -> c -> a", "line 2"}},
		{name: "cycle below a good chain", text: "p parent=q\nq parent=p\nx parent=p", want: ErrCycle, naming: []string{"p -> q -> p"}},
		{name: "own parent", text: "a parent=a", want: ErrCycle, naming: []string{"a -> a"}},
		{name: "unknown parent", text: "a parent=nowhere", want: ErrUnknownAccount, naming: []string{`"nowhere"`, `"a"`, "line 1"}},
		{name: "duplicate", text: "a\nb\na", want: ErrDuplicateAccount, naming: []string{`"a"`, "line 3", "line 1"}},
		{name: "reserved name", text: "root", want: ErrBadName, naming: []string{`"root"`}},
		{name: "bad name (JSON)", json: `{"accounts":[{"name":"a b","shares":1}]}`, want: ErrBadName, naming: []string{`"a b"`, "accounts[0]"}},
		{name: "empty name (JSON)", json: `{"accounts":[{"name":"","shares":1}]}`, want: ErrBadName, naming: []string{"accounts[0]"}},
		{name: "unknown key", text: "a weight=3", want: ErrSyntax, naming: []string{"line 1", `"weight"`}},
		{name: "not key=value", text: "a 40", want: ErrSyntax, naming: []string{"line 1", `"40"`}},
		{name: "shares not a number", text: "a shares=lots", want: ErrSyntax, naming: []string{`"a"`, `"lots"`}},
		{name: "key given twice", text: "a shares=1 shares=2", want: ErrSyntax, naming: []string{`"a"`, "shares"}},
		{name: "name missing", text: "parent=a", want: ErrSyntax, naming: []string{"line 1"}},
		{name: "JSON without shares", json: `{"accounts":[{"name":"a"}]}`, want: ErrSyntax, naming: []string{`"a"`}},
		{name: "JSON unknown field", json: `{"accounts":[{"name":"a","shares":1,"weight":2}]}`, want: ErrSyntax, naming: []string{"weight"}},
		{name: "JSON trailing data", json: `{"accounts":[]} {}`, want: ErrSyntax},
		{name: "JSON stray brace", json: `{"accounts":[{"name":"a","shares":1}]}}`, want: ErrSyntax},
		{name: "JSON stray bracket", json: `{"accounts":[{"name":"a","shares":1}]}]`, want: ErrSyntax},
		{name: "JSON shares above MaxShares", json: `{"accounts":[{"name":"a","shares":1e300}]}`, want: ErrBadShares},
		{name: "JSON malformed", json: `{"accounts":[`, want: ErrSyntax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spec TreeSpec
			var err error
			if tc.json != "" {
				spec, err = ParseJSON([]byte(tc.json))
			} else {
				spec, err = ParseText(tc.text)
			}
			if err == nil {
				_, err = BuildTree(spec, DefaultConfig())
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			for _, s := range tc.naming {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %s", err, s)
				}
			}
		})
	}
}

// TestAddAccountErrors covers building from code.
func TestAddAccountErrors(t *testing.T) {
	tr := flatTree(t, DefaultConfig())
	for _, tc := range []struct {
		name         string
		parent, acct string
		shares       float64
		want         error
		naming       string
	}{
		{"negative shares", "a", "x", -1, ErrBadShares, `"x"`},
		{"NaN shares", "a", "x", math.NaN(), ErrBadShares, `"x"`},
		{"unknown parent", "zz", "x", 1, ErrUnknownAccount, `"zz"`},
		{"duplicate", "", "b", 1, ErrDuplicateAccount, `"b"`},
		{"space in name", "", "x y", 1, ErrBadName, `"x y"`},
		{"equals in name", "", "x=y", 1, ErrBadName, `"x=y"`},
		{"hash in name", "", "x#y", 1, ErrBadName, `"x#y"`},
		{"invalid UTF-8", "", "x\xffy", 1, ErrBadName, `"x\xffy"`},
		{"root", "", "root", 1, ErrBadName, `"root"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tr.AddAccount(tc.parent, tc.acct, tc.shares)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.naming) {
				t.Fatalf("err = %v, want %v naming %s", err, tc.want, tc.naming)
			}
		})
	}
	if err := tr.SetShares("nobody", 1); !errors.Is(err, ErrUnknownAccount) {
		t.Errorf("SetShares(nobody) = %v", err)
	}
	if err := tr.SetShares("a", -2); !errors.Is(err, ErrBadShares) {
		t.Errorf("SetShares(a, -2) = %v", err)
	}
	if err := tr.Charge("nobody", 1, t0); !errors.Is(err, ErrUnknownAccount) || !strings.Contains(err.Error(), `"nobody"`) {
		t.Errorf("Charge(nobody) = %v", err)
	}
	for _, c := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := tr.Charge("a", c, t0); !errors.Is(err, ErrBadCharge) || !strings.Contains(err.Error(), `"a"`) {
			t.Errorf("Charge(a, %v) = %v", c, err)
		}
	}
	if _, err := tr.Usage("nobody", t0); !errors.Is(err, ErrUnknownAccount) {
		t.Errorf("Usage(nobody) = %v", err)
	}
	if _, err := tr.Factor("nobody", t0); !errors.Is(err, ErrUnknownAccount) {
		t.Errorf("Factor(nobody) = %v", err)
	}
	if _, err := tr.Factor(RootName, t0); !errors.Is(err, ErrNotLeaf) {
		t.Errorf("Factor(root) = %v", err)
	}
}
