package sampledata

// Large deterministic inputs for the benchmarks (cmd/geomigrate-bench):
// written strip by strip or feature by feature, so that generating a
// 2 GiB raster or ten million features needs little memory.

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/airbusgeo/godal"
)

// WriteFloatField writes a side x side Float32 GeoTIFF (tiled 256,
// uncompressed, EPSG:32633, 10 m pixels, nodata -9999): a smooth field
// with fine-grained deterministic noise, so that the compressor and the
// predictor of a conversion have realistic work. 23170 gives just under
// 2 GiB.
func WriteFloatField(p string, side int) error {
	registerOnce.Do(godal.RegisterAll)
	os.Remove(p)
	ds, err := godal.Create(godal.GTiff, p, 1, godal.Float32, side, side,
		godal.CreationOption("TILED=YES", "COMPRESS=NONE", "BLOCKXSIZE=256", "BLOCKYSIZE=256", "BIGTIFF=IF_NEEDED"))
	if err != nil {
		return fmt.Errorf("sampledata.WriteFloatField: %w", err)
	}
	err = func() error {
		wkt, err := WKT(32633)
		if err != nil {
			return err
		}
		if err := ds.SetProjection(wkt); err != nil {
			return err
		}
		if err := ds.SetGeoTransform([6]float64{500000, 10, 0, 5200000, 0, -10}); err != nil {
			return err
		}
		band := ds.Bands()[0]
		if err := band.SetNoData(-9999); err != nil {
			return err
		}
		const rows = 256
		sx := make([]float64, side)
		for x := range sx {
			sx[x] = math.Sin(float64(x) / 410)
		}
		buf := make([]float32, side*rows)
		seed := uint32(1)
		for y0 := 0; y0 < side; y0 += rows {
			h := min(rows, side-y0)
			for y := 0; y < h; y++ {
				fy := float64(y0 + y)
				cy := math.Cos(fy / 370)
				line := buf[y*side : (y+1)*side]
				for x := range line {
					seed = seed*1664525 + 1013904223 // deterministic noise
					line[x] = float32(800 + 300*sx[x]*cy + 0.05*fy + float64(seed>>24)/64)
				}
			}
			if err := band.Write(0, y0, buf[:side*h], side, h); err != nil {
				return err
			}
		}
		return nil
	}()
	if cerr := ds.Close(); err == nil {
		err = cerr
	}
	os.Remove(p + ".aux.xml")
	if err != nil {
		return fmt.Errorf("sampledata.WriteFloatField: %w", err)
	}
	return nil
}

// scatter is the i-th point of a deterministic, even scatter over Europe
// (lon -10..30, lat 35..65).
func scatter(i int) (x, y float64) {
	return -10 + 40*math.Mod(float64(i)*0.6180339887, 1), 35 + 30*math.Mod(float64(i)*0.7548776662, 1)
}

// WritePointsGeoJSON writes n points as a GeoJSON FeatureCollection
// (CRS84) with an integer id, a name among 1,000 and a decimal value.
func WritePointsGeoJSON(p string, n int) error {
	return writeFeatureCollection(p, n, func(w *bufio.Writer, i int) {
		x, y := scatter(i)
		fmt.Fprintf(w, `{"type":"Feature","properties":{"id":%d,"name":"p%d","value":%s},"geometry":{"type":"Point","coordinates":[%.6f,%.6f]}}`,
			i, i%1000, strconv.FormatFloat(float64(i%977)/7, 'f', 3, 64), x, y)
	})
}

// WritePolygonsGeoJSON writes n quadrilaterals (rings of five points, a
// few hundred metres across, skewed deterministically) as a GeoJSON
// FeatureCollection (CRS84) with an integer id and a zone name among 500.
func WritePolygonsGeoJSON(p string, n int) error {
	return writeFeatureCollection(p, n, func(w *bufio.Writer, i int) {
		x, y := scatter(i)
		d := 0.002 + 0.002*math.Mod(float64(i)*0.381966, 1)
		k := 0.0005 * math.Mod(float64(i)*0.2247, 1)
		fmt.Fprintf(w, `{"type":"Feature","properties":{"id":%d,"zone":"z%d"},"geometry":{"type":"Polygon","coordinates":[[[%.6f,%.6f],[%.6f,%.6f],[%.6f,%.6f],[%.6f,%.6f],[%.6f,%.6f]]]}}`,
			i, i%500, x, y, x+d, y+k, x+d+k, y+d, x+k, y+d-k, x, y)
	})
}

func writeFeatureCollection(p string, n int, feature func(w *bufio.Writer, i int)) error {
	f, err := os.Create(p)
	if err != nil {
		return fmt.Errorf("sampledata.writeFeatureCollection: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(`{"type":"FeatureCollection","features":[` + "\n")
	for i := range n {
		if i > 0 {
			w.WriteString(",\n")
		}
		feature(w, i)
	}
	w.WriteString("\n]}\n")
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sampledata.writeFeatureCollection: %w", err)
	}
	return nil
}

// WritePointsGPKG writes n points (EPSG:4326, layer "points", the
// attributes of WritePointsGeoJSON) as a GeoPackage, through a CSV beside
// it that is removed afterwards. No spatial index: the benchmarks read the
// layer in full.
func WritePointsGPKG(p string, n int) error {
	registerOnce.Do(godal.RegisterAll)
	csv := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".csv")
	defer os.Remove(csv)
	f, err := os.Create(csv)
	if err != nil {
		return fmt.Errorf("sampledata.WritePointsGPKG: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("id,name,value,x,y\n")
	for i := range n {
		x, y := scatter(i)
		fmt.Fprintf(w, "%d,p%d,%.3f,%.6f,%.6f\n", i, i%1000, float64(i%977)/7, x, y)
	}
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sampledata.WritePointsGPKG: %w", err)
	}
	src, err := godal.Open(csv, godal.VectorOnly(), godal.Drivers("CSV"),
		godal.DriverOpenOption("X_POSSIBLE_NAMES=x", "Y_POSSIBLE_NAMES=y", "AUTODETECT_TYPE=YES", "KEEP_GEOM_COLUMNS=NO"))
	if err != nil {
		return fmt.Errorf("sampledata.WritePointsGPKG: %w", err)
	}
	defer src.Close()
	os.Remove(p)
	out, err := src.VectorTranslate(p, []string{"-f", "GPKG", "-a_srs", "EPSG:4326", "-nln", "points", "-gt", "65536", "-lco", "SPATIAL_INDEX=NO"},
		godal.ConfigOption("OGR_SQLITE_SYNCHRONOUS=OFF"))
	if err != nil {
		return fmt.Errorf("sampledata.WritePointsGPKG: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("sampledata.WritePointsGPKG: %w", err)
	}
	return nil
}
