// Command benchtable turns the output of the benchmark suite into the
// markdown tables of benchmarks/README.md:
//
//	go test -run '^$' -bench . ./benchmarks/... | tee suite.txt
//	go run ./benchmarks/cmd/benchtable < suite.txt
//
// Each benchmark line "BenchmarkX/k1=v1/k2=v2-N  iters  123 ns/op  4 leaves/op
// ..." is parsed into its name parts and metrics; tables are grouped by
// benchmark.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

type result struct {
	bench   string
	parts   []string // k=v parts after the benchmark name
	metrics map[string]float64
}

func main() {
	rs, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	write(os.Stdout, rs)
}

func parse(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndex(name, "-"); i > 0 && isDigits(name[i+1:]) {
			name = name[:i] // the GOMAXPROCS suffix (go test adds none when it is 1)
		}
		parts := strings.Split(name, "/")
		res := result{bench: strings.TrimPrefix(parts[0], "Benchmark"), parts: parts[1:], metrics: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: value %q: %v", f[0], f[i], err)
			}
			res.metrics[f[i+1]] = v
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

// isDigits reports whether s is a non-empty run of decimal digits.
func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// dur renders ns/op compactly.
func dur(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func part(r result, key string) string {
	for _, p := range r.parts {
		if k, v, ok := strings.Cut(p, "="); ok && k == key {
			return v
		}
	}
	return ""
}

func write(w io.Writer, rs []result) {
	by := map[string][]result{}
	var order []string
	for _, r := range rs {
		if _, ok := by[r.bench]; !ok {
			order = append(order, r.bench)
		}
		by[r.bench] = append(by[r.bench], r)
	}
	for _, b := range order {
		fmt.Fprintf(w, "### %s\n\n", b)
		switch b {
		case "Place":
			placeTable(w, by[b])
		case "Scaling":
			pivot(w, by[b], "op", "nodes")
		default:
			genericTable(w, by[b])
		}
		fmt.Fprintln(w)
	}
}

// placeTable: one row per inventory and request, one column per state,
// each cell "time (leaves)".
func placeTable(w io.Writer, rs []result) {
	var states []string
	for _, r := range rs {
		if s := part(r, "state"); !slices.Contains(states, s) {
			states = append(states, s)
		}
	}
	fmt.Fprintf(w, "| inventory | request |")
	for _, s := range states {
		fmt.Fprintf(w, " state=%s |", s)
	}
	fmt.Fprintf(w, "\n|---|---|")
	for range states {
		fmt.Fprintf(w, "--:|")
	}
	fmt.Fprintln(w)
	type key struct{ inv, req string }
	cells := map[key]map[string]string{}
	var keys []key
	for _, r := range rs {
		k := key{inv: part(r, "inv")}
		if len(r.parts) > 2 { // inv=..., state=..., then the request
			k.req = strings.Join(r.parts[2:], "/")
		}
		if cells[k] == nil {
			cells[k] = map[string]string{}
			keys = append(keys, k)
		}
		cell := dur(r.metrics["ns/op"])
		if r.metrics["placed"] == 0 {
			cell += " (no fit)"
		} else {
			cell += fmt.Sprintf(" (%g leaves)", r.metrics["leaves/op"])
		}
		cells[k][part(r, "state")] = cell
	}
	for _, k := range keys {
		fmt.Fprintf(w, "| %s | %s |", k.inv, k.req)
		for _, s := range states {
			fmt.Fprintf(w, " %s |", cells[k][s])
		}
		fmt.Fprintln(w)
	}
}

// genericTable: one row per sub-benchmark with time, allocations and
// every extra metric.
func genericTable(w io.Writer, rs []result) {
	var extra []string
	for _, r := range rs {
		for m := range r.metrics {
			if m != "ns/op" && m != "B/op" && m != "allocs/op" && !slices.Contains(extra, m) {
				extra = append(extra, m)
			}
		}
	}
	slices.Sort(extra)
	fmt.Fprintf(w, "| case | time/op | allocs/op | B/op |")
	for _, m := range extra {
		fmt.Fprintf(w, " %s |", m)
	}
	fmt.Fprintf(w, "\n|---|--:|--:|--:|")
	for range extra {
		fmt.Fprintf(w, "--:|")
	}
	fmt.Fprintln(w)
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %s | %g | %g |", strings.Join(r.parts, "/"), dur(r.metrics["ns/op"]), r.metrics["allocs/op"], r.metrics["B/op"])
		for _, m := range extra {
			if v, ok := r.metrics[m]; ok {
				fmt.Fprintf(w, " %g |", v)
			} else {
				fmt.Fprintf(w, " |")
			}
		}
		fmt.Fprintln(w)
	}
}

// pivot: one row per value of rowKey, one column per value of colKey, time
// per op in the cells.
func pivot(w io.Writer, rs []result, rowKey, colKey string) {
	var rows, cols []string
	cell := map[[2]string]string{}
	for _, r := range rs {
		rv, cv := part(r, rowKey), part(r, colKey)
		if !slices.Contains(rows, rv) {
			rows = append(rows, rv)
		}
		if !slices.Contains(cols, cv) {
			cols = append(cols, cv)
		}
		cell[[2]string{rv, cv}] = dur(r.metrics["ns/op"])
	}
	fmt.Fprintf(w, "| %s \\ %s |", rowKey, colKey)
	for _, c := range cols {
		fmt.Fprintf(w, " %s |", c)
	}
	fmt.Fprintf(w, "\n|---|")
	for range cols {
		fmt.Fprintf(w, "--:|")
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |", r)
		for _, c := range cols {
			fmt.Fprintf(w, " %s |", cell[[2]string{r, c}])
		}
		fmt.Fprintln(w)
	}
}
