package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cmdgate/cmdgate/gateway"
)

// ExecuteDescription is the execute tool's description (seed 004), without the files
// it may read, which executeTool adds from the running configuration.
const ExecuteDescription = "Read allowlisted files with a small read-only pipeline language, evaluated in memory: no shell and no process ever run. " +
	"Syntax: STAGE (\"|\" STAGE)*, at most 8 stages of at most 8 words; single quotes are literal, double quotes and backslash escape one character; " +
	"the characters ; & > < $ ` and newlines are forbidden anywhere. " +
	"The pipeline starts by reading one file: `cat FILE`, or `head -n N FILE`, `tail -n N FILE`, `nl FILE`, `sed -n SCRIPT FILE` (read as `cat FILE | …`). " +
	"Stages: nl (number lines, %6d<TAB>), head [-n N] and tail [-n N] (default 10), wc -l or wc -c, sort or sort -r (bytewise), " +
	"grep PATTERN or grep -n PATTERN (a fixed string, not a regex), sed -n with Np, Nd, N,Mp or N,Md only. " +
	"The output is paged: start is a byte offset, size at most 4096 bytes; while truncated is true, call again with start = next_start. " +
	"A refused read is a result: exit_code 2 (outside the language: parse_error, forbidden, mvp_requires, mvp_unsupported_stage, invalid_path), " +
	"3 (file_not_allowed, or denied by the security policy), 4 (file_too_large: over 1 MiB), 1 (io_error, output_too_large); error_name names it."

// ExecuteSchema is the execute tool's input schema.
const ExecuteSchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The pipeline, e.g. cat docs/guide.md | grep -n TODO | head -n 20"},
    "start": {"type": "number", "default": 0, "description": "Byte offset of the page (default: 0; next_start of the previous page)."},
    "size": {"type": "number", "default": 4096, "description": "Bytes of the page, at most 4096 (default: 4096)."}
  },
  "required": ["command"]
}`

type executeToolInput struct {
	Command string   `json:"command"`
	Start   *float64 `json:"start"`
	Size    *float64 `json:"size"`
}

// executeTool is the execute tool's definition for g: its description names the files
// and directories g's read-only language may read.
func executeTool(g *gateway.Server) *sdk.Tool {
	desc := ExecuteDescription
	if allow := g.Options().Readonly.Allow; len(allow) > 0 {
		desc += " Files it may read (relative paths are the workspace's, " + g.Workspace() + "; a directory ending in / allows the files beneath it, secret-looking names such as .env or *.pem excepted): " +
			strings.Join(allow, ", ") + "."
	}
	return &sdk.Tool{Name: "execute", Description: desc, InputSchema: rawSchema(ExecuteSchema)}
}

// addExecuteTools adds execute when g's read-only language is on.
func (t *tools) addExecuteTools(s *sdk.Server) {
	if t.g.Features().Readonly {
		sdk.AddTool(s, executeTool(t.g), recovered(t.g, t.execute))
	}
}

func (t *tools) execute(ctx context.Context, req *sdk.CallToolRequest, in executeToolInput) (*sdk.CallToolResult, *gateway.ExecuteResult, error) {
	caller, err := t.caller(req, "execute")
	if err != nil {
		return nil, nil, err
	}
	start, size, err := page(in.Start, in.Size)
	if err != nil {
		return nil, nil, err
	}
	if strings.IndexByte(in.Command, 0) >= 0 {
		return nil, nil, errors.New("INVALID_ARGUMENT: command contains a NUL character")
	}
	res, err := t.g.Execute(ctx, caller, &gateway.ExecuteRequest{Command: in.Command, Start: start, Size: size})
	if err != nil {
		return nil, nil, errors.New(describe(err))
	}
	return nil, res, nil
}

// readerInstructions are the instructions of the server a reader token gets: it offers
// the read-only language and nothing that runs.
func readerInstructions(g *gateway.Server) string {
	var b strings.Builder
	b.WriteString("You are connected to cmdgate with a read-only token: you can read allowlisted files with the `execute` tool " +
		"(a small pipeline language evaluated in memory: cat, nl, head, tail, wc, sort, grep, sed -n) and nothing else: no command runs.")
	if g.Features().Outputs {
		b.WriteString(" `read_output` pages through the rest of an output that was cut.")
	}
	fmt.Fprintf(&b, " The workspace is %s.", g.Workspace())
	return b.String()
}
