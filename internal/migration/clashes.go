package migration

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// Clash is a set of sources of one run that would be written to the same
// output key (a/dem.tif and b/dem.tif given as two roots; dem.tif beside
// dem.img). Promote never overwrites another source's output, so all but
// one would end in remediation and which one won would be a race between
// workers: HashCheck routes every one of them instead (WithClashes), and
// the rest of the run migrates.
type Clash struct {
	// DestKey is the predicted output key, under the destination prefix.
	DestKey string
	// Sources in the order the run lists them; two or more.
	Sources []Source
	// Vector: every source is predicted to be a vector, so a recipe rule
	// choosing another vector format for one of them also separates two.
	Vector bool
}

// FindClashes groups the inputs of a run that would be written to one
// output key, predicted from the key and its recipe (recipeOf) as HashCheck
// predicts it; excluded (nil: none) leaves out what the recipe file's
// include and exclude globs leave out. Files that never produce an output
// of their own are never counted: sidecars (roads.dbf, roads.xsd), a
// conditional sidecar beside its main file (image.XML beside image.tif),
// files no migration needs, the files inside a directory source (a .gdb
// folder is one source), and the same file named twice. A multi-layer
// source's per-layer keys are only known after conversion; a clash there
// still ends in remediation at Promote. Clashes come in the order of their
// first source.
func FindClashes(inputs []Source, recipeOf func(key string) recipe.Recipe, excluded func(key string) bool) []Clash {
	type ref struct{ bucket, key string }
	// The base names of each directory, to find a conditional sidecar's
	// main file among the inputs.
	dirs := map[ref][]string{}
	for _, in := range inputs {
		dir, base := path.Split(in.Key)
		dirs[ref{in.Bucket, dir}] = append(dirs[ref{in.Bucket, dir}], base)
	}
	byKey := map[string]*Clash{}
	var order []string
	seen := map[ref]bool{}
	for _, in := range inputs {
		r := ref{in.Bucket, in.Key}
		dir, _ := path.Split(in.Key)
		if seen[r] || neverAnOutput(in.Key, dirs[ref{in.Bucket, dir}]) {
			continue
		}
		seen[r] = true
		if excluded != nil && excluded(in.Key) {
			continue
		}
		out := PredictDestKey(in.Key, recipeOf(in.Key))
		c := byKey[out]
		if c == nil {
			c = &Clash{DestKey: out, Vector: true}
			byKey[out] = c
			order = append(order, out)
		}
		c.Sources = append(c.Sources, in)
		c.Vector = c.Vector && formats.PredictKind(in.Key) == formats.Vector
	}
	var clashes []Clash
	for _, k := range order {
		if c := byKey[k]; len(c.Sources) > 1 {
			clashes = append(clashes, *c)
		}
	}
	return clashes
}

// neverAnOutput reports whether key is a file that is part of another
// source or no source at all; siblings are the base names of the inputs
// in its directory.
func neverAnOutput(key string, siblings []string) bool {
	base := path.Base(key)
	switch {
	case formats.IsSidecar(base), NotGeospatial(key) != "", inDirectorySource(key):
		return true
	case formats.Conditional(base):
		return slices.ContainsFunc(siblings, func(s string) bool { return formats.SidecarOf(s, base) })
	}
	return false
}

// inDirectorySource reports whether key lies inside a directory source
// ("city.gdb/a00000001.gdbtable"): part of that source, never one itself.
func inDirectorySource(key string) bool {
	segs := strings.Split(key, "/")
	for _, s := range segs[:len(segs)-1] {
		if formats.Lookup(s).Directory {
			return true
		}
	}
	return false
}

// name is how a clash names a source: bucket/key (locally the bucket is
// the source directory's name).
func (s Source) name() string { return s.Bucket + "/" + s.Key }

// refusal is the DataError a source of c is routed with: it names every
// other source of the clash and the ways out (where shows the output key
// as the user knows the destination).
func (c Clash) refusal(src Source, where string) error {
	var others []string
	for _, o := range c.Sources {
		if o.Bucket != src.Bucket || o.Key != src.Key {
			others = append(others, o.name())
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s and %s would all be written to %s, so none of these %d files was migrated. "+
		"Rename all but one of them and migrate or replay them again, or migrate them into different destinations; "+
		"or leave all but one out of the run with the recipe file's exclude (exclude: [%q])",
		src.name(), strings.Join(others, ", "), where, len(c.Sources), src.Key)
	if c.Vector && len(c.Sources) == 2 {
		fmt.Fprintf(&b, ", or give one of them another vector format with a recipe rule (rules: [{match: [%q], vector: {format: FlatGeobuf}}])", src.Key)
	}
	return fault.Data(fault.DestinationTaken, "%s", b.String())
}

// clashIndex finds the clash of a source.
type clashIndex struct {
	of    map[string]*Clash // bucket + "\x00" + key
	where func(destKey string) string
}

// WithClashes makes HashCheck route every source of clashes, before it is
// converted, as a DataError DestinationConflict naming the other sources
// and the ways out; where shows a predicted output key as the user knows
// the destination (a directory, an s3:// URI). The run finds its clashes
// once with FindClashes; every other source migrates as usual.
func (h *HashCheck) WithClashes(clashes []Clash, where func(destKey string) string) *HashCheck {
	idx := clashIndex{of: map[string]*Clash{}, where: where}
	for i := range clashes {
		for _, s := range clashes[i].Sources {
			idx.of[s.Bucket+"\x00"+s.Key] = &clashes[i]
		}
	}
	h.clashes = idx
	return h
}

// FindClashes is FindClashes under HashCheck's recipes and exclusions.
func (h *HashCheck) FindClashes(inputs []Source) []Clash {
	return FindClashes(inputs, h.RecipeFor, func(key string) bool { return h.cfg.Recipes.Excluded(key) != "" })
}

// clashOf is the refusal of the source bucket/key, or nil when it is in no
// clash.
func (h *HashCheck) clashOf(bucket, key string) error {
	c := h.clashes.of[bucket+"\x00"+key]
	if c == nil {
		return nil
	}
	where := c.DestKey
	if h.clashes.where != nil {
		where = h.clashes.where(c.DestKey)
	}
	return c.refusal(Source{Bucket: bucket, Key: key}, where)
}
