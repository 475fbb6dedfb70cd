package fairshare

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
)

// RootName is the name of the implicit root of every tree. It is reserved:
// no account may take it. As a parent, "" means the root too. Charging the
// root records usage that belongs to no account (it still counts in the
// machine total that classic normalises by).
const RootName = "root"

// none marks a missing node index.
const none = -1

// node is one account of the tree. Index 0 is the root, and a parent's
// index is always lower than its children's, so index order is a
// topological order (parents first).
type node struct {
	name        string
	parent      int32
	firstChild  int32
	lastChild   int32
	nextSibling int32
	shares      float64
}

// structure is the shape of a tree: names, links and raw shares. It is
// copy-on-write: snapshots share it with the Tree, and the Tree copies it
// before its first change after a view was taken.
type structure struct {
	nodes  []node
	index  map[string]int32
	leaves int // nodes other than the root that have no children
}

func newStructure() *structure {
	return &structure{
		nodes: []node{{name: RootName, parent: none, firstChild: none, lastChild: none, nextSibling: none}},
		index: map[string]int32{RootName: 0},
	}
}

func (s *structure) clone() *structure {
	return &structure{
		nodes:  slices.Clone(s.nodes),
		index:  maps.Clone(s.index),
		leaves: s.leaves,
	}
}

// isLeaf reports whether node i can hold jobs: not the root, no children.
func (s *structure) isLeaf(i int32) bool {
	return i != 0 && s.nodes[i].firstChild == none
}

// lookup resolves an account name; "" and RootName both mean the root.
func (s *structure) lookup(name string) (int32, bool) {
	if name == "" {
		return 0, true
	}
	i, ok := s.index[name]
	return i, ok
}

// add appends a child of parent. The caller has checked name and shares.
func (s *structure) add(parent int32, name string, shares float64) int32 {
	i := int32(len(s.nodes))
	s.nodes = append(s.nodes, node{
		name: name, parent: parent, shares: shares,
		firstChild: none, lastChild: none, nextSibling: none,
	})
	s.index[name] = i
	p := &s.nodes[parent]
	if p.firstChild == none {
		if parent != 0 {
			s.leaves-- // the parent stops being a leaf
		}
		p.firstChild = i
	} else {
		s.nodes[p.lastChild].nextSibling = i
	}
	p.lastChild = i
	s.leaves++
	return i
}

// checkName reports whether name may name an account.
func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty name", ErrBadName)
	}
	if name == RootName {
		return fmt.Errorf("%w: %q is reserved for the root", ErrBadName, name)
	}
	if i := strings.IndexFunc(name, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == '=' || r == '#' || r == unicode.ReplacementChar
	}); i >= 0 {
		return fmt.Errorf("%w: %q has a space, control character, '=', '#' or invalid UTF-8 at byte %d", ErrBadName, name, i)
	}
	return nil
}

// MaxShares bounds an account's raw shares (Slurm's are 32-bit), so that
// the shares of any number of siblings add up to a finite sum.
const MaxShares = math.MaxUint32

// MaxUsage bounds an account's usage in GPU-seconds (a charge that would
// take it further is refused), so that the usage of any realistic number
// of accounts adds up to a finite sum: 1e300, beyond any cluster's life.
const MaxUsage = 1e300

// checkShares reports whether shares are usable raw shares for account.
func checkShares(account string, shares float64) error {
	if math.IsNaN(shares) || shares < 0 || shares > MaxShares {
		return fmt.Errorf("%w: account %q has shares %v (want a number from 0 to %d)", ErrBadShares, account, shares, uint64(MaxShares))
	}
	return nil
}

// usageRec is an account's own decayed usage: value GPU-seconds as of
// instant at (nanoseconds since 1970). Usage at a later instant t is
// value * 2^-((t-at)/halflife); reading never changes the record.
type usageRec struct {
	value float64
	at    int64
}

// noTime is the latest instant of a tree that has been told no time yet.
// It is also a valid instant (time.Unix(0, math.MinInt64)), so Tree.told,
// not this value, says whether the tree has been told one.
const noTime = math.MinInt64

// Tree is an account tree with raw shares and decayed usage per account,
// plus the Config that turns them into fair-share factors and job
// priorities. The root is implicit (RootName); accounts hang below it to
// any depth; accounts without sub-accounts are leaves and are the only
// accounts jobs may name. Create one with NewTree or BuildTree; the zero
// Tree is not usable.
//
// A Tree is not safe for concurrent mutation: AddAccount, SetShares,
// Charge, Decay and SetConfig must not run concurrently with any other
// method. The other methods only read and may run concurrently with each
// other. A View is independent of later changes to its Tree.
type Tree struct {
	cfg    Config
	st     *structure
	shared atomic.Bool // st is referenced by a view or clone
	own    []usageRec  // parallel to st.nodes
	latest int64       // latest instant charged or decayed, or noTime
	told   bool        // latest holds an instant the tree was told
}

