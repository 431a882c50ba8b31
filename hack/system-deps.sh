#!/usr/bin/env bash
# Makes sure the Debian packages the integration tests use are installed: dbus-daemon (a
# private system bus for the systemd and logind doubles), util-linux (setpriv, which
# kubetest uses so the control plane dies with the test binary) and tmux (the demo's
# test drives the real binary in a tmux pane). As root it installs what
# is missing with apt-get; otherwise it says what to install and fails.
set -euo pipefail

missing=()
command -v dbus-daemon >/dev/null || missing+=(dbus-daemon)
command -v setpriv >/dev/null || missing+=(util-linux)
command -v tmux >/dev/null || missing+=(tmux)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "system-deps: missing Debian packages: ${missing[*]}; run: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
echo "system-deps: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
