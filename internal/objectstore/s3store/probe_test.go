package s3store

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// TestProbeRemovesItsObjectThroughFaults: the conditional-copy probe leaves
// no object behind, also when the put's answer was lost after the store
// wrote it and when deletes fail with passing faults (a chaos run under
// 20 % S3 faults found a probe left under the staging prefix).
func TestProbeRemovesItsObjectThroughFaults(t *testing.T) {
	for _, tt := range []struct {
		name         string
		putDropped   bool // the store writes the probe, the client gets a 503
		deleteFaults int  // deletes that fail with a 503 first
		wantMode     ConditionalCopy
		wantTier     fault.Tier // of the probe's error; "" none
	}{
		{"copy refused, deletes pass", false, 0, CopyServerSide, ""},
		{"copy refused, two deletes fail", false, 2, CopyServerSide, ""},
		{"put answer lost, deletes fail", true, 3, CopyServerSide, fault.TierTransient},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			stored := map[string]bool{}
			faults := tt.deleteFaults
			f := &fakeAPI{
				put: func(in *s3.PutObjectInput) (*s3.PutObjectOutput, error) {
					mu.Lock()
					defer mu.Unlock()
					stored[*in.Key] = true
					if tt.putDropped {
						return nil, code(503, "SlowDown")
					}
					return &s3.PutObjectOutput{}, nil
				},
				copyObject: func(*s3.CopyObjectInput) (*s3.CopyObjectOutput, error) {
					return nil, code(412, "PreconditionFailed")
				},
				del: func(in *s3.DeleteObjectInput) (*s3.DeleteObjectOutput, error) {
					mu.Lock()
					defer mu.Unlock()
					if faults > 0 {
						faults--
						return nil, code(503, "SlowDown")
					}
					delete(stored, *in.Key)
					return &s3.DeleteObjectOutput{}, nil
				},
			}
			mode, err := ProbeConditionalCopy(context.Background(), f, "b", "_staging/")
			switch {
			case tt.wantTier == "" && err != nil:
				t.Fatalf("probe: %v", err)
			case tt.wantTier != "" && fault.TierOf(err) != tt.wantTier:
				t.Fatalf("probe error %v (tier %q), want tier %q", err, fault.TierOf(err), tt.wantTier)
			case err == nil && mode != tt.wantMode:
				t.Errorf("mode %v, want %v", mode, tt.wantMode)
			}
			if errors.Is(err, objectstore.ErrPreconditionFailed) {
				t.Errorf("a refused copy is an answer, not an error: %v", err)
			}
			if len(stored) != 0 {
				t.Errorf("probe objects left: %v (deletes sent: %d)", stored, f.count("DeleteObject"))
			}
		})
	}
}
