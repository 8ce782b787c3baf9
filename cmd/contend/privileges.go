package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/contend-dev/contend/collector/goendpoint"
	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/internal/privdrop"
	"github.com/contend-dev/contend/recording"
)

// How each subcommand uses root, read from its annotations by the root
// command before it runs. Where contend runs as root, it keeps root only
// for what needs it and runs the rest as the invoking user (--user, else
// the user sudo names; see privdrop.Target):
//
//   - analyze, tui, compare, export: nothing needs root; they drop before
//     reading any input. Plain root (no sudo, no --user) drops to the
//     user who owns the inputs, or nobody (inputReader).
//   - record, demo: root until the probes are detached and the recording
//     written (owned by the user); the analysis and the report run after
//     the drop. The pprof endpoint is fetched and parsed by child
//     processes running as the user throughout.
//   - top: the live session keeps reading the target's maps (objects it
//     loads later), its /proc files and the probes' maps, and the view
//     draws each window's analysis as it comes, so the session and the
//     view stay root; the pprof fetches run as the user, as in record.
//   - agent: every window attaches the probes anew, so it stays root;
//     its pprof fetches run as the user when there is one.
//   - export: like analyze, drops before reading.
//   - doctor: reports what this process may do; it never drops.
const (
	annPrivileges = "contend/privileges"
	privDropFirst = "drop-first" // drop before anything is read
)

// rootFlags are the flags every subcommand takes.
var rootFlags struct {
	user           string
	maxProfileSize string
	// dropTo is the user resolved from --user or sudo; ok says there is
	// one.
	dropTo privdrop.User
	drop   bool
}

// addRootFlags adds the flags every subcommand takes and the hook that
// applies them.
func addRootFlags(root *cobra.Command) {
	pf := root.PersistentFlags()
	pf.StringVar(&rootFlags.user, "user", "", "when run as root, the user to run as once root is not needed (default: the user sudo names)")
	pf.StringVar(&rootFlags.maxProfileSize, "max-profile-size", "256MiB", "largest size a profile, dump or event log may decompress to; its parsed form may take 4 times that")
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		n, err := parseSize(rootFlags.maxProfileSize)
		if err != nil {
			return usageErrorf("--max-profile-size: %v", err)
		}
		goprof.SetMaxDecoded(n)
		u, ok, err := privdrop.Target(rootFlags.user)
		if err != nil {
			return withCode(exitUsage, err)
		}
		rootFlags.dropTo, rootFlags.drop = u, ok
		if !ok && os.Geteuid() == 0 && rootFlags.user == "" && c.Annotations[annPrivileges] == privDropFirst {
			rootFlags.dropTo, rootFlags.drop = inputReader(args)
		}
		if rootFlags.drop && c.Annotations[annPrivileges] == privDropFirst {
			return dropPrivileges(c.Name())
		}
		return nil
	}
}

// inputReader returns who a command that only reads its inputs runs as
// when plain root runs it (no sudo, no --user): the one user other than
// root who owns the inputs (the paths, each directory's entries, a link's
// target), so that what a user's files point at is opened with that
// user's rights, not root's; nobody when several users do, or when a
// directory is writable by group or others (anyone could swap its
// entries); and root itself (false) only for inputs that root alone
// controls. The analysis opens no file (it reads the recording alone),
// so the user only bounds what is read.
func inputReader(paths []string) (privdrop.User, bool) {
	owners := map[uint32]bool{}
	shared := false
	see := func(p string) {
		for _, stat := range []func(string) (os.FileInfo, error){os.Lstat, os.Stat} {
			st, err := stat(p)
			if err != nil {
				continue
			}
			if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 {
				owners[sys.Uid] = true
			}
			if st.IsDir() && st.Mode()&0o022 != 0 {
				shared = true
			}
		}
	}
	for _, p := range paths {
		see(p)
		if entries, err := os.ReadDir(p); err == nil {
			for _, e := range entries {
				see(filepath.Join(p, e.Name()))
			}
		}
	}
	switch {
	case len(owners) == 1 && !shared:
		for uid := range owners {
			if u, ok, err := privdrop.Target(strconv.FormatUint(uint64(uid), 10)); err == nil && ok {
				return u, true
			}
		}
		return privdrop.Nobody(), true
	case len(owners) > 0 || shared:
		return privdrop.Nobody(), true
	}
	return privdrop.User{}, false
}

