package main

import (
	"go/token"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/tools/go/analysis"
)

func TestConfigFlag(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		path     string
		rest     []string
		errorHas string
	}{
		{args: []string{"-config", "k.yaml", "-test=false", "./api/..."}, path: "k.yaml", rest: []string{"-test=false", "./api/..."}},
		{args: []string{"./api/...", "-config=k.yaml"}, path: "k.yaml", rest: []string{"./api/..."}},
		{args: []string{"--config=k.yaml", "./api/..."}, path: "k.yaml", rest: []string{"./api/..."}},
		{args: []string{"--config", "k.yaml"}, path: "k.yaml", rest: []string{}},
		{args: []string{"./api/..."}, errorHas: "usage"},
		{args: []string{"./api/...", "-config"}, errorHas: "needs a file"},
	} {
		path, rest, err := configFlag(tc.args)
		if tc.errorHas != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errorHas) {
				t.Errorf("configFlag(%q): error %v, want one saying %q", tc.args, err, tc.errorHas)
			}
			continue
		}
		if err != nil || path != tc.path || !reflect.DeepEqual(rest, tc.rest) {
			t.Errorf("configFlag(%q) = %q, %q, %v; want %q, %q", tc.args, path, rest, err, tc.path, tc.rest)
		}
	}
}

// reporter is an analyzer that reports each message at the start of api/types.go.
func reporter(messages ...string) *analysis.Analyzer {
	return &analysis.Analyzer{Name: "jsontags", Doc: "reports its messages", Run: func(pass *analysis.Pass) (any, error) {
		for _, m := range messages {
			pass.Report(analysis.Diagnostic{Pos: pass.Fset.File(1).Pos(0), Message: m})
		}
		return nil, nil
	}}
}

func TestExclusionsDropOnlyWhatTheyMatch(t *testing.T) {
	analyzers, err := excluding([]*analysis.Analyzer{reporter("field A.SQLite is off", "field A.Other is off")}, []exclusion{
		{Linter: "jsontags", Path: `^api/types\.go$`, Text: `A\.SQLite`, Reason: "the word splitter is wrong here"},
		{Linter: "jsontags", Path: `^other\.go$`, Text: `A\.Other`, Reason: "another file"},
	})
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	fset.AddFile("api/types.go", -1, 10)
	var got []string
	pass := &analysis.Pass{Fset: fset, Report: func(d analysis.Diagnostic) { got = append(got, d.Message) }}
	if _, err := analyzers[0].Run(pass); err != nil {
		t.Fatal(err)
	}
	if want := []string{"field A.Other is off"}; !reflect.DeepEqual(got, want) {
		t.Errorf("reported %q, want %q", got, want)
	}
}

func TestExclusionsRefuseWhatCannotApply(t *testing.T) {
	complete := exclusion{Linter: "jsontags", Path: "x", Text: "y", Reason: "z"}
	for name, tc := range map[string]struct {
		change   func(*exclusion)
		errorHas string
	}{
		"no reason":          {func(e *exclusion) { e.Reason = " " }, "reason are all required"},
		"no path":            {func(e *exclusion) { e.Path = "" }, "reason are all required"},
		"bad path":           {func(e *exclusion) { e.Path = "(" }, "exclusions[0].path"},
		"bad text":           {func(e *exclusion) { e.Text = "(" }, "exclusions[0].text"},
		"linter not enabled": {func(e *exclusion) { e.Linter = "nobools" }, `"nobools", which is not enabled`},
	} {
		e := complete
		tc.change(&e)
		_, err := excluding([]*analysis.Analyzer{reporter()}, []exclusion{e})
		if err == nil || !strings.Contains(err.Error(), tc.errorHas) {
			t.Errorf("%s: error %v, want one saying %q", name, err, tc.errorHas)
		}
	}
}
