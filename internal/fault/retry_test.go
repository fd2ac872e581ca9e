package fault

import (
	"context"
	"errors"
	"testing"
)

func TestRetry(t *testing.T) {
	transient := Transient("test", errors.New("503"))
	data := Data(InvalidInput, "bad")
	tests := []struct {
		name      string
		attempts  int
		fails     []error // what the calls return, in turn (then nil)
		wantCalls int
		wantErr   error
	}{
		{"first try", 5, nil, 1, nil},
		{"transient then success", 5, []error{transient, transient}, 3, nil},
		{"spent", 3, []error{transient, transient, transient, transient}, 3, transient},
		{"not retryable", 5, []error{data}, 1, data},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := Retry(context.Background(), tt.attempts, IsTransient, func() error {
				calls++
				if calls <= len(tt.fails) {
					return tt.fails[calls-1]
				}
				return nil
			})
			if calls != tt.wantCalls || !errors.Is(err, tt.wantErr) {
				t.Errorf("%d calls, %v; want %d, %v", calls, err, tt.wantCalls, tt.wantErr)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	if err := Retry(ctx, 5, IsTransient, func() error { calls++; return transient }); !errors.Is(err, transient) || calls != 1 {
		t.Errorf("ended context: %d calls, %v", calls, err)
	}
}
