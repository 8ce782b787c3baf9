package goendpoint

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/contend-dev/contend/goprof"
	"github.com/contend-dev/contend/internal/boundedio"
	"github.com/contend-dev/contend/internal/termsafe"
)

// A fetch child (Options.Command) runs one fetch and exits. It is
// how contend running as root fetches and parses what a target's pprof
// endpoint sends as the user who ran it: the HTTP client, the
// decompression and the parsers of the answer run in a process without
// privileges, and that process ends with the fetch, so whatever an answer
// does to it stays there. The parent reads back what the child wrote, in
// forms of contend's own making (a profile encoded again, a dump as
// JSON), within the same budgets.

// Exit codes of a fetch child, after which its standard error holds the
// message.
const (
	childExitFailed    = 1 // the fetch failed (status, size, content)
	childExitUsage     = 2 // bad arguments
	childExitTransport = 3 // the endpoint could not be reached at all
)

// Kinds of fetch a child makes.
const (
	childKindProfile = "profile"
	childKindDump    = "dump"
	// childKindIndex checks that the answer is net/http/pprof's index
	// page; the child writes nothing.
	childKindIndex = "index"
)

// maxChildError bounds the error message read from a child.
const maxChildError = 4 << 10

// ServeChild is the body of a fetch child: args are -budget=N (the
// parent's goprof budget, in bytes), then the kind of answer ("profile"
// "dump" or "index"), the URL and the largest body to read, in bytes. It writes
// the result to stdout (a profile in uncompressed protobuf, a dump as
// JSON, nothing for an index that is one) and returns the process exit code; a failure is one line on
// stderr.
func ServeChild(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gofetch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	budget := fs.Int64("budget", goprof.DefaultMaxDecoded, "goprof budget in bytes")
	if err := fs.Parse(args); err != nil || fs.NArg() != 3 {
		fmt.Fprintln(stderr, "usage: -budget=N KIND URL LIMIT")
		return childExitUsage
	}
	goprof.SetMaxDecoded(*budget)
	kind, u := fs.Arg(0), fs.Arg(1)
	limit, err := strconv.ParseInt(fs.Arg(2), 10, 64)
	if err != nil || limit <= 0 {
		fmt.Fprintln(stderr, "bad limit")
		return childExitUsage
	}
	client := fetchClient(nil)
	fail := func(err error) int {
		fmt.Fprintln(stderr, oneLineMsg(err.Error()))
		var te *transportError
		if errors.As(err, &te) {
			return childExitTransport
		}
		return childExitFailed
	}
	switch kind {
	case childKindProfile:
		p, err := getProfile(ctx, client, u, limit)
		if err != nil {
			return fail(err)
		}
		if err := p.WriteUncompressed(stdout); err != nil {
			return fail(err)
		}
	case childKindIndex:
		if err := getIndex(ctx, client, u, limit); err != nil {
			return fail(err)
		}
	case childKindDump:
		a, err := getDump(ctx, client, u, limit)
		if err != nil {
			return fail(err)
		}
		if err := json.NewEncoder(stdout).Encode(a); err != nil {
			return fail(err)
		}
	default:
		fmt.Fprintf(stderr, "unknown kind %q\n", kind)
		return childExitUsage
	}
	return 0
}

// oneLineMsg keeps the first line of a message, escaped.
func oneLineMsg(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return termsafe.String(s)
}

// runChild runs one fetch in a child, which reads at most bodyLimit bytes
// of the answer, and returns what the child wrote, at most limit bytes.
func (g *Fetcher) runChild(ctx context.Context, kind, u string, bodyLimit, limit int64) ([]byte, error) {
	return runFetchChild(ctx, g.child, kind, u, bodyLimit, limit)
}

// runFetchChild runs one fetch of kind in a child made by child, which
// reads at most bodyLimit bytes of the answer, and returns what the child
// wrote, at most limit bytes.
func runFetchChild(ctx context.Context, child func(ctx context.Context, args ...string) *exec.Cmd, kind, u string, bodyLimit, limit int64) ([]byte, error) {
	cmd := child(ctx, "-budget="+strconv.FormatInt(goprof.MaxDecoded(), 10), kind, u, strconv.FormatInt(bodyLimit, 10))
	out := &boundedio.CappedBuffer{Limit: limit}
	errb := &boundedio.CappedBuffer{Limit: maxChildError}
	cmd.Stdout, cmd.Stderr = out, errb
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, timeoutOr(ctx, ctx.Err())
	}
	msg := oneLineMsg(strings.TrimSpace(errb.String()))
	var ee *exec.ExitError
	switch {
	case err == nil && out.Over():
		return nil, fmt.Errorf("%w: the fetch child wrote more than %s", errTooLarge, sizeString(limit))
	case err == nil:
		return out.Bytes(), nil
	case errors.As(err, &ee) && ee.ExitCode() == childExitTransport:
		return nil, &transportError{errors.New(msg)}
	case errors.As(err, &ee) && msg != "":
		return nil, errors.New(msg)
	}
	return nil, fmt.Errorf("fetch child: %w", err)
}

// childProfile fetches the profile at u in a child.
func (g *Fetcher) childProfile(ctx context.Context, u string) (*profile.Profile, error) {
	data, err := g.runChild(ctx, childKindProfile, u, g.profileLimit, goprof.MaxDecoded())
	if err != nil {
		return nil, err
	}
	p, err := goprof.ParseProfile(data)
	if err != nil {
		return nil, fmt.Errorf("fetch child: %w", err)
	}
	return p, nil
}

// childDump fetches the goroutine dump at u in a child. The JSON of a
// parsed dump holds its text and its goroutines, about three times the
// text.
func (g *Fetcher) childDump(ctx context.Context, u string) (*dumpAnswer, error) {
	data, err := g.runChild(ctx, childKindDump, u, g.dumpLimit, 4*g.dumpLimit+1<<20)
	if err != nil {
		return nil, err
	}
	var a dumpAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("fetch child: %w", err)
	}
	return &a, nil
}
