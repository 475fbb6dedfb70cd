//go:build race

package plugin

// raceBuild is set when the tests run under the race detector, which
// slows the standby scheduler of TestFailoverSchedulesHeldGang (its own
// process, built with the detector too) many times over.
const raceBuild = true
