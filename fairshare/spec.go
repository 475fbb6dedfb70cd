package fairshare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// TreeSpec is a declarative description of an account tree: a flat list of
// accounts, each naming its parent, in any order. ParseText and ParseJSON
// produce one; BuildTree turns it into a Tree; Tree.Spec exports one.
//
// In JSON a TreeSpec reads
//
//	{"accounts": [
//	  {"name": "physics", "shares": 40},
//	  {"name": "alice", "parent": "physics", "shares": 1}
//	]}
//
// where "shares" is required and "parent" defaults to the root.
type TreeSpec struct {
	// Accounts lists every account once.
	Accounts []AccountSpec `json:"accounts"`
}

// AccountSpec describes one account of a TreeSpec.
type AccountSpec struct {
	// Name is unique in the tree; see ErrBadName for the allowed names.
	Name string `json:"name"`
	// Parent names the parent account; "" or RootName is the root.
	Parent string `json:"parent,omitempty"`
	// Shares are the raw shares: finite and >= 0. They count against the
	// siblings' shares only, so any scale works.
	Shares float64 `json:"shares"`
	// Source optionally says where the account was defined (for example
	// "line 3"); errors about it quote it.
	Source string `json:"-"`
}

// at says where account i of a spec was defined, for the front of an
// error: its Source, or its position in the spec.
func (a *AccountSpec) at(i int) string {
	if a.Source == "" {
		return "account #" + strconv.Itoa(i+1)
	}
	return a.Source
}

// BuildTree builds a tree from spec, configured by cfg. Accounts may be
// listed before their parents; the tree keeps the spec's order otherwise
// (parents are moved ahead of their children). Errors wrap ErrConfig,
// ErrBadName, ErrDuplicateAccount, ErrBadShares, ErrUnknownAccount or
// ErrCycle and begin with where the account was defined (its Source, or
// "account #N" for the Nth of the spec): "line 3: fairshare: ...".
func BuildTree(spec TreeSpec, cfg Config) (*Tree, error) {
	t, err := NewTree(cfg)
	if err != nil {
		return nil, err
	}
	accts := spec.Accounts
	pos := make(map[string]int, len(accts))
	for i := range accts {
		a := &accts[i]
		if err := checkName(a.Name); err != nil {
			return nil, fmt.Errorf("%s: %w", a.at(i), err)
		}
		if err := checkShares(a.Name, a.Shares); err != nil {
			return nil, fmt.Errorf("%s: %w", a.at(i), err)
		}
		if j, dup := pos[a.Name]; dup {
			return nil, fmt.Errorf("%s: %w: %q, first defined at %s",
				a.at(i), ErrDuplicateAccount, a.Name, accts[j].at(j))
		}
		pos[a.Name] = i
	}
	// parentOf[i] is the spec index of account i's parent, or none for
	// the root.
	parentOf := make([]int, len(accts))
	for i := range accts {
		a := &accts[i]
		if a.Parent == "" || a.Parent == RootName {
			parentOf[i] = none
			continue
		}
		j, ok := pos[a.Parent]
		if !ok {
			return nil, fmt.Errorf("%s: %w: parent %q of account %q", a.at(i), ErrUnknownAccount, a.Parent, a.Name)
		}
		parentOf[i] = j
	}
	// Add accounts parents first: climb from each account to the first
	// ancestor already added (or the root), then add the chain top down.
	// Meeting an account of the current chain again is a cycle.
	const (
		fresh = iota
		onChain
		added
	)
	state := make([]uint8, len(accts))
	var chain []int
	for i := range accts {
		chain = chain[:0]
		j := i
		for j != none && state[j] == fresh {
			state[j] = onChain
			chain = append(chain, j)
			j = parentOf[j]
		}
		if j != none && state[j] == onChain {
			return nil, cycleError(accts, chain, j)
		}
		st := t.mutable()
		for k := len(chain) - 1; k >= 0; k-- {
			a := &accts[chain[k]]
			p := int32(0)
			if a.Parent != "" && a.Parent != RootName {
				p = st.index[a.Parent]
			}
			st.add(p, a.Name, a.Shares)
			t.own = append(t.own, usageRec{})
			state[chain[k]] = added
		}
	}
	return t, nil
}

