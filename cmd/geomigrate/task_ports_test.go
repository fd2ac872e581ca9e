package main

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/config"
)

// everyFieldSet returns h with every field set to a value no default has
// (found by reflection, so a setting added to config.Handlers is covered
// without a change here), and the fields' names.
func everyFieldSet(t *testing.T, h config.Handlers) (config.Handlers, []string) {
	t.Helper()
	v := reflect.ValueOf(&h).Elem()
	var names []string
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		names = append(names, name)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x/")
		case reflect.Int, reflect.Int64:
			f.SetInt(f.Int() + 7*int64(time.Second))
		case reflect.Bool:
			f.SetBool(!f.Bool())
		default:
			t.Fatalf("config.Handlers.%s is a %s: teach everyFieldSet its kind", name, f.Kind())
		}
	}
	return h, names
}

// TestLocalTaskGetsEveryHandlerSetting: the local container child receives
// every setting of config.Handlers, and builds from them the handler
// configuration the parent runs with (bar the recipe book, which only
// HashCheck reads).
func TestLocalTaskGetsEveryHandlerSetting(t *testing.T) {
	h, names := everyFieldSet(t, config.Handlers{})
	if len(names) < 10 {
		t.Fatalf("config.Handlers has %d fields", len(names))
	}
	spec, err := json.Marshal(localTaskPorts{Buckets: map[string]string{"dest": t.TempDir()}, DestBucket: "dest", DestPrefix: "p/", Handlers: h})
	if err != nil {
		t.Fatal(err)
	}
	var got localTaskPorts
	if err := json.Unmarshal(spec, &got); err != nil {
		t.Fatal(err)
	}
	gv, wv := reflect.ValueOf(got.Handlers), reflect.ValueOf(h)
	for i, name := range names {
		if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
			t.Errorf("config.Handlers.%s: the child gets %v, the parent has %v", name, gv.Field(i), wv.Field(i))
		}
	}
	want := runConfig(h, nil, "dest", "p/", "GDAL 9")
	if child := got.migrationConfig("GDAL 9"); !reflect.DeepEqual(child, want) {
		t.Errorf("the child's configuration differs from the parent's:\nchild  %+v\nparent %+v", child, want)
	}
}
