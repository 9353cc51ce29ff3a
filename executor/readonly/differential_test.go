package readonly_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cmdgate/cmdgate/internal/testenv"
)

// TestDifferential compares Run's output, byte for byte, with GNU coreutils, grep -F
// and sed run for real under LC_ALL=C, on generated files (empty lines, a last line
// without '\n', duplicates, UTF-8, long lines, '\r') and random pipelines of the
// language. Left out, because the package follows the seed document there, not GNU:
//
//   - sed -n 'Nd' / 'N,Md': seed 004 prints the lines outside the range, GNU sed -n
//     prints nothing (TestSedDelete checks the seed's meaning);
//   - lines \:, \:\: and \:\:\: (none is generated): GNU nl takes them as section
//     delimiters, the seed's nl numbers every line;
//   - grep patterns that start with '-': refused (GNU would take them as options).
func TestDifferential(t *testing.T) {
	t.Parallel()
	tools := map[string]string{}
	for _, name := range []string{"nl", "head", "tail", "wc", "sort", "grep", "sed"} {
		tools[name] = testenv.NeedCommand(t, name)
	}
	if out, err := exec.Command(tools["sort"], "--version").Output(); err != nil || !bytes.Contains(out, []byte("GNU")) {
		testenv.Skip(t, "sort is not GNU coreutils: %v %.40q", err, out)
	}
	dir := realDir(t)
	a := allowlist(t, dir+"/")
	rng := rand.New(rand.NewPCG(20240607, 4))

	files := [][]byte{
		nil, []byte("a"), []byte("\n"), []byte("\n\n\n"), []byte("a\n\nb"), []byte("b\na\n\n"),
		[]byte("x\r\ny\r\n"), []byte("é\nе\ne\n"), []byte("TODO\nTODO"),
	}
	for len(files) < 24 {
		files = append(files, genFile(rng))
	}
	type testCase struct {
		command string
		gnu     [][]string
	}
	cases := make([][]testCase, len(files))
	for i, content := range files {
		name := fmt.Sprintf("f%02d.txt", i)
		writeFile(t, dir, name, string(content))
		for range 40 {
			command, gnu := genPipeline(rng, name, content)
			cases[i] = append(cases[i], testCase{command, gnu})
		}
	}
	for i, content := range files {
		t.Run(fmt.Sprintf("f%02d", i), func(t *testing.T) {
			t.Parallel()
			for _, c := range cases[i] {
				want, err := runGNU(tools, c.gnu, content)
				if err != nil {
					t.Fatalf("%q: %v", c.gnu, err)
				}
				got, err := execute(context.Background(), a, dir, c.command)
				if err != nil {
					t.Errorf("execute(%q) = %v, want GNU's output", c.command, err)
					continue
				}
				if !bytes.Equal(got, want) {
					t.Errorf("execute(%q) = %s\nGNU %q gives %s", c.command, excerpt(got, want), c.gnu, excerpt(want, got))
				}
			}
		})
	}
}

// TestSedDelete checks sed -n 'N,Md', seed 004's "output without the range".
func TestSedDelete(t *testing.T) {
	t.Parallel()
	dir := realDir(t)
	writeFile(t, dir, "f", "1\n2\n3\n4\n5")
	a := allowlist(t, dir+"/")
	tests := []struct{ command, want string }{
		{"sed -n 2d f", "1\n3\n4\n5"},
		{"sed -n 2,4d f", "1\n5"},
		{"sed -n 4,9d f", "1\n2\n3\n"},
		{"cat f | sed -n 1,5d", ""},
		{"cat f | sed -n 6d", "1\n2\n3\n4\n5"},
	}
	for _, tt := range tests {
		got, err := execute(context.Background(), a, dir, tt.command)
		if err != nil || string(got) != tt.want {
			t.Errorf("execute(%q) = %q, %v, want %q", tt.command, got, err, tt.want)
		}
	}
}

// excerpt shows got around its first difference from want.
func excerpt(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo, hi := max(i-40, 0), min(i+40, len(got))
	return fmt.Sprintf("%d bytes, first difference at %d: …%q…", len(got), i, got[lo:hi])
}

// runGNU runs the GNU pipeline on input, one process per stage.
func runGNU(tools map[string]string, stages [][]string, input []byte) ([]byte, error) {
	for _, argv := range stages {
		cmd := exec.Command(tools[argv[0]], argv[1:]...)
		cmd.Env = []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH")}
		cmd.Stdin = bytes.NewReader(input)
		out, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !(argv[0] == "grep" && errors.As(err, &ee) && ee.ExitCode() == 1) {
			return nil, err // grep exits 1 when nothing matches
		}
		input = out
	}
	return input, nil
}

