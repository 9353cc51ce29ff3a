package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/cmdgate/cmdgate/executor"
)

const cacheUsage = `usage: cmdgate cache list [flags]
       cmdgate cache clear [--all] [flags]

The gateway keeps each workspace's tool caches (Go's build and module caches, npm, yarn,
pip, cargo, Maven, Gradle) and a persistent HOME for its commands in a cache area of its
own, under sandbox.caches_dir (default <data>/caches), so a second build is fast.

  list    the cache areas and their sizes
  clear   remove the cache area of the workspace (--workspace, CMDGATE_WORKSPACE, the
          configuration's workspace, else the current directory), or every area with
          --all. Commands running meanwhile may fail; the next command starts empty.

flags:`

// runCache implements `cmdgate cache list|clear`.
func (m *Main) runCache(_ context.Context, args []string) int {
	if code, done := m.groupHelp(args, func(w io.Writer) {
		fmt.Fprintln(w, cacheUsage)
		newCacheFlags(w, "cache").fs.PrintDefaults()
	}); done {
		return code
	}
	sub, args := args[0], args[1:]
	if sub != "list" && sub != "clear" {
		fmt.Fprintf(m.Stderr, "cmdgate cache: unknown subcommand %q\n", sub)
		fmt.Fprintln(m.Stderr, cacheUsage)
		return exitUsage
	}
	cf := newCacheFlags(m.Stderr, "cache "+sub)
	all := false
	if sub == "clear" {
		cf.fs.BoolVar(&all, "all", false, "clear the cache areas of every workspace")
	}
	cf.fs.Usage = func() {
		fmt.Fprintln(cf.fs.Output(), cacheUsage)
		cf.fs.PrintDefaults()
	}
	operands, err := m.parseFlags(cf.fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if len(operands) > 0 {
		fmt.Fprintf(m.Stderr, "cmdgate cache %s: unexpected argument %q\n", sub, operands[0])
		return exitUsage
	}
	typ := "cache." + sub
	root, ws, err := m.cacheRoot(cf)
	if err != nil {
		return m.writeError(typ, "INVALID_ARGUMENT", err.Error())
	}
	areas, err := cacheAreas(root)
	if err != nil {
		return m.writeError(typ, "INTERNAL", err.Error())
	}
	if sub == "list" {
		return m.writeResult(typ, struct {
			CachesDir string      `json:"caches_dir"`
			Areas     []cacheArea `json:"areas"`
		}{root, areas})
	}
	var targets []cacheArea
	if all {
		targets = areas
	} else {
		dir := executor.CacheDir(root, ws)
		for _, a := range areas {
			if a.Dir == dir {
				targets = append(targets, a)
			}
		}
	}
	removed := []cacheArea{}
	var freed int64
	for _, a := range targets {
		if err := executor.ClearCaches(a.Dir); err != nil {
			return m.writeError(typ, "INTERNAL", err.Error())
		}
		removed = append(removed, a)
		freed += a.Bytes
	}
	return m.writeResult(typ, struct {
		CachesDir  string      `json:"caches_dir"`
		Removed    []cacheArea `json:"removed"`
		BytesFreed int64       `json:"bytes_freed"`
	}{root, removed, freed})
}

// cacheFlags are the flags every cache subcommand shares.
type cacheFlags struct {
	fs                      *flag.FlagSet
	config, data, workspace *string
}

func newCacheFlags(w io.Writer, name string) cacheFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	return cacheFlags{
		fs:        fs,
		config:    fs.String("config", "", "configuration file (YAML); default $CMDGATE_CONFIG"),
		data:      fs.String("data", "", "data directory (default: $CMDGATE_DATA, $XDG_DATA_HOME/cmdgate, ~/.local/share/cmdgate)"),
		workspace: fs.String("workspace", "", "the workspace whose cache area to clear (default: $CMDGATE_WORKSPACE, the configuration's, the current directory)"),
	}
}

// cacheRoot resolves the caches directory and the workspace as `cmdgate serve` would.
func (m *Main) cacheRoot(cf cacheFlags) (root, workspace string, err error) {
	cfg, err := loadConfig(m.configPath(*cf.config))
	if err != nil {
		return "", "", err
	}
	root = cfg.Sandbox.CachesDir
	if root == "" {
		dataFlag := *cf.data
		if dataFlag == "" && m.Getenv("CMDGATE_DATA") == "" {
			dataFlag = cfg.Data
		}
		data, err := m.dataDir(dataFlag)
		if err != nil {
			return "", "", err
		}
		root = filepath.Join(data, "caches")
	}
	ws := *cf.workspace
	if ws == "" {
		ws = m.Getenv("CMDGATE_WORKSPACE")
	}
	if ws == "" {
		ws = cfg.Workspace
	}
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return "", "", err
		}
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return "", "", err
	}
	// The gateway names the area after the workspace's real path.
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	return root, ws, nil
}

// cacheArea is one workspace's cache area.
type cacheArea struct {
	Dir   string `json:"dir"`
	Bytes int64  `json:"bytes"`
}

// cacheAreas lists the cache areas under root with their sizes; a root that does not
// exist has none.
func cacheAreas(root string) ([]cacheArea, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return []cacheArea{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read caches directory: %w", err)
	}
	out := []cacheArea{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		var size int64
		filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					size += fi.Size()
				}
			}
			return nil
		})
		out = append(out, cacheArea{Dir: dir, Bytes: size})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, nil
}
