// Package policies loads, validates, tests and evaluates the Rego policy that decides
// every command cmdgate sees (contract 2 of docs/architecture.md), and embeds the default bundle.
//
// An Engine is built once from a bundle (the embedded default, or a directory: New
// with WithDir) and a Config (the `policy:` section of the configuration file: the
// allowlist settings of the allowlist configuration and the answers for unknown and dynamic
// commands). New parses and compiles the bundle (a *BundleError names file and line for
// every problem), computes the documents that depend on data only (the effective
// allowlist and the name index, data.cmdgate.effective and data.cmdgate.index) and
// prepares the query data.cmdgate.decision. Decide then evaluates it per request on a
// parse.Document, converted to the Rego input value without a JSON round trip
// (InputValue), with the routing of its commands to the bundle's per-command checks
// ("routed", each command looked up once in the bundle's routing table: see routes.go)
// when the bundle computes one.
//
// Decisions fail closed: an evaluation error, no result, a malformed result or an
// unknown action gives a deny whose reason says why (rules engine.error,
// engine.undefined, engine.malformed), and the error is returned too. The action is
// raised to the strongest effect among the reasons (deny over ask over allow).
//
// Every decision carries the engine's Revision: a sha256 over the bundle's files
// (paths and contents, sorted) and the effective configuration, so it names exactly
// the rules and lists that decided. Reload swaps in another bundle or configuration
// atomically after validating it; on error the engine keeps the one it had. Snapshot
// returns the revision, files, configuration, allowlist and prompt of one load (the
// getters each read the current load). An Engine is safe for concurrent use.
//
// RunTests runs a bundle's Rego tests with OPA's tester (what `cmdgate policy test`
// prints); Prompt renders the system-prompt text of the agent-facing prompt with the effective
// allowed commands. policies/README.md documents the bundle for the security teams who
// edit it: the input, the output, the data keys, every rule, and how to extend it.
package policies
