#!/usr/bin/python3
"""How often fiducial_localizer's tag check can speak: from what share of a map's free poses a
360 deg spin puts a mapped tag inside the check's geometry (``config/fiducial_localizer.yaml``:
verify_min/max_distance, verify_half_fov, verify_half_vfov, verify_view_angle, no mapped wall
between), with the TurtleBot2 camera 0.1 m ahead of the base and 0.3 m up.

Usage: tools/tag_check_coverage.py MAP.yaml FIDUCIALS.yaml [--poses N] [--seed S]
Poses are drawn from the free cells at least 0.3 m from an obstacle (the robot fits there);
the spin is 16 headings. Prints one line; writes nothing.
"""
import argparse
import math
import os
import sys

import numpy as np
import yaml

from lost_and_found.core.fiducial import FiducialLocalizerConfig, load_fiducial_map
from lost_and_found.core.scan_agreement import DistanceMap
from lost_and_found.core.tag_check import TagCheck
from lost_and_found.sim.gridmap import load_map

#: The camera on the base (m ahead, m up) and the robot's clearance from obstacles (m).
CAMERA_X, CAMERA_Z, CLEARANCE = 0.1, 0.3, 0.3
#: Headings of one spin.
HEADINGS = 16


def shipped_check(tag_poses):
    """A TagCheck with the verify_* values of config/fiducial_localizer.yaml."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'config',
                        'fiducial_localizer.yaml')
    with open(path) as stream:
        params = yaml.safe_load(stream)
    fields = {k: v for k, v in params.items() if k.startswith('verify_')}
    config = FiducialLocalizerConfig(fiducial_map='-', **fields)
    return TagCheck(tag_poses, 1.0, config.verify_min_distance, config.verify_max_distance,
                    config.verify_half_fov, config.verify_half_vfov, config.verify_view_angle,
                    config.verify_missing_time)


def coverage(grid, check, poses, seed):
    """(share of sampled free poses whose spin expects a tag, number of poses sampled)."""
    check.distance_map = DistanceMap(grid.occupied, grid.resolution, grid.origin)
    rows, cols = grid.free_cells()
    xs, ys = (np.asarray(v) for v in grid.cell_center(rows, cols))
    fits = grid.distance_at(xs, ys) >= CLEARANCE
    xs, ys = xs[fits], ys[fits]
    if not xs.size:
        return 0.0, 0
    pick = np.random.default_rng(seed).choice(xs.size, size=min(poses, xs.size),
                                              replace=False)
    hits = 0
    for x, y in zip(xs[pick], ys[pick]):
        for k in range(HEADINGS):
            yaw = 2.0 * math.pi * k / HEADINGS
            if check.expected(x + CAMERA_X * math.cos(yaw), y + CAMERA_X * math.sin(yaw), yaw,
                              CAMERA_Z):
                hits += 1
                break
    return hits / pick.size, int(pick.size)


def main(argv):
    """Print the coverage of one map and tag file."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('map')
    parser.add_argument('fiducials')
    parser.add_argument('--poses', type=int, default=1500)
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv[1:])
    check = shipped_check(load_fiducial_map(args.fiducials).poses)
    share, count = coverage(load_map(args.map), check, args.poses, args.seed)
    print('%s: %d upright tags; a spin puts one inside the tag check\'s geometry from %.0f %% '
          'of %d free poses' % (os.path.basename(args.map), len(check), 100.0 * share, count))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
