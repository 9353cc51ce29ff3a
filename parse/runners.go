package parse

// Package runners: tools that run a command or a script for the project, given as the
// value of an option or as the words after a subcommand. What they run is judged like
// the command of any other wrapper (`npx -c SCRIPT` as `sh -c SCRIPT`); a package a
// runner fetches and runs by name (`bunx cowsay`, `uvx ruff check .`) is judged as a
// command of that name.

// npmExecSpec are the options of npx and of `npm exec`: -c/--call run SCRIPT in a shell.
var npmExecSpec = &optSpec{arg: "cpw", long: []string{
	"call=", "package=", "yes", "no", "quiet", "workspace=", "workspaces",
	"include-workspace-root", "prefix=", "loglevel=", "registry=", "cache=", "offline",
	"prefer-offline", "prefer-online", "silent", "verbose", "ignore-scripts"}}

// npx [options] -c SCRIPT | npx [options] PKG [args]
func wrapNpx(c *wrapCall) { npmExec(c, c.args) }

// npm exec|x [options] -c SCRIPT | npm exec [options] -- PKG [args]; other npm
// subcommands run nothing given on the command line.
func wrapNpm(c *wrapCall) {
	if len(c.args) == 0 {
		return
	}
	switch c.args[0].val {
	case "exec", "x":
		npmExec(c, c.args[1:])
	}
}

func npmExec(c *wrapCall, args []field) {
	opts, rest := npmExecSpec.scan(args)
	if s, ok := optValue(opts, "-c", "--call"); ok {
		c.w.doc.Features.NestedShell = true
		c.script(s, inner{})
		return
	}
	c.run(rest, inner{})
}

// pnpmSpec are pnpm's options before exec and dlx run their command.
var pnpmSpec = &optSpec{arg: "Cp", long: []string{
	"shell-mode", "parallel", "recursive", "resume-from=", "report-summary", "filter=",
	"package=", "silent", "dir=", "workspace-root", "reporter=", "stream"}}

// pnpm exec [options] CMD [args] | pnpm exec -c|--shell-mode CMD… (run through a shell) |
// pnpm dlx [--package PKG] CMD [args]
func wrapPnpm(c *wrapCall) {
	if len(c.args) == 0 {
		return
	}
	switch c.args[0].val {
	case "exec", "dlx":
		opts, rest := pnpmSpec.scan(c.args[1:])
		for _, o := range opts {
			if o.name == "-c" || o.name == "--shell-mode" {
				if len(rest) > 0 {
					c.w.doc.Features.NestedShell = true
					c.script(joinFields(rest), inner{})
				}
				return
			}
		}
		c.run(rest, inner{})
	}
}

// yarnSpec are the options of yarn dlx and exec.
var yarnSpec = &optSpec{arg: "p", long: []string{"package=", "quiet"}}

// yarn dlx [-p PKG] CMD [args] | yarn exec CMD… (Yarn runs it through its shell)
func wrapYarn(c *wrapCall) {
	if len(c.args) == 0 {
		return
	}
	switch c.args[0].val {
	case "dlx":
		_, rest := yarnSpec.scan(c.args[1:])
		c.run(rest, inner{})
	case "exec":
		if rest := c.args[1:]; len(rest) > 0 {
			c.w.doc.Features.NestedShell = true
			c.script(joinFields(rest), inner{})
		}
	}
}

// uvxSpec are the options of uvx (uv tool run) before the tool's name.
var uvxSpec = &optSpec{long: []string{
	"from=", "with=", "with-editable=", "with-requirements=", "python=", "isolated",
	"no-cache", "offline", "quiet", "verbose", "index-url=", "extra-index-url=", "refresh",
	"reinstall", "upgrade", "python-preference="}, arg: "pw"}

// uvx [options] TOOL [args] | uv tool run [options] TOOL [args]
func wrapUvx(c *wrapCall) {
	_, rest := uvxSpec.scan(c.args)
	c.run(rest, inner{})
}

func wrapUv(c *wrapCall) {
	if len(c.args) >= 2 && c.args[0].val == "tool" && c.args[1].val == "run" {
		wrapUvx(&wrapCall{w: c.w, name: c.name, args: c.args[2:], env: c.env, envDyn: c.envDyn, redirs: c.redirs, sc: c.sc, pos: c.pos})
	}
}

// pipxRunSpec are the options of pipx run before the application's name.
var pipxRunSpec = &optSpec{long: []string{"spec=", "python=", "pip-args=", "index-url=", "no-cache", "quiet", "verbose", "path", "pypackages", "editable"}}

// pipx run [options] APP [args]
func wrapPipx(c *wrapCall) {
	if len(c.args) > 0 && c.args[0].val == "run" {
		_, rest := pipxRunSpec.scan(c.args[1:])
		c.run(rest, inner{})
	}
}

// bunx [options] PKG [args]
var bunxSpec = &optSpec{long: []string{"bun", "silent"}, arg: "p"}

func wrapBunx(c *wrapCall) {
	_, rest := bunxSpec.scan(c.args)
	c.run(rest, inner{})
}
