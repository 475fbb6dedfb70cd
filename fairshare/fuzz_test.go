package fairshare

import (
	"errors"
	"testing"
)

// sentinel reports whether err wraps one of the package's errors.
func sentinel(err error) bool {
	for _, s := range []error{ErrConfig, ErrBadName, ErrDuplicateAccount, ErrUnknownAccount, ErrBadShares, ErrCycle, ErrSyntax} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// FuzzParseText: the text form never panics, errors wrap a sentinel, and a
// spec that parses either builds a tree or fails with a sentinel; a built
// tree's spec parses back to the same tree size.
func FuzzParseText(f *testing.F) {
	f.Add(slurmText)
	f.Add("a\nb parent=a shares=2\n")
	f.Add("a parent=b\nb parent=a\n")
	f.Add("x shares=-1\n")
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		spec, err := ParseText(text)
		if err != nil {
			if !sentinel(err) {
				t.Fatalf("error without a sentinel: %v", err)
			}
			return
		}
		tree, err := BuildTree(spec, DefaultConfig())
		if err != nil {
			if !sentinel(err) {
				t.Fatalf("build error without a sentinel: %v", err)
			}
			return
		}
		back, err := ParseText(tree.Spec().String())
		if err != nil {
			t.Fatalf("a built tree's spec does not parse: %v\n%s", err, tree.Spec().String())
		}
		if len(back.Accounts) != tree.Len() {
			t.Fatalf("round trip: %d accounts, tree has %d", len(back.Accounts), tree.Len())
		}
	})
}

// FuzzParseJSON: the JSON form never panics and errors wrap a sentinel.
func FuzzParseJSON(f *testing.F) {
	f.Add([]byte(slurmJSON))
	f.Add([]byte(`{"accounts":[{"name":"a","shares":1},{"name":"b","parent":"a","shares":0}]}`))
	f.Add([]byte(`{"accounts":[{"name":"a"}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		spec, err := ParseJSON(data)
		if err != nil {
			if !sentinel(err) {
				t.Fatalf("error without a sentinel: %v", err)
			}
			return
		}
		if _, err := BuildTree(spec, DefaultConfig()); err != nil && !sentinel(err) {
			t.Fatalf("build error without a sentinel: %v", err)
		}
	})
}
