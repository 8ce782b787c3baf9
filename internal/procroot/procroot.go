// Package procroot names paths under a proc mount that tests can move:
// the root "" means the machine's /proc.
package procroot

import (
	"path/filepath"

	"github.com/prometheus/procfs"
)

// Path joins a path under the proc mount root ("" means /proc).
func Path(root string, parts ...string) string {
	if root == "" {
		root = "/proc"
	}
	return filepath.Join(append([]string{root}, parts...)...)
}

// FS opens the proc mount at root ("" means /proc).
func FS(root string) (procfs.FS, error) {
	if root == "" {
		root = procfs.DefaultMountPoint
	}
	return procfs.NewFS(root)
}
