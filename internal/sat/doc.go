// Package sat holds saturating integer arithmetic shared by Phalanx's
// packages: a valid request may ask for more GPUs than an int holds, and
// its count then stays at math.MaxInt instead of wrapping negative. The
// functions allocate nothing and keep no state (safe for concurrent use).
//
// It is internal: importers never see it.
package sat
