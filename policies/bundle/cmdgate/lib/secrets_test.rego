package cmdgate.lib.secrets_test

import data.cmdgate.lib

operand(p) := {"text": p, "path": p, "dynamic": false, "glob": false}

test_secret_paths if {
	every p in [
		"/root", "/root/x", "/home/alice/.bashrc", "/Users/bob/x", "/etc/shadow", "/etc/sudoers",
		"/etc/sudoers.d/x", "/run/secrets/x", "/proc/self/environ", "/proc/42/mem", "/opt/x/.aws/credentials",
		"/srv/x.pem", "/srv/id_ed25519", "/srv/.env", "/srv/.env.production", "/var/lib/docker/x",
	] {
		lib.secret(operand(p))
	}
}

test_not_secret_paths if {
	every p in ["/etc/os-release", "/home", "/usr/bin/ls", "/proc/cpuinfo", "/tmp/notes.txt", "/etc/hosts"] {
		not lib.secret(operand(p))
	}
}

test_secret_text_of_dynamic_and_tilde if {
	lib.secret({"text": "$HOME/.ssh/id_rsa", "path": "", "dynamic": true})
	lib.secret({"text": "${HOME}/x", "path": "", "dynamic": true})
	lib.secret({"text": "~/.aws/credentials", "path": "", "dynamic": false})
	lib.secret({"text": "~", "path": "", "dynamic": false})
	not lib.secret({"text": "$TMPDIR/x", "path": "", "dynamic": true})
}

test_secret_globs if {
	lib.secret({"text": "/r??t/x", "path": "/r??t/x", "dynamic": false, "glob": true})
	lib.secret({"text": "/etc/sha*", "path": "/etc/sha*", "dynamic": false, "glob": true})
	lib.secret({"text": "/home/*/x", "path": "/home/*/x", "dynamic": false, "glob": true})
	lib.secret({"text": "/x/.s?h/y", "path": "/x/.s?h/y", "dynamic": false, "glob": true})
	not lib.secret({"text": "/etc/*-release", "path": "/etc/*-release", "dynamic": false, "glob": true})
	not lib.secret({"text": "/usr/lib/*.so", "path": "/usr/lib/*.so", "dynamic": false, "glob": true})
}

test_block_devices if {
	every p in ["/dev/sda", "/dev/sda1", "/dev/nvme0n1p2", "/dev/mapper/root", "/dev/disk/by-uuid/x", "/dev/mem", "/dev/xvda"] {
		lib.secret({"text": p, "path": p, "dynamic": false})
	}
	not lib.secret({"text": "/dev/null", "path": "/dev/null", "dynamic": false})
	not lib.secret({"text": "/dev/urandom", "path": "/dev/urandom", "dynamic": false})
	lib.secret({"text": "/dev/sd*", "path": "/dev/sd*", "dynamic": false, "glob": true})
}
