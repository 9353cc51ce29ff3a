package mcp

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/gateway"
)

// OutputPromptTools is the system prompt's line for read_output, when outputs are kept.
var OutputPromptTools = []string{
	"`read_output` (cmdgate's MCP server): page through the whole output of a command whose result was cut (its `output_id`), 4096 bytes at a time from a byte offset",
}

// ReadonlyPromptTools is the system prompt's line for execute, when files are on the
// read-only allowlist.
var ReadonlyPromptTools = []string{
	"`execute` (cmdgate's MCP server): read an allowlisted file through a small read-only pipeline language that never runs a process (`cat FILE | grep -n TODO | head -n 50`; stages cat, nl, head, tail, wc, sort, grep, sed -n), paged by `start` and `size`",
}

// ReadOutputDescription and ReadOutputSchema define read_output.
const (
	ReadOutputDescription = "Read more of a command's output that was cut in its result (stdout_truncated or stderr_truncated, with an output_id): returns up to size bytes (at most 4096) of the stream from byte offset start, as stdout_text, with total_bytes, truncated and next_start to continue from. Outputs are kept for a limited time and only for their owner."
	ReadOutputSchema      = `{
  "type": "object",
  "properties": {
    "output_id": {"type": "string", "description": "The output_id of the cut result."},
    "stream": {"type": "string", "enum": ["stdout", "stderr"], "default": "stdout", "description": "Which stream to read (default: stdout)."},
    "start": {"type": "number", "default": 0, "description": "Byte offset to read from (default: 0; next_start of the previous page)."},
    "size": {"type": "number", "default": 4096, "description": "Bytes to read, at most 4096 (default: 4096)."}
  },
  "required": ["output_id"]
}`
)

type readOutputInput struct {
	OutputID string   `json:"output_id"`
	Stream   string   `json:"stream"`
	Start    *float64 `json:"start"`
	Size     *float64 `json:"size"`
}

// addOutputTools adds read_output when g keeps outputs.
func (t *tools) addOutputTools(s *sdk.Server) {
	if !t.g.Features().Outputs {
		return
	}
	sdk.AddTool(s, &sdk.Tool{Name: "read_output", Description: ReadOutputDescription, InputSchema: rawSchema(ReadOutputSchema)}, recovered(t.g, t.readOutput))
}

func (t *tools) readOutput(ctx context.Context, req *sdk.CallToolRequest, in readOutputInput) (*sdk.CallToolResult, *gateway.OutputPage, error) {
	caller, err := t.caller(req, "read_output")
	if err != nil {
		return nil, nil, err
	}
	start, size, err := page(in.Start, in.Size)
	if err != nil {
		return nil, nil, err
	}
	p, err := t.g.ReadOutput(ctx, caller, in.OutputID, in.Stream, start, size)
	if err != nil {
		return nil, nil, errors.New(describe(err))
	}
	return nil, p, nil
}

// page reads the start and size arguments of a paged tool: a byte offset from 0 (0
// when absent), and a size from 1 cut to executor.MaxPageSize (0 when absent: the
// maximum).
func page(startArg, sizeArg *float64) (start int64, size int, err error) {
	if startArg != nil && *startArg != 0 {
		if start, err = whole("start", startArg); err != nil {
			return 0, 0, err
		}
	}
	n, err := whole("size", sizeArg)
	if err != nil {
		return 0, 0, err
	}
	return start, int(min(n, executor.MaxPageSize)), nil
}

// moreHint tells a model how to read what a result left out: "" when nothing was cut
// or nothing was kept.
func moreHint(r *executor.Result, keep executor.Keep) string {
	if r.OutputID == "" {
		return ""
	}
	var cut []string
	if r.StdoutTruncated {
		cut = append(cut, fmt.Sprintf("stdout (%d of %d characters shown)", len([]rune(r.Stdout)), r.StdoutChars))
	}
	if r.StderrTruncated {
		cut = append(cut, fmt.Sprintf("stderr (%d of %d characters shown)", len([]rune(r.Stderr)), r.StderrChars))
	}
	start := "0"
	if keep == "" || keep == executor.KeepHead {
		start = "the byte length of what is shown"
	}
	return fmt.Sprintf("output cut: %v; call read_output with output_id %q, stream, and start (%s), and continue from next_start while truncated is true",
		cut, r.OutputID, start)
}
