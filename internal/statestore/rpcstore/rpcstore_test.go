package rpcstore

import (
	"net"
	"testing"

	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

// TestConformance: a backend reached over the wire behaves as the backend
// it serves, ErrNotFound and ErrConflict included.
func TestConformance(t *testing.T) {
	statestoretest.RunBackendTests(t, func(t *testing.T) statestore.Backend {
		server, client := net.Pipe()
		done := make(chan struct{})
		go func() { Serve(server, statestoretest.NewMemory()); close(done) }()
		c := NewClient(client)
		t.Cleanup(func() { c.Close(); <-done })
		return c
	})
}
