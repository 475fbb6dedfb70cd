// Command shotcheck checks a browser screenshot of a replay report: every
// figure that layout.json places on the page must be inside the
// screenshot, framed by its border where the layout says (so the page was
// laid out as planned), inked, in several colours, showing each of its
// series colours, and with data drawn in every plot area (saturated
// pixels, which axes, grid and text never are).
//
//	go run ./examples/replay/internal/shotcheck -png out.png -layout out/layout.json
//
// It prints one line per figure, then "shotcheck: N passed, M failed"
// (figures), and exits 1 when a check fails. .ci/report-check runs it on a
// screenshot taken by headless Chromium.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"io"
	"os"

	"github.com/phalanx-sched/phalanx/examples/replay/internal/report"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "shotcheck:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("shotcheck", flag.ContinueOnError)
	pngPath := fs.String("png", "", "screenshot (PNG)")
	layoutPath := fs.String("layout", "", "layout.json written with the report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *pngPath == "" || *layoutPath == "" {
		return fmt.Errorf("-png and -layout are required")
	}
	var layout report.Layout
	js, err := os.ReadFile(*layoutPath)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(js, &layout); err != nil {
		return fmt.Errorf("%s: %v", *layoutPath, err)
	}
	f, err := os.Open(*pngPath)
	if err != nil {
		return err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return fmt.Errorf("%s: %v", *pngPath, err)
	}
	lines, problems, failed := check(img, layout)
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	for _, p := range problems {
		fmt.Fprintln(stdout, "FAIL:", p)
	}
	// The closing line counts figures in the plain form CI logs read.
	fmt.Fprintf(stdout, "shotcheck: %d passed, %d failed\n", len(layout.Figures)-failed, failed)
	if len(problems) > 0 {
		return fmt.Errorf("%d problems in %s", len(problems), *pngPath)
	}
	return nil
}
