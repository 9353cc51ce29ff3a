package policies

import (
	"strings"
)

// Allowlist is the effective allowlist by category, in display order.
type Allowlist []Category

// Category is one group of allowed commands.
type Category struct {
	ID       string   `json:"id"`
	Title    string   `json:"title"`
	Commands []string `json:"commands"`
}

func allowlistFrom(eff map[string]any) Allowlist {
	cats, _ := eff["categories"].([]any)
	out := make(Allowlist, 0, len(cats))
	for _, c := range cats {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		cat := Category{}
		cat.ID, _ = m["id"].(string)
		cat.Title, _ = m["title"].(string)
		cmds, _ := m["commands"].([]any)
		for _, x := range cmds {
			if s, ok := x.(string); ok {
				cat.Commands = append(cat.Commands, s)
			}
		}
		out = append(out, cat)
	}
	return out
}

// String renders the list the way seed 001 6.5.2 shows it: one "Title: a, b, c" line
// per category.
func (a Allowlist) String() string {
	var b strings.Builder
	for _, c := range a {
		b.WriteString(c.Title)
		b.WriteString(": ")
		b.WriteString(strings.Join(c.Commands, ", "))
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// promptTemplate is the system-prompt text of seed 001 6.5.1; {allowed_commands_list}
// is replaced by the effective allowlist (6.5.2).
const promptTemplate = "## Command Execution Feature\n" +
	"\n" +
	"You can execute commands in an isolated Docker execution environment with project source code through the `command-executor` MCP server.\n" +
	"\n" +
	"**Execution Environment Information:**\n" +
	"- Working directory: `/workspace/project/` (where project files are cloned)\n" +
	"- Dependencies: Automatically installed\n" +
	"\n" +
	"### Available Commands\n" +
	"\n" +
	"The following commands are available for execution:\n" +
	"\n" +
	"{allowed_commands_list}\n" +
	"\n" +
	"### Key Features\n" +
	"\n" +
	"**Test Execution:**\n" +
	"- Run the project's test suite to verify code changes work correctly\n" +
	"- Examples: `npm test`, `pytest`, `go test ./...`, `cargo test`\n" +
	"\n" +
	"**Code Search:**\n" +
	"- Use `grep` command to recursively search for code patterns across the entire project\n" +
	"- Example: `grep -rn \"function_name\" src/` to find function usage locations\n" +
	"- Example: `grep -r \"import.*module\" --include=\"*.py\"` to search Python import statements\n" +
	"\n" +
	"**Build/Compile:**\n" +
	"- Execute project build commands to check for compilation errors\n" +
	"- Examples: `npm run build`, `make`, `go build`, `cargo build`\n" +
	"\n" +
	"**Linter/Formatter:**\n" +
	"- Perform code quality checks and format verification\n" +
	"- Examples: `eslint .`, `black --check .`, `flake8`\n" +
	"\n" +
	"**File Operations:**\n" +
	"- Use `ls`, `cat`, `head`, `tail`, `find`, `tree` to check file structure and code contents\n" +
	"- Example: `find . -name \"*.ts\" -type f` to search for TypeScript files\n" +
	"- Example: `tree -L 2` to display directory structure\n" +
	"\n" +
	"### Usage Notes\n" +
	"\n" +
	"- Project source code is cloned to `/workspace/project/` in the execution environment\n" +
	"- Dependencies are automatically installed\n" +
	"- Check command execution results (stdout/stderr) and determine the next action\n" +
	"- Long-running commands may timeout\n" +
	"\n" +
	"### Recommended Usage\n" +
	"\n" +
	"1. **Before code changes**: Search the codebase with `grep` to understand the impact scope of changes\n" +
	"2. **After code changes**: Run tests to verify the correctness of changes\n" +
	"3. **Before creating pull request**: Run linters to verify code quality\n"

// Prompt returns the system-prompt text of seed 001 6.5 with the effective allowed
// commands by category in place of {allowed_commands_list}.
func (e *Engine) Prompt() string {
	return promptText(e.Allowlist())
}

func promptText(a Allowlist) string {
	return strings.Replace(promptTemplate, "{allowed_commands_list}", a.String(), 1)
}
