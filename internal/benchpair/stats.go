package benchpair

import (
	"errors"
	"fmt"
	"slices"
)

// Summary is the median of a set of samples and their range.
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Summarize is the median (the mean of the two middle samples when n is
// even) and the range of xs; the zero Summary for none.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Summary{N: n, Median: med, Min: s[0], Max: s[n-1]}
}

// Spread is the range as a fraction of the median (0.1 = the samples lie
// within 10 % of the median's size); 0 for a zero median.
func (s Summary) Spread() float64 {
	if s.Median == 0 {
		return 0
	}
	d := (s.Max - s.Min) / s.Median
	if d < 0 {
		return -d
	}
	return d
}

// PairRatios are a[i] / b[i]: each run of A against the run of B next to
// it, so that both saw the same moment of the machine's load.
func PairRatios(a, b []float64) ([]float64, error) {
	if len(a) != len(b) {
		return nil, fmt.Errorf("benchpair.PairRatios: %d samples against %d", len(a), len(b))
	}
	out := make([]float64, len(a))
	for i := range a {
		if b[i] == 0 {
			return nil, errors.New("benchpair.PairRatios: an anchor sample is 0")
		}
		out[i] = a[i] / b[i]
	}
	return out, nil
}

// ConstantRatios are a[i] / c, for an anchor that is a published figure.
func ConstantRatios(a []float64, c float64) ([]float64, error) {
	if c == 0 {
		return nil, errors.New("benchpair.ConstantRatios: the anchor is 0")
	}
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] / c
	}
	return out, nil
}

// Of says what a goal bounds.
type Of string

const (
	OfRatio Of = "ratio" // the median ratio to the anchor
	OfValue Of = "value" // geomigrate's own median, in the figure's unit
)

// Op is the direction of a goal.
type Op string

const (
	AtMost  Op = "<="
	AtLeast Op = ">="
)

// Goal is the bound a figure should meet.
type Goal struct {
	Of    Of      `json:"of"`
	Op    Op      `json:"op"`
	Limit float64 `json:"limit"`
}

// Verdict is a goal checked against a summary.
type Verdict struct {
	Met bool `json:"met"`
	// Crossed: the median meets the goal and some samples do not, or the
	// other way round; the verdict is then less sure than the median says.
	Crossed bool `json:"crossed"`
}

func (g Goal) holds(x float64) bool {
	if g.Op == AtLeast {
		return x >= g.Limit
	}
	return x <= g.Limit
}

// Check judges s by its median; Crossed flags a range that reaches the
// other side of the limit.
func (g Goal) Check(s Summary) Verdict {
	met := g.holds(s.Median)
	return Verdict{Met: met, Crossed: g.holds(s.Min) != met || g.holds(s.Max) != met}
}

func (g Goal) String() string {
	op := "≤"
	if g.Op == AtLeast {
		op = "≥"
	}
	if g.Of == OfRatio {
		return fmt.Sprintf("ratio %s %s", op, trim(g.Limit))
	}
	return fmt.Sprintf("%s %s", op, trim(g.Limit))
}
