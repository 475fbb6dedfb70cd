// Package internal groups the helpers shared by Phalanx's packages and not
// meant for importers: bits (word-level bitset operations), datadriven
// (scenario-file test harness), testcluster (clusters and states from
// short text forms, seeded fragmentation), yaml (the YAML subset parser of
// the topology loaders), defects (the loaders' bounded defect
// collector) and cli (the commands' command-line parsing).
package internal
