//go:build !race

package plugin

// raceBuild is set when the tests run under the race detector (see
// race_on_test.go).
const raceBuild = false
