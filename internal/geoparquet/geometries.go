package geoparquet

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// EachGeometry calls fn with the WKB of every non-null value of a file's
// primary geometry column, in row order, and returns the column's CRS as
// the "geo" metadata gives it (PROJJSON; nil means OGC:CRS84). The slice
// passed to fn is only valid during the call. An error from fn stops the
// scan and is returned.
func EachGeometry(r io.ReaderAt, size int64, fn func(wkb []byte) error) (crs json.RawMessage, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("geoparquet.EachGeometry: the Parquet reader failed: %v", v)
		}
	}()
	rdr, err := file.NewParquetReader(io.NewSectionReader(r, 0, size))
	if err != nil {
		return nil, fmt.Errorf("geoparquet.EachGeometry: %w", err)
	}
	defer rdr.Close()
	md := rdr.MetaData()
	var geo struct {
		Primary string `json:"primary_column"`
		Columns map[string]struct {
			CRS json.RawMessage `json:"crs"`
		} `json:"columns"`
	}
	text := md.KeyValueMetadata().FindValue("geo")
	if text == nil {
		return nil, fmt.Errorf("geoparquet.EachGeometry: no \"geo\" metadata")
	}
	if err := json.Unmarshal([]byte(*text), &geo); err != nil || geo.Primary == "" {
		return nil, fmt.Errorf("geoparquet.EachGeometry: no usable \"geo\" metadata (%v)", err)
	}
	crs = geo.Columns[geo.Primary].CRS
	if string(crs) == "null" {
		crs = nil
	}
	leaf := md.Schema.ColumnIndexByName(geo.Primary)
	if leaf < 0 {
		return nil, fmt.Errorf("geoparquet.EachGeometry: no column %q", geo.Primary)
	}
	maxDef := md.Schema.Column(leaf).MaxDefinitionLevel()
	const batch = 4096
	vals := make([]parquet.ByteArray, batch)
	defs := make([]int16, batch)
	for g := 0; g < rdr.NumRowGroups(); g++ {
		rg := rdr.RowGroup(g)
		cr, err := rg.Column(leaf)
		if err != nil {
			return nil, fmt.Errorf("geoparquet.EachGeometry: row group %d: %w", g, err)
		}
		br, ok := cr.(*file.ByteArrayColumnChunkReader)
		if !ok {
			return nil, fmt.Errorf("geoparquet.EachGeometry: column %q is not binary", geo.Primary)
		}
		for left := rg.NumRows(); left > 0; {
			total, nv, err := br.ReadBatch(min(batch, left), vals, defs, nil)
			if err != nil {
				return nil, fmt.Errorf("geoparquet.EachGeometry: row group %d: %w", g, err)
			}
			if total == 0 {
				return nil, fmt.Errorf("geoparquet.EachGeometry: row group %d: column %q ends %d rows early", g, geo.Primary, left)
			}
			vi := 0
			for _, d := range defs[:total] {
				if d < maxDef || vi >= nv {
					continue // null geometry
				}
				if err := fn(vals[vi]); err != nil {
					return nil, err
				}
				vi++
			}
			left -= total
		}
	}
	return crs, nil
}