// cycleError names the accounts of the cycle that starts at spec index
// start within chain (a child-to-parent path).
func cycleError(accts []AccountSpec, chain []int, start int) error {
	k := 0
	for chain[k] != start {
		k++
	}
	var b strings.Builder
	for _, j := range chain[k:] {
		b.WriteString(accts[j].Name)
		b.WriteString(" -> ")
	}
	b.WriteString(accts[start].Name)
	a := &accts[start]
	return fmt.Errorf("%s: %w: account %q: parent chain %s", a.at(start), ErrCycle, a.Name, b.String())
}

// ParseText reads the text form of a TreeSpec: one account per line,
//
//	# comment
//	name [parent=NAME] [shares=NUMBER]
//
// with fields separated by blanks, "#" starting a comment, the parent
// defaulting to the root and the shares to 1 (as in Slurm). Accounts may
// come in any order. Each AccountSpec's Source is "line N". Errors wrap
// ErrSyntax or ErrBadShares and name the line; BuildTree checks the rest.
func ParseText(text string) (TreeSpec, error) {
	var spec TreeSpec
	for n, line := range strings.Split(text, "\n") {
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		a := AccountSpec{Name: fields[0], Shares: 1, Source: "line " + strconv.Itoa(n+1)}
		if strings.Contains(a.Name, "=") {
			return TreeSpec{}, fmt.Errorf("%s: %w: %q: the account name comes first", a.Source, ErrSyntax, a.Name)
		}
		seen := map[string]bool{}
		for _, f := range fields[1:] {
			key, val, ok := strings.Cut(f, "=")
			if !ok || val == "" {
				return TreeSpec{}, fmt.Errorf("%s: %w: account %q: %q is not key=value", a.Source, ErrSyntax, a.Name, f)
			}
			if seen[key] {
				return TreeSpec{}, fmt.Errorf("%s: %w: account %q: %s given twice", a.Source, ErrSyntax, a.Name, key)
			}
			seen[key] = true
			switch key {
			case "parent":
				a.Parent = val
			case "shares":
				v, err := strconv.ParseFloat(val, 64)
				if err != nil {
					return TreeSpec{}, fmt.Errorf("%s: %w: account %q: shares %q is not a number", a.Source, ErrSyntax, a.Name, val)
				}
				if err := checkShares(a.Name, v); err != nil {
					return TreeSpec{}, fmt.Errorf("%s: %w", a.Source, err)
				}
				a.Shares = v
			default:
				return TreeSpec{}, fmt.Errorf("%s: %w: account %q: unknown key %q (want parent or shares)", a.Source, ErrSyntax, a.Name, key)
			}
		}
		spec.Accounts = append(spec.Accounts, a)
	}
	return spec, nil
}

// String returns the text form of the spec, which ParseText reads back.
func (s TreeSpec) String() string {
	var b strings.Builder
	for _, a := range s.Accounts {
		b.WriteString(a.Name)
		if a.Parent != "" && a.Parent != RootName {
			b.WriteString(" parent=")
			b.WriteString(a.Parent)
		}
		b.WriteString(" shares=")
		b.WriteString(strconv.FormatFloat(a.Shares, 'g', -1, 64))
		b.WriteByte('\n')
	}
	return b.String()
}

// jsonAccount mirrors AccountSpec with Shares optional, so a missing
// "shares" is reported rather than read as zero.
type jsonAccount struct {
	Name   string   `json:"name"`
	Parent string   `json:"parent"`
	Shares *float64 `json:"shares"`
}

// ParseJSON reads the JSON form of a TreeSpec (see TreeSpec). Unknown fields, a
// missing "shares", negative shares and trailing data are errors wrapping
// ErrSyntax or ErrBadShares that name the account and its position
// ("accounts[i]", which becomes its Source).
func ParseJSON(data []byte) (TreeSpec, error) {
	var doc struct {
		Accounts []jsonAccount `json:"accounts"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return TreeSpec{}, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return TreeSpec{}, fmt.Errorf("%w: data after the JSON object", ErrSyntax)
	}
	spec := TreeSpec{Accounts: make([]AccountSpec, 0, len(doc.Accounts))}
	for i, ja := range doc.Accounts {
		src := "accounts[" + strconv.Itoa(i) + "]"
		if ja.Shares == nil {
			return TreeSpec{}, fmt.Errorf("%s: %w: account %q has no shares", src, ErrSyntax, ja.Name)
		}
		if err := checkShares(ja.Name, *ja.Shares); err != nil {
			return TreeSpec{}, fmt.Errorf("%s: %w", src, err)
		}
		spec.Accounts = append(spec.Accounts, AccountSpec{
			Name: ja.Name, Parent: ja.Parent, Shares: *ja.Shares, Source: src,
		})
	}
	return spec, nil
}
