package ssmpolicy

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/geomigrate/geomigrate/internal/policy"
)

// fakeSSM keeps one parameter's value and version.
type fakeSSM struct {
	value   *string
	version int64
	puts    int
}

func (f *fakeSSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	if f.value == nil {
		return nil, &ssmtypes.ParameterNotFound{}
	}
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Name: in.Name, Value: f.value, Version: f.version}}, nil
}

func (f *fakeSSM) PutParameter(_ context.Context, in *ssm.PutParameterInput, _ ...func(*ssm.Options)) (*ssm.PutParameterOutput, error) {
	f.puts++
	f.value, f.version = aws.String(*in.Value), f.version+1
	return &ssm.PutParameterOutput{Version: f.version}, nil
}

func TestParameter(t *testing.T) {
	ctx := context.Background()
	f := &fakeSSM{}
	p := Parameter{Client: f, Name: "/geomigrate/policy"}
	var nf *ssmtypes.ParameterNotFound
	if _, _, err := p.Fetch(ctx); !errors.As(err, &nf) {
		t.Fatalf("missing parameter: %v", err)
	}
	if _, err := p.Put(ctx, []byte(`{"version": 1, "backfill": {"max_concurrency": 0}}`)); err == nil || f.puts != 0 {
		t.Fatalf("a bad document was stored: %v, %d puts", err, f.puts)
	}
	if v, err := p.Put(ctx, []byte("\n {\"version\": 1}\n")); err != nil || v != 1 {
		t.Fatalf("Put: %d %v", v, err)
	}
	// Stored without the white space around it.
	data, rev, err := p.Fetch(ctx)
	if err != nil || string(data) != `{"version": 1}` || rev != "/geomigrate/policy:1" {
		t.Fatalf("Fetch: %s %s %v", data, rev, err)
	}
	// The revision is what lets a Source skip parsing an unchanged version.
	src := policy.NewSource(p, 0, nil)
	if _, err := src.Load(ctx); err != nil {
		t.Fatal(err)
	}
}
