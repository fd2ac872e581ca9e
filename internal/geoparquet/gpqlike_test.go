package geoparquet

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// writeLikeGPQ writes src the way planetlabs/gpq's GeoJSON conversion
// writes a file (gpq cannot be installed here): the same Parquet library
// (arrow-go's pqarrow) with its default writer properties and ZSTD, every
// JSON number as DOUBLE, strings as STRING, the geometry as WKB, input
// order, no covering column, records buffered into row groups of the
// library's default length (one row group for these sets). It returns
// the number of rows.
func writeLikeGPQ(w io.Writer, layer Layer, src FeatureSource) (int, error) {
	mem := memory.DefaultAllocator
	fields := make([]arrow.Field, 0, len(layer.Fields)+1)
	for _, f := range layer.Fields {
		typ := arrow.DataType(arrow.BinaryTypes.String)
		if f.Type != String {
			typ = arrow.PrimitiveTypes.Float64
		}
		fields = append(fields, arrow.Field{Name: f.Name, Type: typ, Nullable: true})
	}
	fields = append(fields, arrow.Field{Name: "geometry", Type: arrow.BinaryTypes.Binary, Nullable: true})
	md := arrow.NewMetadata([]string{"geo"}, []string{`{"version":"1.0.0","primary_column":"geometry","columns":{"geometry":{"encoding":"WKB","geometry_types":[]}}}`})
	schema := arrow.NewSchema(fields, &md)
	fw, err := pqarrow.NewFileWriter(schema, w, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)), pqarrow.DefaultWriterProps())
	if err != nil {
		return 0, err
	}
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	rows, inBatch := 0, 0
	flush := func() error {
		if inBatch == 0 {
			return nil
		}
		rec := rb.NewRecordBatch()
		defer rec.Release()
		inBatch = 0
		return fw.WriteBuffered(rec)
	}
	for {
		f, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return rows, err
		}
		for i, v := range f.Values {
			switch x := v.(type) {
			case string:
				rb.Field(i).(*array.StringBuilder).Append(x)
			case float64:
				rb.Field(i).(*array.Float64Builder).Append(x)
			default:
				n, _ := toInt64(v)
				rb.Field(i).(*array.Float64Builder).Append(float64(n))
			}
		}
		rb.Field(len(f.Values)).(*array.BinaryBuilder).Append(f.WKB)
		rows++
		if inBatch++; inBatch == 8192 {
			if err := flush(); err != nil {
				return rows, err
			}
		}
	}
	if err := flush(); err != nil {
		return rows, err
	}
	return rows, fw.Close()
}
