//go:build integration

package functions_test

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/geomigrate/geomigrate/functions/lambdatest"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/hostile"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/ociimage"
)

// The shipped artefacts, proven the way Lambda runs them: the arm64 GDAL
// layer (make layer) at /opt and each arm64 bootstrap at /var/task, in an
// empty read-only chroot under aws-lambda-rie through qemu-user
// (layers/gdal/lambda-chroot.sh), against the S3 and DynamoDB stand-ins.
// Nothing here is compiled: the layer and the bootstraps come from make
// targets (make layer, make build); make test sets GEOMIGRATE_REQUIRE_LAYER
// so that a missing one fails instead of skipping.

// builtLayer is build/gdal-layer-arm64 and the directory holding the arm64
// bootstraps (build/<name>/bootstrap).
func builtLayer(t *testing.T) (layer, buildDir string) {
	t.Helper()
	root, err := lambdatest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	buildDir = filepath.Join(root, "build")
	layer = filepath.Join(buildDir, "gdal-layer-arm64")
	var missing []string
	for _, p := range []string{filepath.Join(layer, "lib", "libgdal.so"), filepath.Join(buildDir, "convert", "bootstrap"),
		filepath.Join(buildDir, "hashcheck", "bootstrap"), filepath.Join(buildDir, "promote", "bootstrap")} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if _, err := exec.LookPath("qemu-aarch64-static"); err != nil {
		missing = append(missing, "qemu-aarch64-static")
	}
	if os.Geteuid() != 0 {
		missing = append(missing, "root (mount, chroot)")
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("the layer chroot needs %s: run make layer build (make layer-deps installs qemu-user-static)", strings.Join(missing, ", "))
		if os.Getenv("GEOMIGRATE_REQUIRE_LAYER") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return layer, buildDir
}

// lambdaGDALEnv is the GDAL part of the Convert function's environment as
// the stack sets it (infra/functions.go: config.LayerEnvironment and a cache).
func lambdaGDALEnv() map[string]string {
	env := config.LayerEnvironment()
	env["GDAL_CACHEMAX"] = "256"
	return env
}

// run runs a host GDAL tool (the outside judge and fixture maker).
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// chrootStack is hashcheck, convert and promote, each in its own chroot.
type chrootStack struct {
	srv   *lambdatest.Servers
	table string
	funcs map[string]*lambdatest.Function
	exec  int
}

func newChrootStack(t *testing.T, wrapConvert ...string) *chrootStack {
	t.Helper()
	layer, buildDir := builtLayer(t)
	rie := lambdatest.RIE(t)
	srv := lambdatest.RequireServers(t)
	srv.CreateBucket(t, srcBucket)
	srv.CreateBucket(t, destBucket)
	table := srv.CreateTable(t, fmt.Sprintf("jobs-layer-%d", time.Now().UnixNano()%1e9))
	env := srv.Env(destBucket, table)
	env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] = "3008"
	env["GEOMIGRATE_WORK_DIR"] = "/tmp"
	s := &chrootStack{srv: srv, table: table, funcs: map[string]*lambdatest.Function{}}
	for _, name := range []string{"hashcheck", "convert", "promote"} {
		fenv := map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "geomigrate-" + name}
		for k, v := range env {
			fenv[k] = v
		}
		var wrap []string
		if name == "convert" {
			for k, v := range lambdaGDALEnv() {
				fenv[k] = v
			}
			wrap = wrapConvert
		}
		s.funcs[name] = lambdatest.StartInChroot(t, rie, name, filepath.Join(buildDir, name), layer, fenv, wrap...)
	}
	return s
}

func (s *chrootStack) invoke(t *testing.T, name string, payload any) lambdatest.Response {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	// qemu-user runs the arm64 code several times slower than Graviton.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f := s.funcs[name]
	r, err := f.Invoke(ctx, b)
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("invoke %s: %v HTTP %d %s\n%s", name, err, r.Status, r.Body, f.Output())
	}
	return r
}

