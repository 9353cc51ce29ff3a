package docker

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/cmdgate/cmdgate/executor"
)

// Preparing a task (seed 001 sections 4 and 5): the scripts that clone the project into
// /workspace/project, check out a pull request's branch beside its target branch, and
// find the dependency manifests. They run in the task's container through an Executor
// like any command; the gateway runs them and records each step.

// Project is where a task's project is cloned; Scratch is its temporary directory.
const (
	Project = Workspace + "/project"
	Scratch = Workspace + "/tmp"
)

// Clone says what to clone into Project.
type Clone struct {
	// URL is the repository: http or https, without credentials in it.
	URL string
	// Ref is a branch, a tag or a full commit id; "" is the default branch.
	Ref string
	// PullRef is a pull request's head (refs/pull/N/head on GitHub,
	// refs/merge-requests/N/head on GitLab), fetched as origin/pr/N and checked out as
	// branch pr/N; PullRequest is N. Target is the branch it merges into ("" the default
	// branch), fetched so that a diff against it works.
	PullRef     string
	PullRequest int
	Target      string
	// Depth is the history fetched (1: the last commit); 0 fetches all of it.
	Depth int
	// Auth says that the script reads one line on its standard input, an HTTP
	// Authorization header for the repository's URL only (AuthHeader).
	Auth bool
}

var (
	refRE = regexp.MustCompile(`^[A-Za-z0-9._/+-]{1,200}$`)
	shaRE = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
)

// CheckRepoURL refuses a repository URL a task may not clone: anything but http and
// https (no file, ssh or ext:: transports), credentials written into it (they belong in
// the gateway's environment, never in a URL that git stores), no host, control
// characters or spaces. It returns the URL as git should be given it.
func CheckRepoURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("repo_url is empty")
	}
	if strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return nil, errors.New("repo_url holds a space or a control character")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("repo_url is not a URL: %v", err)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("repo_url must be an http or https URL, not %q", u.Scheme)
	case u.User != nil:
		return nil, errors.New("repo_url must not carry credentials: the gateway adds the token of its environment (GITHUB_PERSONAL_ACCESS_TOKEN, GITLAB_PERSONAL_ACCESS_TOKEN) for the clone only")
	case u.Host == "" || u.Hostname() == "":
		return nil, errors.New("repo_url has no host")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, errors.New("repo_url must not have a query or a fragment")
	}
	return u, nil
}

// CheckRef refuses a ref that is not a plain branch, tag or commit name.
func CheckRef(ref string) error {
	if ref == "" || (refRE.MatchString(ref) && !strings.HasPrefix(ref, "-") && !strings.Contains(ref, "..") &&
		!strings.HasSuffix(ref, ".lock") && !strings.HasSuffix(ref, "/") && !strings.Contains(ref, "//")) {
		return nil
	}
	return fmt.Errorf("%q is not a branch, tag or commit name", ref)
}

// AuthHeader is the HTTP header line that authenticates a clone with a token (user is
// "x-access-token" on GitHub, "oauth2" on GitLab).
func AuthHeader(user, token string) string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+token))
}

