package recipe_test

import (
	"fmt"

	"github.com/geomigrate/geomigrate/internal/recipe"
)

// A recipe file refines the deployment's recipe per key: defaults, then
// every matching rule in order.
func ExampleParse() {
	f, err := recipe.Parse([]byte(`
version: 1
exclude: ["scratch/**"]
defaults:
  raster: {compression: ZSTD, level: 12}
rules:
  - match: "dem/**/*.tif"
    raster: {compression: DEFLATE}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	book := &recipe.Book{File: f}
	for _, key := range []string{"dem/alps/a.tif", "ortho/b.tif"} {
		r, m, err := book.Resolve(recipe.DefaultRecipe(), key)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(key, r.Compression, m.Rules)
	}
	fmt.Println(book.Excluded("scratch/tmp.tif") != "")
	// Output:
	// dem/alps/a.tif DEFLATE [0]
	// ortho/b.tif ZSTD []
	// true
}

// Every output key is the source key with the output's extension, under a
// prefix; a multi-layer source gets a folder of its layers.
func ExampleOutputKey() {
	cog := recipe.Output{Format: recipe.FormatCOG, Extension: ".tif"}
	roads := recipe.Output{Format: recipe.FormatGeoParquet, Extension: ".parquet", Layer: "roads"}
	fmt.Println(recipe.OutputKey("cog/", "archive/dem.img", cog, false))
	fmt.Println(recipe.OutputKey("cog/", "archive/city.gpkg", roads, true))
	fmt.Println(recipe.OutputStem("_staging/job/", "archive/city.gpkg"))
	// Output:
	// cog/archive/dem.tif
	// cog/archive/city/roads.parquet
	// _staging/job/archive/city
}
