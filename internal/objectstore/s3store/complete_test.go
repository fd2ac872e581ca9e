package s3store

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// TestConditionalCompleteIsResolvedByReadingTheKey: a promotion's
// CompleteMultipartUpload whose answer is lost is not sent again when the
// key already holds this write (its size and metadata); when it does not,
// the Complete is tried again. An unconditional Complete is left to the
// SDK's retries.
func TestConditionalCompleteIsResolvedByReadingTheKey(t *testing.T) {
	meta := map[string]string{"src-sha256": "abc"}
	for _, tc := range []struct {
		name          string
		keyHolds      bool // after the lost answer, the key holds this write
		wantCompletes int
	}{
		{"done, answer lost", true, 1},
		{"not done", false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			completes := 0
			f := &fakeAPI{}
			f.head = func(in *s3.HeadObjectInput) (*s3.HeadObjectOutput, error) {
				switch {
				case *in.Key == "src":
					return &s3.HeadObjectOutput{ContentLength: aws.Int64(10), ETag: aws.String(`"s"`)}, nil
				case completes > 0 && (tc.keyHolds || completes > 1):
					return &s3.HeadObjectOutput{ContentLength: aws.Int64(10), ETag: aws.String(`"abc-1"`), Metadata: meta}, nil
				}
				return nil, sdkError(404, nil)
			}
			f.complete = func(*s3.CompleteMultipartUploadInput) (*s3.CompleteMultipartUploadOutput, error) {
				completes++
				if completes == 1 {
					return nil, sendError(fmt.Errorf("read tcp: %w", syscall.ECONNRESET))
				}
				return &s3.CompleteMultipartUploadOutput{ETag: aws.String(`"abc-1"`)}, nil
			}
			st := New(f, Options{ConditionalCopy: CopyServerMultipart})
			st.buckets.Store("b", true)
			_, err := st.Copy(context.Background(), objectstore.CopyRequest{SrcBucket: "b", SrcKey: "src", DstBucket: "b", DstKey: "dst", Metadata: meta, IfNoneMatch: true})
			if err != nil {
				t.Fatalf("Copy: %v", err)
			}
			if completes != tc.wantCompletes {
				t.Errorf("%d CompleteMultipartUpload calls, want %d", completes, tc.wantCompletes)
			}
		})
	}
}
