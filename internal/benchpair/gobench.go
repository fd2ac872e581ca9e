package benchpair

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// GoBenchMetrics reads the lines of `go test -bench` output and returns,
// for each benchmark whose name (without the -GOMAXPROCS suffix) is name
// or starts with name + "/", its metrics by unit ("ns/op", "rows/s" …),
// keyed by the rest of the name ("" for name itself, "items=100" for
// name/items=100). A benchmark run more than once keeps its last line.
func GoBenchMetrics(out []byte, name string) (map[string]map[string]float64, error) {
	res := map[string]map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		full := f[0]
		if i := strings.LastIndexByte(full, '-'); i > 0 {
			if _, err := strconv.Atoi(full[i+1:]); err == nil {
				full = full[:i]
			}
		}
		var sub string
		switch {
		case full == name:
		case strings.HasPrefix(full, name+"/"):
			sub = full[len(name)+1:]
		default:
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // not a result line (a log line that starts with the name)
		}
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchpair.GoBenchMetrics: %s: %q is not a number", f[0], f[i])
			}
			m[f[i+1]] = v
		}
		res[sub] = m
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("benchpair.GoBenchMetrics: %w", err)
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("benchpair.GoBenchMetrics: no result line for %s", name)
	}
	return res, nil
}
