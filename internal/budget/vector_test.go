package budget

import (
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// The meter's arithmetic: what GeoParquet holds grows with every payload
// byte, what FlatGeobuf holds with the largest geometry only.
func TestVectorMeter(t *testing.T) {
	r := recipe.DefaultRecipe()
	r.MaxMemory = 4 << 20 // budget 3 MiB
	cases := []struct {
		format   string
		fields   int
		payloads []int64
		refused  int // 1-based index of the add that is refused; 0 = none
	}{
		{recipe.FormatGeoParquet, 0, []int64{256 << 10, 256 << 10, 256 << 10}, 3},    // 4×768 KiB = 3 MiB + rows
		{recipe.FormatFlatGeobuf, 0, []int64{256 << 10, 256 << 10, 256 << 10}, 0},    // largest 256 KiB
		{recipe.FormatFlatGeobuf, 0, []int64{100, 800 << 10}, 2},                     // 3.2 MiB for one geometry
		{recipe.FormatGeoParquet, 1000, []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0}, // 11 × 32 KiB
		{recipe.FormatGeoParquet, 10000, []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 10},
	}
	for i, c := range cases {
		r.VectorFormat = c.format
		m := NewVectorMeter("l", c.fields, r)
		refused := 0
		for k, p := range c.payloads {
			if err := m.Add(p); err != nil {
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
	r.VectorFormat = recipe.FormatGeoParquet
	if err := NewVectorMeter("l", 0, r).Declared(-1); err != nil {
		t.Errorf("unknown count refused: %v", err)
	}
	if err := NewVectorMeter("l", 0, r).Declared(17_000); fault.CodeOf(err) != fault.BudgetExceeded {
		t.Errorf("17,000 x 192 bytes under a 3 MiB budget: %v", err)
	}
	// BenchmarkGeoParquet1M's layer (1,000,000 points, three attributes,
	// ~25 bytes of WKB and text a row) fits the default budget.
	d := recipe.DefaultRecipe()
	d.VectorFormat = recipe.FormatGeoParquet
	m := NewVectorMeter("points", 3, d)
	if err := m.Declared(1_000_000); err != nil {
		t.Errorf("1M points declared under the default budget: %v", err)
	}
	for i := 0; i < 1_000_000; i++ {
		if err := m.Add(25); err != nil {
			t.Fatalf("1M points read under the default budget: %v", err)
		}
	}
	r.MaxMemory = 0
	if err := NewVectorMeter("l", 0, r).Declared(1 << 40); err != nil {
		t.Errorf("no budget: %v", err)
	}
}
