package tui

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/contend-dev/contend/recording"
)

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
