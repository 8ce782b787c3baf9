package docs

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// tableRows returns the rows of the markdown table that starts with the
// header line head in page, header and separator included.
func tableRows(page, head string) []string {
	var rows []string
	in := false
	for _, l := range strings.Split(page, "\n") {
		if l == head {
			in = true
		}
		if in {
			if !strings.HasPrefix(l, "|") {
				break
			}
			rows = append(rows, l)
		}
	}
	return rows
}

// The README shows the verdict table that `contend help verdicts` prints:
// the two must not drift apart.
func TestReadmeVerdictTableIsThePage(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const head = "| kind | what the data shows | what contend suggests |"
	got, want := tableRows(string(readme), head), tableRows(Verdicts, head)
	if len(want) < 10 {
		t.Fatalf("verdicts.md has %d table lines, want every kind", len(want))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("README's verdict table differs from docs/verdicts.md:\nREADME:\n%s\nverdicts.md:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The README is a guide: at most 400 lines, and every docs/ page it
// links to exists.
func TestReadmeIsAGuide(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 400 {
		t.Errorf("README.md has %d lines, want at most 400: move results and long explanations to docs/", n)
	}
	links := regexp.MustCompile(`\]\((docs/[^)#]+)`).FindAllStringSubmatch(string(readme), -1)
	if len(links) == 0 {
		t.Fatal("README links to no docs/ page")
	}
	for _, l := range links {
		if _, err := os.Stat("../" + l[1]); err != nil {
			t.Errorf("README links to %s: %v", l[1], err)
		}
	}
}
