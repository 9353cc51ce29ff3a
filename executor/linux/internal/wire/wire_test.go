package wire

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestDecoder(t *testing.T) {
	t.Parallel()
	in := `{"workspace":"/w","read_only":["/usr"],"hostname":"h","tmp_size":1}` + "\n" +
		`{"argv":["true"],"dir":"/w","env":["A=1"],"stdin":true}`
	d := NewDecoder(strings.NewReader(in))
	cfg, err := d.Config()
	if err != nil || cfg.Workspace != "/w" || cfg.Hostname != "h" || len(cfg.ReadOnly) != 1 {
		t.Fatalf("Config() = %+v, %v", cfg, err)
	}
	cmd, err := d.Command()
	if err != nil || cmd.Argv[0] != "true" || !cmd.Stdin || cmd.Env[0] != "A=1" {
		t.Fatalf("Command() = %+v, %v", cmd, err)
	}
	if _, err := d.Command(); !errors.Is(err, io.EOF) {
		t.Errorf("Command() at the end = %v, want io.EOF: no command means nothing to run", err)
	}
}

// TestDecoderStops: after the Command come the Stops, as many as the executor sends,
// then end of file; a Stop with a field it does not know is refused.
func TestDecoderStops(t *testing.T) {
	t.Parallel()
	in := `{"workspace":"/w"}` + "\n" + `{"argv":["sleep","9"],"dir":"/w"}` + "\n" + `{"signal":15}` + "\n" + `{"signal":2}` + "\n"
	d := NewDecoder(strings.NewReader(in))
	if _, err := d.Config(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Command(); err != nil {
		t.Fatal(err)
	}
	var got []int
	for {
		st, err := d.Stop()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Stop() = %v", err)
		}
		got = append(got, st.Signal)
	}
	if !reflect.DeepEqual(got, []int{15, 2}) {
		t.Errorf("Stops = %v, want [15 2]", got)
	}
	d = NewDecoder(strings.NewReader(`{"workspace":"/w"}{"dir":"/w"}{"signal":15,"pid":1}`))
	d.Config()
	d.Command()
	if _, err := d.Stop(); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("Stop() with an unknown field = %v, want a decoding error", err)
	}
}

func TestDecoderRefuses(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"unknown field": `{"workspace":"/w","privileged":true}`,
		"wrong type":    `{"workspace":["/w"]}`,
		"not JSON":      `workspace=/w`,
		"truncated":     `{"workspace":"/w"`,
		"too large":     `{"workspace":"` + strings.Repeat("a", MaxConfig) + `"}`,
	} {
		if _, err := NewDecoder(strings.NewReader(in)).Config(); err == nil {
			t.Errorf("%s: Config() accepted %.40q", name, in)
		}
	}
	d := NewDecoder(strings.NewReader(`{"workspace":"/w"}{"argv":"true"}`))
	if _, err := d.Config(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Command(); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("Command() of a wrong type = %v, want a decoding error", err)
	}
}

func TestReadReports(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	ready := Report{Event: EventReady, Landlock: 3, Started: 12345, Steps: []Step{{Name: "root", NS: 500}, {Name: "seccomp", NS: 70}}}
	for _, r := range []Report{ready, {Event: EventExit, ExitCode: 2}} {
		if err := WriteReport(&b, r); err != nil {
			t.Fatal(err)
		}
	}
	b.WriteString(`{"event":"exit","exit_co`) // a torn write: the init died
	ch := make(chan Report, 4)
	ReadReports(strings.NewReader(b.String()), ch)
	var got []Report
	for r := range ch {
		got = append(got, r)
	}
	if len(got) != 2 || !reflect.DeepEqual(got[0], ready) || got[1].ExitCode != 2 {
		t.Errorf("ReadReports = %+v, want %+v then exit 2, and nothing of the torn line", got, ready)
	}
}
