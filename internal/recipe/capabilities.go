package recipe

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Capabilities is what the engine at hand can do with a recipe: the
// facts a recipe is checked against before the first file starts
// (Book.Check, Recipe.Check), so that a recipe this engine cannot apply
// is refused once, with its line, rather than failing every file it
// matches. internal/gdal provides them from GDAL itself.
type Capabilities struct {
	// Engine names the engine in messages ("GDAL 3.6.2").
	Engine string
	// Compressions are the COMPRESS values the COG driver writes.
	Compressions []string
	// Resamplings are the overview resampling names (lower case) the
	// engine builds overviews with.
	Resamplings []string
	// CreationOption checks one KEY=VALUE against the COG driver's
	// creation option list.
	CreationOption func(kv string) error
	// CRS checks an AUTHORITY:CODE against the engine's CRS database.
	CRS func(code string) error
	// Lossy checks that the engine can measure the error of a lossy
	// output (nil: it can).
	Lossy func(compression string) error
}

// Check checks r against c (r is valid: Validate passed).
func (r Recipe) Check(c Capabilities) error {
	r = r.WithDefaults()
	if err := c.compression(r.Compression); err != nil {
		return err
	}
	if r.OverviewResampling != ResamplingAuto && !slices.Contains(c.Resamplings, r.OverviewResampling) {
		return fmt.Errorf("overview resampling %s: %s builds overviews with %s", r.OverviewResampling, c.Engine, strings.Join(c.Resamplings, ", "))
	}
	for _, kv := range r.CreationOptions {
		if err := c.CreationOption(kv); err != nil {
			return err
		}
	}
	if r.TargetCRS != "" && r.TargetCRS != WebOptimized {
		if err := c.CRS(r.TargetCRS); err != nil {
			return fmt.Errorf("target_crs %s: %w", r.TargetCRS, err)
		}
	}
	if r.AssignCRS != "" {
		if err := c.CRS(r.AssignCRS); err != nil {
			return fmt.Errorf("assign_crs %s: %w", r.AssignCRS, err)
		}
	}
	return nil
}

func (c Capabilities) compression(name string) error {
	if !slices.Contains(c.Compressions, name) {
		return fmt.Errorf("compression %s: the COG driver of %s does not write it (built without its codec; it writes %s)", name, c.Engine, strings.Join(c.Compressions, ", "))
	}
	if c.Lossy != nil && slices.Contains(LossyCompressions, name) {
		return c.Lossy(name)
	}
	return nil
}

// Check checks every part of the book against c before a run: each
// block of the file (defaults and rules) on its own, naming the line of
// the value refused, then each combination a key can resolve to (the
// defaults, each rule over them, the command line's settings over both),
// so that no key resolves to a recipe c cannot apply. The file itself was
// checked by Parse.
func (b *Book) Check(c Capabilities) error {
	if b == nil {
		return nil
	}
	if f := b.File; f != nil {
		if err := f.Defaults.checkWith(c, "$.defaults"); err != nil {
			return locate("recipe.Check", f.data, err)
		}
		for i, r := range f.Rules {
			if err := r.Settings.checkWith(c, fmt.Sprintf("$.rules[%d]", i)); err != nil {
				return locate("recipe.Check", f.data, err)
			}
		}
	}
	if err := b.Flags.checkWith(c, "the command line"); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			return fmt.Errorf("recipe.Check: the command line: %s", fe.msg)
		}
		return fmt.Errorf("recipe.Check: %w", err)
	}
	// The combinations: a trial recipe per rule (and the defaults alone),
	// with the flags over it.
	var defaults Settings
	var rules []Settings
	if b.File != nil {
		defaults, rules = b.File.Defaults, nil
		for _, r := range b.File.Rules {
			rules = append(rules, r.Settings)
		}
	}
	trials := [][]Settings{{defaults, b.Flags}}
	for _, r := range rules {
		trials = append(trials, []Settings{defaults, r, b.Flags})
	}
	for i, t := range trials {
		r := Recipe{}.WithDefaults()
		var err error
		for _, s := range t {
			if err = s.apply(&r); err != nil {
				break
			}
		}
		if err == nil {
			r.settleLevel()
			if err = r.Validate(); err != nil {
				err = errors.New(unwrapMsg(err))
			} else {
				err = r.Check(c)
			}
		}
		if err != nil {
			what := "the defaults"
			if i > 0 {
				what = fmt.Sprintf("rule %d over the defaults", i)
			}
			if b.File == nil {
				return fmt.Errorf("recipe.Check: the command line: %v", err)
			}
			return fmt.Errorf("recipe.Check: %s with the command line's settings: %v", what, err)
		}
	}
	return nil
}

// checkWith checks the values one block sets against c, each at its own
// path (for its line).
func (s Settings) checkWith(c Capabilities, at string) error {
	ra := at + ".raster"
	r, err := s.Raster.lifted(ra)
	if err != nil {
		return err
	}
	if r.Compression != nil {
		// Lossy without a threshold is the trial's to say, with the
		// defaults the block is applied over.
		if err := c.compression(strings.ToUpper(*r.Compression)); err != nil {
			return &fieldError{ra + ".compression", err.Error()}
		}
	}
	if r.OverviewResampling != nil {
		if name := resamplingName(*r.OverviewResampling); name != ResamplingAuto && !slices.Contains(c.Resamplings, name) {
			return &fieldError{ra + ".overview_resampling", fmt.Sprintf("%s: %s builds overviews with %s", name, c.Engine, strings.Join(c.Resamplings, ", "))}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(r.CreationOptions)) {
		kv, err := CreationOption(k + "=" + r.CreationOptions[k])
		if err == nil {
			err = c.CreationOption(kv)
		}
		if err != nil {
			return &fieldError{ra + ".creation_options." + k, err.Error()}
		}
	}
	if r.TargetCRS != nil {
		if crs, err := parseTargetCRS(*r.TargetCRS); err == nil && crs != "" && crs != WebOptimized {
			if err := c.CRS(crs); err != nil {
				return &fieldError{ra + ".target_crs", fmt.Sprintf("%s: %v", crs, err)}
			}
		}
	}
	if s.AssignCRS != nil {
		if crs, err := parseAssignCRS(*s.AssignCRS); err == nil && crs != "" {
			if err := c.CRS(crs); err != nil {
				return &fieldError{at + ".assign_crs", fmt.Sprintf("%s: %v", crs, err)}
			}
		}
	}
	return nil
}