// migrate runs one source through HashCheck → Convert → Promote as the state
// machine does, and returns Convert's response (an error response stops
// there) and Promote's outputs.
func (s *chrootStack) migrate(t *testing.T, key, dataset string) (convert lambdatest.Response, promoted []migration.Artifact) {
	t.Helper()
	s.exec++
	inv := func(state string) migration.Invocation {
		return migration.Invocation{Execution: fmt.Sprintf("arn:aws:states:eu-west-1:123456789012:execution:geomigrate-migrate:layer-%d", s.exec), State: state}
	}
	r := s.invoke(t, "hashcheck", migration.HashCheckInput{Source: migration.Source{Bucket: srcBucket, Key: key, KeyEncoding: "plain", DatasetID: dataset}, Context: inv("HashCheck")})
	hc := decode[migration.HashCheckOutput](t, r)
	if hc.Decision != migration.DecisionConvert {
		t.Fatalf("%s: hashcheck decided %s (%s)", key, hc.Decision, hc.Reason)
	}
	convert = s.invoke(t, "convert", migration.ConvertInput{Job: hc.Job, Context: inv("Convert")})
	if convert.ErrorType != "" {
		return convert, nil
	}
	cv := decode[migration.ConvertOutput](t, convert)
	pr := decode[migration.PromoteOutput](t, s.invoke(t, "promote", migration.PromoteInput{Job: hc.Job, Converted: cv, Context: inv("Promote")}))
	return convert, pr.Outputs
}

