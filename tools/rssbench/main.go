// Command rssbench makes the inputs of `make bench-rss` and measures the
// peak resident set size of a conversion run as a child process:
//
//	rssbench points N FILE.csv       N points (x, y) with three attributes
//	rssbench pgm SIZE FILE.pgm       a SIZE x SIZE 16-bit grey image
//	rssbench run LABEL EXPECT -- CMD ARGS...
//
// run waits for the child (wait4) and prints
// "figure: LABEL peak_rss_mib=... wall_s=..." from its rusage; it fails
// when the child fails or leaves nothing matching the glob EXPECT.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "rssbench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 1 {
		return errUsage
	}
	switch {
	case args[0] == "points" && len(args) == 3:
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return fmt.Errorf("points: %w", err)
		}
		return writePoints(args[2], n)
	case args[0] == "pgm" && len(args) == 3:
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return fmt.Errorf("pgm: %w", err)
		}
		return writePGM(args[2], n)
	case args[0] == "run" && len(args) >= 5 && args[3] == "--":
		return measure(args[1], args[2], args[4:])
	}
	return errUsage
}

var errUsage = errors.New("usage: rssbench points N FILE | pgm SIZE FILE | run LABEL EXPECT -- CMD ARGS")

var classes = []string{"residential", "commercial", "industrial", "forest", "water", "farmland", "park", "road"}

// writePoints writes n pseudo-random points over the world as CSV, the
// same for the same n.
func writePoints(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("points: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	fmt.Fprintln(w, "id,x,y,class,value")
	var line []byte
	for i := range n {
		line = strconv.AppendInt(line[:0], int64(i), 10)
		line = append(line, ',')
		line = strconv.AppendFloat(line, rng.Float64()*360-180, 'f', 6, 64)
		line = append(line, ',')
		line = strconv.AppendFloat(line, rng.Float64()*170-85, 'f', 6, 64)
		line = append(line, ',')
		line = append(line, classes[rng.IntN(len(classes))]...)
		line = append(line, ',')
		line = strconv.AppendFloat(line, math.Round(rng.NormFloat64()*1e4)/100, 'f', 2, 64)
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			f.Close()
			return fmt.Errorf("points: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("points: %w", err)
	}
	return f.Close()
}

// writePGM writes a binary 16-bit PGM of smooth waves plus noise (so that
// the raster compresses like data, not like a constant).
func writePGM(path string, size int) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("pgm: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintf(w, "P5\n%d %d\n65535\n", size, size)
	rng := rand.New(rand.NewPCG(3, 4))
	row := make([]byte, 2*size)
	wave := make([]float64, size)
	for x := range wave {
		wave[x] = 12000 * math.Sin(float64(x)/37)
	}
	for y := range size {
		cy := math.Cos(float64(y) / 53)
		for x := range size {
			v := 30000 + wave[x]*cy + rng.Float64()*2000
			row[2*x], row[2*x+1] = byte(uint16(v)>>8), byte(uint16(v))
		}
		if _, err := w.Write(row); err != nil {
			f.Close()
			return fmt.Errorf("pgm: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("pgm: %w", err)
	}
	return f.Close()
}

// measure runs cmd and prints its peak RSS (ru_maxrss, KiB on Linux).
func measure(label, expect string, cmd []string) error {
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	err := c.Run()
	wall := time.Since(start)
	if c.ProcessState == nil {
		return fmt.Errorf("run %s: %w", label, err)
	}
	ru, _ := c.ProcessState.SysUsage().(*syscall.Rusage)
	if err != nil {
		return fmt.Errorf("run %s: %w", label, err)
	}
	if m, _ := filepath.Glob(expect); len(m) == 0 {
		return fmt.Errorf("run %s: no output matches %s", label, expect)
	}
	if ru == nil {
		return fmt.Errorf("run %s: no rusage", label)
	}
	fmt.Printf("figure: %s peak_rss_mib=%.0f wall_s=%.1f\n", label, float64(ru.Maxrss)/1024, wall.Seconds())
	return nil
}
