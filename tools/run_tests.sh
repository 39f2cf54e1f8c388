#!/usr/bin/env bash
# Run every check of the package and end with one line: "N passed, N failed".
#   unit tests (pytest, no ROS master), flake8, the quick benchmarks (test/bench) and each
#   rostest in test/ros/.
# Usage: tools/run_tests.sh [rostest-file ...]   (default: the quick benchmarks and every
#   test/ros/*.test; naming rostests runs only those, without the benchmarks)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PATH="/usr/bin:/bin:$PATH"
set +u  # the catkin setup scripts read unset variables
# shellcheck disable=SC1091
source "$ROOT/build/catkin_ws/devel/setup.bash"
set -u
RESULTS="$ROOT/test-results"
rm -rf "$RESULTS" && mkdir -p "$RESULTS"
export ROS_TEST_RESULTS_DIR="$RESULTS/ros"
export ROS_LOG_DIR="$RESULTS/log"
export PYTHONDONTWRITEBYTECODE=1
cd "$ROOT"

passed=0
failed=0
failures=()
failed_logs=()
add() {  # add <passed> <failed> <label>
  passed=$((passed + $1)); failed=$((failed + $2))
  if [ "$2" -gt 0 ]; then failures+=("$3"); fi
}

echo "== unit tests (pytest)"
/usr/bin/python3 -m pytest -q -p no:cacheprovider --junitxml="$RESULTS/unit.xml" test/unit \
  > "$RESULTS/unit.log" 2>&1
tail -n 3 "$RESULTS/unit.log"
read -r p f < <(/usr/bin/python3 tools/junit_counts.py "$RESULTS/unit.xml")
if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; cat "$RESULTS/unit.log"; fi
[ "$f" -gt 0 ] && grep -E "^(FAILED|ERROR)" "$RESULTS/unit.log"
add "$p" "$f" "unit tests (see test-results/unit.log)"

echo "== flake8"
mapfile -t pyfiles < <(git ls-files '*.py' 'nodes/*' 'test/ros/*' | grep -v '\.test$' | grep -v '\.launch$')
if /usr/bin/python3 -m flake8 "${pyfiles[@]}" > "$RESULTS/flake8.log" 2>&1; then
  echo "flake8 clean (${#pyfiles[@]} files)"; add 1 0 flake8
else
  cat "$RESULTS/flake8.log"; add 0 1 flake8
fi

if [ $# -eq 0 ]; then
  # The quick variant of every benchmark suite: keeps the harness working (not a measurement).
  echo "== benchmarks, quick (pytest test/bench)"
  start=$(date +%s)
  /usr/bin/python3 -m pytest -q -p no:cacheprovider --junitxml="$RESULTS/bench.xml" test/bench \
    > "$RESULTS/bench.log" 2>&1
  tail -n 3 "$RESULTS/bench.log"
  read -r p f < <(/usr/bin/python3 tools/junit_counts.py "$RESULTS/bench.xml")
  if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; cat "$RESULTS/bench.log"; fi
  [ "$f" -gt 0 ] && tail -n 60 "$RESULTS/bench.log"
  echo "benchmarks (quick) took $(( $(date +%s) - start )) s"
  add "$p" "$f" "quick benchmarks (see test-results/bench.log)"
fi

if [ $# -gt 0 ]; then tests=("$@"); else mapfile -t tests < <(ls test/ros/*.test); fi
for t in "${tests[@]}"; do
  name=$(basename "$t" .test)
  echo "== rostest $name"
  start=$(date +%s)
  rostest lost_and_found "$name.test" > "$RESULTS/rostest-$name.log" 2>&1
  rc=$?
  read -r p f < <(/usr/bin/python3 tools/junit_counts.py --rostest "$RESULTS/rostest-$name.log")
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  echo "$p passed, $f failed in $(( $(date +%s) - start )) s"
  if [ "$f" -gt 0 ]; then
    tail -n 40 "$RESULTS/rostest-$name.log"; failed_logs+=("$RESULTS/rostest-$name.log")
  fi
  add "$p" "$f" "rostest $name (see test-results/rostest-$name.log)"
done

# Repeat each failed rostest's assertion messages (not the tracebacks) at the very end, where a
# reader of only the last lines of the output (a CI summary) still sees why it failed.
# (rosunit pads a failure's header with dashes to 80 columns, so a long one has none.)
for log in "${failed_logs[@]+"${failed_logs[@]}"}"; do
  echo "-- why $(basename "$log" .log) failed:"
  why=$(awk '/^\[.*\]\[(FAILURE|ERROR)\]-*$/ {on = 1; print; next}
             on && /^-+$/ {on = 0}
             on && !/^  / {print}
             /process has died/ {print}' "$log" | cut -c1-300 | head -n 12)
  if [ -n "$why" ]; then echo "$why"; else tail -n 5 "$log"; fi
done
for item in "${failures[@]+"${failures[@]}"}"; do echo "FAILED: $item"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
