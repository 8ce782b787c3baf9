package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/contend-dev/contend/analyzer"
	"github.com/contend-dev/contend/docs"
)

// `contend help TOPIC` prints the embedded docs/ page whole, and the root
// help lists every topic.
func TestHelpTopics(t *testing.T) {
	root, _, code := runCLI(t, "--help")
	if code != exitOK {
		t.Fatalf("--help: exit %d", code)
	}
	for _, tp := range helpTopics {
		out, stderr, code := runCLI(t, "help", tp.name)
		if code != exitOK || stderr != "" {
			t.Errorf("help %s: exit %d, stderr %q", tp.name, code, stderr)
		}
		if out != tp.text || len(out) < 200 {
			t.Errorf("help %s: printed %d bytes, want the page's %d", tp.name, len(out), len(tp.text))
		}
		if !strings.Contains(root, tp.name) {
			t.Errorf("root help does not list the topic %s", tp.name)
		}
	}
}

// The exit-codes page has one row per exit code the CLI returns, with the
// same numbers.
func TestHelpExitCodesMatchConstants(t *testing.T) {
	rows := regexp.MustCompile(`(?m)^\| (\d) \|`).FindAllStringSubmatch(docs.ExitCodes, -1)
	var got []string
	for _, r := range rows {
		got = append(got, r[1])
	}
	var want []string
	for _, c := range []int{exitOK, exitFindings, exitUsage, exitPrivilege, exitTarget, exitKernel, exitFailure} {
		want = append(want, fmt.Sprint(c))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("exit-codes page lists %v, the CLI returns %v", got, want)
	}
}

// The verdicts page names every finding kind the analyzer can give.
func TestHelpVerdictsNameEveryKind(t *testing.T) {
	for _, k := range []analyzer.Kind{
		analyzer.KindSpinConvoy, analyzer.KindLockConvoy, analyzer.KindIOUnderLock, analyzer.KindSerializedWriter,
		analyzer.KindRuntimeLock, analyzer.KindHotStripe, analyzer.KindCPUSaturation, analyzer.KindContention,
	} {
		if !strings.Contains(docs.Verdicts, "| `"+string(k)+"` |") {
			t.Errorf("the verdicts page has no row for %s", k)
		}
	}
}
