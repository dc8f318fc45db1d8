package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
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

// TestEveryLinkIsNamed walks the actors' options (and the structs inside
// them) and their constructors' other arguments: a field that is a
// function, an interface or a pointer (another actor, or anything shared)
// is a plain link where a channel could be, and plainLinks must name it
// with its reason. Channels need no entry: they are the links wire
// declares.
func TestEveryLinkIsNamed(t *testing.T) {
	named := plainLinks()
	used := map[string]bool{}
	check := func(key, what string) {
		if named[key] == "" {
			t.Errorf("%s is %s: a link that is not a channel; make it one, or name it in plainLinks with the reason", key, what)
			return
		}
		used[key] = true
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		for f := range typ.Fields() {
			switch {
			case !f.IsExported():
			case plain(f.Type):
				check(typ.String()+"."+f.Name, "a "+f.Type.String())
			case f.Type.Kind() == reflect.Struct:
				walk(f.Type)
			}
		}
	}
	for _, o := range linkOptions {
		walk(reflect.TypeOf(o))
	}

	// Every options struct of package actors is walked, and every actor
	// constructor's arguments besides its options and its logger are named.
	actorsPkg := parseActors(t)
	walked := map[string]bool{}
	for _, o := range linkOptions {
		walked[reflect.TypeOf(o).Name()] = true
	}
	for _, name := range actorsPkg.options {
		if !walked[name] {
			t.Errorf("actors.%s is not in linkOptions: its links are not checked", name)
		}
	}
	for _, c := range actorsPkg.constructorArgs {
		if c.typ == "*slog.Logger" || strings.HasSuffix(c.typ, "Options") {
			continue
		}
		check("actors."+c.fn+"("+c.name+")", "a "+c.typ)
	}

	for _, k := range slices.Sorted(maps.Keys(named)) {
		if !used[k] {
			t.Errorf("plainLinks names %q, which nothing has", k)
		}
		if strings.TrimSpace(named[k]) == "" {
			t.Errorf("plainLinks gives %q no reason", k)
		}
	}
}

// actorsSource is what parseActors finds in package actors' own files.
type actorsSource struct {
	// options are the names of its options structs (and Shared).
	options []string
	// constructorArgs are the arguments of its actors' constructors: the
	// New functions returning a pointer to a type with a Run method.
	constructorArgs []constructorArg
}

type constructorArg struct{ fn, name, typ string }

// parseActors reads package actors' production files.
func parseActors(t *testing.T) actorsSource {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir("../../actors")
	if err != nil {
		t.Fatal(err)
	}
	var out actorsSource
	runs := map[string]bool{}
	type ctor struct {
		fn     *ast.FuncDecl
		result string
	}
	var ctors []ctor
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join("../../actors", e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				if d.Tok != token.TYPE {
					continue
				}
				for _, s := range d.Specs {
					ts := s.(*ast.TypeSpec)
					if _, isStruct := ts.Type.(*ast.StructType); isStruct && (strings.HasSuffix(ts.Name.Name, "Options") || ts.Name.Name == "Shared") {
						out.options = append(out.options, ts.Name.Name)
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && d.Name.Name == "Run" && len(d.Recv.List) == 1 {
					runs[strings.TrimPrefix(types(fset, d.Recv.List[0].Type), "*")] = true
				}
				if d.Recv == nil && strings.HasPrefix(d.Name.Name, "New") && d.Type.Results != nil && len(d.Type.Results.List) == 1 {
					ctors = append(ctors, ctor{d, strings.TrimPrefix(types(fset, d.Type.Results.List[0].Type), "*")})
				}
			}
		}
	}
	for _, c := range ctors {
		if !runs[c.result] {
			continue // not an actor's constructor
		}
		for _, p := range c.fn.Type.Params.List {
			for _, n := range p.Names {
				out.constructorArgs = append(out.constructorArgs, constructorArg{c.fn.Name.Name, n.Name, types(fset, p.Type)})
			}
		}
	}
	if len(out.options) == 0 || len(out.constructorArgs) == 0 {
		t.Fatalf("found %d options structs and %d constructor arguments in actors: the parse is broken", len(out.options), len(out.constructorArgs))
	}
	return out
}

// types prints a type expression as the source writes it.
func types(fset *token.FileSet, e ast.Expr) string {
	var b strings.Builder
	if err := printer.Fprint(&b, fset, e); err != nil {
		return fmt.Sprintf("%T", e)
	}
	return b.String()
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
