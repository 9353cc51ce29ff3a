package parse

// Document is the policy input of DESIGN.md contract 1: what Rego rules see as `input`.
// It is an API for the security teams who write rules, so fields are only ever added.
//
// Parse functions fill Request.Source, Request.ShellMode, Request.Raw, Request.Cwd,
// Request.Workspace, Commands, Features and Error; the caller (gateway or CLI) fills
// Principal and the remaining Request fields.
type Document struct {
	Principal Principal `json:"principal"`
	Request   Request   `json:"request"`
	Commands  []Command `json:"commands"`
	Features  Features  `json:"features"`
	Error     *Error    `json:"error"`
}

// Principal is who asked.
type Principal struct {
	Name string `json:"name"`
	Role string `json:"role"`
}

// Request describes the request as a whole.
type Request struct {
	ID        string `json:"id"`
	Source    string `json:"source"`     // "script" or "argv"
	ShellMode string `json:"shell_mode"` // "default" or "direct"
	Profile   string `json:"profile"`
	Raw       string `json:"raw"`
	Cwd       string `json:"cwd"`
	Workspace string `json:"workspace"`
	Task      string `json:"task"`
}

// Command is one simple command found anywhere in the script.
type Command struct {
	Index       int               `json:"index"`
	Name        string            `json:"name"`
	Path        string            `json:"path"`
	Argv        []string          `json:"argv"`
	Flags       []string          `json:"flags"`
	Operands    []Operand         `json:"operands"`
	Redirects   []Redirect        `json:"redirects"`
	Env         map[string]string `json:"env"`
	Dynamic     bool              `json:"dynamic"`
	DynamicName bool              `json:"dynamic_name"`
	Glob        bool              `json:"glob"`
	Via         []string          `json:"via"`
	Context     Context           `json:"context"`
	Pos         Pos               `json:"pos"`
}

// Operand is a non-flag word of a command, resolved lexically against the cwd.
type Operand struct {
	Text            string `json:"text"`
	Path            string `json:"path"`
	InsideWorkspace bool   `json:"inside_workspace"`
	Dynamic         bool   `json:"dynamic"`
	Glob            bool   `json:"glob"`
}

// Redirect is one redirection of a command.
type Redirect struct {
	Op              string `json:"op"`
	Fd              int    `json:"fd"`
	Target          string `json:"target"`
	Path            string `json:"path"`
	InsideWorkspace bool   `json:"inside_workspace"`
	Write           bool   `json:"write"`
	Dynamic         bool   `json:"dynamic"`
}

// Context says where in the script a command sits.
type Context struct {
	Pipeline     bool `json:"pipeline"`
	Subshell     bool `json:"subshell"`
	Substitution bool `json:"substitution"`
	Background   bool `json:"background"`
	Condition    bool `json:"condition"`
	Function     bool `json:"function"`
	// PipelineID identifies the innermost pipeline the command is part of (-1 when none);
	// commands of one pipeline share it. Stage is the command's 0-based position in it.
	PipelineID int `json:"pipeline_id"`
	Stage      int `json:"stage"`
}

// Pos is a 1-based source position.
type Pos struct {
	Line int `json:"line"`
	Col  int `json:"col"`
}

// Features summarises the shell features the script uses.
type Features struct {
	CommandSubstitution bool `json:"command_substitution"`
	ProcessSubstitution bool `json:"process_substitution"`
	Background          bool `json:"background"`
	Heredoc             bool `json:"heredoc"`
	FunctionDefinition  bool `json:"function_definition"`
	Eval                bool `json:"eval"`
	NestedShell         bool `json:"nested_shell"`
}

// Error reports why a script could not be turned into commands. A document with an
// Error has no commands and must be denied.
type Error struct {
	Message string `json:"message"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
}
