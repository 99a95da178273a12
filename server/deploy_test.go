package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"keno/server/app"
	"keno/server/archive/pgtest"
	"keno/server/redistest"
)

// The static binary (CGO_ENABLED=0, as the Makefile and the Dockerfile
// build it) starts from an empty environment with only Redis, the archive
// and the keys, and serves: ready on the public port, which answers 404
// for everything operators use and refuses tokens in URLs.
func TestStaticBinaryServes(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "keno-server")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("static build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary needs a dynamic loader: not static")
		}
	}
	f.Close()

	rs := redistest.Start(t)
	pg := pgtest.Start(t)
	addr := fmt.Sprintf("127.0.0.1:%d", redistest.FreePort(t))
	admin := fmt.Sprintf("127.0.0.1:%d", redistest.FreePort(t))
	cmd := exec.Command(bin)
	cmd.Env = []string{ // nothing else: no PATH, no HOME
		"MODE=production", "REDIS_URL=" + rs.URL(), "ARCHIVE_URL=" + pg.URL(), "ADDR=" + addr, "ADMIN_ADDR=" + admin,
		"KENO_TOKEN_KEY=" + strings.Repeat("t", 32), "KENO_SEAL_KEY=" + strings.Repeat("s", 32), "KENO_OPS_TOKEN=" + strings.Repeat("o", 32),
	}
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if !ready("http://"+addr+"/readyz", 20*time.Second) {
		t.Fatalf("the static binary did not become ready:\n%s", logs.String())
	}
	for _, path := range []string{"/metrics", "/ops.html", "/api/ops/books", "/api/ops/games/x", "/debug/pprof/"} {
		if code := status(t, "http://"+addr+path); code != 404 {
			t.Errorf("public %s: %d, want 404", path, code)
		}
	}
	if code := status(t, "http://"+admin+"/api/ops/books?token="+strings.Repeat("o", 32)); code != 401 {
		t.Errorf("a token in the URL was taken: %d", code)
	}
	if code := status(t, "http://"+addr+"/api/dev/login?player=x"); code == 200 {
		t.Error("dev login answers in production")
	}
}

func ready(url string, within time.Duration) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r, err := http.Get(url); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return true
			}
		}
	}
	return false
}

func status(t *testing.T, url string) int {
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return r.StatusCode
}

// parseEnv reads flags and environment as the server would, with the
// secrets a deployment gets from its secret store filled in.
func parseEnv(t *testing.T, args []string, env map[string]string) (app.Config, error) {
	t.Helper()
	for _, k := range []string{"MODE", "REDIS_URL", "ARCHIVE_URL", "KENO_TOKEN_KEY", "KENO_SEAL_KEY", "KENO_OPS_TOKEN", "ADDR", "ADMIN_ADDR",
		"DRAIN_DELAY", "DRAIN_TIMEOUT", "REDIS_REPLICA_ACKS", "HOT_WINDOW", "LOG_FORMAT", "SERVER_ID"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	secrets := map[string]string{"KENO_TOKEN_KEY": strings.Repeat("t", 32), "KENO_SEAL_KEY": strings.Repeat("s", 32),
		"KENO_OPS_TOKEN": strings.Repeat("o", 32), "REDIS_URL": "rediss+cluster://u:p@h1:6379,h2:6379", "ARCHIVE_URL": "postgres://k@pg:5432/k"}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	return app.ParseConfig(args)
}

func port(t *testing.T, hostport string) int {
	_, p, _ := strings.Cut(hostport, ":")
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("no port in %q", hostport)
	}
	return n
}

