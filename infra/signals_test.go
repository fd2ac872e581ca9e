package main

import (
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/emf"
	"github.com/geomigrate/geomigrate/internal/migration"
)

// TestFallbackRateAlarms: one alarm per tier with a threshold watches the
// handlers' JobsRouted / JobsEnded against the FallbackThreshold they
// report (the configured default when none is), as a 1/0 breach flag that
// must hold for the configured consecutive periods with enough jobs ended.
func TestFallbackRateAlarms(t *testing.T) {
	for _, tt := range []struct {
		name    string
		context map[string]any
		periods float64
		minJobs string
	}{
		{"defaults", nil, 3, "jobs >= 20"},
		{"configured", map[string]any{"fallbackAlarmPeriods": 6, "fallbackMinJobs": 50}, 6, "jobs >= 50"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := synth(t, tt.context)
			for _, a := range []struct{ id, tier, fill string }{
				{"FallbackDataSpecificRate", "data_specific", "FILL(threshold, 0.05)"},
				{"FallbackTransientRate", "transient", "FILL(threshold, 0.15)"},
			} {
				_, p := b.one(t, "AWS::CloudWatch::Alarm", a.id)
				if p["AlarmName"] != "geomigrate-"+a.id || len(p["AlarmActions"].([]any)) == 0 {
					t.Errorf("%s: name %v, actions %v", a.id, p["AlarmName"], p["AlarmActions"])
				}
				if p["Threshold"] != 0.0 || p["ComparisonOperator"] != "GreaterThanThreshold" ||
					p["EvaluationPeriods"] != tt.periods || p["DatapointsToAlarm"] != tt.periods || p["TreatMissingData"] != "notBreaching" {
					t.Errorf("%s: %v %v over %v/%v periods, missing %v; want > 0 for %v of %v", a.id, p["ComparisonOperator"], p["Threshold"],
						p["DatapointsToAlarm"], p["EvaluationPeriods"], p["TreatMissingData"], tt.periods, tt.periods)
				}
				queries := p["Metrics"].([]any)
				byID := map[string]map[string]any{}
				var returned []string
				for _, q := range queries {
					m := q.(map[string]any)
					byID[m["Id"].(string)] = m
					if m["ReturnData"] != false {
						returned = append(returned, m["Id"].(string))
					}
				}
				if len(returned) != 1 {
					t.Fatalf("%s: %d queries return data, want 1: %s", a.id, len(returned), js(queries))
				}
				expr, _ := byID[returned[0]]["Expression"].(string)
				if !strings.Contains(expr, tt.minJobs) || !strings.Contains(expr, "FILL(routed, 0) / jobs > "+a.fill) || !strings.HasPrefix(expr, "IF(") {
					t.Errorf("%s: expression %q", a.id, expr)
				}
				stat := func(id, metric, statistic string, dims string) {
					t.Helper()
					q, ok := byID[id]
					if !ok {
						t.Errorf("%s: no query %s", a.id, id)
						return
					}
					ms := q["MetricStat"].(map[string]any)
					m := ms["Metric"].(map[string]any)
					if m["Namespace"] != emf.Namespace || m["MetricName"] != metric || ms["Stat"] != statistic || ms["Period"] != 300.0 || js(m["Dimensions"]) != dims {
						t.Errorf("%s: %s = %s, want %s %s of %s %s per 300 s", a.id, id, js(ms), statistic, metric, emf.Namespace, dims)
					}
				}
				tierDims := `[{"Name":"Tier","Value":"` + a.tier + `"}]`
				stat("routed", migration.MetricJobsRouted, "Sum", tierDims)
				stat("jobs", migration.MetricJobsEnded, "Sum", "null")
				stat("threshold", migration.MetricFallbackThreshold, "Maximum", tierDims)
			}
		})
	}
}

// TestFallbackDashboard: the dashboard graphs the rate per tier, the
// data-specific rate per dataset type and the recovery latency.
func TestFallbackDashboard(t *testing.T) {
	_, d := defaultStack(t).one(t, "AWS::CloudWatch::Dashboard", "Dashboard")
	body := render(d["DashboardBody"])
	for _, want := range []string{"Fallback rate by tier", "Data-specific fallback rate by dataset type", "Recovery latency",
		`"JobsRouted","DatasetType","raster","Tier","data_specific"`, `"JobsRouted","DatasetType","vector","Tier","data_specific"`, `"RecoveryLatency"`, "FILL(routed_transient, 0) / jobs_transient"} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks %s", want)
		}
	}
}

// TestTracingPermissions: X-Ray is on for every function and both state
// machines, and each of their roles may send segments (the only grant
// tracing needs); the EMF metrics need no CloudWatch permission, only the
// log writes every function has.
func TestTracingPermissions(t *testing.T) {
	b := defaultStack(t)
	roles := []string{"MigrateStateMachineRole", "BackfillStateMachineRole"}
	for _, name := range FunctionNames {
		id := strings.ToUpper(name[:1]) + name[1:]
		_, p := b.one(t, "AWS::Lambda::Function", id+"Function")
		if js(p["TracingConfig"]) != `{"Mode":"Active"}` {
			t.Errorf("%s: X-Ray tracing off", name)
		}
		roles = append(roles, id+"Role")
	}
	for _, sm := range []string{"MigrateStateMachine", "BackfillStateMachine"} {
		if _, p := b.one(t, "AWS::StepFunctions::StateMachine", sm); js(p["TracingConfiguration"]) != `{"Enabled":true}` {
			t.Errorf("%s: X-Ray tracing off", sm)
		}
	}
	for _, role := range roles {
		g := strings.Join(grants(b.statements(t, role)), "\n")
		for _, want := range []string{"xray:PutTraceSegments on *", "xray:PutTelemetryRecords on *"} {
			if !strings.Contains(g, want) {
				t.Errorf("%s lacks %s:\n%s", role, want, g)
			}
		}
		if strings.Contains(g, "cloudwatch:PutMetricData") {
			t.Errorf("%s may put metric data: EMF needs no such grant", role)
		}
	}
}
