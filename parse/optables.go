package parse

// The option tables of the tools whose options the policy judges, by command base name.
// Each was written from the tool's own usage text (`tar --help`, `git clone -h`,
// ssh(1)); options_test.go reads every spelling of their exec-capable options, and
// policies/proof_linux_test.go runs a sample of them in the real tools. A name not here
// gets the generic reading (see optionsOf).
var optTables = map[string]*optTable{}

func init() {
	tar := table(false,
		"-A --catenate --concatenate", "-c --create", "--delete", "-d --diff --compare",
		"-r --append", "--test-label", "-t --list", "-u --update", "-x --extract --get",
		"--check-device", "-g --listed-incremental=", "-G --incremental",
		"--hole-detection=", "--ignore-failed-read", "--level=", "--no-check-device",
		"--no-seek", "-n --seek", "--occurrence?", "--sparse-version=", "-S --sparse",
		"--add-file=", "-C --directory=", "--exclude=", "--exclude-backups",
		"--exclude-caches", "--exclude-caches-all", "--exclude-caches-under",
		"--exclude-ignore=", "--exclude-ignore-recursive=", "--exclude-tag=",
		"--exclude-tag-all=", "--exclude-tag-under=", "--exclude-vcs",
		"--exclude-vcs-ignores", "--no-null", "--no-recursion", "--no-unquote",
		"--no-verbatim-files-from", "--null", "--verbatim-files-from", "--recursion",
		"-T --files-from=", "--unquote", "-X --exclude-from=", "--anchored", "--ignore-case",
		"--no-anchored", "--no-ignore-case", "--no-wildcards", "--no-wildcards-match-slash",
		"--wildcards", "--wildcards-match-slash", "--keep-directory-symlink",
		"--keep-newer-files", "-k --keep-old-files", "--no-overwrite-dir",
		"--one-top-level?", "--overwrite", "--overwrite-dir", "--recursive-unlink",
		"--remove-files", "--skip-old-files", "-U --unlink-first", "-W --verify",
		"--ignore-command-error", "--no-ignore-command-error", "-O --to-stdout",
		"--to-command=", "--atime-preserve?", "--clamp-mtime", "--delay-directory-restore",
		"--group=", "--group-map=", "--mode=", "--mtime=", "-m --touch",
		"--no-delay-directory-restore", "--no-same-owner", "--no-same-permissions",
		"--numeric-owner", "--owner=", "--owner-map=",
		"-p --preserve-permissions --same-permissions", "--same-owner", "--sort=",
		"-s --preserve-order --same-order", "--acls", "--no-acls", "--no-selinux",
		"--no-xattrs", "--selinux", "--xattrs", "--xattrs-exclude=", "--xattrs-include=",
		"--force-local", "-f --file=", "-F --info-script --new-volume-script=",
		"-L --tape-length=", "-M --multi-volume", "--rmt-command=", "--rsh-command=",
		"--volno-file=", "-b --blocking-factor=", "-B --read-full-records",
		"-i --ignore-zeros", "--record-size=", "-H --format=",
		"--old-archive --portability", "--pax-option=", "--posix", "-V --label=",
		"-a --auto-compress", "-I --use-compress-program=", "-j --bzip2", "-J --xz",
		"--lzip", "--lzma", "--lzop", "--no-auto-compress", "--zstd",
		"-z --gzip --gunzip --ungzip", "-Z --compress --uncompress", "--backup?",
		"--hard-dereference", "-h --dereference", "-K --starting-file=", "--newer-mtime=",
		"-N --newer --after-date=", "--one-file-system", "-P --absolute-names",
		"--suffix=", "--strip-components=", "--transform --xform=", "--checkpoint?",
		"--checkpoint-action=", "--full-time", "--index-file=", "-l --check-links",
		"--no-quote-chars=", "--quote-chars=", "--quoting-style=", "-R --block-number",
		"--show-defaults", "--show-omitted-dirs", "--show-snapshot-field-ranges",
		"--show-transformed-names --show-stored-names", "--totals?", "--utc",
		"-v --verbose", "--warning=", "-w --interactive --confirmation", "-o", "--help",
		"--restrict", "--usage", "--version", "-?")
	tar.oldStyle = true
	optTables["tar"], optTables["gtar"], optTables["bsdtar"] = tar, tar, tar

	optTables["sort"] = table(false,
		"-b --ignore-leading-blanks", "-d --dictionary-order", "-f --ignore-case",
		"-g --general-numeric-sort", "-i --ignore-nonprinting", "-M --month-sort",
		"-h --human-numeric-sort", "-n --numeric-sort", "-R --random-sort",
		"--random-source=", "-r --reverse", "--sort=", "-V --version-sort",
		"--batch-size=", "-c --check?", "-C", "--compress-program=", "--debug",
		"--files0-from=", "-k --key=", "-m --merge", "-o --output=", "-s --stable",
		"-S --buffer-size=", "-t --field-separator=", "-T --temporary-directory=",
		"--parallel=", "-u --unique", "-z --zero-terminated", "--help", "--version")

	sed := table(false,
		"-n --quiet --silent", "--debug", "-e --expression=", "-f --file=",
		"--follow-symlinks", "-i --in-place?", "-l --line-length=", "--posix",
		"-E -r --regexp-extended", "-s --separate", "--sandbox", "-u --unbuffered",
		"-z --null-data", "--help", "--version")
	optTables["sed"], optTables["gsed"] = sed, sed

	// awk: gawk's options (mawk's -W takes a value too); options end at the program.
	awk := table(false,
		"-f --file=", "-F --field-separator=", "-v --assign=", "-b --characters-as-bytes",
		"-c --traditional", "-C --copyright", "-d --dump-variables?", "-D --debug?",
		"-e --source=", "-E --exec=", "-g --gen-pot", "-h --help", "-i --include=",
		"-I --trace", "-k --csv", "-l --load=", "-L --lint?", "-M --bignum",
		"-N --use-lc-numeric", "-n --non-decimal-data", "-o --pretty-print?",
		"-O --optimize", "-p --profile?", "-P --posix", "-r --re-interval",
		"-s --no-optimize", "-S --sandbox", "-t --lint-old", "-V --version", "-W=")
	awk.stop = true
	for _, n := range []string{"awk", "gawk", "mawk", "nawk", "busybox-awk"} {
		optTables[n] = awk
	}

	xargs := table(false,
		"-0 --null", "-a --arg-file=", "-d --delimiter=", "-E=", "-e --eof?", "-I=",
		"-i --replace?", "-L --max-lines=", "-l?", "-n --max-args=", "-o --open-tty",
		"-P --max-procs=", "-p --interactive", "--process-slot-var=",
		"-r --no-run-if-empty", "-s --max-chars=", "--show-limits", "-t --verbose",
		"-x --exit", "--help", "--version")
	xargs.stop = true
	optTables["xargs"], optTables["gxargs"] = xargs, xargs

	env := table(false,
		"-i --ignore-environment", "-0 --null", "-u --unset=", "-C --chdir=",
		"-S --split-string=", "-a --argv0=", "--block-signal?", "--default-signal?",
		"--ignore-signal?", "--list-signal-handling", "-v --debug", "--help", "--version")
	env.stop = true
	optTables["env"] = env

	timeout := table(false, "--preserve-status", "--foreground", "-k --kill-after=",
		"-s --signal=", "-v --verbose", "--help", "--version")
	timeout.stop = true
	optTables["timeout"] = timeout

	nice := table(false, "-n --adjustment=", "--help", "--version")
	nice.stop = true
	optTables["nice"] = nice

	optTables["make"] = table(false,
		"-b -m", "-B --always-make", "-C --directory=", "-d", "--debug?",
		"-e --environment-overrides", "-E --eval=", "-f --file --makefile=", "-h --help",
		"-i --ignore-errors", "-I --include-dir=", "-j --jobs?", "-k --keep-going",
		"-l --load-average --max-load?", "-L --check-symlink-times",
		"-n --just-print --dry-run --recon", "-o --old-file --assume-old=",
		"-O --output-sync?", "-p --print-data-base", "-q --question",
		"-r --no-builtin-rules", "-R --no-builtin-variables", "-s --silent --quiet",
		"--no-silent", "-S --no-keep-going --stop", "-t --touch", "--trace",
		"-v --version", "-w --print-directory", "--no-print-directory",
		"-W --what-if --new-file --assume-new=", "--warn-undefined-variables",
		"--shuffle?", "--jobserver-style=")
	optTables["gmake"] = optTables["make"]

	// zip: two-letter short options come before their first letter (-TT is not -T -T).
	optTables["zip"] = table(false,
		"-0", "-1", "-2", "-3", "-4", "-5", "-6", "-7", "-8", "-9",
		"-A --adjust-sfx", "-AC --archive-clear", "-AS --archive-set", "-b --temp-path=",
		"-c --entry-comments", "-d --delete", "-db --display-bytes",
		"-dc --display-counts", "-dd --display-dots", "-dg --display-globaldots",
		"-ds --dot-size=", "-du --display-usize", "-dv --display-volume",
		"-D --no-dir-entries", "-DF --difference-archive", "-e --encrypt", "-f --freshen",
		"-F --fix", "-FF --fixfix", "-FI --fifo", "-FS --filesync", "-g --grow",
		"-h --help", "-h2 --more-help", "-i --include", "-ic --ignore-case",
		"-j --junk-paths", "-J --junk-sfx", "-k --DOS-names", "-l --to-crlf",
		"-la --log-append", "-lf --logfile-path=", "-li --log-info", "-ll --from-crlf",
		"-L --license", "-m --move", "-MM --must-match", "-n --suffixes=",
		"-nw --no-wild", "-o --latest-time", "-O --output-file --out=", "-p --paths",
		"-P --password=", "-q --quiet", "-r --recurse-paths", "-R --recurse-patterns",
		"-RE --regex", "-s --split-size=", "-sb --split-bell", "-sc --show-command",
		"-sd --show-debug", "-sf --show-files", "-so --show-options", "-sp --split-pause",
		"-su --show-unicode", "-sU --show-just-unicode", "-sv --split-verbose",
		"-t --from-date=", "-tt --before-date=", "-T --test", "-TT --unzip-command=",
		"-u --update", "-U --copy-entries", "-UN --unicode=", "-v --verbose",
		"-V --VMS-portable", "-w --VMS-versions", "-ws --wild-stop-dirs", "-x --exclude",
		"-X --no-extra", "-y --symlinks", "-z --archive-comment",
		"-Z --compression-method=", "-@ --names-stdin")

	optTables["split"] = table(false, "-a --suffix-length=", "--additional-suffix=",
		"-b --bytes=", "-C --line-bytes=", "-d", "--numeric-suffixes?", "-x",
		"--hex-suffixes?", "-e --elide-empty-files", "--filter=", "-l --lines=",
		"-n --number=", "-t --separator=", "-u --unbuffered", "--verbose", "--help",
		"--version")

	optTables["rsync"] = table(false,
		"-e --rsh=", "--rsync-path=", "-B --block-size=", "-f --filter=", "-T --temp-dir=",
		"-M --remote-option=", "--exclude=", "--include=", "--exclude-from=",
		"--include-from=", "--files-from=", "--log-file=", "--log-file-format=",
		"--password-file=", "--port=", "--chmod=", "--chown=", "--compare-dest=",
		"--copy-dest=", "--link-dest=", "--backup-dir=", "--suffix=", "--timeout=",
		"--contimeout=", "--bwlimit=", "--max-size=", "--min-size=", "--max-delete=",
		"--partial-dir=", "--address=", "--sockopts=", "--out-format=", "--iconv=",
		"--checksum-choice=", "--compress-choice=", "--compress-level=",
		"--skip-compress=", "--usermap=", "--groupmap=", "--info=", "--debug=",
		"--only-write-batch=", "--write-batch=", "--read-batch=", "--protocol=",
		"--config=", "--dparam=", "--outbuf=", "--modify-window=", "--stop-after=",
		"--stop-at=", "--early-input=")

	// ssh, scp, sftp: BSD getopt; ssh reads options after the destination too.
	optTables["ssh"] = table(false, "-B=", "-b=", "-c=", "-D=", "-E=", "-e=", "-F=", "-I=",
		"-i=", "-J=", "-L=", "-l=", "-m=", "-O=", "-o=", "-P=", "-p=", "-Q=", "-R=", "-S=",
		"-W=", "-w=")
	optTables["scp"] = table(false, "-c=", "-D=", "-F=", "-i=", "-J=", "-l=", "-o=", "-P=",
		"-S=", "-X=")
	optTables["sftp"] = table(false, "-B=", "-b=", "-c=", "-D=", "-F=", "-i=", "-J=", "-l=",
		"-o=", "-P=", "-R=", "-S=", "-s=", "-X=")

	optTables["man"] = table(false,
		"-C --config-file=", "-d --debug", "-D --default", "--warnings?", "-f --whatis",
		"-k --apropos", "-K --global-apropos", "-l --local-file",
		"-w --where --path --location", "-W --where-cat --location-cat", "-c --catman",
		"-R --recode=", "-L --locale=", "-m --systems=", "-M --manpath=",
		"-S -s --sections=", "-e --extension=", "-i --ignore-case", "-I --match-case",
		"--regex", "--wildcard", "--names-only", "-a --all", "-u --update",
		"--no-subpages", "-P --pager=", "-r --prompt=", "-7 --ascii", "-E --encoding=",
		"--no-hyphenation --nh", "--no-justification --nj", "-p --preprocessor=",
		"-t --troff", "-T --troff-device?", "-H --html?", "-X --gxditview?", "-Z --ditroff",
		"-V --version", "--help", "--usage")

	optTables["curl"] = table(false,
		"-A --user-agent=", "-b --cookie=", "-c --cookie-jar=", "-C --continue-at=",
		"-d --data=", "-D --dump-header=", "-e --referer=", "-E --cert=", "-F --form=",
		"-H --header=", "-K --config=", "-m --max-time=", "-o --output=",
		"-P --ftp-port=", "-Q --quote=", "-r --range=", "-t --telnet-option=",
		"-T --upload-file=", "-u --user=", "-U --proxy-user=", "-w --write-out=",
		"-x --proxy=", "-X --request=", "-y --speed-time=", "-Y --speed-limit=",
		"-z --time-cond=", "-a --append", "-f --fail", "-G --get", "-g --globoff",
		"-I --head", "-i --include", "-k --insecure", "-L --location", "-l --list-only",
		"-N --no-buffer", "-n --netrc", "-O --remote-name", "-R --remote-time",
		"-S --show-error", "-s --silent", "-v --verbose", "-V --version", "-Z --parallel",
		"-0 --http1.0", "-1 --tlsv1", "-2 --sslv2", "-3 --sslv3", "-4 --ipv4",
		"-6 --ipv6", "-B --use-ascii", "-j --junk-session-cookies",
		"-J --remote-header-name", "-M --manual", "-p --proxytunnel", "-q --disable",
		"-# --progress-bar", "-h --help", "--data-binary=", "--data-raw=", "--data-ascii=",
		"--data-urlencode=", "--json=", "--variable=", "--url=", "--unix-socket=",
		"--abstract-unix-socket=", "--output-dir=", "--netrc-file=", "--netrc-optional",
		"--proto=", "--proto-default=", "--resolve=", "--connect-to=", "--cacert=",
		"--capath=", "--key=", "--pass=", "--interface=", "--max-redirs=", "--retry=",
		"--stderr=", "--trace=", "--trace-ascii=", "--libcurl=", "--proxy-header=",
		"--url-query=", "--form-string=", "--etag-save=", "--etag-compare=", "--doh-url=",
		"--compressed", "--create-dirs", "--fail-with-body", "--http1.1", "--http2",
		"--no-progress-meter", "--upload-file=", "--request-target=", "--expect100-timeout=",
		"--connect-timeout=", "--retry-delay=", "--retry-max-time=", "--limit-rate=",
		"--max-filesize=", "--noproxy=", "--preproxy=", "--hsts=", "--alt-svc=")

	optTables["wget"] = table(false,
		"-e --execute=", "-o --output-file=", "-a --append-output=", "-i --input-file=",
		"-B --base=", "-t --tries=", "-O --output-document=", "-T --timeout=",
		"-w --wait=", "-Q --quota=", "-P --directory-prefix=", "-U --user-agent=",
		"-l --level=", "-A --accept=", "-R --reject=", "-D --domains=",
		"-I --include-directories=", "-X --exclude-directories=", "-n=", "-V --version",
		"-h --help", "-b --background", "-d --debug", "-q --quiet", "-v --verbose",
		"-F --force-html", "-c --continue", "-N --timestamping", "-S --server-response",
		"-x --force-directories", "-E --adjust-extension", "-r --recursive",
		"-k --convert-links", "-K --backup-converted", "-m --mirror",
		"-p --page-requisites", "-H --span-hosts", "-L --relative", "-4 --inet4-only",
		"-6 --inet6-only", "--no-verbose", "--no-clobber", "--no-directories",
		"--no-host-directories", "--no-parent", "--config=", "--no-config",
		"--use-askpass=", "--post-data=", "--post-file=", "--method=", "--body-data=",
		"--body-file=", "--header=", "--user=", "--password=", "--load-cookies=",
		"--save-cookies=", "--certificate=", "--private-key=", "--ca-certificate=",
		"--ca-directory=", "--crl-file=", "--warc-file=", "--report-speed=",
		"--rejected-log=", "--retry-on-http-error=", "--start-pos=", "--progress=",
		"--dns-timeout=", "--connect-timeout=", "--read-timeout=", "--waitretry=",
		"--bind-address=", "--limit-rate=", "--restrict-file-names=", "--prefer-family=",
		"--local-encoding=", "--remote-encoding=", "--cut-dirs=", "--http-user=",
		"--http-password=", "--default-page=", "--compression=", "--max-redirect=",
		"--proxy-user=", "--proxy-password=", "--referer=", "--secure-protocol=",
		"--certificate-type=", "--private-key-type=", "--pinnedpubkey=", "--ciphers=",
		"--hsts-file=", "--ftp-user=", "--ftp-password=", "--warc-header=",
		"--warc-max-size=", "--warc-dedup=", "--warc-tempdir=", "--backups=",
		"--accept-regex=", "--reject-regex=", "--regex-type=", "--exclude-domains=",
		"--follow-tags=", "--ignore-tags=")

	// find: the expression's words are single-dash options; -exec and its kin take a
	// command up to ";" or "{} +".
	find := table(true,
		"-name=", "-iname=", "-path=", "-ipath=", "-wholename=", "-iwholename=", "-regex=",
		"-iregex=", "-lname=", "-ilname=", "-newer=", "-anewer=", "-cnewer=", "-perm=",
		"-type=", "-xtype=", "-user=", "-group=", "-uid=", "-gid=", "-size=", "-links=",
		"-inum=", "-samefile=", "-fstype=", "-context=", "-maxdepth=", "-mindepth=",
		"-mtime=", "-atime=", "-ctime=", "-mmin=", "-amin=", "-cmin=", "-used=",
		"-fprint=", "-fprint0=", "-fls=", "-fprintf=", "-printf=", "-regextype=",
		"-files0-from=", "-D=", "-exec", "-execdir", "-ok", "-okdir")
	find.command = map[string]bool{"-exec": true, "-execdir": true, "-ok": true, "-okdir": true}
	optTables["find"], optTables["gfind"] = find, find

	// go: Go flags (-flag, --flag, =value or the next word; booleans take no next word).
	optTables["go"] = table(true,
		"-C=", "-o=", "-p=", "-toolexec=", "-exec=", "-vettool=", "-ldflags=", "-gcflags=",
		"-asmflags=", "-gccgoflags=", "-tags=", "-mod=", "-modfile=", "-overlay=",
		"-pkgdir=", "-pgo=", "-buildmode=", "-compiler=", "-installsuffix=", "-covermode=",
		"-coverpkg=", "-coverprofile=", "-cpuprofile=", "-memprofile=", "-memprofilerate=",
		"-blockprofile=", "-blockprofilerate=", "-mutexprofile=", "-mutexprofilefraction=",
		"-trace=", "-outputdir=", "-run=", "-bench=", "-benchtime=", "-count=", "-cpu=",
		"-timeout=", "-parallel=", "-shuffle=", "-skip=", "-fuzz=", "-fuzztime=",
		"-fuzzminimizetime=", "-f=", "-reuse=", "-debug-actiongraph=", "-debug-trace=",
		"-v", "-x", "-n", "-a", "-race", "-msan", "-asan", "-cover", "-trimpath", "-work",
		"-short", "-failfast", "-benchmem", "-json", "-linkshared", "-modcacherw",
		"-buildvcs", "-i", "-u", "-d", "-t", "-w", "-m", "-e", "-args")

	optTables["rg"] = table(false,
		"-A --after-context=", "-B --before-context=", "-C --context=", "-e --regexp=",
		"-f --file=", "-g --glob=", "--iglob=", "-j --threads=", "-m --max-count=",
		"-M --max-columns=", "-r --replace=", "-t --type=", "-T --type-not=",
		"-E --encoding=", "--pre=", "--pre-glob=", "--hostname-bin=", "--type-add=",
		"--ignore-file=", "--max-depth=", "--max-filesize=", "--sort=", "--sortr=",
		"--color=", "--colors=", "--path-separator=", "--dfa-size-limit=",
		"--regex-size-limit=", "--engine=", "--field-context-separator=",
		"--field-match-separator=", "--context-separator=", "--hyperlink-format=")
	optTables["rg"].exact = true

	optTables["cargo"] = table(false,
		"--config=", "-Z=", "-C=", "-p --package=", "-j --jobs=", "-F --features=",
		"--manifest-path=", "--target=", "--target-dir=", "--bin=", "--example=",
		"--test=", "--bench=", "--profile=", "--color=", "--message-format=",
		"--exclude=", "--lockfile-path=")
	optTables["cargo"].exact = true

	optTables["npm"] = table(false, "--script-shell=", "--node-options=", "--prefix=",
		"-C --prefix=", "-w --workspace=", "--registry=", "--cache=", "--userconfig=",
		"--globalconfig=", "--loglevel=", "--shell=")

	optTables["git"] = gitTable()
}