// NewTree returns a tree holding only the root, configured by cfg, or an
// error wrapping ErrConfig.
func NewTree(cfg Config) (*Tree, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Tree{
		cfg:    cfg,
		st:     newStructure(),
		own:    make([]usageRec, 1),
		latest: noTime,
	}, nil
}

// Config returns the tree's configuration.
func (t *Tree) Config() Config { return t.cfg }

// Latest returns the latest instant the tree has been told about (by
// Charge, Decay or SetUsage), before which reads fail with ErrTimeTravel,
// and false if it has been told none.
func (t *Tree) Latest() (time.Time, bool) {
	if !t.told {
		return time.Time{}, false
	}
	return time.Unix(0, t.latest).UTC(), true
}

// SetConfig replaces the configuration after validating it. Stored usage
// is kept; a new HalfLife applies from each account's last update on, so
// call Decay first to settle the time before the change at the old rate.
func (t *Tree) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	t.cfg = cfg
	return nil
}

// mutable returns the structure for writing, copying it first if a
// view or clone shares it.
func (t *Tree) mutable() *structure {
	if t.shared.Load() {
		t.st = t.st.clone()
		t.shared.Store(false)
	}
	return t.st
}

// AddAccount adds account name with the given raw shares below parent
// ("" or RootName for the root). A leaf that gets a child becomes an
// account and can no longer take jobs; its own usage so far still counts
// for it and its ancestors. Errors wrap ErrBadName, ErrDuplicateAccount,
// ErrUnknownAccount or ErrBadShares and name the account.
func (t *Tree) AddAccount(parent, name string, shares float64) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := checkShares(name, shares); err != nil {
		return err
	}
	if _, dup := t.st.index[name]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateAccount, name)
	}
	p, ok := t.st.lookup(parent)
	if !ok {
		return fmt.Errorf("%w: parent %q of account %q", ErrUnknownAccount, parent, name)
	}
	t.mutable().add(p, name, shares)
	t.own = append(t.own, usageRec{})
	return nil
}

// SetShares changes the raw shares of an account. Errors wrap
// ErrUnknownAccount, ErrBadName (RootName: the root has no shares) or
// ErrBadShares and name the account.
func (t *Tree) SetShares(account string, shares float64) error {
	i, ok := t.st.index[account]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownAccount, account)
	}
	if i == 0 {
		return fmt.Errorf("%w: %q is the root, which has no shares", ErrBadName, account)
	}
	if err := checkShares(account, shares); err != nil {
		return err
	}
	t.mutable().nodes[i].shares = shares
	return nil
}

// Len returns the number of accounts, leaves included, root excluded.
func (t *Tree) Len() int { return len(t.st.nodes) - 1 }

// Leaves returns the number of leaves (accounts that may take jobs).
func (t *Tree) Leaves() int { return t.st.leaves }

// Has reports whether the tree has an account of that name.
func (t *Tree) Has(account string) bool {
	_, ok := t.st.index[account]
	return ok
}

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// nanos converts an instant to nanoseconds since 1970, rejecting instants
// that int64 nanoseconds cannot hold (the zero time among them).
func nanos(at time.Time) (int64, error) {
	if at.Before(minTime) || at.After(maxTime) {
		return 0, fmt.Errorf("%w: %v", ErrBadTime, at)
	}
	return at.UnixNano(), nil
}

// decayFactor returns 2^-(elapsed/halfLife) for elapsed = to - from >= 0
// nanoseconds, or 1 when halfLife is zero (no decay).
func decayFactor(from, to int64, halfLife time.Duration) float64 {
	if halfLife == 0 || to == from {
		return 1
	}
	// to >= from, so the unsigned difference is exact even when the signed
	// one would overflow.
	elapsed := float64(uint64(to) - uint64(from))
	return math.Exp2(-elapsed / float64(halfLife))
}

// DecayedSeconds returns what one GPU used without pause for d counts as
// usage at the end of d with the given half-life: the integral of
// 2^-(s/halfLife) over the d seconds before that end, which is
// halfLife/ln 2 x (1 - 2^-(d/halfLife)) seconds, or d's seconds when
// halfLife is zero (no decay). A negative halfLife, which Config.Validate
// refuses, is taken as zero too: no decay, never more than d's seconds.
// It is 0 for d <= 0.
//
// Billing a running job its GPUs x DecayedSeconds(since its last charge)
// at each charge makes its usage independent of how often it is charged:
// the value charged for an interval equals the value charged for its two
// halves, the first decayed across the second (up to rounding). Charging
// GPUs x elapsed seconds instead counts the whole interval at full weight
// at its end, so a host that charges rarely bills more.
func DecayedSeconds(d, halfLife time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	secs := d.Seconds()
	if halfLife <= 0 {
		return secs
	}
	hl := halfLife.Seconds()
	return -hl / math.Ln2 * math.Expm1(-math.Ln2*secs/hl)
}

