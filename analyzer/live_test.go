package analyzer

import (
	"testing"

	"github.com/contend-dev/contend/recording"
)

func TestLiveIgnoresOtherRecordings(t *testing.T) {
	res := analyze(t, &recording.Recording{Meta: recording.Meta{Source: recording.SourceFiles}})
	if len(res.Locks) != 0 || len(res.Threads) != 0 {
		t.Errorf("live rows for a recording of files: %d locks, %d threads", len(res.Locks), len(res.Threads))
	}
}
