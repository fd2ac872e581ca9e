package migration

import (
	"context"
	"encoding/binary"
	"testing"
)

func TestEphemeralGiB(t *testing.T) {
	const gib = int64(1) << 30
	for _, c := range []struct {
		bytes int64
		want  int
	}{
		{0, MinEphemeralGiB},
		{5 * gib, MinEphemeralGiB},  // 15 + 1 < 21
		{10 * gib, 31},              // 30 + 1
		{10*gib + 1, 32},            // a byte over rounds up
		{60 * gib, 181},             // 180 + 1
		{70 * gib, MaxEphemeralGiB}, // 211 capped
		{1 << 50, MaxEphemeralGiB},  // far over: capped, not overflowed
	} {
		if got := EphemeralGiB(c.bytes); got != c.want {
			t.Errorf("EphemeralGiB(%d) = %d, want %d", c.bytes, got, c.want)
		}
	}
}

func TestContainerLimitsEngine(t *testing.T) {
	l := ContainerLimits{Bytes: 100, PixelsBands: 1000, Features: 10}
	for _, c := range []struct {
		name string
		w    Work
		want string
	}{
		{"all within", Work{Bytes: 100, PixelsBands: 1000, Features: 10}, EngineLambda},
		{"unknown measures", Work{Bytes: 1}, EngineLambda},
		{"bytes over", Work{Bytes: 101}, EngineContainer},
		{"pixels over", Work{Bytes: 1, PixelsBands: 1001}, EngineContainer},
		{"features over", Work{Bytes: 1, Features: 11}, EngineContainer},
	} {
		if got := l.Engine(c.w, true); got != c.want {
			t.Errorf("%s: Engine(%+v) = %s, want %s", c.name, c.w, got, c.want)
		}
	}
	if got := l.Engine(Work{Bytes: 101}, false); got != EngineLambda {
		t.Errorf("work over the recipe's budgets goes to %s, want the Lambda (preflight refuses it there)", got)
	}
	if err := (ContainerLimits{Bytes: 1, PixelsBands: 1}).Validate(); err == nil {
		t.Error("a zero limit validated: the Choice would send every job to the container")
	}
	if err := DefaultContainerLimits.Validate(); err != nil {
		t.Error(err)
	}
}

// tiffHeader is a classic little-endian TIFF with one IFD declaring
// width x height x spp (no pixel data: only the header is read).
func tiffHeader(width, height, spp uint32) []byte {
	b := []byte{'I', 'I', 42, 0, 8, 0, 0, 0}
	entries := [][3]uint32{{256, 4, width}, {257, 4, height}, {277, 3, spp}}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(entries)))
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, 1)
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return binary.LittleEndian.AppendUint32(b, 0)
}

// TestHashCheckMeasuresTheWork: a claimed job carries its bytes (sidecars
// included), the pixels its TIFF header declares and the features its
// .dbf declares, with the limits and the engine they give.
func TestHashCheckMeasuresTheWork(t *testing.T) {
	f := newFixture(t)
	f.cfg.Container = ContainerLimits{Bytes: 1 << 30, PixelsBands: 5_000_000, Features: 1000}
	f.hash.cfg = f.cfg.withDefaults()

	f.put(t, "big.tif", string(tiffHeader(2000, 1000, 3)))
	f.put(t, "big.tfw", "1\n0\n0\n-1\n0\n0\n")
	hc := f.check(t, "e1", "big.tif")
	want := Work{Bytes: int64(len(tiffHeader(2000, 1000, 3)) + len("1\n0\n0\n-1\n0\n0\n")), PixelsBands: 6_000_000}
	if hc.Route == nil || hc.Route.Work != want || hc.Route.Engine != EngineContainer || hc.Route.Limits != f.cfg.Container || !hc.Route.WithinBudget || hc.Route.EphemeralGiB != MinEphemeralGiB {
		t.Fatalf("route = %+v, want work %+v to the container", hc.Route, want)
	}

	dbf := make([]byte, 32)
	dbf[0] = 3
	binary.LittleEndian.PutUint32(dbf[4:8], 999)
	f.put(t, "roads.shp", "shp")
	f.put(t, "roads.shx", "shx")
	f.put(t, "roads.dbf", string(dbf))
	hc = f.check(t, "e2", "roads.shp")
	if hc.Route == nil || hc.Route.Work.Features != 999 || hc.Route.Engine != EngineLambda {
		t.Fatalf("route = %+v, want 999 features on the Lambda", hc.Route)
	}

	f.put(t, "notes.tif", "not a tiff")
	if hc = f.check(t, "e3", "notes.tif"); hc.Route == nil || hc.Route.Work.PixelsBands != 0 || hc.Route.Engine != EngineLambda {
		t.Fatalf("route = %+v, want an unreadable header measured as unknown (0)", hc.Route)
	}
	// A pixel bomb: over the recipe's pixel budget, left to the Lambda
	// whose preflight refuses it.
	f.put(t, "bomb.tif", string(tiffHeader(100000, 100000, 1)))
	if hc = f.check(t, "e5", "bomb.tif"); hc.Route == nil || hc.Route.WithinBudget || hc.Route.Engine != EngineLambda {
		t.Fatalf("route = %+v, want over budget on the Lambda", hc.Route)
	}
	if hc = f.check(t, "e4", "notes.tif"); hc.Route != nil {
		t.Fatalf("a skipped job (in progress) carries a route: %+v", hc.Route)
	}
}

// limitsByCall stands in for the run-time policy: its limits are whatever
// the test last set.
type limitsByCall struct{ bytes int64 }

func (l *limitsByCall) ContainerLimits(_ context.Context, configured ContainerLimits) ContainerLimits {
	if l.bytes > 0 {
		configured.Bytes = l.bytes
	}
	return configured
}

// TestContainerLimitsChangeAtRunTime: the limits HashCheck's engine choice
// uses are asked for at each call, so a document lowering the byte limit
// sends the next job to the container with no restart.
func TestContainerLimitsChangeAtRunTime(t *testing.T) {
	f := newFixture(t)
	src := &limitsByCall{}
	f.hash.WithContainerLimits(src)
	f.put(t, "a.tif", string(tiffHeader(10, 10, 1)))
	f.put(t, "b.tif", string(tiffHeader(10, 10, 2)))
	if hc := f.check(t, "e1", "a.tif"); hc.Route == nil || hc.Route.Engine != EngineLambda || hc.Route.Limits != DefaultContainerLimits {
		t.Fatalf("route = %+v, want the Lambda under the default limits", hc.Route)
	}
	src.bytes = 1
	hc := f.check(t, "e2", "b.tif")
	if hc.Route == nil || hc.Route.Engine != EngineContainer || hc.Route.Limits.Bytes != 1 || hc.Route.Limits.PixelsBands != DefaultContainerLimits.PixelsBands {
		t.Fatalf("route = %+v, want the container under a 1-byte limit", hc.Route)
	}
}
