package tui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/contend-dev/contend/export/perfetto"
	"github.com/contend-dev/contend/internal/atomicfile"
	"github.com/contend-dev/contend/recording"
)

// TraceFile is the name of the Perfetto trace the e key writes into the
// exported recording directory (open it in ui.perfetto.dev).
const TraceFile = "timeline.pftrace"

// maxExportTries bounds the suffixes tried when an export name is taken
// (two exports within one second); more than that means something else is
// wrong with the directory.
const maxExportTries = 100

// exportRecording writes rec under dir in a new directory named after the
// target and the time, given to owner when not nil, and returns its path.
func exportRecording(dir string, rec *recording.Recording, owner *recording.Owner, now time.Time) (string, error) {
	if dir == "" {
		dir = "."
	}
	base := recording.DirName(rec.Meta, now)
	for i := 1; i <= maxExportTries; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		path := filepath.Join(dir, name)
		err := recording.WriteAs(path, rec, owner)
		if errors.Is(err, recording.ErrExists) {
			continue
		}
		if err != nil {
			return "", err
		}
		return path, nil
	}
	return "", fmt.Errorf("export under %s: %d names taken", dir, maxExportTries)
}

// exportTrace writes rec's Perfetto trace into the exported recording
// directory dir, given to owner when not nil, and returns its path.
func exportTrace(dir string, rec *recording.Recording, owner *recording.Owner) (string, error) {
	data, _, err := perfetto.Export(rec)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, TraceFile)
	if err := atomicfile.WriteFile(path, data); err != nil {
		return "", err
	}
	if owner != nil {
		if err := os.Lchown(path, owner.UID, owner.GID); err != nil {
			return "", fmt.Errorf("give %s to uid %d: %w", path, owner.UID, err)
		}
	}
	return path, nil
}
