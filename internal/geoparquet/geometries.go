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
	err = eachPrimaryValue(rdr, geo.Primary, func(wkb []byte, null bool) error {
		if null {
			return nil
		}
		return fn(wkb)
	})
	if err != nil {
		return nil, fmt.Errorf("geoparquet.EachGeometry: %w", err)
	}
	return crs, nil
}

// readBatch is how many values a column read takes at a time: 4,096, or
// the file's row count when smaller (a one-feature file allocated 100 KiB
// of buffers for its one value).
func readBatch(rdr *file.Reader) int64 {
	return max(1, min(4096, rdr.NumRows()))
}

// eachPrimaryValue calls fn with every row's value of the binary column
// named primary, in row order, and whether it is null. ReadInfo counts the
// nulls and EachGeometry hands the rest on; both read it this way, in
// batches.
func eachPrimaryValue(rdr *file.Reader, primary string, fn func(wkb []byte, null bool) error) error {
	md := rdr.MetaData()
	leaf := md.Schema.ColumnIndexByName(primary)
	if leaf < 0 {
		return fmt.Errorf("no column %q", primary)
	}
	maxDef := md.Schema.Column(leaf).MaxDefinitionLevel()
	batch := readBatch(rdr)
	vals := make([]parquet.ByteArray, batch)
	defs := make([]int16, batch)
	for g := 0; g < rdr.NumRowGroups(); g++ {
		rg := rdr.RowGroup(g)
		cr, err := rg.Column(leaf)
		if err != nil {
			return fmt.Errorf("row group %d: %w", g, err)
		}
		br, ok := cr.(*file.ByteArrayColumnChunkReader)
		if !ok {
			return fmt.Errorf("column %q is not binary", primary)
		}
		for left := rg.NumRows(); left > 0; {
			total, nv, err := br.ReadBatch(min(batch, left), vals, defs, nil)
			if err != nil {
				return fmt.Errorf("row group %d: %w", g, err)
			}
			if total == 0 {
				return fmt.Errorf("row group %d: column %q ends %d rows early", g, primary, left)
			}
			vi := 0
			for _, d := range defs[:total] {
				if d < maxDef || vi >= nv {
					if err := fn(nil, true); err != nil {
						return err
					}
					continue
				}
				v := vals[vi]
				vi++
				if err := fn(v, false); err != nil {
					return err
				}
			}
			left -= total
		}
	}
	return nil
}
