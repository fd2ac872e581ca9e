package budget

import "testing"

func TestMachineMemory(t *testing.T) {
	if MachineMemory() <= 0 {
		t.Error("MachineMemory() found no limit (not even MemTotal)")
	}
}

// The budget is the smaller of the recipe's and the machine's; an unknown
// (0) side does not count.
func TestEffective(t *testing.T) {
	for _, c := range []struct{ recipe, machine, want int64 }{
		{3 << 30, 1 << 30, 1 << 30},
		{1 << 30, 3 << 30, 1 << 30},
		{0, 2 << 30, 2 << 30},
		{2 << 30, 0, 2 << 30},
		{0, 0, 0},
	} {
		if got := Effective(c.recipe, c.machine); got != c.want {
			t.Errorf("Effective(%d, %d) = %d, want %d", c.recipe, c.machine, got, c.want)
		}
	}
}
