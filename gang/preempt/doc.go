// Package preempt finds which running gangs to stop so that a gang of a
// higher priority class can be admitted.
package preempt