// valueAt returns the record's value decayed to instant now >= r.at.
func (r usageRec) valueAt(now int64, halfLife time.Duration) float64 {
	if r.value == 0 {
		return 0
	}
	return r.value * decayFactor(r.at, now, halfLife)
}

// Charge records gpuSeconds of usage by account at instant at. Charges at
// the same instant add. A charge may name any account, the root included;
// it counts for that account and all its ancestors.
//
// A charge at an instant earlier than the account's last update is
// accepted and decayed from its own instant, so the result does not depend
// on the order in which charges arrive (up to rounding): this lets jobs
// that end out of order be charged as they are reported. Reads, however,
// cannot look back: see ErrTimeTravel.
//
// An account's usage is at most MaxUsage: a charge that would take it
// further is refused and changes nothing. Errors wrap ErrUnknownAccount,
// ErrBadCharge or ErrBadTime and name the account.
func (t *Tree) Charge(account string, gpuSeconds float64, at time.Time) error {
	i, ok := t.st.lookup(account)
	if !ok {
		return fmt.Errorf("%w: charge to %q", ErrUnknownAccount, account)
	}
	if math.IsNaN(gpuSeconds) || math.IsInf(gpuSeconds, 0) || gpuSeconds < 0 {
		return fmt.Errorf("%w: %v GPU-seconds to account %q", ErrBadCharge, gpuSeconds, account)
	}
	ns, err := nanos(at)
	if err != nil {
		return fmt.Errorf("charge to account %q: %w", account, err)
	}
	r := &t.own[i]
	next := *r
	switch {
	case r.value == 0:
		next = usageRec{value: gpuSeconds, at: ns}
	case ns >= r.at:
		next = usageRec{value: r.value*decayFactor(r.at, ns, t.cfg.HalfLife) + gpuSeconds, at: ns}
	default: // a late charge: decay it to the record's instant
		next.value += gpuSeconds * decayFactor(ns, r.at, t.cfg.HalfLife)
	}
	if !(next.value <= MaxUsage) {
		return fmt.Errorf("%w: %v GPU-seconds to account %q would take its usage past MaxUsage", ErrBadCharge, gpuSeconds, account)
	}
	*r = next
	t.latest, t.told = max(t.latest, ns), true
	return nil
}

// checkRead converts now and rejects it if it is earlier than the latest
// instant the tree has been told about.
func (t *Tree) checkRead(now time.Time) (int64, error) {
	ns, err := nanos(now)
	if err != nil {
		return 0, err
	}
	if ns < t.latest {
		return 0, fmt.Errorf("%w: asked at %v, latest update at %v",
			ErrTimeTravel, now.UTC(), time.Unix(0, t.latest).UTC())
	}
	return ns, nil
}

// Decay folds the decay up to now into every account's stored usage and
// makes now the tree's latest instant. Usage and factors do not change:
// reading at any instant after now gives the same values (up to rounding)
// with or without this call, however often it is made. It is useful
// before changing the half-life, and to store every account's usage as of
// one instant. It returns an error wrapping ErrBadTime or ErrTimeTravel.
func (t *Tree) Decay(now time.Time) error {
	ns, err := t.checkRead(now)
	if err != nil {
		return fmt.Errorf("decay: %w", err)
	}
	for i := range t.own {
		r := &t.own[i]
		r.value = r.valueAt(ns, t.cfg.HalfLife)
		r.at = ns
	}
	t.latest, t.told = ns, true
	return nil
}

// Usage returns the decayed usage of account at now in GPU-seconds: its
// own charges plus those of all its descendants. RootName gives the
// machine total. Errors wrap ErrUnknownAccount, ErrBadTime or
// ErrTimeTravel.
func (t *Tree) Usage(account string, now time.Time) (float64, error) {
	i, ok := t.st.lookup(account)
	if !ok {
		return 0, fmt.Errorf("%w: usage of %q", ErrUnknownAccount, account)
	}
	ns, err := t.checkRead(now)
	if err != nil {
		return 0, fmt.Errorf("usage of account %q: %w", account, err)
	}
	return t.subtreeUsage(i, ns), nil
}

