package budget

import (
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// The meter's arithmetic: what GeoParquet holds is its spill threshold and
// the largest feature, whatever the count; what FlatGeobuf holds grows
// with every feature and the largest geometry.
func TestVectorMeter(t *testing.T) {
	r := recipe.DefaultRecipe()
	r.MaxMemory = 16 << 20 // budget 12 MiB; GeoParquet spills at 1 MiB (4 MiB held)
	cases := []struct {
		format   string
		payloads []int64
		refused  int // 1-based index of the add that is refused; 0 = none
	}{
		{recipe.FormatGeoParquet, []int64{1 << 20, 1 << 20, 1 << 20, 1 << 20}, 0}, // 4 MiB + 4 × 1 MiB
		{recipe.FormatGeoParquet, []int64{100, 2 << 20, 3 << 20}, 3},              // 4 MiB + 4 × 3 MiB
		{recipe.FormatFlatGeobuf, []int64{1 << 20, 1 << 20, 1 << 20}, 0},          // largest 1 MiB
		{recipe.FormatFlatGeobuf, []int64{100, 3200 << 10}, 2},                    // 12.5 MiB for one geometry
	}
	for i, c := range cases {
		r.VectorFormat = c.format
		m := NewVectorMeter("l", r)
		refused := 0
		for k, p := range c.payloads {
			// MaxPayload tells beforehand what Add decides.
			fits := p <= m.MaxPayload()
			err := m.Add(p)
			if fits != (err == nil) {
				t.Errorf("case %d, add %d: MaxPayload says %v, Add %v", i, k+1, fits, err)
			}
			if err != nil {
				if fault.CodeOf(err) != fault.BudgetExceeded {
					t.Errorf("case %d: %v", i, err)
				}
				refused = k + 1
				break
			}
		}
		if refused != c.refused {
			t.Errorf("case %d (%s): refused at %d, want %d (estimate %d of %d)", i, c.format, refused, c.refused, m.estimate(m.features), m.budget)
		}
	}
	// GeoParquet: any count, declared or read.
	r.VectorFormat = recipe.FormatGeoParquet
	for _, n := range []int64{-1, 17_000, 1 << 40} {
		if err := NewVectorMeter("l", r).Declared(n); err != nil {
			t.Errorf("GeoParquet, %d declared: %v", n, err)
		}
	}
	m := NewVectorMeter("points", r)
	for i := 0; i < 1_000_000; i++ {
		if err := m.Add(25); err != nil {
			t.Fatalf("GeoParquet, 1M points read under a 16 MiB max_memory: %v", err)
		}
	}
	// FlatGeobuf: its index grows with the count.
	r.VectorFormat = recipe.FormatFlatGeobuf
	if err := NewVectorMeter("l", r).Declared(-1); err != nil {
		t.Errorf("unknown count refused: %v", err)
	}
	if err := NewVectorMeter("l", r).Declared(50_000); fault.CodeOf(err) != fault.BudgetExceeded {
		t.Errorf("FlatGeobuf, 50,000 x 256 bytes under a 12 MiB budget: %v", err)
	}
	m = NewVectorMeter("points", r)
	var err error
	for i := 0; i < 100_000 && err == nil; i++ {
		err = m.Add(25)
	}
	if fault.CodeOf(err) != fault.BudgetExceeded || m.features != 12<<20/256 {
		t.Errorf("FlatGeobuf, points read under a 12 MiB budget: refused at %d: %v", m.features, err)
	}
	r.MaxMemory = 0
	if err := NewVectorMeter("l", r).Declared(1 << 40); err != nil {
		t.Errorf("no budget: %v", err)
	}
}

func TestSpillBytes(t *testing.T) {
	for _, c := range []struct{ maxMemory, want int64 }{
		{0, 64 << 20}, {-1, 64 << 20}, {1 << 20, 1 << 20}, {256 << 20, 16 << 20}, {10240 << 20, 64 << 20},
	} {
		if got := SpillBytes(c.maxMemory); got != c.want {
			t.Errorf("SpillBytes(%d) = %d, want %d", c.maxMemory, got, c.want)
		}
	}
}
