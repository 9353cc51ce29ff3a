// Package readonly evaluates the read-only "execute" tool's tiny pipeline language in
// memory, in pure Go, on allowlisted files: it never starts a shell or any other
// process (it does not import os/exec, and a test keeps it so).
//
// # The language
//
// A command is `STAGE ("|" STAGE)*`, at most MaxStages (8) stages of at most MaxArgs
// (8) argv entries each, the command name included (the seed's argv[8]). Tokens are
// separated by spaces and tabs; 'single quotes' are literal (a backslash too);
// "double quotes" and unquoted text take \X as X. An unquoted | separates stages. The
// token -- is dropped wherever it appears (end of options, as in the seed), so a file
// whose name starts with '-' is written ./-name.
//
// The characters ; & > < $ ` and newline and carriage return are forbidden anywhere,
// inside quotes too (forbidden); so is a NUL byte, this package's extension of the
// seed's list. A command that is not valid UTF-8 is a parse_error.
//
// The pipeline starts by reading one file: `cat FILE`, or `head`, `tail`, `nl` or
// `sed -n SCRIPT` with FILE as their last operand, which Parse normalises to
// `cat FILE | head …`. Anything else (`grep PAT FILE`, `sort FILE`, `wc -l FILE`, `head
// -n 5` without a file) is mvp_requires. The filters that follow, each reading the
// previous one's output (a line is the bytes up to and including '\n'; a last line
// without one is a line too):
//
//	nl             number every line, empty ones too, as "%6d\t" (GNU nl -ba -w6 -s '\t')
//	head [-n N]    the first N lines (10); also -nN
//	tail [-n N]    the last N lines (10); also -nN
//	wc -l          the number of '\n' bytes, then '\n'
//	wc -c          the number of bytes, then '\n'
//	sort [-r]      the lines sorted bytewise (LC_ALL=C), [reversed]
//	grep [-n] PAT  the lines containing PAT, a fixed string ("" matches every line),
//	               [prefixed with their number and ':']
//	sed -n Np      line N (1-based)
//	sed -n N,Mp    lines N to M (1 <= N <= M)
//	sed -n Nd      every line but N
//	sed -n N,Md    every line outside N..M
//
// N is a non-negative decimal integer; PAT cannot start with '-' (GNU grep would take
// it as options, and the -- before it is dropped). nl, sort and grep end their last output line
// with '\n' as GNU's do; head, tail and sed … p leave it as it was. Every other
// option, operand or script of these commands (cat past the first stage, a FILE past
// it, +N, -c, -E, s///, sed without -n …) is mvp_unsupported_stage; every other
// command (awk, cut, sh …) is forbidden.
//
// Apart from sed's d, each accepted pipeline outputs exactly what GNU coreutils, grep
// -F and sed give under LC_ALL=C (a test compares them): `sed -n 'N,Md'` follows seed
// document 004, "the output without the range", where GNU sed -n prints nothing; and
// nl knows no section delimiters (GNU nl takes a line \: as one).
//
// # Files
//
// An Allowlist names the files that may be read, by real path: exact files, and
// directories whose files may be read except secret-looking ones (.env, keys, .git
// …). Allowlist.Open resolves a name without ever looking outside the allowlist (so
// its answers reveal nothing of what exists there), checks it and opens it so that
// the file checked is the file read; Run evaluates a Pipeline on it. A file is at most MaxFileSize (1 MiB), read whole into one buffer;
// the filters pass sub-slices of it along, so memory stays within a few times the
// file's size.
//
// # Errors
//
// Every error is an *Error whose Code gives the exit status (Error.ExitCode):
// parse_error, empty, forbidden, too_many_stages, too_many_args, mvp_requires,
// mvp_unsupported_stage and invalid_path exit 2, file_not_allowed 3, file_too_large 4,
// io_error 1.
package readonly
