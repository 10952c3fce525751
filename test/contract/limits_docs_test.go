package contract

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestDocumentedLimitMessagesMatchTheConstants lives here and not in api/memory because it
// reads the repository's documents, which the contract module does not carry. It reads every Markdown file of the repository's
// docs and the package READMEs for quoted limit messages and checks each number against the
// constant the code uses, so a changed limit cannot leave a stale message in the docs.
func TestDocumentedLimitMessagesMatchTheConstants(t *testing.T) {
	messages := map[*regexp.Regexp]int{
		regexp.MustCompile("`store: item larger than (\\d+) bytes`"):     memory.MaxItemBytes,
		regexp.MustCompile("`store: more than (\\d+) tags`"):             memory.MaxTagsPerItem,
		regexp.MustCompile("`store: a tag is longer than (\\d+) bytes`"): memory.MaxTagBytes,
		regexp.MustCompile("`store: more than (\\d+) metadata keys`"):    memory.MaxMetadataKeys,
		regexp.MustCompile("`search: more than (\\d+) tags`"):            memory.MaxQueryTags,
		regexp.MustCompile("`search: text longer than (\\d+) bytes`"):    memory.MaxQueryTextBytes,
		regexp.MustCompile(`nested deeper than (\d+) levels of arrays`):  memory.MaxJSONDepth,
	}
	var files []string
	for _, pattern := range []string{"../../docs/*.md", "../../docs/*/*.md", "../../*.md", "../../*/README.md", "../../*/*/README.md"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 5 {
		t.Fatalf("found %d Markdown files; the globs no longer match the repository's layout", len(files))
	}
	quoted := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for re, want := range messages {
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				quoted++
				if got, _ := strconv.Atoi(m[1]); got != want {
					t.Errorf("%s quotes %s, but the limit is %d", f, m[0], want)
				}
			}
		}
	}
	if quoted == 0 {
		t.Fatal("no documented limit message found: the patterns no longer match the docs")
	}
}
