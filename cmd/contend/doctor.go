package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/contend-dev/contend/collector"
	"github.com/contend-dev/contend/internal/leftover"
)

func init() { subcommands = append(subcommands, newDoctorCmd) }

// doctorOptions are the options of `contend doctor`.
type doctorOptions struct {
	// json prints the report as JSON instead of text.
	json bool
}

func newDoctorCmd() *cobra.Command {
	var o doctorOptions
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Say what this kernel and these privileges allow, and what to do about the rest",
		Long: `doctor checks what contend record needs: the kernel version and its BTF,
the BPF program types, helpers and maps the probes use (tested on this
kernel), the probe families themselves (loaded into the kernel and unloaded,
attaching nothing), the capabilities held (CAP_BPF, CAP_PERFMON,
CAP_SYS_ADMIN, CAP_SYS_PTRACE), and the sysctls that matter
(kernel.perf_event_paranoid, kernel.unprivileged_bpf_disabled). For each gap
it says what to do.

Without CAP_BPF and CAP_PERFMON it cannot test the BPF features: it says
which capability is missing and reports those features as unknown.

Exit status: 0 when contend can record here, 3 when privileges are missing,
5 when the kernel lacks something (checked first: privileges cannot fix it).`,
		Example: `  contend doctor
  sudo contend doctor
  contend doctor --json | jq .verdict`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runDoctor(o, c.OutOrStdout())
		},
	}
	c.Flags().BoolVar(&o.json, "json", false, "print the report as JSON")
	return c
}

// DoctorSchemaVersion is the version of doctor's JSON form
// (docs/json-schema.md), versioned like analyze's: minor versions only
// add fields.
const DoctorSchemaVersion = "1.0"

// doctorJSON is doctor's JSON form: the report with its schema version.
type doctorJSON struct {
	Schema string `json:"schema"`
	*collector.DoctorReport
}

// runDoctor prints the doctor's report and returns its verdict as an
// error carrying the exit code.
func runDoctor(o doctorOptions, w io.Writer) error {
	r := collector.Doctor(collector.DoctorOptions{})
	addLeftoverCheck(r, leftoverCheck(leftover.Find()))
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doctorJSON{Schema: DoctorSchemaVersion, DoctorReport: r}); err != nil {
			return withCode(exitFailure, fmt.Errorf("write report: %w", err))
		}
	} else if err := printDoctor(w, r); err != nil {
		return withCode(exitFailure, fmt.Errorf("write report: %w", err))
	}
	if err := r.Err(); err != nil {
		return withCode(exitCode(err), err)
	}
	return nil
}

// leftoverCheck says whether contend's BPF programs are still loaded,
// who holds them and what to do: a running contend detaches its own when
// it ends; programs no process holds stay until their pin is removed.
func leftoverCheck(progs []leftover.Program, err error) collector.Check {
	c := collector.Check{Name: "leftover probes"}
	if err != nil {
		c.Status, c.Detail = collector.CheckUnknown, fmt.Sprintf("cannot list the loaded BPF programs: %v", err)
		c.Fix = "run contend doctor as root to see whether any of contend's probes are still loaded"
		return c
	}
	if len(progs) == 0 {
		c.Status, c.Detail = collector.CheckOK, "none of contend's BPF programs is loaded"
		return c
	}
	held := map[int]string{}
	var pids []int
	for _, p := range progs {
		for _, h := range p.Holders {
			if _, ok := held[h.PID]; !ok {
				pids = append(pids, h.PID)
			}
			held[h.PID] = h.Cmdline
		}
	}
	if orphans := leftover.Orphans(progs); len(orphans) > 0 {
		var names []string
		for _, o := range orphans {
			names = append(names, fmt.Sprintf("%s (id %d)", o.Name, o.ID))
		}
		c.Status = collector.CheckMissing
		c.Detail = fmt.Sprintf("%d of contend's BPF programs are loaded and no process holds them: %s", len(orphans), strings.Join(names, ", "))
		c.Fix = fmt.Sprintf("they outlived the contend that loaded them (pinned, or left attached): find their pins with `bpftool prog show id %d` and `ls -R /sys/fs/bpf`, remove them with rm, or reboot", orphans[0].ID)
		return c
	}
	sort.Ints(pids)
	var who []string
	for _, pid := range pids {
		who = append(who, fmt.Sprintf("pid %d (%s)", pid, held[pid]))
	}
	c.Status = collector.CheckInfo
	c.Detail = fmt.Sprintf("%d of contend's BPF programs are loaded, held by %s: another contend is recording; its probes go when it ends, even when killed (kill %d stops it now)", len(progs), strings.Join(who, ", "), pids[0])
	return c
}

// addLeftoverCheck adds the leftover check to the report's system
// checks, and its fix to the report's when something needs cleaning.
func addLeftoverCheck(r *collector.DoctorReport, c collector.Check) {
	r.System = append(r.System, c)
	if c.Status == collector.CheckMissing {
		r.Fixes = append(r.Fixes, c.Fix)
	}
}

// printDoctor renders the report as text: one section per part, one
// line per check, the status first so that a glance down the left edge
// finds the gaps.
func printDoctor(w io.Writer, r *collector.DoctorReport) error {
	var b strings.Builder
	section := func(title string, checks []collector.Check) {
		if len(checks) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s\n", title)
		for _, c := range checks {
			line := c.Name
			if c.Detail != "" {
				line += ": " + c.Detail
			}
			fmt.Fprintf(&b, "  %-8s %s\n", c.Status, line)
			if c.Fix != "" && c.Status != collector.CheckOK {
				fmt.Fprintf(&b, "  %-8s → %s\n", "", c.Fix)
			}
		}
		b.WriteString("\n")
	}
	section("System", r.System)
	section("Capabilities", r.Capabilities)
	section("BPF features", r.Features)
	section("Probes", r.Probes)
	fmt.Fprintf(&b, "Verdict: %s", r.Verdict)
	if r.Verdict == collector.VerdictReady {
		b.WriteString(" — contend record -p PID can attach every probe")
	}
	b.WriteString("\n")
	if len(r.Fixes) > 0 {
		b.WriteString("What to do:\n")
		for _, f := range r.Fixes {
			fmt.Fprintf(&b, "  - %s\n", f)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
