package localrun_test

import (
	"testing"

	"github.com/geomigrate/geomigrate/internal/localrun"
)

func TestRetryWaitScale(t *testing.T) {
	for _, tt := range []struct {
		env     string
		want    float64
		wantErr bool
	}{
		{"", 1, false},
		{"1", 1, false},
		{"0.01", 0.01, false},
		{"0", 0, true},
		{"-1", 0, true},
		{"NaN", 0, true},
		{"fast", 0, true},
		{"1e9", 0, true},
	} {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv(localrun.RetryWaitScaleEnv, tt.env)
			got, err := localrun.RetryWaitScale()
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("RetryWaitScale() = %v, %v; want %v (error %v)", got, err, tt.want, tt.wantErr)
			}
			if _, err := localrun.NewExecutor(localrun.Handlers{}, localrun.Queues{}); (err != nil) != tt.wantErr {
				t.Errorf("NewExecutor with %s=%q: %v", localrun.RetryWaitScaleEnv, tt.env, err)
			}
		})
	}
}
