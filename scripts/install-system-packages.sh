#!/usr/bin/env bash
# The system packages the tests use, from Debian's archive: chromium (browser tests), redis-server
# (fleet tests), tmux (terminal tests) and bubblewrap (the jail). As root they are installed with apt;
# otherwise this stops at once and names the one command to run.
set -euo pipefail
packages=(chromium redis-server tmux bubblewrap)
commands=(chromium redis-server tmux bwrap)
missing=()
for i in "${!packages[@]}"; do
  command -v "${commands[$i]}" >/dev/null 2>&1 || missing+=("${packages[$i]}")
done
[ "${#missing[@]}" -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "error: the tests need ${missing[*]}; install with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
command -v apt-get >/dev/null 2>&1 || { echo "error: the tests need ${missing[*]} (no apt-get here: use your distribution's packages)" >&2; exit 1; }
echo "installing ${missing[*]} with apt-get…" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
