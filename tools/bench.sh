#!/usr/bin/env bash
# The standard benchmark set (what `make bench` runs after install + build): every suite on the
# project's maps and, when ../shared/data is present, on the Willow Garage, Intel and ACES maps
# (with fiducials placed by tools/place_fiducials.py) and the Intel and ACES Carmen logs; the
# office detection also among unmapped clutter (--clutter 8) and on a map out of date (--stale 3).
# Writes everything into $BENCH_OUT (default build/bench) and the tables of all suites into
# $BENCH_OUT/SUMMARY.md; bench/RESULTS.md quotes them with these commands.
# Environment: BENCH_OUT, BENCH_SEED (default 1; seeds >= 100 on the lab map and the Stata
# basement are the detector calibration's training data, never evaluated here), SHARED_DATA (default
# ../shared/data), BENCH_SUITES (default "detection recovery real-logs compute"), BENCH_RESUME
# (1: keep the suites that already finished with this seed, i.e. wrote DIR/<suite>.json
# without an error and DIR/<suite>.md, e.g. after an interrupted run; default 0 runs
# everything again).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT="${BENCH_OUT:-$ROOT/build/bench}"
SEED="${BENCH_SEED:-1}"
SHARED="${SHARED_DATA:-$ROOT/../shared/data}"
SUITES="${BENCH_SUITES:-detection recovery real-logs compute}"
RESUME="${BENCH_RESUME:-0}"
export PATH="/usr/bin:/bin:$PATH"
set +u  # the catkin setup scripts read unset variables
# shellcheck disable=SC1091
source "$ROOT/build/catkin_ws/devel/setup.bash"
set -u
export PYTHONDONTWRITEBYTECODE=1
mkdir -p "$OUT"
failed=()

finished() {  # finished <suite.json>: a whole result of this seed, with its tables, no error
  [ -f "$1" ] && [ -f "${1%.json}.md" ] || return 1
  /usr/bin/python3 - "$1" "$SEED" <<'PY'
import json
import sys
try:
    with open(sys.argv[1]) as stream:
        result = json.load(stream)
except (OSError, ValueError):
    sys.exit(1)
sys.exit(0 if not result.get('error') and str(result.get('seed')) == sys.argv[2] else 1)
PY
}
want() { [[ " $SUITES " == *" $1 "* ]]; }
bench() {  # bench <label> <suite> [args...]
  local label=$1; shift
  local done_json="$OUT/$label/${1//-/_}.json"
  if [ "$RESUME" = 1 ] && finished "$done_json"; then
    echo "== bench $*: kept $done_json (BENCH_RESUME=1)"; return
  fi
  echo "== bench $* (-> $OUT/$label)"
  if ! rosrun lost_and_found bench "$@" --seed "$SEED" --label "$label" --out "$OUT/$label"; then
    failed+=("$label: bench $*")
  fi
}

# The project's maps (office: evaluation; lab: recovery only, it trains the detector).
want detection && bench office detection --map "$ROOT/maps/office.yaml" --trials 40
# The same among unmapped clutter (chairs, bins, people: seen by the laser, not on the map).
want detection && bench office-clutter detection --map "$ROOT/maps/office.yaml" --trials 40 \
  --clutter 8
# The same on a map out of date (doors open that were shut when mapped, furniture gone).
want detection && bench office-stale detection --map "$ROOT/maps/office.yaml" --trials 40 \
  --stale 3
want recovery && bench office recovery --map "$ROOT/maps/office.yaml" --trials 20
want recovery && bench lab recovery --map "$ROOT/maps/lab.yaml" --trials 20
want compute && bench compute compute --map "$ROOT/maps/office.yaml"

# Real maps and logs nobody on this project made.
if [ -d "$SHARED/maps" ]; then
  for map in willow_garage/willow-full intel_lab_seattle/intel aces_austin/aces; do
    label=$(basename "$map")
    yaml="$SHARED/maps/$map.yaml"
    fid="$OUT/$label/${label}_fiducials.yaml"
    mkdir -p "$OUT/$label"
    if ! /usr/bin/python3 "$ROOT/tools/place_fiducials.py" "$yaml" --out "$fid" --seed "$SEED"; then
      failed+=("$label: place_fiducials"); continue
    fi
    want detection && bench "$label" detection --map "$yaml" --fiducials "$fid" --trials 20
    want recovery && bench "$label" recovery --map "$yaml" --fiducials "$fid" --trials 10
  done
  want real-logs && bench real_logs real-logs --logs "$SHARED/logs"
else
  echo "bench: $SHARED not found: the real maps and logs are skipped"
fi

/usr/bin/python3 "$ROOT/tools/bench_summary.py" "$OUT" > "$OUT/SUMMARY.md"
echo "bench: all tables in $OUT/SUMMARY.md"
for item in "${failed[@]+"${failed[@]}"}"; do echo "FAILED: $item"; done
[ "${#failed[@]}" -eq 0 ]
