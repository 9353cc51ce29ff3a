// Package wire holds the messages between the linux executor and the sandbox init
// (package sandboxinit): the Config, then the Command, then any Stops, that the
// executor writes on the init's file descriptor 3, and the Reports the init writes back
// on descriptor 4, one JSON object per line: Ready once the sandbox is built, then Exit
// or Error.
package wire

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// File descriptors of the init process, after its standard streams.
const (
	ConfigFD = 3
	ReportFD = 4
)

// MaxConfig bounds the Config the init reads: argv and environment are bounded by the
// kernel's ARG_MAX long before this.
const MaxConfig = 16 << 20

// Config tells the init what sandbox to build. Paths are absolute, clean and free of
// symbolic links on the host (the executor resolves them).
type Config struct {
	// Workspace is bound read-write at its own path.
	Workspace string `json:"workspace"`
	// ReadOnly are host paths bound read-only at their own paths (those that exist; a
	// symbolic link is recreated as a link). Hide are paths under them replaced by an
	// empty file or directory.
	ReadOnly []string `json:"read_only"`
	Hide     []string `json:"hide,omitempty"`
	// Network says the decision granted the network. The sandbox has its own network
	// namespace either way, with its loopback up; with Network the executor has
	// attached an uplink (a tap device to the outside world, routed by a user-mode
	// network stack on the host) before it sends this Config, and the init then gives
	// every prefix of Unreachable a prohibit route, so the host's own addresses and the
	// link-local range stay out of reach, and shows Nameserver as the only resolver in
	// /etc/resolv.conf.
	Network     bool     `json:"network,omitempty"`
	Unreachable []string `json:"unreachable,omitempty"`
	Nameserver  string   `json:"nameserver,omitempty"`
	// Caches, when set, is the workspace's tool cache area, bound read-write at its own
	// path after the workspace; HOME lies in it.
	Caches string `json:"caches,omitempty"`
	// Hostname is the sandbox's host name (its own UTS namespace).
	Hostname string `json:"hostname"`
	// TmpSize bounds the private /tmp and /dev/shm, in bytes each.
	TmpSize int64 `json:"tmp_size"`
}

// DefaultHome is HOME in the sandbox when neither the tool caches nor the workspace
// hold the one the command was given: a directory of its private /tmp.
const DefaultHome = "/tmp/home"

// Command is what to run in a built sandbox: the second message on descriptor 3. End of
// file instead means nothing: the init exits (a probe, a sandbox the executor drops).
type Command struct {
	// Script, when set, runs as `SHELL -c Script` with the first of Shells found in the
	// sandbox's PATH; else Argv runs, Argv[0] looked up in that PATH when it has no slash.
	Script string   `json:"script,omitempty"`
	Shells []string `json:"shells,omitempty"`
	Argv   []string `json:"argv,omitempty"`
	// Dir is the working directory, inside the workspace.
	Dir string   `json:"dir"`
	Env []string `json:"env"`
	// Stdin gives the command the init's standard input; else it gets /dev/null.
	Stdin bool `json:"stdin,omitempty"`
	// Rlimits are applied before the command starts, soft = hard.
	Rlimits []Rlimit `json:"rlimits,omitempty"`
}

// Stop asks the init to pass Signal, SIGTERM or SIGINT, on to every process of the
// sandbox: the messages after the Command, for as long as it runs. End of file means no
// more will come. The init catches no signal itself (catching one costs every sandbox
// the runtime's signal threads), and ignores those sent to it directly.
type Stop struct {
	Signal int `json:"signal"`
}

// Rlimit is one resource limit: Resource is the RLIMIT_* number.
type Rlimit struct {
	Resource int    `json:"resource"`
	Value    uint64 `json:"value"`
}

// Events of a Report.
const (
	EventReady = "ready" // the sandbox is built with every protection on
	EventExit  = "exit"  // the command ended (ExitCode or Signal), every process with it
	EventError = "error" // the sandbox or the command could not be: Code and Message
)

// Error codes of a Report; they are the executor's codes.
const (
	CodeNotDirectory    = "NOT_DIRECTORY"
	CodeCommandNotFound = "COMMAND_NOT_FOUND"
	CodeInternal        = "INTERNAL"
)

// Report is one message from the init.
type Report struct {
	Event string `json:"event"`
	// ExitCode and Signal: how the command ended (Signal 0 when it exited).
	ExitCode int `json:"exit_code,omitempty"`
	Signal   int `json:"signal,omitempty"`
	// Code and Message: why it could not run; Message names the step that failed.
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Landlock is the Landlock ABI version the rules were enforced with.
	Landlock int `json:"landlock,omitempty"`
	// Started (Now when the init's own code began, after the Go runtime's start) and
	// Steps (how long each step of the build took, in order) come with Ready.
	Started int64  `json:"started,omitempty"`
	Steps   []Step `json:"steps,omitempty"`
}

// Step is one step of building a sandbox and how long it took, in nanoseconds.
type Step struct {
	Name string `json:"name"`
	NS   int64  `json:"ns"`
}

// Decoder reads the init's messages from the executor: the Config, the Command, the
// Stops.
type Decoder struct{ dec *json.Decoder }

// NewDecoder reads at most MaxConfig bytes from r.
func NewDecoder(r io.Reader) *Decoder {
	dec := json.NewDecoder(io.LimitReader(r, MaxConfig))
	dec.DisallowUnknownFields()
	return &Decoder{dec: dec}
}

// Config decodes the Config.
func (d *Decoder) Config() (Config, error) {
	var c Config
	if err := d.dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("read sandbox config: %w", err)
	}
	return c, nil
}

// Command decodes the Command; io.EOF means none will come.
func (d *Decoder) Command() (Command, error) { return next[Command](d, "command") }

// Stop decodes the next Stop; io.EOF means none will come.
func (d *Decoder) Stop() (Stop, error) { return next[Stop](d, "stop") }

// next decodes the next message, a T; io.EOF means none will come.
func next[T any](d *Decoder, what string) (T, error) {
	var v, zero T
	err := d.dec.Decode(&v)
	if errors.Is(err, io.EOF) {
		return zero, io.EOF
	}
	if err != nil {
		return zero, fmt.Errorf("read sandbox %s: %w", what, err)
	}
	return v, nil
}

// WriteReport writes one Report as a line.
func WriteReport(w io.Writer, r Report) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadReports sends every Report read from r to out, and closes out at end of file or
// at a line that is not a Report (a torn write: the init died).
func ReadReports(r io.Reader, out chan<- Report) {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		var rep Report
		if err := json.Unmarshal(sc.Bytes(), &rep); err != nil {
			return
		}
		out <- rep
	}
}
