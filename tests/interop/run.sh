#!/usr/bin/env bash
# Drives Amplifier's real Python code over sessions arbor wrote, and arbor over
# sessions Amplifier's code wrote (issue 11 item 6). Not part of `cargo test`: it
# needs Python 3.11+ and PyPI (amplifier-core 2.0.2).
#
#   tests/interop/run.sh            # from the crate root; ../shared beside it
#
# ARBOR_INTEROP_VENV (default /tmp/arbor-interop-venv) caches the venv between runs.
# Prints one line per check and "N passed, M failed"; exits non-zero on a failure.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
crate="$(cd "$here/../.." && pwd)"
src="$crate/../shared/fixtures/amplifier-src"
venv="${ARBOR_INTEROP_VENV:-/tmp/arbor-interop-venv}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for f in amplifier-app-cli-f16375f.tar.gz amplifier-foundation-d0d96f7.tar.gz; do
  [ -f "$src/$f" ] || { echo "missing $src/$f (check out ../shared)" >&2; exit 2; }
  tar xzf "$src/$f" -C "$work"
done

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# The extracted sources are installed from this run's copy (not editable, so the
# venv does not point into a directory that is removed at exit).
"$venv/bin/pip" install --quiet "amplifier-core==2.0.2"
"$venv/bin/pip" install --quiet --force-reinstall --no-deps \
  "$work/amplifier-foundation" "$work/amplifier-app-cli"
"$venv/bin/pip" install --quiet "$work/amplifier-foundation" "$work/amplifier-app-cli"

(cd "$crate" && cargo build --quiet --bin arbor)

# Amplifier's loader clones remote includes: keep git off the network and the
# Python side's home (~/.amplifier cache, registry) inside the temp dir.
mkdir -p "$work/pyhome"
GIT_ALLOW_PROTOCOL=file HOME="$work/pyhome" AMPLIFIER_HOME="$work/pyhome/.amplifier" \
PYTHONPATH="$work/amplifier-foundation/modules/tool-delegate" \
  "$venv/bin/python" "$here/check.py" \
  --arbor "$crate/target/debug/arbor" \
  --foundation "$work/amplifier-foundation" \
  --work "$work"