func (s *chrootStack) download(t *testing.T, key, dir string) string {
	t.Helper()
	o, err := s.srv.S3Client(t).GetObject(context.Background(), &s3.GetObjectInput{Bucket: ptr(destBucket), Key: &key})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer o.Body.Close()
	p := filepath.Join(dir, strings.ReplaceAll(key, "/", "_"))
	b, err := io.ReadAll(o.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (s *chrootStack) put(t *testing.T, key, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s.srv.PutObject(t, srcBucket, key, b)
}

// TestLayerConvertsInLambdaChroot: a GeoTIFF, a three-layer GeoPackage and a
// zipped Shapefile whose DBF is in code page 932 go through the shipped
// bootstraps; every output is judged by readers that are not ours (GDAL's
// COG validator and checksums from the host's GDAL, hyparquet for
// GeoParquet), and a hostile input is refused with its typed error.
func TestLayerConvertsInLambdaChroot(t *testing.T) {
	s := newChrootStack(t)
	dir := t.TempDir()

	// GeoTIFF (UTM 33N from the .prj sidecar).
	tif := elevationTIFF(t, dir)
	s.put(t, "dem/elevation.tif", tif)
	if r, outs := s.migrate(t, "dem/elevation.tif", "dem"); r.ErrorType != "" || len(outs) != 1 || outs[0].Format != "COG" {
		t.Fatalf("GeoTIFF: %s %s, outputs %+v", r.ErrorType, r.ErrorMessage, outs)
	} else {
		cog := s.download(t, outs[0].DestKey, dir)
		judgeCOGFile(t, cog)
		if a, b := checksums(t, tif), checksums(t, cog); a != b {
			t.Errorf("COG pixels differ from the source: band checksums %s, source %s", b, a)
		}
	}

	// A GeoPackage with three layers: three GeoParquet files, every row.
	gpkg := filepath.Join(dir, "places.gpkg")
	want := map[string]int{}
	for i, layer := range []string{"towns", "rivers", "parcels"} {
		gj := filepath.Join(dir, layer+".geojson")
		n := 5 + 3*i
		writeGeoJSON(t, gj, layer, n)
		args := []string{"-q", "-f", "GPKG", "-nln", layer, gpkg, gj}
		if i > 0 {
			args = append([]string{"-update"}, args...)
		}
		run(t, "ogr2ogr", args...)
		want[layer] = n
	}
	s.put(t, "vec/places.gpkg", gpkg)
	r, outs := s.migrate(t, "vec/places.gpkg", "vec")
	if r.ErrorType != "" || len(outs) != 3 {
		t.Fatalf("GeoPackage: %s %s, outputs %+v", r.ErrorType, r.ErrorMessage, outs)
	}
	for _, o := range outs {
		if o.Format != "GeoParquet" {
			t.Errorf("GeoPackage output %s: format %s", o.DestKey, o.Format)
			continue
		}
		p := s.download(t, o.DestKey, dir)
		rows := readParquet(t, p, "name")
		layer := ""
		for l := range want {
			if strings.Contains(o.DestKey, l) {
				layer = l
			}
		}
		if layer == "" || len(rows) != want[layer] {
			t.Errorf("%s: %d rows read by hyparquet, want %d (layer %q)", o.DestKey, len(rows), want[layer], layer)
			continue
		}
		for i, name := range rows {
			if w := fmt.Sprintf("%s-%d", layer, i); name != w {
				t.Errorf("%s row %d: name %q, want %q", o.DestKey, i, name, w)
			}
		}
	}

	// A zipped Shapefile in code page 932 (Shift-JIS, which GDAL has no
	// table of its own for): the bundled glibc's iconv modules
	// (GCONV_PATH=/opt/lib/gconv) must turn it into the same UTF-8 text.
	shpDir := filepath.Join(dir, "shp")
	if err := os.Mkdir(shpDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cyr := []string{"東京都", "大阪市", "札幌・函館"}
	writeNamedPoints(t, filepath.Join(dir, "cities.geojson"), cyr)
	run(t, "ogr2ogr", "-q", "-f", "ESRI Shapefile", "-lco", "ENCODING=CP932", filepath.Join(shpDir, "cities.shp"), filepath.Join(dir, "cities.geojson"))
	if cpg, _ := os.ReadFile(filepath.Join(shpDir, "cities.cpg")); !strings.Contains(string(cpg), "932") {
		t.Fatalf("fixture: cities.cpg says %q, want code page 932", cpg)
	}
	zipPath := filepath.Join(dir, "cities.zip")
	zipDir(t, shpDir, zipPath)
	s.put(t, "vec/cities.zip", zipPath)
	r, outs = s.migrate(t, "vec/cities.zip", "vec")
	if r.ErrorType != "" || len(outs) != 1 {
		t.Fatalf("zipped Shapefile: %s %s, outputs %+v", r.ErrorType, r.ErrorMessage, outs)
	}
	if got := readParquet(t, s.download(t, outs[0].DestKey, dir), "name"); strings.Join(got, ",") != strings.Join(cyr, ",") {
		t.Errorf("CP932 names read back as %q, want %q", got, cyr)
	}

	// Hostile: a TIFF whose header claims far more pixels than the recipe
	// allows is refused before GDAL reads it, with the contract's type.
	bomb := hostile.SizeBombs()[0]
	s.srv.PutObject(t, srcBucket, "dem/bomb.tif", bomb.Data)
	r, outs = s.migrate(t, "dem/bomb.tif", "dem")
	if r.ErrorType != "DataError" || len(outs) != 0 {
		t.Errorf("%s: errorType %q message %q, want DataError", bomb.Name, r.ErrorType, r.ErrorMessage)
	}
	t.Logf("hostile %s: %s: %s", bomb.Name, r.ErrorType, r.ErrorMessage)
	if t.Failed() {
		t.Logf("convert's output:\n%s", s.funcs["convert"].Output())
	}
}

// TestLayerMakesNoNetworkConnection: under strace, the layer's own GDAL tools
// open sources that name network resources (a /vsicurl/ URL, a VRT whose
// band reads one, a KML NetworkLink, a GeoJSON whose CRS is a URL, a PROJ
// string asking for a grid by URL) and make no connect other than AF_UNIX;
// a loopback HTTP server those URLs point at sees no request. The Convert
// bootstrap converting one of them connects only to the stand-ins and to
// rie's Runtime API.
func TestLayerMakesNoNetworkConnection(t *testing.T) {
	layer, _ := builtLayer(t)
	if _, err := exec.LookPath("strace"); err != nil {
		if os.Getenv("GEOMIGRATE_REQUIRE_LAYER") != "" {
			t.Fatal("strace not installed (make layer-deps)")
		}
		t.Skip("strace not installed (make layer-deps)")
	}
	var hits atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "no", http.StatusNotFound)
	}))
	t.Cleanup(web.Close)
	u := web.URL

	task := t.TempDir() // the hostile files, mounted read-only at /var/task
	files := map[string]string{
		"remote.vrt": `<VRTDataset rasterXSize="2" rasterYSize="2"><VRTRasterBand dataType="Byte" band="1"><SimpleSource><SourceFilename relativeToVRT="0">/vsicurl/` + u + `/a.tif</SourceFilename><SourceBand>1</SourceBand></SimpleSource></VRTRasterBand></VRTDataset>`,
		"link.kml":   `<?xml version="1.0" encoding="UTF-8"?><kml xmlns="http://www.opengis.net/kml/2.2"><Document><NetworkLink><name>n</name><Link><href>` + u + `/more.kml</href></Link></NetworkLink><Placemark><name>p</name><Point><coordinates>1,2</coordinates></Point></Placemark></Document></kml>`,
		"crsurl.geojson": `{"type":"FeatureCollection","crs":{"type":"link","properties":{"href":"` + u + `/crs.wkt","type":"ogcwkt"}},` +
			`"features":[{"type":"Feature","properties":{"a":1},"geometry":{"type":"Point","coordinates":[1,2]}}]}`,
		"crsname.geojson": `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"` + u + `/def/crs/EPSG/0/4326"}},` +
			`"features":[{"type":"Feature","properties":{"a":1},"geometry":{"type":"Point","coordinates":[1,2]}}]}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(task, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := lambdatest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	chroot := filepath.Join(root, "layers", "gdal", "lambda-chroot.sh")
	env := []string{}
	for k, v := range lambdaGDALEnv() {
		env = append(env, "-e", k+"="+v)
	}
	env = append(env, "-e", "PROJ_NETWORK=ON") // even asked to, PROJ has no way out: the test is the layer, not the setting
	cases := [][]string{
		{"/opt/bin/gdalinfo", "/vsicurl/" + u + "/x.tif"},
		{"/opt/bin/gdalinfo", "-checksum", "/var/task/remote.vrt"},
		{"/opt/bin/ogrinfo", "-al", "/var/task/link.kml"},
		{"/opt/bin/ogrinfo", "-al", "-so", "/var/task/crsurl.geojson"},
		{"/opt/bin/ogrinfo", "-al", "-so", "/var/task/crsname.geojson"},
		{"/opt/bin/gdalinfo", "--config", "GDAL_HTTP_TIMEOUT", "2", "/vsicurl/" + u + "/y.tif"},
	}
	for _, c := range cases {
		trace := filepath.Join(t.TempDir(), "trace")
		args := append([]string{"-f", "-qq", "-e", "trace=connect", "-o", trace, chroot, "--opt", layer, "--task", task}, env...)
		args = append(args, "--")
		args = append(args, c...)
		out, _ := exec.Command("strace", args...).CombinedOutput() // most of them fail to open: that is the point
		conns := connects(t, trace)
		var bad []string
		for _, c := range conns {
			if !strings.Contains(c, "AF_UNIX") {
				bad = append(bad, c)
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s: %d network connects:\n%s\noutput:\n%s", strings.Join(c, " "), len(bad), strings.Join(bad, "\n"), out)
		}
		t.Logf("%s: %d connects, none to the network; GDAL said: %s", strings.Join(c, " "), len(conns), firstLine(string(out)))
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback web server got %d requests from the layer", n)
	}

	// The bootstrap converting the CRS-URL GeoJSON under strace: its only
	// peers are the servers it was given.
	trace := filepath.Join(t.TempDir(), "convert.trace")
	s := newChrootStack(t, "strace", "-f", "-qq", "-e", "trace=connect", "-o", trace)
	body, _ := os.ReadFile(filepath.Join(task, "crsurl.geojson"))
	s.srv.PutObject(t, srcBucket, "vec/crsurl.geojson", body)
	r, _ := s.migrate(t, "vec/crsurl.geojson", "vec")
	t.Logf("convert of a GeoJSON whose CRS is a URL: %s %s", r.ErrorType, firstLine(r.ErrorMessage))
	s.funcs["convert"].Stop()
	allowed := map[string]bool{}
	for _, e := range []string{s.srv.S3, s.srv.DynamoDB} {
		if h := strings.TrimPrefix(strings.TrimPrefix(e, "http://"), "https://"); h != "" {
			allowed[h] = true
		}
	}
	allowed[s.funcs["convert"].RuntimeAPI] = true
	inet := regexp.MustCompile(`sin6?_port=htons\((\d+)\), (?:sin_addr=inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)")`)
	peers := map[string]int{}
	for _, c := range connects(t, trace) {
		if strings.Contains(c, "AF_UNIX") {
			continue
		}
		m := inet.FindStringSubmatch(c)
		if m == nil {
			t.Errorf("convert: unparsed connect %s", c)
			continue
		}
		peer := net.JoinHostPort(m[2]+m[3], m[1])
		peers[peer]++
		if !allowed[peer] {
			t.Errorf("convert connected to %s, which is neither a stand-in nor the Runtime API", peer)
		}
	}
	t.Logf("convert's connects by peer: %v (allowed: %v)", peers, allowed)
	if hits.Load() != 0 {
		t.Errorf("the loopback web server got %d requests from the convert bootstrap", hits.Load())
	}
}

