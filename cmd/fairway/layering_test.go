package main

import (
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/fairway-hpc/fairway"

// moduleDeps returns the module's packages that the package in dir (relative
// to the module root) imports, directly or not, test files left out.
func moduleDeps(t *testing.T, root, dir string) []string {
	t.Helper()
	seen := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		p, err := build.Default.ImportDir(filepath.Join(root, dir), 0)
		if err != nil {
			t.Fatalf("read package %s: %v", dir, err)
		}
		for _, imp := range p.Imports {
			rel, ok := strings.CutPrefix(imp, module+"/")
			if !ok || seen[rel] {
				continue
			}
			seen[rel] = true
			walk(rel)
		}
	}
	walk(dir)
	deps := make([]string, 0, len(seen))
	for d := range seen {
		deps = append(deps, d)
	}
	slices.Sort(deps)
	return deps
}

// TestLayering_AdaptersApart: the adapters (slurmctl for Slurm, accounting
// for the database, prolog for the slurmd hooks) do not import each other,
// directly or through another package; cmd/fairway wires them together.
func TestLayering_AdaptersApart(t *testing.T) {
	root := filepath.Join("..", "..")
	adapters := []string{"accounting", "prolog", "slurmctl"}
	for _, a := range adapters {
		deps := moduleDeps(t, root, a)
		for _, b := range adapters {
			if a != b && slices.ContainsFunc(deps, func(d string) bool { return d == b || strings.HasPrefix(d, b+"/") }) {
				t.Errorf("%s imports %s (its module imports: %v)", a, b, deps)
			}
		}
	}
}

// TestLayering_OnlySlurmctlExecutes: slurmctl is the one door into Slurm,
// so it is the one package that runs commands; besides it only the lab's
// test helper (contrib/lab) and the MPS control daemon's starter
// (prolog/mps.go: NVIDIA's, not Slurm's) import os/exec.
func TestLayering_OnlySlurmctlExecutes(t *testing.T) {
	root := filepath.Join("..", "..")
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "os/exec" {
				rel, _ := filepath.Rel(root, path)
				found = append(found, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if !strings.HasPrefix(f, "slurmctl/") && !strings.HasPrefix(f, "contrib/lab/") && f != "prolog/mps.go" {
			t.Errorf("%s imports os/exec: Slurm commands run through slurmctl.Commands", f)
		}
	}
	if !slices.Contains(found, "slurmctl/exec.go") {
		t.Errorf("os/exec found only in %v: want slurmctl/exec.go among them (is the walk reading the module?)", found)
	}
}

// TestLayout_READMENamesEveryPackage: README's layout table has one row for
// each Go package of the module and no row for a folder that is gone, so a
// newcomer can find where a thing lives from it.
func TestLayout_READMENamesEveryPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no '## Layout' section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	rows := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
		rows[name] = true
		if st, err := os.Stat(filepath.Join(root, name)); err != nil || !st.IsDir() {
			t.Errorf("README's layout names %s, which is not a folder of the repository", name)
		}
	}
	var pkgs []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if _, err := build.Default.ImportDir(path, 0); err == nil {
			rel, _ := filepath.Rel(root, path)
			pkgs = append(pkgs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages under %s: %v", len(pkgs), root, pkgs)
	}
	for _, p := range pkgs {
		if !rows[p] {
			t.Errorf("package %s has no row in README's layout table", p)
		}
	}
}
