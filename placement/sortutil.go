package placement

import "slices"

// sortDescending sorts v largest first. Short lists get an insertion
// sort; long ones a counting sort when their values are small (count is
// its reusable histogram), else the standard sort.
func sortDescending(v []int32, count *[]int32) {
	if len(v) <= 24 {
		for i := 1; i < len(v); i++ {
			x := v[i]
			j := i
			for ; j > 0 && v[j-1] < x; j-- {
				v[j] = v[j-1]
			}
			v[j] = x
		}
		return
	}
	hi := slices.Max(v)
	if int(hi) > 4*len(v) || hi < 0 {
		slices.Sort(v)
		slices.Reverse(v)
		return
	}
	h := (*count)[:0]
	for range hi + 1 {
		h = append(h, 0)
	}
	for _, x := range v {
		h[x]++
	}
	i := 0
	for x := hi; x >= 0; x-- {
		for range h[x] {
			v[i] = x
			i++
		}
	}
	*count = h
}

// coverCount returns the fewest values of v (largest first) whose sum
// reaches need, or len(v)+1 when all of them fall short. It sorts v.
func coverCount(v []int32, need int, count *[]int32) int {
	if need <= 0 {
		return 0
	}
	sortDescending(v, count)
	sum := 0
	for i, x := range v {
		sum += int(x)
		if sum >= need {
			return i + 1
		}
	}
	return len(v) + 1
}
