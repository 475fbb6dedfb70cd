package fairshare

import (
	"errors"
	"strings"
	"testing"
)

// TestSetSharesRefusesRoot: SetShares accepted RootName and stored shares
// on the implicit root, which has no siblings and no shares: the view's
// root row then showed them, and BuildTree(t.Spec(), cfg), which the doc
// says rebuilds the tree, built one whose view differed (the root's shares
// are in no TreeSpec). The root is refused, like "" already was, and
// nothing changes.
func TestSetSharesRefusesRoot(t *testing.T) {
	for _, tc := range []struct {
		name    string
		account string
		shares  float64
		want    error
	}{
		{"root", RootName, 5, ErrBadName},
		{"root zero", RootName, 0, ErrBadName},
		{"empty name", "", 5, ErrUnknownAccount},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := NewTree(DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.AddAccount("", "a", 1); err != nil {
				t.Fatal(err)
			}
			err = tr.SetShares(tc.account, tc.shares)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), `"`+tc.account+`"`) {
				t.Fatalf("SetShares(%q, %v) = %v, want an error wrapping %v naming it", tc.account, tc.shares, err, tc.want)
			}
			v, err := tr.View(t0, nil)
			if err != nil {
				t.Fatal(err)
			}
			rebuilt, err := BuildTree(tr.Spec(), tr.Config())
			if err != nil {
				t.Fatal(err)
			}
			w, err := rebuilt.View(t0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v.String() != w.String() {
				t.Fatalf("the tree and the one rebuilt from its Spec differ:\n%v\n%v", v, w)
			}
		})
	}
}
