package policy

import (
	"context"
	"testing"

	"github.com/geomigrate/geomigrate/internal/migration"
)

// TestContainerLimitsFromTheDocument: large_objects replaces only the
// limits it names.
func TestContainerLimitsFromTheDocument(t *testing.T) {
	configured := migration.ContainerLimits{Bytes: 10, PixelsBands: 20, Features: 30}
	for _, tt := range []struct {
		name string
		lo   *LargeObjects
		want migration.ContainerLimits
	}{
		{"absent", nil, configured},
		{"bytes only", &LargeObjects{Bytes: 5}, migration.ContainerLimits{Bytes: 5, PixelsBands: 20, Features: 30}},
		{"all", &LargeObjects{Bytes: 1, Pixels: 2, Features: 3}, migration.ContainerLimits{Bytes: 1, PixelsBands: 2, Features: 3}},
	} {
		d := Default()
		d.LargeObjects = tt.lo
		if got := Static(d).ContainerLimits(context.Background(), configured); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
