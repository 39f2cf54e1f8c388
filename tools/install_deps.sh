#!/usr/bin/env bash
# Install the Debian packages lost_and_found needs to build, test and run its demo.
# Idempotent: asks apt only for what is missing; uses sudo when not root.
set -euo pipefail

PKGS=(
  ros-core-dev catkin rosbash rosout python3-rospy python3-rostest python3-roslaunch
  python3-rosmaster python3-rosbag python3-actionlib python3-tf python3-tf2-ros
  python3-std-msgs python3-geometry-msgs python3-sensor-msgs python3-nav-msgs
  python3-move-base-msgs python3-actionlib-msgs python3-std-srvs
  python3-sklearn python3-numpy python3-scipy python3-yaml python3-matplotlib python3-pil
  python3-pytest python3-hypothesis python3-flake8
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#PKGS[@]} Debian packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install_deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
