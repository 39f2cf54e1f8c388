#!/usr/bin/env bash
# Build the catkin workspace in build/catkin_ws/ (git-ignored) with Debian's /usr/bin/python3.
# The package itself is linked into build/catkin_ws/src; kobuki_msgs and fiducial_msgs come from
# compat/ only where the machine does not already provide them. The package folder in the
# workspace holds one link per top-level entry of the repository except build/ itself, so that
# tools which walk the package (rosrun, roslaunch's $(find)) never loop back into the workspace.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WS="$ROOT/build/catkin_ws"
export PATH="/usr/bin:/bin:$PATH"
# shellcheck disable=SC1091
source /opt/ros/noetic/setup.bash 2>/dev/null || true

PKG="$WS/src/lost_and_found"
if [ -L "$PKG" ]; then rm "$PKG"; fi
mkdir -p "$PKG"
find "$PKG" -maxdepth 1 -type l -delete
for entry in "$ROOT"/* "$ROOT"/.ci; do
  case "$(basename "$entry")" in build|test-results) continue ;; esac
  ln -sfn "$entry" "$PKG/$(basename "$entry")"
done
for pkg in kobuki_msgs fiducial_msgs; do
  link="$WS/src/$pkg"
  if [ -L "$link" ]; then continue; fi
  if /usr/bin/python3 -c "import ${pkg}.msg" 2>/dev/null; then
    echo "build: using the installed $pkg"
  else
    ln -sfn "$ROOT/compat/$pkg" "$link"
    echo "build: $pkg not installed, building the wire-identical definitions in compat/$pkg"
  fi
done

cd "$WS"
catkin_make -DPYTHON_EXECUTABLE=/usr/bin/python3 -DCATKIN_ENABLE_TESTING=OFF \
  -DCMAKE_BUILD_TYPE=Release > "$WS/build.log" 2>&1 || { tail -40 "$WS/build.log"; exit 1; }
echo "build: workspace ready in $WS (log: $WS/build.log)"
