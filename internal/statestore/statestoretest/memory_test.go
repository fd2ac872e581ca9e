package statestoretest_test

import (
	"context"
	"testing"

	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

func TestMemoryConformance(t *testing.T) {
	statestoretest.RunBackendTests(t, func(t *testing.T) statestore.Backend { return statestoretest.NewMemory() })
}

// The memory backend hands out copies: mutating a returned History does not
// reach the store.
func TestMemoryIsolation(t *testing.T) {
	ctx := context.Background()
	m := statestoretest.NewMemory()
	j := statestoretest.FullJob("j")
	if err := m.Put(ctx, j, 0); err != nil {
		t.Fatal(err)
	}
	j.History[0].Note = "mutated after Put"
	got, _ := m.Get(ctx, "j")
	got.History[1].Note = "mutated after Get"
	again, _ := m.Get(ctx, "j")
	if diff := statestoretest.JobsEqual(again, statestoretest.FullJob("j")); diff != "" {
		t.Errorf("stored job changed through an alias: %s", diff)
	}
}
