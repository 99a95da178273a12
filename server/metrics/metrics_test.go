package metrics

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The Grafana dashboard and the alert rules shipped for operators use only
// metrics the server really exports.
func TestOpsFilesUseExportedMetrics(t *testing.T) {
	m := New()
	m.WatchRedisPool(func() PoolStats { return PoolStats{} }) // as every server does
	metric := regexp.MustCompile(`\b(keno|process|go)_[a-z_]+\b`)
	for _, file := range []string{"../ops/grafana-dashboard.json", "../ops/alerts.yml"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		used := map[string]bool{}
		for _, name := range metric.FindAllString(string(b), -1) {
			used[name] = true
		}
		if len(used) < 8 {
			t.Fatalf("%s uses only %d metrics: %v", file, len(used), used)
		}
		for name := range used {
			if !m.Exports(name) {
				t.Errorf("%s uses %s, which the server does not export", file, name)
			}
		}
	}
	if m.Exports("keno_not_a_metric_total") || !m.Exports("keno_reveal_lateness_seconds_bucket") {
		t.Error("Exports answers wrongly")
	}
	if !strings.Contains(strings.Join(keys(m.names), " "), "process_resident_memory_bytes") {
		t.Error("process metrics missing")
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The alert rules are valid and behave as their unit tests say (promtool,
// from Debian's prometheus package, installed by .ci/deps): a target down,
// no games after a restart, Redis memory, the RTP band.
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: run `make deps` (installs Debian's prometheus package)")
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "../ops"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

// The Grafana dashboard provisions from a file as it is: no __inputs, a
// datasource variable, every query filtered by the job variable, and rates
// over $__rate_interval (a fixed [1m] is empty at a 1 m scrape interval).
func TestDashboardProvisionsFromAFile(t *testing.T) {
	b, err := os.ReadFile("../ops/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Inputs     any `json:"__inputs"`
		Templating struct {
			List []struct{ Name, Type string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if d.Inputs != nil || vars["datasource"] != "datasource" || vars["job"] != "query" {
		t.Fatalf("__inputs %v, variables %v", d.Inputs, vars)
	}
	exprs := regexp.MustCompile(`"expr": "((?:[^"\\]|\\.)*)"`).FindAllStringSubmatch(string(b), -1)
	selector := regexp.MustCompile(`\b(?:keno|process|go)_[a-z_]+\b(\{[^}]*\})?`)
	fixed := regexp.MustCompile(`rate\([^)]*\[(1m|5m)\]\)`)
	if len(exprs) < 20 {
		t.Fatalf("only %d queries found", len(exprs))
	}
	for _, e := range exprs {
		expr := strings.ReplaceAll(e[1], `\"`, `"`)
		for _, s := range selector.FindAllStringSubmatch(expr, -1) {
			if !strings.Contains(s[1], `job=~"$job"`) {
				t.Errorf("%s: %s has no job filter", expr, s[0])
			}
		}
		if fixed.MatchString(expr) {
			t.Errorf("%s: a fixed rate window instead of $__rate_interval", expr)
		}
	}
}

// keno_build_info names the running build.
func TestBuildInfo(t *testing.T) {
	mfs, err := New().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "keno_build_info" {
			continue
		}
		m := mf.GetMetric()[0]
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if m.GetGauge().GetValue() != 1 || labels["version"] == "" || labels["revision"] == "" || !strings.HasPrefix(labels["goversion"], "go") {
			t.Fatalf("keno_build_info %v = %v", labels, m.GetGauge().GetValue())
		}
		return
	}
	t.Fatal("no keno_build_info")
}
