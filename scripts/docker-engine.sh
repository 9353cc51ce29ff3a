#!/bin/sh
# Makes sure a Docker engine answers: when none does on its socket, starts dockerd in
# the background (its own session, its log in the state directory), waits up to a
# minute for it, and, when it cannot start with its default storage driver (overlay2
# needs a file system that supports it), starts it again with vfs. It leaves a running
# engine as it is. Root only.
#
#   scripts/docker-engine.sh
set -eu
log=${CMDGATE_DOCKERD_LOG:-/var/log/cmdgate-dockerd.log}
if docker info >/dev/null 2>&1; then
  exit 0
fi
# A dockerd still running (starting, or shutting down) is waited for; the pid file of
# one that died is removed, or a new one refuses to start.
pidfile=/var/run/docker.pid
if [ -s "$pidfile" ]; then
  old=$(cat "$pidfile")
  i=0
  while kill -0 "$old" 2>/dev/null && [ $i -lt 30 ]; do
    if docker info >/dev/null 2>&1; then
      exit 0
    fi
    sleep 1
    i=$((i + 1))
  done
  if kill -0 "$old" 2>/dev/null; then
    echo "docker-engine: dockerd $old runs but does not answer" >&2
    exit 1
  fi
  rm -f "$pidfile"
fi
start() {
  echo "docker-engine: starting dockerd $*" >&2
  setsid dockerd "$@" >>"$log" 2>&1 </dev/null &
  pid=$!
  i=0
  while [ $i -lt 60 ]; do
    if docker info >/dev/null 2>&1; then
      echo "docker-engine: dockerd answers (pid $pid)" >&2
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "docker-engine: dockerd $* exited; its log: $log" >&2
      return 1
    fi
    sleep 1
    i=$((i + 1))
  done
  echo "docker-engine: dockerd $* did not answer within a minute; its log: $log" >&2
  kill "$pid" 2>/dev/null || true
  return 1
}
start || start --storage-driver vfs
