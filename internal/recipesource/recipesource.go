// Package recipesource fetches the recipe file of a deployment where a
// Lambda function can read it at cold start: an S3 object or an SSM
// Parameter Store parameter. It is an adapter: parsing and resolution are
// internal/recipe's, which knows nothing of AWS.
//
// Only the hashcheck function needs the file: it resolves each source's
// recipe and puts the result in the job, which carries it to Convert.
package recipesource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// MaxBytes bounds a recipe file read from S3. A recipe is a page of YAML;
// SSM caps a parameter at 4 KB (standard tier) or 8 KB (advanced), see
// https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-advanced-parameters.html
const MaxBytes = 1 << 20

// ParameterGetter is the SSM call the loader makes
// (https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParameter.html).
type ParameterGetter interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// Loader reads and parses recipe files, once per location for the life of
// the process: a Lambda execution environment reads its recipe at cold
// start and keeps it. A changed file therefore takes effect with new
// execution environments; pin a version (ssm:NAME:VERSION, or a new S3 key)
// in the function's configuration to switch every function at once.
type Loader struct {
	Store objectstore.Store // for s3:// locations
	SSM   ParameterGetter   // for ssm: locations

	mu    sync.Mutex
	cache map[string]*recipe.File
}

// Load returns the parsed recipe file at ref ("" gives nil: no file).
// Errors are wrapped with the location.
func (l *Loader) Load(ctx context.Context, ref string) (*recipe.File, error) {
	if ref == "" {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.cache[ref]; ok {
		return f, nil
	}
	data, err := l.fetch(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("recipesource.Load: %s: %w", ref, err)
	}
	f, err := recipe.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("recipesource.Load: %s: %w", ref, err)
	}
	if l.cache == nil {
		l.cache = map[string]*recipe.File{}
	}
	l.cache[ref] = f
	return f, nil
}

// Book is the recipe book of ref for migration.Config.Recipes: nil when
// ref is "" (the deployment's recipe for every key).
func (l *Loader) Book(ctx context.Context, ref string) (*recipe.Book, error) {
	f, err := l.Load(ctx, ref)
	if err != nil || f == nil {
		return nil, err
	}
	return &recipe.Book{File: f}, nil
}

func (l *Loader) fetch(ctx context.Context, ref string) ([]byte, error) {
	switch {
	case strings.HasPrefix(ref, "s3://"):
		bucket, key, _ := strings.Cut(strings.TrimPrefix(ref, "s3://"), "/")
		if bucket == "" || key == "" || strings.HasSuffix(key, "/") {
			return nil, errors.New("want s3://BUCKET/KEY")
		}
		if l.Store == nil {
			return nil, errors.New("no object store to read it with")
		}
		rc, err := l.Store.Open(ctx, bucket, key)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		data, err := io.ReadAll(io.LimitReader(rc, MaxBytes+1))
		if err != nil {
			return nil, err
		}
		if len(data) > MaxBytes {
			return nil, fmt.Errorf("larger than %d bytes: not a recipe file", MaxBytes)
		}
		return data, nil
	case strings.HasPrefix(ref, "ssm:"):
		name := strings.TrimPrefix(ref, "ssm:")
		if name == "" {
			return nil, errors.New("want ssm:NAME")
		}
		if l.SSM == nil {
			return nil, errors.New("no SSM client to read it with")
		}
		// WithDecryption: a SecureString parameter is returned in clear
		// (and a String one as it is).
		out, err := l.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
		if err != nil {
			return nil, err
		}
		if out.Parameter == nil || out.Parameter.Value == nil {
			return nil, errors.New("the parameter has no value")
		}
		return []byte(*out.Parameter.Value), nil
	}
	return nil, fmt.Errorf("location %q: want s3://BUCKET/KEY or ssm:NAME", ref)
}

// NewSSM is the SSM client of cfg (the SDK reads AWS_ENDPOINT_URL_SSM and
// AWS_ENDPOINT_URL itself; endpoint, when not "", wins).
func NewSSM(cfg aws.Config, endpoint string) *ssm.Client {
	return ssm.NewFromConfig(cfg, func(o *ssm.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}