// connects are the connect lines of an strace -o file.
func connects(t *testing.T, trace string) []string {
	t.Helper()
	f, err := os.Open(trace)
	if err != nil {
		t.Fatalf("strace wrote no trace: %v", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "connect(") {
			out = append(out, sc.Text())
		}
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// elevationTIFF writes events/testdata's elevation grid as a GeoTIFF (UTM 33N
// from its .prj sidecar) with the host's gdal_translate.
func elevationTIFF(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join("..", "events", "testdata", "sources")
	tif := filepath.Join(dir, "elevation.tif")
	run(t, "gdal_translate", "-q", "-of", "GTiff", "-a_srs", filepath.Join(src, "elevation.prj"), filepath.Join(src, "elevation.asc"), tif)
	return tif
}

// judgeCOGFile runs GDAL's own COG validator (python3-gdal) on p.
func judgeCOGFile(t *testing.T, p string) {
	t.Helper()
	const script = "/usr/lib/python3/dist-packages/osgeo_utils/samples/validate_cloud_optimized_geotiff.py"
	if out, err := exec.Command("/usr/bin/python3", script, "--full-check=yes", p).CombinedOutput(); err != nil {
		t.Errorf("GDAL's COG validator on %s: %v\n%s", p, err, out)
	}
}

// checksums are the host GDAL's per-band checksums of p.
func checksums(t *testing.T, p string) string {
	t.Helper()
	var info struct {
		Bands []struct {
			Checksum int `json:"checksum"`
		} `json:"bands"`
	}
	if err := json.Unmarshal([]byte(run(t, "gdalinfo", "-json", "-checksum", p)), &info); err != nil {
		t.Fatal(err)
	}
	var cs []string
	for _, b := range info.Bands {
		cs = append(cs, fmt.Sprint(b.Checksum))
	}
	return strings.Join(cs, ",")
}

// readParquet has hyparquet (scripts/hyparquet/values.mjs) read column col
// of every row of the GeoParquet file p.
func readParquet(t *testing.T, p, col string) []string {
	t.Helper()
	cmd := exec.Command("node", filepath.Join("..", "scripts", "hyparquet", "values.mjs"), p, col)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hyparquet on %s: %v\n%s", p, err, stderr.String())
	}
	var vals []string
	if err := json.Unmarshal(out, &vals); err != nil {
		t.Fatalf("hyparquet on %s: %v\n%s", p, err, out)
	}
	return vals
}

func writeGeoJSON(t *testing.T, p, layer string, n int) {
	t.Helper()
	var feats []string
	for i := 0; i < n; i++ {
		x, y := 10+float64(i)*0.01, 50+float64(i)*0.01
		var g string
		switch layer {
		case "towns":
			g = fmt.Sprintf(`{"type":"Point","coordinates":[%g,%g]}`, x, y)
		case "rivers":
			g = fmt.Sprintf(`{"type":"LineString","coordinates":[[%g,%g],[%g,%g],[%g,%g]]}`, x, y, x+0.005, y+0.002, x+0.01, y)
		default:
			g = fmt.Sprintf(`{"type":"Polygon","coordinates":[[[%g,%g],[%g,%g],[%g,%g],[%g,%g],[%g,%g]]]}`, x, y, x+0.005, y, x+0.005, y+0.005, x, y+0.005, x, y)
		}
		feats = append(feats, fmt.Sprintf(`{"type":"Feature","properties":{"name":"%s-%d","rank":%d,"area":%g},"geometry":%s}`, layer, i, i, float64(i)*1.5, g))
	}
	doc := `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:OGC:1.3:CRS84"}},"features":[` + strings.Join(feats, ",") + `]}`
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeNamedPoints(t *testing.T, p string, names []string) {
	t.Helper()
	var feats []string
	for i, n := range names {
		feats = append(feats, fmt.Sprintf(`{"type":"Feature","properties":{"name":%q},"geometry":{"type":"Point","coordinates":[%d,55]}}`, n, 30+i))
	}
	doc := `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:OGC:1.3:CRS84"}},"features":[` + strings.Join(feats, ",") + `]}`
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

func zipDir(t *testing.T, dir, out string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestConvertImageInChroot: the convert container's image, built from the
// same layer and the CLI linked against it (internal/ociimage), pushed to a
// registry (go-containerregistry's, in process) and pulled back, runs its
// entry point from its own root filesystem in a read-only chroot through
// qemu-user with only the image's environment: the real HashCheck claims a
// GeoTIFF, the container converts it and writes the result object the
// state machine reads, the real Promote completes it, and GDAL's validator
// and the host GDAL's checksums judge the COG.
func TestConvertImageInChroot(t *testing.T) {
	layer, buildDir := builtLayer(t)
	cliPath := filepath.Join(buildDir, "convert-container-arm64", "geomigrate")
	if _, err := os.Stat(cliPath); err != nil {
		t.Fatalf("%s: run make layer", cliPath)
	}
	img, err := ociimage.Build(ociimage.Sources{Opt: layer, CLI: cliPath, CACerts: "/etc/ssl/certs/ca-certificates.crt"})
	if err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	digestRef, err := ociimage.Push(context.Background(), img, strings.TrimPrefix(reg.URL, "http://")+"/geomigrate-convert:test", true)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(digestRef, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	rootfs := t.TempDir()
	extract(t, pulled, rootfs)

	s := newChrootStack(t)
	dir := t.TempDir()
	tif := elevationTIFF(t, dir)
	s.put(t, "dem/container.tif", tif)
	inv := func(state string) migration.Invocation {
		return migration.Invocation{Execution: "arn:aws:states:eu-west-1:123456789012:execution:geomigrate-migrate:container-1", State: state}
	}
	hc := decode[migration.HashCheckOutput](t, s.invoke(t, "hashcheck", migration.HashCheckInput{
		Source: migration.Source{Bucket: srcBucket, Key: "dem/container.tif", KeyEncoding: "plain", DatasetID: "dem"}, Context: inv("HashCheck")}))
	if hc.Decision != migration.DecisionConvert {
		t.Fatalf("hashcheck decided %s (%s)", hc.Decision, hc.Reason)
	}
	var task migration.ContainerTaskInput
	task.Job, task.Context = hc.Job, inv("ConvertInContainer")
	task.Result.Bucket, task.Result.Key = destBucket, hc.Job.StagingPrefix+migration.ContainerResultPrefix+"chroot.json"
	in, _ := json.Marshal(task)

	root, _ := lambdatest.RepoRoot()
	args := []string{"--container", "--opt", filepath.Join(rootfs, "opt"),
		"--bind", filepath.Join(rootfs, "usr", "local", "bin") + ":/usr/local/bin", "--bind", filepath.Join(rootfs, "etc", "ssl") + ":/etc/ssl"}
	env := s.srv.Env(destBucket, s.table)
	env["GEOMIGRATE_TASK_INPUT"] = string(in)
	env["GEOMIGRATE_WORK_DIR"] = "/tmp"
	for _, kv := range cf.Config.Env {
		args = append(args, "-e", kv)
	}
	for k, v := range env {
		args = append(args, "-e", k+"="+v)
	}
	args = append(append(args, "--"), cf.Config.Entrypoint...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(root, "layers", "gdal", "lambda-chroot.sh"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("the image's entry point %v: %v\n%s", cf.Config.Entrypoint, err, out)
	}
	o, err := s.srv.S3Client(t).GetObject(context.Background(), &s3.GetObjectInput{Bucket: ptr(destBucket), Key: &task.Result.Key})
	if err != nil {
		t.Fatalf("no result object %s: %v\n%s", task.Result.Key, err, out)
	}
	var res migration.ContainerResult
	err = json.NewDecoder(o.Body).Decode(&res)
	o.Body.Close()
	if err != nil || res.Error != nil || len(res.Outputs) != 1 {
		t.Fatalf("container result %+v (%v)\n%s", res, err, out)
	}
	pr := decode[migration.PromoteOutput](t, s.invoke(t, "promote", migration.PromoteInput{Job: hc.Job,
		Converted: migration.ConvertOutput{Outputs: res.Outputs, ResultKey: task.Result.Key}, Context: inv("Promote")}))
	if len(pr.Outputs) != 1 {
		t.Fatalf("promote outputs %+v", pr.Outputs)
	}
	cog := s.download(t, pr.Outputs[0].DestKey, dir)
	judgeCOGFile(t, cog)
	if a, b := checksums(t, tif), checksums(t, cog); a != b {
		t.Errorf("COG pixels differ from the source: %s, source %s", b, a)
	}
}

// extract writes img's filesystem under dir (files, directories, symlinks).
func extract(t *testing.T, img v1.Image, dir string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeSymlink:
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = os.Symlink(h.Linkname, p)
			}
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				var f *os.File
				if f, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777); err == nil {
					_, err = io.Copy(f, tr)
					if cerr := f.Close(); err == nil {
						err = cerr
					}
				}
			}
		}
		if err != nil {
			t.Fatalf("extract %s: %v", h.Name, err)
		}
	}
}
