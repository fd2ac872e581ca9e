package recipe

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestGDALAndRioCogeoSpellings: each alias resolves to the recipe the
// recipe's own spelling does.
func TestGDALAndRioCogeoSpellings(t *testing.T) {
	cases := []struct {
		name, raster string
		co           map[string]string // as --co gives them
		want         func(Recipe) bool
	}{
		{"predictor 2", "{predictor: 2}", nil, func(r Recipe) bool { return r.Predictor == "standard" }},
		{"predictor 3", "{predictor: 3}", nil, func(r Recipe) bool { return r.Predictor == "floating_point" }},
		{"predictor 1", "{predictor: 1}", nil, func(r Recipe) bool { return r.Predictor == "none" }},
		{"--co PREDICTOR=2", "{}", map[string]string{"PREDICTOR": "2"}, func(r Recipe) bool { return r.Predictor == "standard" && len(r.CreationOptions) == 0 }},
		{"--co PREDICTOR=YES passes through", "{}", map[string]string{"PREDICTOR": "YES"}, func(r Recipe) bool {
			return r.Predictor == "auto" && slices.Equal(r.CreationOptions, []string{"PREDICTOR=YES"})
		}},
		{"creation option PREDICTOR", "{creation_options: {PREDICTOR: FLOATING_POINT}}", nil, func(r Recipe) bool { return r.Predictor == "floating_point" }},
		{"lanczos", "{overview_resampling: lanczos}", nil, func(r Recipe) bool { return r.OverviewResampling == "lanczos" }},
		{"RMS", "{overview_resampling: RMS}", nil, func(r Recipe) bool { return r.OverviewResampling == "rms" }},
		{"near", "{overview_resampling: near}", nil, func(r Recipe) bool { return r.OverviewResampling == ResamplingNearest }},
		{"profile deflate", "{profile: deflate}", nil, func(r Recipe) bool { return r.Compression == "DEFLATE" }},
		{"profile raw", "{profile: raw}", nil, func(r Recipe) bool { return r.Compression == "NONE" }},
		{"profile lzma", "{profile: lzma}", nil, func(r Recipe) bool { return r.Compression == "LZMA" }},
		{"profile jpeg with a threshold", "{profile: jpeg, min_psnr_db: 35}", nil, func(r Recipe) bool {
			return r.Compression == "JPEG" && r.Quality == DefaultQuality && r.MinPSNR == 35
		}},
		{"--co COMPRESS=DEFLATE --co LEVEL=9", "{}", map[string]string{"COMPRESS": "deflate", "LEVEL": "9"}, func(r Recipe) bool {
			return r.Compression == "DEFLATE" && r.DeflateLevel == 9 && len(r.CreationOptions) == 0
		}},
		{"--co BLOCKSIZE=256", "{}", map[string]string{"BLOCKSIZE": "256"}, func(r Recipe) bool { return r.BlockSize == 256 && len(r.CreationOptions) == 0 }},
		{"--co COMPRESS=WEBP --co QUALITY=90 over a lossy file", "{compression: JPEG, min_psnr_db: 30}", map[string]string{"COMPRESS": "WEBP", "QUALITY": "90"}, func(r Recipe) bool {
			return r.Compression == "WEBP" && r.Quality == 90 && r.MinPSNR == 30
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := mustParse(t, "version: 1\ndefaults:\n  raster: "+c.raster+"\n")
			b := &Book{File: f}
			b.Flags.Raster.CreationOptions = c.co
			r, _, err := b.Resolve(Recipe{}, "a.tif")
			if err != nil {
				t.Fatal(err)
			}
			if !c.want(r) {
				t.Errorf("resolved to %+v", r)
			}
		})
	}
	// The same recipe by two spellings hashes the same.
	a, _, _ := (&Book{File: mustParse(t, "version: 1\ndefaults:\n  raster: {predictor: 2, profile: lzw}\n")}).Resolve(Recipe{}, "a.tif")
	b, _, _ := (&Book{File: mustParse(t, "version: 1\ndefaults:\n  raster: {predictor: standard, compression: LZW}\n")}).Resolve(Recipe{}, "a.tif")
	if a.Hash() != b.Hash() {
		t.Errorf("predictor 2/profile lzw hashes %s, predictor standard/compression LZW %s", a.ShortHash(), b.ShortHash())
	}
}

// fakeCapabilities: an engine whose COG driver writes no WEBP, knows
// only EPSG:4326 and 3035 and creation options BIGTIFF and BLOCKSIZE.
func fakeCapabilities() Capabilities {
	return Capabilities{
		Engine:       "GDAL test",
		Compressions: []string{"NONE", "LZW", "JPEG", "DEFLATE", "ZSTD"},
		Resamplings:  []string{"nearest", "average", "lanczos"},
		CreationOption: func(kv string) error {
			if k, _, _ := strings.Cut(kv, "="); k != "BIGTIFF" && k != "BLOCKSIZE" {
				return errors.New("creation option " + k + ": the COG driver has no such option")
			}
			return nil
		},
		CRS: func(code string) error {
			if code != "EPSG:4326" && code != "EPSG:3035" {
				return errors.New("unknown to PROJ")
			}
			return nil
		},
	}
}

func TestBookCheck(t *testing.T) {
	cases := []struct {
		name, file string
		co         map[string]string
		want       []string // substrings of the error; none: accepted
	}{
		{"fine", "version: 1\ndefaults:\n  raster: {target_crs: EPSG:3035}\n  assign_crs: EPSG:4326\n", map[string]string{"BIGTIFF": "YES"}, nil},
		{"unknown target crs", "version: 1\nrules:\n  - match: a/**\n    raster:\n      target_crs: EPSG:999999\n", nil, []string{"line 5", "rules[0].raster.target_crs", "EPSG:999999", "unknown to PROJ"}},
		{"unknown assign crs", "version: 1\ndefaults:\n  assign_crs: \"EPSG:999999\"\n", nil, []string{"line 3", "assign_crs", "EPSG:999999"}},
		{"compression the driver lacks", "version: 1\ndefaults:\n  raster: {compression: WEBP, min_psnr_db: 30}\n", nil, []string{"line 3", "WEBP", "does not write it"}},
		{"resampling the engine lacks", "version: 1\ndefaults:\n  raster:\n    overview_resampling: rms\n", nil, []string{"line 4", "rms", "builds overviews with"}},
		{"creation option the driver lacks", "version: 1\ndefaults:\n  raster:\n    creation_options: {NOSUCH: 1}\n", nil, []string{"line 4", "NOSUCH"}},
		{"--co the driver lacks", "", map[string]string{"NOSUCH": "1"}, []string{"the command line", "NOSUCH"}},
		{"--co lossy without a threshold", "", map[string]string{"COMPRESS": "JPEG"}, []string{"lossless by default"}},
		{"--co lossy over a file without a threshold", "version: 1\nrules:\n  - match: a/**\n    raster: {blocksize: 256}\n", map[string]string{"COMPRESS": "JPEG"}, []string{"the defaults with the command line", "lossless by default"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &Book{}
			if c.file != "" {
				b.File = mustParse(t, c.file)
			}
			b.Flags.Raster.CreationOptions = c.co
			err := b.Check(fakeCapabilities())
			if len(c.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