// gitTable: git's own options (exact names, ending at the subcommand) and the options of
// the subcommands whose options the policy reads.
func gitTable() *optTable {
	g := table(false, "-C=", "-c=", "--exec-path?", "--html-path", "--man-path",
		"--info-path", "-p --paginate", "-P --no-pager", "--no-replace-objects", "--bare",
		"--git-dir=", "--work-tree=", "--namespace=", "--super-prefix=", "--config-env=",
		"--list-cmds=", "--attr-source=", "--literal-pathspecs", "--glob-pathspecs",
		"--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks",
		"--no-lazy-fetch", "-v --version", "-h --help")
	g.exact = true
	clone := table(false, "-v --verbose", "-q --quiet", "--progress", "--reject-shallow",
		"-n --no-checkout", "--bare", "--mirror", "-l --local", "--no-hardlinks",
		"-s --shared", "--recurse-submodules?", "--recursive?", "-j --jobs=",
		"--template=", "--reference=", "--reference-if-able=", "--dissociate",
		"-o --origin=", "-b --branch=", "-u --upload-pack=", "--depth=",
		"--shallow-since=", "--shallow-exclude=", "--single-branch", "--no-tags",
		"--shallow-submodules", "--separate-git-dir=", "-c --config=", "--server-option=",
		"-4 --ipv4", "-6 --ipv6", "--filter=", "--also-filter-submodules",
		"--remote-submodules", "--sparse", "--bundle-uri=")
	fetch := table(false, "-v --verbose", "-q --quiet", "--all", "--set-upstream",
		"-a --append", "--atomic", "--upload-pack=", "-f --force", "-m --multiple",
		"-t --tags", "-n", "-j --jobs=", "--prefetch", "-p --prune", "-P --prune-tags",
		"--recurse-submodules?", "--dry-run", "--write-fetch-head", "-k --keep",
		"-u --update-head-ok", "--progress", "--depth=", "--shallow-since=",
		"--shallow-exclude=", "--deepen=", "--unshallow", "--refetch", "--update-shallow",
		"--refmap=", "-o --server-option=", "-4 --ipv4", "-6 --ipv6",
		"--negotiation-tip=", "--negotiate-only", "--filter=", "--auto-maintenance",
		"--auto-gc", "--show-forced-updates", "--write-commit-graph", "--stdin")
	pull := table(false, "-v --verbose", "-q --quiet", "--progress",
		"--recurse-submodules?", "-r --rebase?", "-n", "--stat", "--log?", "--signoff?",
		"--squash", "--commit", "--edit", "--cleanup=", "--ff", "--ff-only", "--verify",
		"--verify-signatures", "--autostash", "-s --strategy=", "-X --strategy-option=",
		"-S --gpg-sign?", "--allow-unrelated-histories", "--all", "-a --append",
		"--upload-pack=", "-f --force", "-t --tags", "-p --prune", "-j --jobs?",
		"--dry-run", "-k --keep", "--depth=", "--shallow-since=", "--shallow-exclude=",
		"--deepen=", "--unshallow", "--update-shallow", "--refmap=", "-o --server-option=",
		"-4 --ipv4", "-6 --ipv6", "--negotiation-tip=", "--show-forced-updates",
		"--set-upstream")
	lsRemote := table(false, "-q --quiet", "--upload-pack --exec=", "-t --tags",
		"-h --heads", "--refs", "--get-url", "--sort=", "--exit-code", "--symref",
		"-o --server-option=")
	archive := table(false, "--format=", "--prefix=", "--add-file=", "--add-virtual-file=",
		"-o --output=", "--worktree-attributes", "-v --verbose", "-l --list", "--remote=",
		"--exec=")
	push := table(false, "-v --verbose", "-q --quiet", "--repo=", "--all", "--mirror",
		"-d --delete", "--tags", "-n --dry-run", "--porcelain", "-f --force",
		"--force-with-lease?", "--force-if-includes", "--recurse-submodules=", "--thin",
		"--receive-pack --exec=", "-u --set-upstream", "--progress", "--prune",
		"--no-verify", "--follow-tags", "--signed?", "--atomic", "-o --push-option=",
		"-4 --ipv4", "-6 --ipv6")
	sendPack := table(false, "-v --verbose", "-q --quiet", "--receive-pack --exec=",
		"--remote=", "--all", "-n --dry-run", "--mirror", "-f --force", "--signed?",
		"--push-option=", "--progress", "--thin", "--atomic", "--stateless-rpc", "--stdin",
		"--helper-status", "--force-with-lease?", "--force-if-includes")
	fetchPack := table(false, "--upload-pack --exec=", "--all", "--stdin", "-q --quiet",
		"-k --keep", "--thin", "--include-tag", "--depth=", "--shallow-since=",
		"--shallow-exclude=", "--deepen-relative", "--no-progress", "--check-self-contained-and-connected",
		"-v")
	grep := table(false, "--cached", "--no-index", "--untracked", "--exclude-standard",
		"--recurse-submodules", "-v --invert-match", "-i --ignore-case",
		"-w --word-regexp", "-a --text", "-I", "--textconv", "-r --recursive",
		"--max-depth=", "-E --extended-regexp", "-G --basic-regexp",
		"-F --fixed-strings", "-P --perl-regexp", "-n --line-number", "--column", "-h",
		"-H", "--full-name", "-l --files-with-matches --name-only",
		"-L --files-without-match", "-z --null", "-o --only-matching", "-c --count",
		"--color?", "--break", "--heading", "-C --context=", "-B --before-context=",
		"-A --after-context=", "--threads=", "-p --show-function",
		"-W --function-context", "-f=", "-e=", "--and", "--or", "--not", "-q --quiet",
		"--all-match", "-O --open-files-in-pager?", "--ext-grep", "-m --max-count=")
	rebase := table(false, "--onto=", "--keep-base", "--no-verify", "-q --quiet",
		"-v --verbose", "-n --no-stat", "--signoff", "--committer-date-is-author-date",
		"--reset-author-date", "-C=", "--ignore-whitespace", "--whitespace=",
		"-f --force-rebase", "--no-ff", "--continue", "--skip", "--abort", "--quit",
		"--edit-todo", "--show-current-patch", "--apply", "-m --merge",
		"-i --interactive", "--rerere-autoupdate", "--empty=", "--autosquash",
		"--update-refs", "-S --gpg-sign?", "--autostash", "-x --exec=",
		"-r --rebase-merges?", "--fork-point", "-s --strategy=", "-X --strategy-option=",
		"--root", "--reschedule-failed-exec", "--reapply-cherry-picks")
	difftool := table(false, "-g --gui", "-d --dir-diff", "-y --no-prompt", "--symlinks",
		"-t --tool=", "--tool-help", "--trust-exit-code", "-x --extcmd=", "--no-index")
	initT := table(false, "--template=", "--bare", "--shared?", "-q --quiet",
		"--separate-git-dir=", "-b --initial-branch=", "--object-format=")
	g.subs = map[string]*optTable{
		"clone": clone, "fetch": fetch, "pull": pull, "ls-remote": lsRemote,
		"archive": archive, "push": push, "send-pack": sendPack, "fetch-pack": fetchPack,
		"grep": grep, "rebase": rebase, "difftool": difftool, "init": initT,
	}
	return g
}

