package sat

import "math"

// Mul returns a*b for a, b >= 0, or math.MaxInt when it overflows.
func Mul(a, b int) int {
	if b != 0 && a > math.MaxInt/b {
		return math.MaxInt
	}
	return a * b
}

// Add returns a+b for a, b >= 0, or math.MaxInt when it overflows.
func Add(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
