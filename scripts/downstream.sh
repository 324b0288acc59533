#!/usr/bin/env bash
# Builds examples/device-chain as a crate outside this repository, the way a user would: copied to
# a fresh directory, depending on the library by path (an absolute path to this checkout) or by
# git (a local clone of this repository's HEAD, as `git = "file://..."`), with plain
# `cargo build --release` and no other step. Copies the binary to DEST when given.
#
#   scripts/downstream.sh path|git [DEST]
set -euo pipefail
mode=${1:?usage: scripts/downstream.sh path|git [DEST]}
dest=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
before=$(git -C "$root" status --porcelain --untracked-files=all)
work=$(mktemp -d "${TMPDIR:-/tmp}/downstream-$mode.XXXXXX")
cp -r "$root/examples/device-chain" "$work/device-chain"
rm -rf "$work/device-chain/target"
case "$mode" in
  path) dep="hopper-kernels = { path = \"$root/host\" }" ;;
  git)
    git clone --quiet "$root" "$work/clone"
    dep="hopper-kernels = { git = \"file://$work/clone\" }" ;;
  *) echo "scripts/downstream.sh: mode is path or git, not $mode" >&2; exit 2 ;;
esac
sed -i "s|^hopper-kernels = .*|$dep|" "$work/device-chain/Cargo.toml"
grep -q "^$dep\$" "$work/device-chain/Cargo.toml"
echo "== $mode dependency in $work/device-chain: $dep" >&2
(cd "$work/device-chain" && cargo build --release)
if [ -n "$dest" ]; then
  mkdir -p "$dest"
  cp "$work/device-chain/target/release/device-chain" "$dest/device-chain-$mode"
fi
# The checkout is untouched: nothing of the build landed in it.
after=$(git -C "$root" status --porcelain --untracked-files=all)
[ "$before" = "$after" ] || { echo "scripts/downstream.sh: the build wrote into the checkout:" >&2; diff <(echo "$before") <(echo "$after") >&2; exit 1; }
echo "$work/device-chain/target/release/device-chain"
