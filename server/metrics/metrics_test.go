package metrics

import (
	"os"
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