// Script is the shell script that clones c into Project and prints, on its last line,
// the commit checked out. The token never appears in it: with Auth, the header line is
// read from standard input into git's environment for this process only
// (GIT_CONFIG_COUNT, scoped to the repository's URL), so that nothing stores it: not
// .git/config, not the container's environment, not a credential helper.
func (c Clone) Script() (string, error) {
	u, err := CheckRepoURL(c.URL)
	if err != nil {
		return "", err
	}
	for _, r := range []string{c.Ref, c.Target} {
		if err := CheckRef(r); err != nil {
			return "", err
		}
	}
	if c.PullRef != "" && (c.PullRequest <= 0 || CheckRef(c.PullRef) != nil) {
		return "", errors.New("a pull request needs its number and head ref")
	}
	if c.Depth < 0 {
		return "", errors.New("clone depth must not be negative")
	}
	q := func(s string) string { return executor.QuotePOSIX([]string{s}) }
	depth := ""
	if c.Depth > 0 {
		depth = " --depth " + strconv.Itoa(c.Depth)
	}
	var b strings.Builder
	b.WriteString("set -eu\nexport GIT_TERMINAL_PROMPT=0 GIT_ASKPASS=/bin/true SSH_ASKPASS=/bin/true\n")
	if c.Auth {
		// Only requests to the repository's URL carry the header: a redirect elsewhere
		// does not.
		prefix := u.Scheme + "://" + u.Host + "/"
		fmt.Fprintf(&b, "IFS= read -r h\nexport GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0=%s GIT_CONFIG_VALUE_0=\"$h\" GIT_CONFIG_KEY_1=credential.helper GIT_CONFIG_VALUE_1=\nunset h\n",
			q("http."+prefix+".extraHeader"))
	} else {
		b.WriteString("export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=credential.helper GIT_CONFIG_VALUE_0=\n")
	}
	fmt.Fprintf(&b, "cd %s\n", q(Project))
	url := q(u.String())
	switch {
	case c.PullRef != "":
		branch := ""
		if c.Target != "" {
			branch = " --branch " + q(c.Target)
		}
		pr := strconv.Itoa(c.PullRequest)
		fmt.Fprintf(&b, "git clone -q%s%s -- %s .\n", depth, branch, url)
		b.WriteString("t=$(git branch --show-current)\n")
		fmt.Fprintf(&b, "git fetch -q%s origin %s\n", depth, q("+"+c.PullRef+":refs/remotes/origin/pr/"+pr))
		fmt.Fprintf(&b, "git checkout -q -b %s %s\n", q("pr/"+pr), q("refs/remotes/origin/pr/"+pr))
		if c.Depth > 0 {
			// A diff against the target needs the merge base: deepen both sides until
			// it is there, then give up on shallowness.
			fmt.Fprintf(&b, `n=0
until git merge-base HEAD "refs/remotes/origin/$t" >/dev/null 2>&1; do
  n=$((n+1))
  if [ $n -gt 6 ]; then git fetch -q --unshallow origin "+refs/heads/$t:refs/remotes/origin/$t" %[1]s; break; fi
  git fetch -q --deepen=$((%[2]d << n)) origin "+refs/heads/$t:refs/remotes/origin/$t" %[1]s
done
`, q("+"+c.PullRef+":refs/remotes/origin/pr/"+pr), c.Depth)
		}
		b.WriteString(`echo "target branch: $t (origin/$t)"` + "\n")
	case shaRE.MatchString(c.Ref):
		fmt.Fprintf(&b, "git init -q .\ngit remote add origin %s\ngit fetch -q%s origin %s\ngit checkout -q --detach FETCH_HEAD\n",
			url, depth, q(c.Ref))
	case c.Ref != "":
		fmt.Fprintf(&b, "git clone -q%s --branch %s -- %s .\n", depth, q(c.Ref), url)
	default:
		fmt.Fprintf(&b, "git clone -q%s -- %s .\n", depth, url)
	}
	b.WriteString("git rev-parse HEAD\n")
	return b.String(), nil
}

// Manifests are the files whose presence in the project's root calls for a dependency
// install (seed 001 section 5.3), in the order the installs run.
var Manifests = []string{"package.json", "yarn.lock", "requirements.txt", "environment.yml", "condaenv.yaml", "go.mod", "pom.xml", "Gemfile"}

// ManifestScript prints, one per line, the Manifests present in Project.
func ManifestScript() string {
	return "cd " + Project + " && for f in " + strings.Join(Manifests, " ") + `; do [ -f "$f" ] && echo "$f"; done; exit 0`
}

// Install is one dependency install: the manifest that calls for it and the command,
// which runs in Project.
type Install struct {
	Manifest string `json:"manifest"`
	Command  string `json:"command"`
}

// Installs are the commands seed 001 section 5.3 gives for the manifests found:
// package.json → yarn install (with a yarn.lock) or npm install, requirements.txt →
// pip install -r requirements.txt, environment.yml or condaenv.yaml → mamba env create,
// go.mod → go mod download, pom.xml → mvn dependency:resolve, Gemfile → bundle install.
func Installs(found []string) []Install {
	has := map[string]bool{}
	for _, f := range found {
		has[strings.TrimSpace(f)] = true
	}
	var out []Install
	if has["package.json"] {
		if has["yarn.lock"] {
			out = append(out, Install{"package.json", "yarn install"})
		} else {
			out = append(out, Install{"package.json", "npm install"})
		}
	}
	if has["requirements.txt"] {
		out = append(out, Install{"requirements.txt", "pip install -r requirements.txt"})
	}
	switch {
	case has["condaenv.yaml"]:
		out = append(out, Install{"condaenv.yaml", "mamba env create -f condaenv.yaml"})
	case has["environment.yml"]:
		out = append(out, Install{"environment.yml", "mamba env create -f environment.yml"})
	}
	if has["go.mod"] {
		out = append(out, Install{"go.mod", "go mod download"})
	}
	if has["pom.xml"] {
		out = append(out, Install{"pom.xml", "mvn dependency:resolve"})
	}
	if has["Gemfile"] {
		out = append(out, Install{"Gemfile", "bundle install"})
	}
	return out
}

// TaskEnv is the environment of every command in a task's container, beside the
// image's: user-level installs (pip's, whose system site is read-only and, on Debian,
// externally managed) land under HOME in the workspace, and their programs are on
// PATH.
func TaskEnv() map[string]string {
	return map[string]string{
		"HOME":                          Scratch,
		"TMPDIR":                        "/tmp",
		"PATH":                          Scratch + "/.local/bin:" + Scratch + "/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"PIP_USER":                      "1",
		"PIP_BREAK_SYSTEM_PACKAGES":     "1",
		"PIP_DISABLE_PIP_VERSION_CHECK": "1",
		"npm_config_update_notifier":    "false",
	}
}
