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
			err = fmt.Errorf("geoparquet.ReadInfo: the Parquet reader failed: %v", v)
		}
	}()
	rdr, err := file.NewParquetReader(io.NewSectionReader(r, 0, size))
	if err != nil {
		return info, fmt.Errorf("geoparquet.ReadInfo: %w", err)
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
	if err := json.Unmarshal([]byte(info.KeyValue["geo"]), &geo); err != nil || geo.Primary == "" {
		return info, fmt.Errorf("geoparquet.ReadInfo: no usable \"geo\" metadata (%v)", err)
	}
	info.GeometryColumn = geo.Primary
	covering := ""
	if c := geo.Columns[geo.Primary].Covering; c != nil {
		covering = c.BBox["xmin"][0]
	}
	sc, err := pqarrow.FromParquet(md.Schema, nil, kv)
	if err != nil {
		return info, fmt.Errorf("geoparquet.ReadInfo: schema: %w", err)
	}
	for _, f := range sc.Fields() {
		if f.Name == covering {
			info.CoveringColumn, info.CoveringType = covering, "double"
			if st, ok := f.Type.(*arrow.StructType); ok && st.NumFields() > 0 && st.Field(0).Type.ID() == arrow.FLOAT32 {
				info.CoveringType = "float"
			}
		}
		if f.Name == geo.Primary || f.Name == covering {
			continue
		}
		info.Fields = append(info.Fields, Field{Name: f.Name, Type: fieldTypeOf(f.Type), Nullable: f.Nullable})
	}
	err = eachPrimaryValue(rdr, geo.Primary, func(_ []byte, null bool) error {
		if null {
			info.NullGeometries++
		}
		return nil
	})
	if err != nil {
		return info, fmt.Errorf("geoparquet.ReadInfo: %w", err)
	}
	return info, nil
}

// fieldTypeOf maps an Arrow type back to the FieldType Write writes it
// for (0 for any other type).
func fieldTypeOf(t arrow.DataType) FieldType {
	for _, ft := range []FieldType{Int32, Int64, Float64, String, Bool, Date, DateTime, Binary} {
		if arrow.TypeEqual(arrowType(ft), t) {
			return ft
		}
	}
	return 0
}
