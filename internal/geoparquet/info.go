package geoparquet

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// LineageKey is the Parquet key-value metadata key under which the writer
// stores Options.Lineage (a JSON object), next to "geo".
const LineageKey = "geomigrate"

// Info is what a GeoParquet file says about itself, read back on its own:
// the fidelity check compares it with the source layer.
type Info struct {
	Rows           int64
	Fields         []Field // attribute columns in file order (geometry and covering columns left out); Type 0 = not a type Write produces
	GeometryColumn string  // the primary geometry column
	NullGeometries int64   // rows whose primary geometry is null
	// CoveringColumn is the primary column's bbox covering column ("" when
	// it has none) and CoveringType its fields' Parquet type, "float" or
	// "double".
	CoveringColumn, CoveringType string
	KeyValue                     map[string]string
}

// ReadInfo reads a file's footer and its primary geometry column's
// definition levels (to count null geometries).
func ReadInfo(r io.ReaderAt, size int64) (info Info, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("the Parquet reader failed: %v", v)
		}
		if err != nil {
			err = fmt.Errorf("geoparquet.ReadInfo: %w", err)
		}
	}()
	return readInfo(r, size, false, true)
}

// ReadFooterInfo is ReadInfo from the footer alone: NullGeometries is not
// counted (0), so no column data is read. For describing a file whose
// content was checked already (the STAC item of a converted output).
func ReadFooterInfo(r io.ReaderAt, size int64) (info Info, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("the Parquet reader failed: %v", v)
		}
		if err != nil {
			err = fmt.Errorf("geoparquet.ReadFooterInfo: %w", err)
		}
	}()
	return readInfo(r, size, false, false)
}

// ReadTableInfo reads the footer of a plain Parquet table (Layer.NoGeometry):
// it must have no "geo" metadata; GeometryColumn is "" and every column is
// in Fields.
func ReadTableInfo(r io.ReaderAt, size int64) (info Info, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("the Parquet reader failed: %v", v)
		}
		if err != nil {
			err = fmt.Errorf("geoparquet.ReadTableInfo: %w", err)
		}
	}()
	return readInfo(r, size, true, false)
}

func readInfo(r io.ReaderAt, size int64, table, countNulls bool) (info Info, err error) {
	rdr, err := file.NewParquetReader(io.NewSectionReader(r, 0, size))
	if err != nil {
		return info, err
	}
	defer rdr.Close()
	md := rdr.MetaData()
	info.Rows = md.NumRows
	info.KeyValue = map[string]string{}
	kv := md.KeyValueMetadata()
	for i, k := range kv.Keys() {
		info.KeyValue[k] = kv.Values()[i]
	}
	var geo struct {
		Primary string `json:"primary_column"`
		Columns map[string]struct {
			Covering *struct {
				BBox map[string][2]string `json:"bbox"`
			} `json:"covering"`
		} `json:"columns"`
	}
	if g, ok := info.KeyValue["geo"]; table && ok {
		return info, fmt.Errorf("a table without geometry has \"geo\" metadata (%.80s)", g)
	} else if !table {
		if err := json.Unmarshal([]byte(g), &geo); err != nil || geo.Primary == "" {
			return info, fmt.Errorf("no usable \"geo\" metadata (%v)", err)
		}
	}
	info.GeometryColumn = geo.Primary
	covering := ""
	if c := geo.Columns[geo.Primary].Covering; c != nil {
		covering = c.BBox["xmin"][0]
	}
	sc, err := pqarrow.FromParquet(md.Schema, nil, kv)
	if err != nil {
		return info, fmt.Errorf("schema: %w", err)
	}
	for _, f := range sc.Fields() {
		if f.Name == covering {
			info.CoveringColumn, info.CoveringType = covering, "double"
			if st, ok := f.Type.(*arrow.StructType); ok && st.NumFields() > 0 && st.Field(0).Type.ID() == arrow.FLOAT32 {
				info.CoveringType = "float"
			}
		}
		if !table && (f.Name == geo.Primary || f.Name == covering) {
			continue
		}
		info.Fields = append(info.Fields, Field{Name: f.Name, Type: fieldTypeOf(f.Type), Nullable: f.Nullable})
	}
	if table || !countNulls {
		return info, nil
	}
	err = eachPrimaryValue(rdr, geo.Primary, func(_ []byte, null bool) error {
		if null {
			info.NullGeometries++
		}
		return nil
	})
	return info, err
}

// fieldTypeOf maps an Arrow type back to the FieldType Write writes it
// for (0 for any other type).
func fieldTypeOf(t arrow.DataType) FieldType {
	for ft := Int32; ft <= lastFieldType; ft++ {
		if arrow.TypeEqual(arrowType(ft), t) {
			return ft
		}
	}
	return 0
}
