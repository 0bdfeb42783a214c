#!/usr/bin/env bash
# Make a Docker engine answer on this machine, idempotently (CI and a fresh VM alike).
#
# - installs docker.io with apt-get when dockerd is missing;
# - starts dockerd in the background when `docker info` does not answer, with the settings a
#   VM without bridges needs: vfs storage (no overlay-in-overlay), no iptables, no bridge
#   (containers use the host network: byog passes --network host and binds 127.0.0.1);
# - waits until `docker info` answers (at most $DOCKERD_WAIT_S seconds, default 60).
#
# Log: $DOCKERD_LOG (default /var/log/byog-dockerd.log). Exit 0 when the engine answers.
set -euo pipefail

DOCKERD_LOG="${DOCKERD_LOG:-/var/log/byog-dockerd.log}"
DOCKERD_WAIT_S="${DOCKERD_WAIT_S:-60}"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

engine_answers() { docker info >/dev/null 2>&1; }

if engine_answers; then
    echo "start-dockerd: the Docker engine already answers"
    exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
    echo "start-dockerd: installing docker.io with apt-get"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq docker.io >/dev/null
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
    # A dockerd that died leaves its pid file, and a new one refuses to start over it.
    $SUDO rm -f /var/run/docker.pid
    echo "start-dockerd: starting dockerd (vfs, no iptables, no bridge); log in $DOCKERD_LOG"
    # setsid + nohup: the daemon outlives this script and the CI step that called it.
    $SUDO setsid nohup dockerd --storage-driver=vfs --iptables=false --bridge=none \
        >>"$DOCKERD_LOG" 2>&1 </dev/null &
fi

for _ in $(seq 1 "$DOCKERD_WAIT_S"); do
    if engine_answers; then
        echo "start-dockerd: the Docker engine answers ($(docker version --format '{{.Server.Version}}'))"
        exit 0
    fi
    sleep 1
done
echo "start-dockerd: dockerd did not answer within ${DOCKERD_WAIT_S} s; last log lines:" >&2
tail -n 20 "$DOCKERD_LOG" >&2 || true
exit 1