// The Kubernetes manifests hold together with the binary: their settings
// parse, the probes name endpoints the game port serves, the container
// ports are the listeners', the grace period outlasts the drain, and the
// Services reach named ports that exist.
func TestKubernetesManifests(t *testing.T) {
	b, err := os.ReadFile("../deploy/k8s/keno.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type probe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
	}
	type doc struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Template struct {
				Spec struct {
					Grace      int `yaml:"terminationGracePeriodSeconds"`
					Containers []struct {
						Args  []string `yaml:"args"`
						Ports []struct {
							Name string `yaml:"name"`
							Port int    `yaml:"containerPort"`
						} `yaml:"ports"`
						Env []struct {
							Name  string `yaml:"name"`
							Value string `yaml:"value"`
						} `yaml:"env"`
						Readiness probe `yaml:"readinessProbe"`
						Liveness  probe `yaml:"livenessProbe"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
			Ports []struct {
				Target string `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	kinds := map[string]int{}
	var services []doc
	var deploy *doc
	for {
		var d doc
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		kinds[d.Kind]++
		switch d.Kind {
		case "Deployment":
			deploy = &d
		case "Service":
			services = append(services, d)
		}
	}
	if kinds["Deployment"] != 1 || kinds["PodDisruptionBudget"] != 1 || kinds["Service"] != 2 {
		t.Fatalf("manifest kinds %v", kinds)
	}
	c := deploy.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		if e.Value != "" {
			env[e.Name] = e.Value
		}
	}
	cfg, err := parseEnv(t, c.Args[1:], env)
	if err != nil {
		t.Fatalf("the manifest's settings do not parse: %v", err)
	}
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.Port
	}
	if ports["game"] != port(t, cfg.Addr) || ports["admin"] != port(t, cfg.AdminAddr) {
		t.Errorf("container ports %v, listeners %s and %s", ports, cfg.Addr, cfg.AdminAddr)
	}
	if g := time.Duration(deploy.Spec.Template.Spec.Grace) * time.Second; g <= cfg.DrainTimeout+cfg.DrainDelay {
		t.Errorf("grace period %v does not outlast DRAIN_DELAY + DRAIN_TIMEOUT (%v)", g, cfg.DrainTimeout+cfg.DrainDelay)
	}
	// The probes: endpoints of the public listener.
	a, err := app.New(mustDev(t))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	h := a.PublicHandler()
	for _, p := range []probe{c.Readiness, c.Liveness} {
		if p.HTTPGet.Port != "game" {
			t.Errorf("probe %s on port %q, not the game port", p.HTTPGet.Path, p.HTTPGet.Port)
		}
		rec := &statusRecorder{header: http.Header{}}
		h.ServeHTTP(rec, httpGet(p.HTTPGet.Path))
		if rec.code != 200 {
			t.Errorf("probe %s answers %d", p.HTTPGet.Path, rec.code)
		}
	}
	for _, s := range services {
		if _, ok := ports[s.Spec.Ports[0].Target]; !ok {
			t.Errorf("a Service targets port %q, which the pod does not name", s.Spec.Ports[0].Target)
		}
	}
}

// The compose file's server commands are flags the binary takes, with
// its environment, and Prometheus scrapes the admin listener.
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile("../deploy/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	servers := 0
	for name, s := range compose.Services {
		if len(s.Command) == 0 || s.Command[0] != "serve" {
			continue
		}
		servers++
		cfg, err := parseEnv(t, s.Command[1:], s.Environment)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if cfg.Mode != "production" || cfg.ArchiveURL == "" {
			t.Errorf("%s runs %s without the archive", name, cfg.Mode)
		}
		for _, p := range s.Ports {
			inside, _ := strconv.Atoi(p[strings.LastIndexByte(p, ':')+1:])
			if inside != port(t, cfg.Addr) && inside != port(t, cfg.AdminAddr) {
				t.Errorf("%s publishes %s, which no listener uses", name, p)
			}
		}
	}
	if servers != 2 {
		t.Errorf("%d game servers in the compose file", servers)
	}
	prom, err := os.ReadFile("../deploy/prometheus/prometheus.yml")
	if err != nil || !strings.Contains(string(prom), "job_name: keno") || !strings.Contains(string(prom), ":9090") {
		t.Errorf("Prometheus does not scrape job keno on the admin port: %v", err)
	}
}

func mustDev(t *testing.T) app.Config {
	rs := redistest.Start(t)
	cfg, err := app.ParseConfig([]string{"-mode", "dev", "-redis", rs.URL(), "-log", "json", "-log-level", "error", "-archive", ""})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

type statusRecorder struct {
	header http.Header
	code   int
}

func (r *statusRecorder) Header() http.Header { return r.header }
func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = 200
	}
	return len(b), nil
}
func (r *statusRecorder) WriteHeader(c int) { r.code = c }

func httpGet(path string) *http.Request {
	r, _ := http.NewRequest("GET", path, nil)
	return r
}
