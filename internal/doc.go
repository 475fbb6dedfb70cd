// Package internal groups the helpers shared by Phalanx's packages and not
// meant for importers: bits (word-level bitset operations), datadriven
// (scenario-file test harness) and testcluster (clusters and states from
// short text forms, seeded fragmentation).
package internal
