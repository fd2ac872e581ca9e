// Package stactest validates STAC documents in tests against the official
// JSON schemas of STAC core and of each extension geomigrate writes,
// vendored in testdata/schemas (versions and sources in
// testdata/schemas/README.md). Every schema is registered under its
// canonical $id, and no loader is configured, so validation never touches
// the network: a reference to anything not vendored fails to compile.
package stactest

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	"github.com/dlclark/regexp2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed testdata/schemas
var schemaFS embed.FS

// Canonical locations of the vendored schemas.
const (
	ItemSchema = "https://schemas.stacspec.org/v1.0.0/item-spec/json-schema/item.json"
)

// vendored maps each canonical URL to its file under testdata/schemas.
var vendored = map[string]string{
	ItemSchema: "stac-spec/v1.0.0/item.json",
	"https://geojson.org/schema/Feature.json":                         "geojson/Feature.json",
	"https://geojson.org/schema/Geometry.json":                        "geojson/Geometry.json",
	"https://proj.org/schemas/v0.5/projjson.schema.json":              "proj/projjson-v0.5.schema.json",
	"https://stac-extensions.github.io/projection/v1.0.0/schema.json": "projection/v1.0.0/schema.json",
	"https://stac-extensions.github.io/raster/v1.0.0/schema.json":     "raster/v1.0.0/schema.json",
	"https://stac-extensions.github.io/file/v2.1.0/schema.json":       "file/v2.1.0/schema.json",
	"https://stac-extensions.github.io/processing/v1.1.0/schema.json": "processing/v1.1.0/schema.json",
	"https://stac-extensions.github.io/table/v1.0.0/schema.json":      "table/v1.0.0/schema.json",
}

// commonMetadata are the STAC 1.0.0 common-metadata schemas item.json
// refers to. Their official v1.0.0 files were not obtainable offline here
// (see README.md), so they are registered as the empty schema, which
// accepts anything: NOT the official schemas. What item.json itself
// requires of properties (a non-null datetime) is still enforced; the
// common-metadata fields geomigrate writes (datetime, created) are checked
// by the stac package's own tests.
var commonMetadata = []string{"basics.json", "datetime.json", "instrument.json", "licensing.json", "provider.json"}

// Validator validates STAC items.
type Validator struct {
	item       *jsonschema.Schema
	extensions map[string]*jsonschema.Schema
}

var (
	once      sync.Once
	shared    *Validator
	sharedErr error
)

// New compiles the vendored schemas (once per process).
func New() (*Validator, error) {
	once.Do(func() { shared, sharedErr = compile() })
	return shared, sharedErr
}

func compile() (*Validator, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.AssertFormat()
	// The extension schemas use ECMA-262 patterns (look-ahead and
	// look-behind), which Go's regexp does not have.
	c.UseRegexpEngine(ecmaCompile)
	for url, file := range vendored {
		b, err := fs.ReadFile(schemaFS, "testdata/schemas/"+file)
		if err != nil {
			return nil, fmt.Errorf("stactest: %w", err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("stactest: %s: %w", file, err)
		}
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("stactest: %s: %w", file, err)
		}
	}
	base := ItemSchema[:strings.LastIndex(ItemSchema, "/")+1]
	for _, name := range commonMetadata {
		if err := c.AddResource(base+name, map[string]any{}); err != nil {
			return nil, fmt.Errorf("stactest: %s: %w", name, err)
		}
	}
	v := &Validator{extensions: map[string]*jsonschema.Schema{}}
	var err error
	if v.item, err = c.Compile(ItemSchema); err != nil {
		return nil, fmt.Errorf("stactest: compile item schema: %w", err)
	}
	for url := range vendored {
		if !strings.HasPrefix(url, "https://stac-extensions.github.io/") {
			continue
		}
		if v.extensions[url], err = c.Compile(url); err != nil {
			return nil, fmt.Errorf("stactest: compile %s: %w", url, err)
		}
	}
	return v, nil
}

// Extensions lists the extension schemas vendored, sorted.
func (v *Validator) Extensions() []string {
	var out []string
	for u := range v.extensions {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// ValidateItem validates doc against the STAC 1.0.0 item schema and the
// schema of every extension it declares; an extension not vendored is an
// error (it could not be checked).
func (v *Validator) ValidateItem(doc []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := v.item.Validate(inst); err != nil {
		return fmt.Errorf("STAC item schema: %w", err)
	}
	var head struct {
		Extensions []string `json:"stac_extensions"`
	}
	if err := json.Unmarshal(doc, &head); err != nil {
		return err
	}
	for _, ext := range head.Extensions {
		sch, ok := v.extensions[ext]
		if !ok {
			return fmt.Errorf("extension %s: no vendored schema to validate against", ext)
		}
		if err := sch.Validate(inst); err != nil {
			return fmt.Errorf("extension %s: %w", ext, err)
		}
	}
	return nil
}

type ecmaRegexp regexp2.Regexp

func (re *ecmaRegexp) MatchString(s string) bool {
	ok, err := (*regexp2.Regexp)(re).MatchString(s)
	return err == nil && ok
}

func (re *ecmaRegexp) String() string { return (*regexp2.Regexp)(re).String() }

func ecmaCompile(s string) (jsonschema.Regexp, error) {
	re, err := regexp2.Compile(s, regexp2.ECMAScript)
	if err != nil {
		return nil, err
	}
	return (*ecmaRegexp)(re), nil
}
