package app

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections"
)

// Consumers maps each event type of the domain catalogue to the
// projectors and the reactors that consume it (by name, sorted). A
// consumer with no Types (it reads every event) is under "*".
func Consumers() (projectors, reactors map[string][]string) {
	d := Deps{}
	return consumers(Projectors(d)), consumers(Reactors(d))
}

func consumers(ps []projections.Projector) map[string][]string {
	out := map[string][]string{}
	for _, p := range ps {
		types := p.Types
		if types == nil {
			types = []string{"*"}
		}
		for _, t := range types {
			out[t] = append(out[t], p.Name)
		}
	}
	for t := range out {
		slices.Sort(out[t])
	}
	return out
}

// ModuleTable is the module table as Markdown (docs/architecture.md).
func ModuleTable() string {
	var b strings.Builder
	b.WriteString("| module | projectors | reactors | HTTP routes | background jobs | CLI commands |\n|---|---|---|---|---|---|\n")
	d := Deps{}
	for _, m := range Modules() {
		var ps, rs []string
		if m.Projectors != nil {
			for _, p := range m.Projectors(d) {
				ps = append(ps, p.Name)
			}
		}
		if m.Reactors != nil {
			for _, r := range m.Reactors(d) {
				rs = append(rs, r.Name)
			}
		}
		var routes, jobs []string
		for _, r := range m.Routes {
			routes = append(routes, r.Name)
		}
		for _, j := range m.Jobs {
			name := j.Name
			if j.Runs == OnOneServer {
				name += " (one server)"
			}
			jobs = append(jobs, name)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", m.Name, cell(ps), cell(rs), cell(routes), cell(jobs), cell(m.Commands))
	}
	return b.String()
}

// ConsumerTable is the event type → consumers table as Markdown
// (docs/architecture.md): every event type of the catalogue, with the
// projectors and reactors that consume it.
func ConsumerTable() string {
	projs, reacts := Consumers()
	var b strings.Builder
	b.WriteString("| event type | projectors | reactors |\n|---|---|---|\n")
	names := append([]string{"*"}, slices.Sorted(slices.Values(domain.Events().Names()))...)
	for _, t := range names {
		label := "`" + t + "`"
		if t == "*" {
			label = "every event"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", label, cell(projs[t]), cell(reacts[t]))
	}
	return b.String()
}

func cell(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ", ")
}
