package recipesource

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
)

const goodRecipe = "version: 1\nrules:\n  - match: \"dem/**\"\n    raster: {compression: DEFLATE}\n"

// fakeSSM answers GetParameter from a map and counts the calls.
type fakeSSM struct {
	params map[string]string
	calls  int
	asked  *ssm.GetParameterInput
}

func (f *fakeSSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.calls++
	f.asked = in
	v, ok := f.params[aws.ToString(in.Name)]
	if !ok {
		return nil, &ssmtypes.ParameterNotFound{Message: aws.String("no such parameter")}
	}
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Name: in.Name, Value: aws.String(v)}}, nil
}

func put(t *testing.T, s objectstore.Store, bucket, key string, body []byte) {
	t.Helper()
	if _, err := s.Put(context.Background(), objectstore.PutRequest{Bucket: bucket, Key: key, Body: bytes.NewReader(body), Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	ctx := context.Background()
	store := memstore.New("cfg")
	put(t, store, "cfg", "recipes/prod.yaml", []byte(goodRecipe))
	put(t, store, "cfg", "recipes/bad.yaml", []byte("version: 1\nrulez: []\n"))
	put(t, store, "cfg", "recipes/huge.yaml", bytes.Repeat([]byte("#"), MaxBytes+1))
	params := &fakeSSM{params: map[string]string{"/geomigrate/recipe": goodRecipe, "/geomigrate/recipe:2": goodRecipe}}
	l := &Loader{Store: store, SSM: params}
	cases := []struct {
		ref     string
		wantErr string // "" for a file with one rule
	}{
		{"s3://cfg/recipes/prod.yaml", ""},
		{"ssm:/geomigrate/recipe", ""},
		{"ssm:/geomigrate/recipe:2", ""},
		{"s3://cfg/recipes/bad.yaml", "line 2"},
		{"s3://cfg/recipes/huge.yaml", "larger than"},
		{"s3://cfg/recipes/missing.yaml", "recipes/missing.yaml"},
		{"s3://cfg", "s3://BUCKET/KEY"},
		{"ssm:", "ssm:NAME"},
		{"ssm:/nope", "no such parameter"},
		{"/etc/recipe.yaml", "want s3://BUCKET/KEY or ssm:NAME"},
	}
	for _, c := range cases {
		t.Run(c.ref, func(t *testing.T) {
			f, err := l.Load(ctx, c.ref)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), c.ref) {
					t.Fatalf("error %v, want one naming %q and %q", err, c.ref, c.wantErr)
				}
				return
			}
			if err != nil || f == nil || len(f.Rules) != 1 {
				t.Fatalf("%+v %v", f, err)
			}
		})
	}
	if params.asked == nil || !aws.ToBool(params.asked.WithDecryption) {
		t.Error("SSM asked without decryption: a SecureString would come back encrypted")
	}
}

func TestLoadIsCachedPerLocation(t *testing.T) {
	ctx := context.Background()
	params := &fakeSSM{params: map[string]string{"/r": goodRecipe}}
	l := &Loader{SSM: params}
	first, err := l.Load(ctx, "ssm:/r")
	if err != nil {
		t.Fatal(err)
	}
	params.params["/r"] = "version: 1\n" // changed after the cold start
	for range 3 {
		again, err := l.Load(ctx, "ssm:/r")
		if err != nil || again != first {
			t.Fatalf("second load: %v, same %v", err, again == first)
		}
	}
	if params.calls != 1 {
		t.Fatalf("%d calls to SSM, want 1", params.calls)
	}
	// A failed load is not cached: the next cold-start retry reads again.
	l2 := &Loader{SSM: &fakeSSM{params: map[string]string{}}}
	for range 2 {
		if _, err := l2.Load(ctx, "ssm:/r"); err == nil {
			t.Fatal("loaded a missing parameter")
		}
	}
	if n := l2.SSM.(*fakeSSM).calls; n != 2 {
		t.Fatalf("%d calls, want 2 (errors are not cached)", n)
	}
}

func TestBook(t *testing.T) {
	l := &Loader{SSM: &fakeSSM{params: map[string]string{"/r": goodRecipe}}}
	b, err := l.Book(context.Background(), "")
	if b != nil || err != nil {
		t.Fatalf("no location: %v %v", b, err)
	}
	b, err = l.Book(context.Background(), "ssm:/r")
	if err != nil || b == nil || b.File == nil {
		t.Fatalf("%v %v", b, err)
	}
	if _, err := (&Loader{}).Book(context.Background(), "ssm:/r"); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("no client: %v", err)
	}
}
