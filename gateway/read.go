package gateway

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/cmdgate/cmdgate/executor"
	"github.com/cmdgate/cmdgate/policies"
)

// PolicyFile describes one file of the bundle without its content.
type PolicyFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

// PolicyInfo is the bundle in use (GET /v1/policy): revision, source, files (path,
// SHA-256, size), the profile, the sandbox backend, the effective configuration and
// allowlist.
type PolicyInfo struct {
	Revision  string             `json:"revision"`
	Source    string             `json:"source"`
	Profile   string             `json:"profile"`
	Sandbox   string             `json:"sandbox"`
	Files     []PolicyFile       `json:"files"`
	Config    policies.Config    `json:"config"`
	Allowlist policies.Allowlist `json:"allowlist"`
}

// Policy describes the bundle in use.
func (s *Server) Policy() PolicyInfo {
	// One snapshot of the engine's state is not exported, so the revision is read
	// last: a reload in between gives files of the newer bundle with its revision, or
	// (rarely) files of the newer one with the older revision, never a mix of files.
	files := s.engine.Files()
	out := PolicyInfo{
		Source: "embedded", Profile: s.opts.Policy.Profile, Sandbox: s.sandbox,
		Files: make([]PolicyFile, 0, len(files)), Config: s.engine.Config(), Allowlist: s.engine.Allowlist(),
	}
	if s.opts.PolicyDir != "" {
		out.Source = s.opts.PolicyDir
	}
	for _, f := range files {
		h := sha256.Sum256([]byte(f.Content))
		out.Files = append(out.Files, PolicyFile{Path: f.Path, SHA256: hex.EncodeToString(h[:]), Bytes: len(f.Content)})
	}
	out.Revision = s.engine.Revision()
	return out
}

// PromptEnv describes the running configuration for the system prompt.
func (s *Server) PromptEnv() policies.PromptEnv {
	sb := s.sandboxInput
	ec := s.opts.Executor
	env := policies.PromptEnv{
		Workspace: s.ws.Root(), Backend: s.sandbox,
		Isolated: sb.Isolated, PrivateTmp: sb.PrivateTmp, Home: sb.Home,
		Caches: ec.Caches.Dir != "", Profile: s.opts.Policy.Profile,
	}
	env.Tools = s.promptTools
	if env.Caches {
		env.Home = ec.Caches.Home()
	}
	env.DefaultTimeout, _ = ec.TimeoutMS(nil)
	env.MaxTimeout = ec.MaxTimeout
	if env.MaxTimeout == 0 {
		env.MaxTimeout = executor.DefaultMaxTimeout
	}
	switch {
	case s.sandbox == SandboxProcess:
		env.Network = "not isolated: commands reach the network as the gateway's host does"
	case s.sandbox == SandboxLinux && (s.sandboxStatus.Linux == nil || s.sandboxStatus.Linux.Uplink == ""):
		env.Network = "none: no command gets the network, not even one the policy grants it (this gateway has no uplink for the sandbox)"
	case s.sandbox == SandboxLinux && s.opts.PolicyDir == "":
		env.Network = "none, except for dependency installs and downloads run as commands of their own (for example `npm ci`, `pip install -r requirements.txt`, `go mod download`, `cargo fetch`, `bundle install`): the policy grants those the network"
	case s.sandbox == SandboxLinux:
		env.Network = "none, unless the policy grants it to a command"
	}
	return env
}
