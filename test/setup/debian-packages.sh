#!/usr/bin/env bash
# Run by `npm test` (its pretest step): installs the Debian packages the
# tests drive, only those missing, and says which. The S3 client tests run
# the AWS CLI, boto3, rclone and s3cmd against Cairn; the browser tests run
# Chromium; the deploy tests build in bubblewrap against a git server,
# and with slirp4netns and iproute2 for the outside network; pebble is the
# ACME CA and its DNS, knot the DNS server DNSLink updates go to. Needs root or
# password-less sudo; without either it names the one command to run and
# stops.
set -euo pipefail

PACKAGES=(awscli python3-boto3 rclone s3cmd chromium bubblewrap slirp4netns iproute2 git pebble knot)

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
  echo "npm test: this is not a Debian machine; the tests need: ${PACKAGES[*]} (Debian package names)." >&2
  exit 1
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" = "install ok installed" ] || missing+=("$pkg")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "npm test needs these Debian packages: ${missing[*]}. Install them, then run npm test again:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

echo "npm test: installing Debian packages the tests need: ${missing[*]}" >&2
mkdir -p .tmp
log=.tmp/apt.log
if ! {
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
} >"$log" 2>&1; then
  cat "$log" >&2
  echo "npm test: could not install ${missing[*]} (apt-get's output above, also in $log)" >&2
  exit 1
fi
echo "npm test: installed ${missing[*]}" >&2
