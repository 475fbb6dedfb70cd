// Package hostlist expands and compresses Slurm hostlist expressions such
// as "node[001-016,020]" or "rack[0-1]_blade[0-2]", the way
// `scontrol show hostnames` and `scontrol show hostlist` do.
//
// # Usage
//
//	names, err := hostlist.Expand("gpu[01-04],login1") // gpu01 gpu02 gpu03 gpu04 login1
//	n, err := hostlist.Count("n[1-100000]")            // 100000, nothing expanded
//	expr := hostlist.Compress(names)                   // "gpu[01-04],login1"
//
// # Caller duties
//
// Expand refuses expressions of more than MaxNames names before it
// allocates anything; use Count to learn the size first. The names of one
// bracket element share one backing string, so keeping one name keeps its
// siblings' bytes alive. Errors wrap ErrSyntax and quote the expression
// with the byte offset of the offending token. Compress writes a name that
// no hostlist can hold (empty, or with ',', '[', ']', white space or a
// control character) as it is, on its own; a result holding one does not
// expand back to the names.
//
// # Concurrency
//
// Every function is safe for concurrent use; nothing is shared between
// calls.
package hostlist
