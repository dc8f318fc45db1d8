package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/actors"
	"github.com/wraptool/wraptool/toolset"
	"github.com/wraptool/wraptool/webui"
)

// linkOptions are the option structs of every actor, and of the two
// components the wiring hands links to (the request tool and the review
// UI). TestEveryLinkIsNamed checks the list against package actors, so a
// new actor cannot be left out.
var linkOptions = []any{
	actors.AdminOptions{}, actors.AuditOptions{}, actors.ConfigEditorOptions{}, actors.DebouncerOptions{},
	actors.GrantsOptions{}, actors.HooksOptions{}, actors.HubOptions{}, actors.LoaderOptions{},
	actors.PolicyHolderOptions{}, actors.RegistryOptions{}, actors.RequestLogOptions{}, actors.SignalsOptions{},
	actors.SessionsOptions{}, actors.Shared{}, actors.UpstreamsOptions{}, actors.WatcherOptions{},
	toolset.RequestTool{}, webui.Options{},
}

// TestEveryLinkIsNamed walks the actors' options: a field that is a
// function, an interface or a pointer (another actor, or anything shared)
// is a plain link where a channel could be, and plainLinks must name it
// with its reason. Channels need no entry: they are the links wire declares.
func TestEveryLinkIsNamed(t *testing.T) {
	named := plainLinks()
	used := map[string]bool{}
	for _, o := range linkOptions {
		typ := reflect.TypeOf(o)
		for f := range typ.Fields() {
			if !f.IsExported() || !plain(f.Type) {
				continue
			}
			byField := typ.Name() + "." + f.Name
			switch {
			case named[byField] != "":
				used[byField] = true
			case named[f.Type.String()] != "":
				used[f.Type.String()] = true
			default:
				t.Errorf("%s.%s is a %s: a link that is not a channel; make it one, or name it in plainLinks with the reason",
					typ.PkgPath(), byField, f.Type)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(named)) {
		if !used[k] {
			t.Errorf("plainLinks names %q, which no option has", k)
		}
		if strings.TrimSpace(named[k]) == "" {
			t.Errorf("plainLinks gives %q no reason", k)
		}
	}

	// Every options struct of package actors is walked.
	fset := token.NewFileSet()
	entries, err := os.ReadDir("../../actors")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join("../../actors", e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if _, isStruct := ts.Type.(*ast.StructType); isStruct && (strings.HasSuffix(ts.Name.Name, "Options") || ts.Name.Name == "Shared") {
					declared = append(declared, ts.Name.Name)
				}
			}
		}
	}
	walked := map[string]bool{}
	for _, o := range linkOptions {
		walked[reflect.TypeOf(o).Name()] = true
	}
	for _, name := range declared {
		if !walked[name] {
			t.Errorf("actors.%s is not in linkOptions: its links are not checked", name)
		}
	}
}

// plain reports whether a field of type t is a link by something other
// than a channel: a function, an interface, or a pointer. Loggers are not
// links.
func plain(t reflect.Type) bool {
	if t == reflect.TypeFor[*slog.Logger]() {
		return false
	}
	switch t.Kind() {
	case reflect.Func, reflect.Interface, reflect.Pointer:
		return true
	}
	return false
}

// TestPlainLinksCatchesAnUnnamedLink is the check's own test: a func, an
// interface and an actor pointer are caught, a channel is not.
func TestPlainLinksCatchesAnUnnamedLink(t *testing.T) {
	type options struct {
		Ch    chan struct{}
		Fn    func()
		Iface actors.Snapshots
		Actor *actors.Hub
		Log   *slog.Logger
		N     int
	}
	want := map[string]bool{"Ch": false, "Fn": true, "Iface": true, "Actor": true, "Log": false, "N": false}
	for f := range reflect.TypeFor[options]().Fields() {
		if got := plain(f.Type); got != want[f.Name] {
			t.Errorf("plain(%s %s) = %v, want %v", f.Name, f.Type, got, want[f.Name])
		}
	}
}