// dropPrivileges drops to the resolved user, if any.
func dropPrivileges(what string) error {
	if !rootFlags.drop {
		return nil
	}
	if err := privdrop.Drop(rootFlags.dropTo); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// dropForAnalysis gives up root once record has written its recording:
// to the resolved user, else, running as root with no one named (no
// sudo, no --user), to nobody. Nothing left reads a file that root
// alone may read: the analysis and the report work on the recording in
// memory, and whatever else they open is opened as the user.
func dropForAnalysis(what string) error {
	if rootFlags.drop {
		return dropPrivileges(what)
	}
	if os.Geteuid() != 0 || rootFlags.user != "" {
		// Not root, or --user named root: root was asked for.
		return nil
	}
	if err := privdrop.Drop(privdrop.Nobody()); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// asInvoker runs f as the user contend works for when it runs as root
// under sudo or with --user (privdrop.Do), else as contend runs: a path
// the user names for output (-o) is created with the user's permissions
// and belongs to the user, so root never creates, on the user's behalf,
// a directory the user could not have created.
func asInvoker(f func() error) error {
	if !rootFlags.drop {
		return f()
	}
	return privdrop.Do(rootFlags.dropTo, f)
}

// invokerNote is what an output error adds when the output is made as
// the invoking user: who that is.
func invokerNote() string {
	if !rootFlags.drop {
		return ""
	}
	return fmt.Sprintf(" (contend writes it as %s, not as root; give a directory that user can write)", rootFlags.dropTo)
}

// writeRecording writes rec to dir as the invoking user (asInvoker): the
// directory, its missing parents and its files are the user's, made with
// the user's permissions.
func writeRecording(dir string, rec *recording.Recording) error {
	return asInvoker(func() error { return recording.WriteAs(dir, rec, nil) })
}

// recordingOwner is who a recording written as root should belong to:
// the user contend drops to, nil when none.
func recordingOwner() *recording.Owner {
	if !rootFlags.drop {
		return nil
	}
	return &recording.Owner{UID: rootFlags.dropTo.UID, GID: rootFlags.dropTo.GID}
}

// gofetchCmdName is the hidden subcommand a fetch child runs.
const gofetchCmdName = "__gofetch"

// fetchChildCommand returns how the collector starts a fetch child, nil
// when there is no one to run it as (contend is not root, or is root
// alone: fetching in process then runs with the privileges it has).
func fetchChildCommand() func(ctx context.Context, args ...string) *exec.Cmd {
	if !rootFlags.drop {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	u := rootFlags.dropTo
	return func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := privdrop.Command(ctx, u, self, append([]string{gofetchCmdName}, args...)...)
		// No proxy settings or other environment of root's: the child
		// talks to the endpoint directly, as the fetch in process does.
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "NO_COLOR=1"}
		cmd.Dir = "/"
		return cmd
	}
}

func newGofetchCmd() *cobra.Command {
	return &cobra.Command{
		Use:                gofetchCmdName + " -budget=N KIND URL LIMIT",
		Short:              "Fetch one answer of a pprof endpoint (run by record, demo and top)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			if code := goendpoint.ServeChild(c.Context(), args, c.OutOrStdout(), c.ErrOrStderr()); code != 0 {
				os.Exit(code)
			}
			return nil
		},
	}
}

func init() { subcommands = append(subcommands, newGofetchCmd) }

// parseSize reads a byte count: a number with an optional unit (K, M, G,
// with or without "iB"; powers of 1024).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || n <= 0 || n > (1<<50)/mult {
		return 0, fmt.Errorf("%q is not a size such as 256MiB", s)
	}
	return n * mult, nil
}
