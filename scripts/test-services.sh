#!/usr/bin/env bash
# The real services the tests need, installed with apt-get where missing (scripts/test.sh runs it
# in the background while pip installs byog: they share no files, and apt is most of CI's setup).
#
#   bash scripts/test-services.sh ENV_FILE
#
# ENV_FILE receives one `export BYOG_REQUIRE_<PART>=1` line per part that is ready, so where a
# part installed its tests must pass (conftest turns their skip into a failure); where one could
# not, its tests skip and this script says so. Exit 0 either way.
set -uo pipefail
cd "$(dirname "$0")/.."
env_file=${1:?usage: test-services.sh ENV_FILE}
: >"$env_file"
updated=""
apt_install() {
  if [ -z "$updated" ]; then apt-get update -qq || return 1; updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
ready() { echo "export BYOG_REQUIRE_$1=1" >>"$env_file"; }

# A real Docker engine for the docker-runtime tests (start-dockerd.sh installs docker.io itself).
if bash scripts/start-dockerd.sh; then ready DOCKER; else echo "no Docker engine could be started: the docker tests will be skipped"; fi
# OpenSSH for the ssh node runtime's tests: each starts its own sshd on 127.0.0.1 (tests/support/sshd.py).
if [ -x /usr/sbin/sshd ] || apt_install openssh-server openssh-client; then ready SSH; else
  echo "openssh-server could not be installed: the ssh node runtime's tests will be skipped"
fi
# cmark-gfm: markdown as GitHub renders it (tests/support/cmark.py).
if command -v cmark-gfm >/dev/null || apt_install cmark-gfm; then ready CMARK; else
  echo "cmark-gfm could not be installed: the rendered-markdown tests will be skipped"
fi
# mermaid-cli (npm) in Debian's Chromium: the report's Mermaid charts drawn for real (tests/support/mermaid.py).
# About 80 s from scratch (chromium 32 s, npm 44 s); puppeteer downloads no browser of its own.
if { command -v mmdc >/dev/null && [ -x /usr/bin/chromium ]; } || {
  { command -v npm >/dev/null || apt_install nodejs npm; } &&
    apt_install chromium &&
    PUPPETEER_SKIP_DOWNLOAD=1 npm install -g --no-audit --no-fund --loglevel=error "@mermaid-js/mermaid-cli@11.17.0" >/dev/null
}; then ready MERMAID; else
  echo "mermaid-cli or chromium could not be installed: the Mermaid render tests will be skipped"
fi
# Slurm (Debian's slurm-wlm) and munge: the slurm tests start their own cluster (tests/support/slurm.py).
if { [ -x /usr/sbin/slurmctld ] && [ -x /usr/sbin/munged ]; } || apt_install slurm-wlm munge; then ready SLURM; else
  echo "slurm-wlm and munge could not be installed: the slurm runtime's tests will be skipped"
fi
exit 0
