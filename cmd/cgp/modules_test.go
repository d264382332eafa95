package main

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
)

// The module table names the CLI's commands (cmd/cgp only parses them):
// every top-level command of the tree is listed by exactly one module,
// every name listed is a command of the tree, and no name is listed twice.
func TestModuleTableListsEveryCommand(t *testing.T) {
	root := newRootCommand(io.Discard, io.Discard)
	owner := map[string]string{}
	for _, m := range app.Modules() {
		for _, name := range m.Commands {
			if prev, ok := owner[name]; ok {
				t.Errorf("command %q is listed by modules %s and %s", name, prev, m.Name)
			}
			owner[name] = m.Name
			if !commandExists(root, strings.Fields(name)) {
				t.Errorf("module %s lists %q, which is no command of cgp", m.Name, name)
			}
		}
	}
	for _, c := range root.Commands() {
		if slices.Contains([]string{"help", "completion"}, c.Name()) {
			continue // cobra's own
		}
		if _, ok := owner[c.Name()]; !ok {
			t.Errorf("command %q is in no module of app.Modules", c.Name())
		}
	}
}

func commandExists(root *cobra.Command, path []string) bool {
	cmd := root
	for _, name := range path {
		i := slices.IndexFunc(cmd.Commands(), func(c *cobra.Command) bool { return c.Name() == name })
		if i < 0 {
			return false
		}
		cmd = cmd.Commands()[i]
	}
	return len(path) > 0
}

// OpenApp mounts every route of the module table and nothing else: each
// module's surfaces register endpoints, no endpoint is registered by two
// surfaces, and the server's router holds exactly their union. With every
// optional job configured on, every module's job builds a run function.
func TestModuleTableWiresRoutesAndJobs(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.Warehouse, cfg.DIDailyAt = app.WarehouseSQLite, "03:00"
	cfg.PlatformClientID, cfg.PlatformClientSecret = "client", strings.Repeat("s", 32)
	core, err := OpenCore(context.Background(), cfg, newLogger(&Config{LogLevel: "error"}, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	a, err := OpenApp(context.Background(), cfg, core)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	noop := func(h http.Handler) http.Handler { return h }
	owner := map[string]string{}
	for _, m := range app.Modules() {
		for _, rt := range m.Routes {
			r := mux.NewRouter()
			rt.Mount(a, r, noop)
			eps := endpoints(t, r)
			if len(eps) == 0 {
				t.Errorf("module %s: route %s registers no endpoint", m.Name, rt.Name)
			}
			for _, ep := range eps {
				if prev, ok := owner[ep]; ok {
					t.Errorf("%s is registered by %s and by %s", ep, prev, rt.Name)
				}
				owner[ep] = rt.Name
			}
		}
		for _, j := range m.Jobs {
			if j.Build(a) == nil {
				t.Errorf("module %s: job %s is off with every job configured on", m.Name, j.Name)
			}
		}
	}
	served := endpoints(t, a.Router)
	if len(served) != len(owner) {
		t.Errorf("the server's router has %d endpoints, the module table's routes %d", len(served), len(owner))
	}
	for _, ep := range served {
		if _, ok := owner[ep]; !ok {
			t.Errorf("%s is served but mounted by no route of the module table", ep)
		}
	}
}

// endpoints are the "METHOD /path" pairs registered on r.
func endpoints(t *testing.T, r *mux.Router) []string {
	t.Helper()
	var out []string
	err := r.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := route.GetPathTemplate()
		if err != nil {
			return nil // a subrouter without a path of its own
		}
		methods, err := route.GetMethods()
		if err != nil {
			methods = []string{"ANY"}
		}
		for _, m := range methods {
			out = append(out, m+" "+path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