// OwnUsage returns the decayed usage charged to account itself at now,
// without its descendants'. Saving every account's OwnUsage at one instant
// and charging it at that instant into a fresh tree restores the usage.
// Errors wrap ErrUnknownAccount, ErrBadTime or ErrTimeTravel.
func (t *Tree) OwnUsage(account string, now time.Time) (float64, error) {
	i, ok := t.st.lookup(account)
	if !ok {
		return 0, fmt.Errorf("%w: usage of %q", ErrUnknownAccount, account)
	}
	ns, err := t.checkRead(now)
	if err != nil {
		return 0, fmt.Errorf("usage of account %q: %w", account, err)
	}
	return t.own[i].valueAt(ns, t.cfg.HalfLife), nil
}

func (t *Tree) subtreeUsage(i int32, ns int64) float64 {
	u := t.own[i].valueAt(ns, t.cfg.HalfLife)
	for c := t.st.nodes[i].firstChild; c != none; c = t.st.nodes[c].nextSibling {
		u += t.subtreeUsage(c, ns)
	}
	return u
}

// Factor returns the fair-share factor of leaf account at now, in [0, 1].
// It computes a whole View, O(accounts); to read many factors or rank
// jobs, take one View and use it. Errors wrap ErrUnknownAccount,
// ErrNotLeaf, ErrBadTime or ErrTimeTravel.
func (t *Tree) Factor(account string, now time.Time) (float64, error) {
	s, err := t.View(now, nil)
	if err != nil {
		return 0, err
	}
	return s.Factor(account)
}

// Clone returns an independent copy of the tree: changes to either do not
// show in the other. The structure is shared copy-on-write, so a clone
// costs one copy of the usage records; use it for what-if work.
func (t *Tree) Clone() *Tree {
	t.shared.Store(true)
	c := &Tree{
		cfg:    t.cfg,
		st:     t.st,
		own:    slices.Clone(t.own),
		latest: t.latest,
		told:   t.told,
	}
	c.shared.Store(true)
	return c
}

// Spec returns the tree's shape as a TreeSpec (names, parents, raw
// shares) in an order where parents come before children; BuildTree(t.Spec(), cfg) rebuilds it
// without usage.
func (t *Tree) Spec() TreeSpec {
	nodes := t.st.nodes
	accts := make([]AccountSpec, 0, len(nodes)-1)
	for _, n := range nodes[1:] {
		parent := ""
		if n.parent != 0 {
			parent = nodes[n.parent].name
		}
		accts = append(accts, AccountSpec{Name: n.name, Parent: parent, Shares: n.shares})
	}
	return TreeSpec{Accounts: accts}
}

// UsageRecord is one account's own usage exactly as the tree stores it:
// GPUSeconds as of instant At, decaying from then on. Records read with
// UsageRecords and written back with SetUsage restore usage bit for bit.
type UsageRecord struct {
	Account    string    `json:"account"`
	GPUSeconds float64   `json:"gpu_seconds"`
	At         time.Time `json:"at"`
}

// UsageRecords returns every account's own usage record, the root's
// (RootName) first, then in TreeSpec order, skipping accounts never
// charged.
func (t *Tree) UsageRecords() []UsageRecord {
	var out []UsageRecord
	for i, n := range t.st.nodes {
		if r := t.own[i]; r.value != 0 {
			out = append(out, UsageRecord{Account: n.name, GPUSeconds: r.value, At: time.Unix(0, r.at).UTC()})
		}
	}
	return out
}

// SetUsage replaces the usage of the accounts named in recs with the
// records as they are (no decay applied), after checking them all: a
// known account (RootName for the root) named once, a value from 0 to
// MaxUsage, a valid instant.
// On error nothing changes; the error lists every bad record.
func (t *Tree) SetUsage(recs []UsageRecord) error {
	var errs []error
	idx := make([]int32, len(recs))
	ns := make([]int64, len(recs))
	seen := make(map[int32]bool, len(recs))
	for k, r := range recs {
		i, ok := t.st.lookup(r.Account)
		var err error
		ns[k], err = nanos(r.At)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%w: usage of %q", ErrUnknownAccount, r.Account))
		case seen[i]:
			errs = append(errs, fmt.Errorf("%w: usage of %q given twice", ErrBadCharge, r.Account))
		case math.IsNaN(r.GPUSeconds) || r.GPUSeconds < 0 || r.GPUSeconds > MaxUsage:
			errs = append(errs, fmt.Errorf("%w: %v GPU-seconds for account %q", ErrBadCharge, r.GPUSeconds, r.Account))
		case err != nil:
			errs = append(errs, fmt.Errorf("usage of account %q: %w", r.Account, err))
		}
		if ok {
			seen[i] = true // an unknown account is not the root (i 0)
		}
		idx[k] = i
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for k, r := range recs {
		t.own[idx[k]] = usageRec{value: r.GPUSeconds, at: ns[k]}
		t.latest, t.told = max(t.latest, ns[k]), true
	}
	return nil
}
