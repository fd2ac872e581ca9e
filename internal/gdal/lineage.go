package gdal

import (
	"fmt"

	"github.com/airbusgeo/godal"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// Lineage items of a COG's dataset metadata (default domain, written with
// -mo so that gdal_translate with COGOptions gives the same bytes, and read
// by `gdalinfo` as plain metadata). Only non-empty values are written: the
// same input, recipe and source hash give the same bytes.
const (
	MetaSourceSHA256      = "GEOMIGRATE_SRC_SHA256"
	MetaSourceFingerprint = "GEOMIGRATE_SRC_FINGERPRINT"
	MetaRecipe            = "GEOMIGRATE_RECIPE"
	MetaToolVersion       = "GEOMIGRATE_VERSION"
	MetaEngineVersion     = "GEOMIGRATE_GDAL_VERSION"
	MetaAssignedCRS       = "GEOMIGRATE_ASSIGNED_CRS"
	MetaLossy             = "GEOMIGRATE_LOSSY"
)

func lineageItems(l recipe.Lineage) [][2]string {
	var out [][2]string
	for _, kv := range [][2]string{
		{MetaSourceSHA256, l.SourceSHA256}, {MetaSourceFingerprint, l.Fingerprint}, {MetaRecipe, l.RecipeHash},
		{MetaToolVersion, l.ToolVersion}, {MetaEngineVersion, l.EngineVersion}, {MetaAssignedCRS, l.AssignedCRS},
		{MetaLossy, l.Lossy},
	} {
		if kv[1] != "" {
			out = append(out, kv)
		}
	}
	return out
}

// ReadCOGLineage reads the lineage a COG carries in its own metadata.
func ReadCOGLineage(path string) (recipe.Lineage, error) {
	ds, err := godal.Open(path, godal.Drivers("GTiff"), godal.RasterOnly())
	if err != nil {
		return recipe.Lineage{}, fmt.Errorf("gdal.ReadCOGLineage: %w", err)
	}
	defer ds.Close()
	md := ds.Metadatas()
	return recipe.Lineage{
		SourceSHA256: md[MetaSourceSHA256], Fingerprint: md[MetaSourceFingerprint], RecipeHash: md[MetaRecipe],
		ToolVersion: md[MetaToolVersion], EngineVersion: md[MetaEngineVersion], AssignedCRS: md[MetaAssignedCRS],
		Lossy: md[MetaLossy],
	}, nil
}
