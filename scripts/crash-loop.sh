#!/bin/sh
# The long crash loop (issue 8 item 8): kills `arbor run` N times (default 200) at
# random points of a scripted delegation and checks after each kill that every session
# loads and resumes. Prints the seed and the figures (kills, sessions, unreadable).
# ARBOR_CRASH_SEED=<seed> replays a run. See tests/all/crash_loop.rs.
set -eu
cd "$(dirname "$0")/.."
ARBOR_CRASH_KILLS="${1:-200}" exec cargo test --test all -- --ignored --nocapture crash_loop::crash_loop_long
