package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// maxWitnessLine bounds one line of a witness file (a checkpoint is about 250 bytes).
const maxWitnessLine = 64 << 10

// openWitness opens the witness for appending, creating a file (mode 0600) when there
// is none. A directory is refused; anything else that takes appends (a regular file, a
// FIFO, a character device) is the operator's choice.
func openWitness(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit witness: %w", err)
	}
	st, err := f.Stat()
	if err == nil && st.IsDir() {
		err = errors.New("is a directory")
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open audit witness %s: %w", path, err)
	}
	return f, nil
}

// closeWitness closes the witness file, if any.
func (s *Store) closeWitness() error {
	if s.witness == nil {
		return nil
	}
	err := s.witness.Close()
	s.witness = nil
	if err != nil {
		return fmt.Errorf("close audit witness: %w", err)
	}
	return nil
}

// publish writes the copies of a checkpoint the database already holds: the
// audit.checkpoint file and a line of the witness. Their errors go to
// Options.OnError: the checkpoint is in the database either way.
func (s *Store) publish(c Checkpoint) {
	if err := writeCheckpointFile(s.dir, c); err != nil {
		s.opts.OnError(err)
	}
	if s.witness == nil {
		return
	}
	line, err := json.Marshal(c)
	if err == nil {
		// One write of the whole line: with O_APPEND, lines of several processes do
		// not interleave.
		_, err = s.witness.Write(append(line, '\n'))
	}
	if err == nil {
		err = s.witness.Sync()
		if errors.Is(err, os.ErrInvalid) { // a FIFO or a device: nothing to sync
			err = nil
		}
	}
	if err != nil {
		s.opts.OnError(fmt.Errorf("append checkpoint %d to the audit witness %s: %w", c.Seq, s.opts.Witness, err))
	}
}

// ReadWitness reads the checkpoints of a witness file (Options.Witness), one JSON
// object per line. A last line without its newline is a write a crash cut short and is
// skipped; any other line that is not a checkpoint is an error.
func ReadWitness(path string) ([]Checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadWitness, err)
	}
	defer f.Close()
	return readWitness(f, path)
}

func readWitness(r io.Reader, path string) ([]Checkpoint, error) {
	br := bufio.NewReaderSize(r, 4096)
	var out []Checkpoint
	for n := 1; ; n++ {
		line, err := readLine(br)
		if err == io.EOF {
			return out, nil
		}
		if errors.Is(err, io.ErrUnexpectedEOF) { // torn last line
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w %s: line %d: %w", ErrBadWitness, path, n, err)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		c, err := parseCheckpoint(line)
		if err != nil {
			return nil, fmt.Errorf("%w %s: line %d: %w", ErrBadWitness, path, n, err)
		}
		out = append(out, c)
	}
}

// readLine reads one line with its newline cut off: io.EOF at the end, and
// io.ErrUnexpectedEOF for a last line without a newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxWitnessLine {
			return nil, fmt.Errorf("longer than %d bytes", maxWitnessLine)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(line) == 0:
			return nil, io.EOF
		case err == io.EOF:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// parseCheckpoint decodes one checkpoint as JSON (the form of audit.checkpoint).
func parseCheckpoint(data []byte) (Checkpoint, error) {
	var c Checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return Checkpoint{}, err
	}
	if c.Seq < 1 || c.Hash == "" || c.Signature == "" {
		return Checkpoint{}, errors.New("not a checkpoint (seq, hash and signature are required)")
	}
	if t, err := time.Parse(time.RFC3339Nano, c.Time); err == nil {
		c.timeNS = t.UnixNano()
	}
	return c, nil
}
