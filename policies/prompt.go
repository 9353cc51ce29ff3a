package policies

import (
	"fmt"
	"strings"
	"time"
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

// String renders the list the way the prompt's format shows it: one "Title: a, b, c" line
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

// dockerTemplate is the system-prompt text of the per-task Docker environments (a
// container per task, the project cloned into /workspace/project/, its dependencies
// installed): true only of the docker backend. {allowed_commands_list} is replaced by
// the effective allowlist.
const dockerTemplate = "## Command Execution Feature\n" +
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
	keyFeatures +
	"\n" +
	"### Usage Notes\n" +
	"\n" +
	"- Project source code is cloned to `/workspace/project/` in the execution environment\n" +
	"- Dependencies are automatically installed\n" +
	"- Check command execution results (stdout/stderr) and determine the next action\n" +
	"- Long-running commands may timeout\n" +
	recommended

// PromptEnv is what a system prompt must say of the environment commands run in: the
// facts of the running configuration, never a template's. The zero value describes
// nothing in force (the offline CLI without a configuration): the prompt then says so.
type PromptEnv struct {
	// Workspace is the directory commands run in (or below).
	Workspace string
	// Backend is the executor backend: "linux", "process", "docker" or another name.
	Backend string
	// Isolated, PrivateTmp and Home are the sandbox's guarantees (parse.Sandbox).
	Isolated   bool
	PrivateTmp bool
	Home       string
	// Caches is true when the tool caches and HOME are kept between commands.
	Caches bool
	// Network says when commands get the network, in a sentence or two; "" says
	// nothing is known.
	Network string
	// Tools names the ways the model reaches cmdgate, each "name: what it does".
	Tools []string
	// Profile is the rule profile in force (strict or sandboxed); "" says nothing.
	Profile string
	// DefaultTimeout and MaxTimeout are a command's default and largest timeout.
	DefaultTimeout, MaxTimeout time.Duration
}

// Prompt returns the system-prompt text for an environment the caller does not
// describe: PromptFor(PromptEnv{}).
func (e *Engine) Prompt() string { return e.PromptFor(PromptEnv{}) }

// PromptFor returns the system prompt for env: what is in force (workspace, sandbox,
// network, tools, timeouts), then the effective allowed commands by category, one
// "Title: a, b, c" line each, then the usage advice that holds there. The docker
// backend gets the per-task container text.
func (e *Engine) PromptFor(env PromptEnv) string {
	return promptText(e.Allowlist(), env)
}

func promptText(a Allowlist, env PromptEnv) string {
	if env.Backend == "docker" {
		return strings.Replace(dockerTemplate, "{allowed_commands_list}", a.String(), 1)
	}
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("## Command Execution Feature")
	line("")
	if len(env.Tools) > 0 {
		line("You can execute shell commands in the project's workspace through cmdgate, a command gateway: every command is checked by a security policy before it runs, and every decision is recorded in an audit log. You reach it through:")
		for _, t := range env.Tools {
			line("- %s", t)
		}
	} else {
		line("You can execute shell commands in the project's workspace through cmdgate, a command gateway: every command is checked by a security policy before it runs, and every decision is recorded in an audit log.")
	}
	line("")
	line("**Execution Environment Information:**")
	if env.Workspace != "" {
		line("- Working directory: `%s` (the project's files; commands run there or in a directory below it)", env.Workspace)
	}
	switch {
	case env.Backend == "linux" && env.Isolated:
		line("- Sandbox: every command runs in a fresh Linux sandbox: the workspace, /tmp and the home directory below are writable, the system directories read-only, and the host's home directories and other files are not there; no process outside the sandbox can be seen or signalled")
	case env.Backend == "process":
		line("- Sandbox: none: commands run as ordinary processes of the host, and the security policy is the only boundary. Stay inside the workspace")
	case env.Backend != "":
		line("- Sandbox: the %s backend", env.Backend)
	default:
		line("- Sandbox: not known here (ask the gateway that runs the commands for its prompt)")
	}
	if env.PrivateTmp {
		line("- Temporary files: `/tmp` is private to each command and emptied after it; keep what must last in the workspace")
	}
	if env.Home != "" {
		if env.Caches {
			line("- Home directory: `%s`, kept between commands together with the tool caches (Go, npm, yarn, pip, cargo, Maven, Gradle), so a second build or install is fast", env.Home)
		} else {
			line("- Home directory: `%s`, empty at the start of every command", env.Home)
		}
	}
	if env.Network != "" {
		line("- Network: %s", env.Network)
	}
	switch env.Profile {
	case ProfileSandboxed:
		line("- Policy: the sandboxed profile: the project's own scripts and wrappers (`./gradlew`, `./scripts/test.sh`), the language runners and local git operations (add, commit, branches, stash) are allowed, since the sandbox contains them; pushing and publishing ask a human")
	case ProfileStrict:
		line("- Policy: the strict profile: only the commands listed below, in the forms the policy can check")
	}
	line("- Dependencies: not installed for you; install them with the project's own tools")
	if env.MaxTimeout > 0 {
		line("- Time limit: %s per command unless you ask for more, at most %s", duration(env.DefaultTimeout), duration(env.MaxTimeout))
	}
	line("")
	line("### Available Commands")
	line("")
	line("The following commands are available for execution:")
	line("")
	line("%s", a.String())
	line("")
	line("Other commands, and uses of these that write outside the workspace, read secrets, or run code the policy cannot see, are refused with the reasons: change course rather than work around them.")
	b.WriteString(keyFeatures)
	line("")
	line("### Usage Notes")
	line("")
	if env.Workspace != "" {
		line("- The project's source code is in `%s`", env.Workspace)
	}
	if strings.Contains(env.Network, "install") {
		line("- Run dependency installs (`npm ci`, `pip install -r requirements.txt`, `go mod download`, `cargo fetch`) as commands of their own: only then do they get the network; build and test afterwards, offline")
	}
	line("- Check command execution results (stdout/stderr) and determine the next action")
	line("- Long-running commands may time out")
	b.WriteString(recommended)
	return b.String()
}

// duration writes d the way people do: 30s, 2m, 1h30m.
func duration(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// keyFeatures and recommended are the parts of the prompt that hold everywhere.
const keyFeatures = "\n" +
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
	"- Example: `tree -L 2` to display directory structure\n"

const recommended = "\n" +
	"### Recommended Usage\n" +
	"\n" +
	"1. **Before code changes**: Search the codebase with `grep` to understand the impact scope of changes\n" +
	"2. **After code changes**: Run tests to verify the correctness of changes\n" +
	"3. **Before creating pull request**: Run linters to verify code quality\n"
