#!/usr/bin/env bash
# The kidnap demo (what `make demo` runs after install + build): the simulator, the whole
# lost_and_found package and the scripted scenario, headless, in sim time.
# Prints the scenario's timeline and figures; writes demo/kidnap_demo.png,
# demo/kidnap_demo.bag, demo/result.json and demo/roslaunch.log (full output).
# Exit 0 only when the robot reached its goal after being kidnapped and found again
# (decided from demo/result.json: roslaunch's own exit code does not say).
# Usage: tools/demo.sh [roslaunch args, e.g. map:=lab speed:=10 seed:=3]
# Environment: DEMO_TIMEOUT (wall seconds, default 600).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT="$ROOT/demo"
TIMEOUT="${DEMO_TIMEOUT:-600}"
export PATH="/usr/bin:/bin:$PATH"
set +u  # the catkin setup scripts read unset variables
# shellcheck disable=SC1091
source "$ROOT/build/catkin_ws/devel/setup.bash"
set -u
export PYTHONDONTWRITEBYTECODE=1

mkdir -p "$OUT"
rm -f "$OUT/result.json"
export ROS_LOG_DIR="$OUT/log"
# A master of our own on a free port: never disturbs (or is disturbed by) another ROS graph.
PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')
export ROS_MASTER_URI="http://localhost:$PORT"

echo "demo: roslaunch lost_and_found demo.launch $* (timeout ${TIMEOUT} s wall, log: $OUT/roslaunch.log)"
# SIGINT first so roslaunch shuts its nodes down cleanly; SIGKILL 30 s later if it hangs.
timeout --signal=INT --kill-after=30 "$TIMEOUT" \
  roslaunch -p "$PORT" lost_and_found demo.launch output_dir:="$OUT" "$@" 2>&1 \
  | tee "$OUT/roslaunch.log" | grep --line-buffered -E '^\[ *[0-9]+\.[0-9] sim s\]|^\[demo\]'
rc=${PIPESTATUS[0]}
if [ "$rc" -eq 124 ]; then echo "demo: roslaunch timed out after ${TIMEOUT} s"; fi

if [ ! -f "$OUT/result.json" ]; then
  echo "demo: FAILED: no $OUT/result.json (the scenario did not finish; see $OUT/roslaunch.log)"
  exit 1
fi
/usr/bin/python3 - "$OUT/result.json" <<'PY'
import json
import sys

with open(sys.argv[1]) as f:
    result = json.load(f)
print('demo: %s' % ('SUCCESS' if result.get('success') else 'FAILED: ' + result.get('reason', '?')))
sys.exit(0 if result.get('success') is True else 1)
PY
