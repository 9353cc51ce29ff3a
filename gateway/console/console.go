// Package console is cmdgate's web console for approvers and auditors, served at /ui/
// from assets embedded in the binary (plain HTML, CSS and JavaScript: no CDN, no build
// step). The page holds no secret of its own: the person signs in by pasting a token,
// which stays in the tab's sessionStorage and travels only in the Authorization header
// of the console's calls to the HTTP API (never a cookie, never a URL), so there is no
// cross-site request to forge. Every command, output and name is shown as text
// (textContent), never parsed as HTML.
//
// The console reads GET /v1/whoami for the role, /v1/approvals/stream (read with
// fetch, since EventSource cannot send the header) for the live queue,
// /v1/approvals, /v1/grants, /v1/audit and /v1/audit/verify, and decides with POST
// /v1/approvals/{id}/approve|deny and DELETE /v1/grants/{id}. An auditor's view has no
// decision or revocation buttons; an agent's token is refused with a message.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed assets
var assets embed.FS

// Path is where the console is served.
const Path = "/ui/"

// CSP is the console's Content-Security-Policy: its own scripts, styles and API, and
// nothing else; no inline script, no framing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console's files under Path with strict security headers.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix(strings.TrimSuffix(Path, "/"), http.FileServer(http.FS(sub)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		files.ServeHTTP(w, r)
	})
}