// genFile generates a text file of lines of every kind.
func genFile(rng *rand.Rand) []byte {
	var lines []string
	n := rng.IntN(300)
	if rng.IntN(5) == 0 {
		n = 2000 + rng.IntN(8000)
	}
	for len(lines) < n {
		var l string
		switch rng.IntN(12) {
		case 0, 1:
			l = ""
		case 2, 3:
			if len(lines) > 0 {
				l = lines[rng.IntN(len(lines))]
			}
		case 4:
			l = words(rng, 300+rng.IntN(1500))
		case 5:
			l = utf8Words[rng.IntN(len(utf8Words))] + " " + words(rng, 5) + " " + utf8Words[rng.IntN(len(utf8Words))]
		case 6:
			l = "// TODO: " + words(rng, 3)
		default:
			l = words(rng, rng.IntN(12))
		}
		if strings.Trim(l, `\:`) == "" && l != "" {
			continue // GNU nl's section delimiters
		}
		lines = append(lines, l)
	}
	s := strings.Join(lines, "\n")
	if len(lines) > 0 && rng.IntN(3) > 0 {
		s += "\n"
	}
	return []byte(s)
}

var utf8Words = []string{"é", "déjà", "日本語", "🙂", "Ünïcödé", "ß", "中"}

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:_-+=/()[]{}'\"#*!?@%^~|\\\t\r;&<>$`"

// words is a random line of about n characters; words(rng, 3) is often a short word.
func words(rng *rand.Rand, n int) string {
	b := make([]byte, 0, n)
	for range n {
		if rng.IntN(4) == 0 {
			b = append(b, ' ')
			continue
		}
		// Mostly lower-case letters, so that patterns match now and then.
		if rng.IntN(3) > 0 {
			b = append(b, byte('a'+rng.IntN(6)))
		} else {
			b = append(b, alphabet[rng.IntN(len(alphabet))])
		}
	}
	return string(b)
}

// genPipeline generates a random pipeline of the language on file and its GNU
// equivalent (the stages' argv, fed the file's content).
func genPipeline(rng *rand.Rand, file string, content []byte) (string, [][]string) {
	var ours []string
	var gnu [][]string
	n := 1 + rng.IntN(4)
	for i := range n {
		s, argv := genStage(rng, content)
		if i == 0 && rng.IntN(2) == 0 {
			// The entry as head/tail/nl/sed … FILE.
			for argv[0] != "head" && argv[0] != "tail" && argv[0] != "nl" && argv[0] != "sed" {
				s, argv = genStage(rng, content)
			}
			s += " " + file
		} else if i == 0 {
			ours = append(ours, "cat "+file)
		}
		ours = append(ours, s)
		gnu = append(gnu, argv)
	}
	return strings.Join(ours, " | "), gnu
}

func genStage(rng *rand.Rand, content []byte) (string, []string) {
	counts := []int{0, 1, 2, 3, 5, 10, 50, 1000, 100000}
	num := func() string { return strconv.Itoa(counts[rng.IntN(len(counts))]) }
	switch rng.IntN(9) {
	case 0:
		return "nl", []string{"nl", "-ba", "-w6", "-s\t"}
	case 1, 2:
		name := "head"
		if rng.IntN(2) == 0 {
			name = "tail"
		}
		switch rng.IntN(3) {
		case 0:
			return name, []string{name}
		case 1:
			n := num()
			return name + " -n" + n, []string{name, "-n", n}
		default:
			n := num()
			return name + " -n " + n, []string{name, "-n", n}
		}
	case 3:
		if rng.IntN(2) == 0 {
			return "wc -l", []string{"wc", "-l"}
		}
		return "wc -c", []string{"wc", "-c"}
	case 4:
		if rng.IntN(2) == 0 {
			return "sort -r", []string{"sort", "-r"}
		}
		return "sort", []string{"sort"}
	case 5, 6:
		p := pattern(rng, content)
		if rng.IntN(2) == 0 {
			return "grep -n " + shellQuote(p), []string{"grep", "-F", "-n", "-e", p}
		}
		return "grep " + shellQuote(p), []string{"grep", "-F", "-e", p}
	default:
		lo := 1 + rng.IntN(20)
		script := strconv.Itoa(lo) + "p"
		if rng.IntN(2) == 0 {
			script = strconv.Itoa(lo) + "," + strconv.Itoa(lo+rng.IntN(200)) + "p"
		}
		if rng.IntN(2) == 0 {
			return "sed -n " + script, []string{"sed", "-n", script}
		}
		return "sed -n '" + script + "'", []string{"sed", "-n", script}
	}
}

// pattern picks a grep pattern, mostly a piece of a line of content.
func pattern(rng *rand.Rand, content []byte) string {
	fixed := []string{"", "TODO", "é", "日本", "no such text", " ", "a"}
	if rng.IntN(4) == 0 || len(content) == 0 {
		return fixed[rng.IntN(len(fixed))]
	}
	for range 20 {
		i := rng.IntN(len(content))
		p := string(content[i:min(len(content), i+1+rng.IntN(5))])
		if utf8.ValidString(p) && !strings.ContainsAny(p, ";&><$`\r\n") && !strings.HasPrefix(p, "-") {
			return p
		}
	}
	return "TODO"
}

// shellQuote single-quotes s.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
