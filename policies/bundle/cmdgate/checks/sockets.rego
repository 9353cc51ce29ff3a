# network.unix_socket: talking to a local daemon through its Unix socket (the Docker,
# containerd, Podman or CRI-O API, D-Bus, an SSH agent): curl --unix-socket, a client
# pointed at unix://..., or any word naming such a socket. Those daemons act for the
# host, outside the sandbox and the policy: a container started through the Docker
# socket runs as root on the host.
package cmdgate.checks

import data.cmdgate.lib

findings contains lib.finding("deny", "network.unix_socket", msg, c) if {
	socket_request
	some c in input.commands
	some w in socket_words(c)
	msg := sprintf("%s %s talks to a local daemon through its Unix socket, outside the sandbox", [c.name, w])
}

# socket_request rules out most requests at once: every word the pattern matches
# holds one of unix_sockets.hints, so a request none of whose words and redirect
# targets holds one, and that sets none of unix_sockets.env, names no socket.
socket_request if {
	some h in data.cmdgate.lists.unix_sockets.hints
	contains(input.words, h)
}

# (A command with environment assignments is never contained, so the name rules' kind
# has it: input.routed.names holds every such command.)
socket_request if {
	some i in input.routed.names
	some k, _ in input.commands[i].env
	upper(k) in data.cmdgate.lists.unix_sockets.env
}

# socket_words are the words of c that name a Unix socket or ask for one: options such
# as --unix-socket, unix:// addresses, and paths of the daemons' sockets (redirects
# included).
socket_words(c) := ({w |
	some i, w in c.argv
	i > 0
	regex.match(lib.lists.unix_sockets.pattern, w)
} | {r.target |
	some r in c.redirects
	regex.match(lib.lists.unix_sockets.pattern, r.target)
}) | {concat("=", [k, v]) |
	some k, v in c.env
	upper(k) in lib.lists.unix_sockets.env
}
