package localrun

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/signals"
)

// jsonFields lists a struct's JSON field names and, among them, those
// always written (no omitempty).
func jsonFields(t reflect.Type) (all, always []string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			always = append(always, name)
		}
	}
	sort.Strings(all)
	sort.Strings(always)
	return all, always
}

// TestReportSchemaMatchesGo: docs/report-schema.json names exactly the
// fields the Go types write, and requires exactly those always written, so
// that neither can change without the other. Adding a field to Report,
// Totals, Outcome or recipe.Fidelity means documenting it there.
func TestReportSchemaMatchesGo(t *testing.T) {
	b, err := os.ReadFile("../../docs/report-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	type object struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
		Additional *bool                      `json:"additionalProperties"`
	}
	var schema struct {
		object
		Defs map[string]object `json:"$defs"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		obj  object
		typ  reflect.Type
	}{
		{"report (top level)", schema.object, reflect.TypeFor[Report]()},
		{"$defs/totals", schema.Defs["totals"], reflect.TypeFor[Totals]()},
		{"$defs/outcome", schema.Defs["outcome"], reflect.TypeFor[Outcome]()},
		{"$defs/fidelity", schema.Defs["fidelity"], reflect.TypeFor[recipe.Fidelity]()},
		{"$defs/signals", schema.Defs["signals"], reflect.TypeFor[signals.Signals]()},
		{"$defs/thresholds", schema.Defs["thresholds"], reflect.TypeFor[signals.Thresholds]()},
		{"$defs/tier_rate", schema.Defs["tier_rate"], reflect.TypeFor[signals.TierRate]()},
		{"$defs/group_rate", schema.Defs["group_rate"], reflect.TypeFor[signals.GroupRate]()},
		{"$defs/recovery", schema.Defs["recovery"], reflect.TypeFor[signals.Recovery]()},
		{"$defs/tier_recovery", schema.Defs["tier_recovery"], reflect.TypeFor[signals.TierRecovery]()},
		{"$defs/queue_age", schema.Defs["queue_age"], reflect.TypeFor[signals.QueueAge]()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all, always := jsonFields(tt.typ)
			var props []string
			for k := range tt.obj.Properties {
				props = append(props, k)
			}
			sort.Strings(props)
			required := slices.Sorted(slices.Values(tt.obj.Required))
			if !slices.Equal(props, all) {
				t.Errorf("schema properties %v, Go %s writes %v", props, tt.typ, all)
			}
			if !slices.Equal(required, always) {
				t.Errorf("schema requires %v, Go %s always writes %v (fields without omitempty)", required, tt.typ, always)
			}
			if tt.obj.Additional == nil || *tt.obj.Additional {
				t.Errorf("schema allows properties Go %s never writes (additionalProperties is not false)", tt.typ)
			}
		})
	}
}

// TestNewReportHintsRoutedFiles: every file routed to a queue has a hint
// in the report, even when its queue message carried none.
func TestNewReportHintsRoutedFiles(t *testing.T) {
	r := NewReport(time.Now(), []Outcome{
		{Key: "a", Status: StatusRemediation, Hint: "Assign a CRS."},
		{Key: "b", Status: StatusDeadLetter},
		{Key: "c", Status: StatusCompleted},
	})
	if got := []string{r.Files[0].Hint, r.Files[1].Hint, r.Files[2].Hint}; got[0] != "Assign a CRS." || got[1] != HintUnclassified || got[2] != "" {
		t.Errorf("hints %q", got)
	}
	if r.SchemaVersion != ReportSchemaVersion {
		t.Errorf("schema_version %d", r.SchemaVersion)
	}
	b, _ := json.Marshal(NewReport(time.Now(), nil))
	if !strings.Contains(string(b), `"files":[]`) {
		t.Errorf("empty report %s: files must be [] (the schema wants an array)", b)
	}
}

// TestReportSchemaDocumentsEveryCode: every data error code a DataError can
// carry is documented, with its meaning, in docs/report-schema.json's
// files[].code, and the schema names no code that does not exist.
func TestReportSchemaDocumentsEveryCode(t *testing.T) {
	b, err := os.ReadFile("../../docs/report-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	var code struct {
		AnyOf []struct {
			Const       string `json:"const"`
			Description string `json:"description"`
		} `json:"anyOf"`
	}
	found := false
	for _, d := range schema.Defs {
		if raw, ok := d.Properties["code"]; ok {
			if err := json.Unmarshal(raw, &code); err != nil {
				t.Fatal(err)
			}
			found = true
		}
	}
	if !found {
		t.Fatal("no code property in the schema's $defs")
	}
	var documented []string
	for _, c := range code.AnyOf {
		if c.Description == "" {
			t.Errorf("code %s has no description", c.Const)
		}
		documented = append(documented, c.Const)
	}
	var want []string
	for _, c := range fault.Codes {
		want = append(want, string(c))
	}
	slices.Sort(documented)
	slices.Sort(want)
	if !slices.Equal(documented, want) {
		t.Errorf("schema documents %v, fault.Codes is %v", documented, want)
	}
}