// The wrappers' option specs (wrap.go) give the tables of the wrappers that have none
// above: their options end at the command they run, unless the spec permutes.
func init() {
	for name, sp := range map[string]*optSpec{
		"sudo": sudoSpec, "doas": doasSpec, "nohup": nohupSpec, "time": timeSpec,
		"stdbuf": stdbufSpec, "ionice": ioniceSpec, "setsid": setsidSpec, "exec": execSpec,
		"watch": watchSpec, "chroot": chrootSpec, "flock": flockSpec, "unshare": unshareSpec,
		"nsenter": nsenterSpec, "strace": straceSpec, "ltrace": ltraceSpec, "chrt": chrtSpec,
		"taskset": tasksetSpec, "su": suSpec, "runuser": runuserSpec, "script": scriptSpec,
		"systemd-run": systemdRunSpec, "pkexec": pkexecSpec, "fakeroot": fakerootSpec,
		"prlimit": prlimitSpec, "setpriv": setprivSpec, "setarch": setarchSpec,
		"numactl": numactlSpec, "xvfb-run": xvfbRunSpec, "faketime": faketimeSpec,
		"run0": run0Spec, "ssh-agent": sshAgentSpec, "at": atSpec, "batch": atSpec,
		"npx": npmExecSpec, "uvx": uvxSpec, "bunx": bunxSpec,
	} {
		if optTables[name] == nil {
			optTables[name] = fromOptSpec(sp)
		}
	}
	// The shells: -o/-O take an option name, --rcfile/--init-file a file; the first
	// operand is the script (or, with -c, its text), and options end there.
	sh := table(false, "-o=", "-O=", "--rcfile --init-file=")
	sh.stop, sh.plus = true, true
	for _, n := range shells {
		optTables[n] = sh
	}
}

// fromOptSpec turns a wrapper's optSpec into an option table (without aliases between
// its short and long names, which optSpec does not record).
func fromOptSpec(sp *optSpec) *optTable {
	var entries []string
	for _, c := range sp.arg {
		entries = append(entries, "-"+string(c)+"=")
	}
	for _, c := range sp.optArg {
		entries = append(entries, "-"+string(c)+"?")
	}
	for _, l := range sp.long {
		entries = append(entries, "--"+l)
	}
	t := table(false, entries...)
	t.stop = !sp.permute
	return t
}
