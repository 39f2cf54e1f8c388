#!/usr/bin/python3
"""How often fiducial_localizer's tag check can speak: from what share of a map's free poses a
360 deg spin puts a mapped tag inside the check's geometry (``config/fiducial_localizer.yaml``:
verify_min/max_distance, verify_half_fov, verify_half_vfov, verify_view_angle, no mapped wall
between), with the TurtleBot2 camera 0.1 m ahead of the base and 0.3 m up.

With ``--reach M`` it also says how far the robot would have to go for the check to speak:
from each pose (with a random heading), the path over free cells plus turn that
core/viewpoint.py finds to the nearest pose with a tag in the check's geometry, up to M m of
path (what the recovery node's ``look_before_resume`` drives to).

Usage: tools/tag_check_coverage.py MAP.yaml FIDUCIALS.yaml [--poses N] [--seed S] [--reach M]
Poses are drawn from the free cells at least 0.3 m from an obstacle (the robot fits there);
the spin is 16 headings. Prints one line (two with --reach); writes nothing.
"""
import argparse
import math
import os
import sys

import numpy as np
import yaml

from lost_and_found.core import geometry
from lost_and_found.core.fiducial import FiducialLocalizerConfig, load_fiducial_map
from lost_and_found.core.scan_agreement import DistanceMap
from lost_and_found.core.tag_check import TagCheck
from lost_and_found.core.viewpoint import ViewpointFinder
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


#: The camera's optical frame (z forward, x right) on the base.
T_BASE_CAM = geometry.make_transform(geometry.rpy_to_matrix(-math.pi / 2, 0.0, -math.pi / 2),
                                     (CAMERA_X, 0.0, CAMERA_Z))
#: Metres of path one radian of turning costs in the reach (0.3 m/s over 1 rad/s).
TURN_COST = 0.3


def sample_poses(grid, check, poses, seed):
    """``(xs, ys)`` of up to ``poses`` free cells the robot fits in, drawn with ``seed``; sets
    the check's distance map (with the map's known-free cells)."""
    check.distance_map = DistanceMap(grid.occupied, grid.resolution, grid.origin,
                                     free=grid.free)
    rows, cols = grid.free_cells()
    xs, ys = (np.asarray(v) for v in grid.cell_center(rows, cols))
    fits = grid.distance_at(xs, ys) >= CLEARANCE
    xs, ys = xs[fits], ys[fits]
    pick = np.random.default_rng(seed).choice(xs.size, size=min(poses, xs.size),
                                              replace=False)
    return xs[pick], ys[pick]


def coverage(grid, check, poses, seed):
    """(share of sampled free poses whose spin expects a tag, number of poses sampled)."""
    xs, ys = sample_poses(grid, check, poses, seed)
    if not xs.size:
        return 0.0, 0
    hits = 0
    for x, y in zip(xs, ys):
        for k in range(HEADINGS):
            yaw = 2.0 * math.pi * k / HEADINGS
            if check.expected(x + CAMERA_X * math.cos(yaw), y + CAMERA_X * math.sin(yaw), yaw,
                              CAMERA_Z):
                hits += 1
                break
    return hits / xs.size, int(xs.size)


def reach(grid, check, poses, seed, max_path):
    """The viewpoint costs (m of path + TURN_COST per rad of turn; ``inf`` for none within
    ``max_path``) from the sampled free poses, each with a random heading."""
    xs, ys = sample_poses(grid, check, poses, seed)
    yaws = np.random.default_rng(seed + 1).uniform(-math.pi, math.pi, xs.size)
    finder = ViewpointFinder(check, max_path, CLEARANCE, TURN_COST)
    costs = []
    for pose in zip(xs, ys, yaws):
        view = finder.find(pose, T_BASE_CAM)
        costs.append(math.inf if view is None else view.path_length + TURN_COST * view.turn)
    return np.array(costs)


def main(argv):
    """Print the coverage of one map and tag file."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('map')
    parser.add_argument('fiducials')
    parser.add_argument('--poses', type=int, default=1500)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--reach', type=float, default=None, metavar='M',
                        help='also the cost of reaching a viewpoint, up to M m of path')
    args = parser.parse_args(argv[1:])
    check = shipped_check(load_fiducial_map(args.fiducials).poses)
    grid = load_map(args.map)
    share, count = coverage(grid, check, args.poses, args.seed)
    name = os.path.basename(args.map)
    print('%s: %d upright tags; a spin puts one inside the tag check\'s geometry from %.0f %% '
          'of %d free poses' % (name, len(check), 100.0 * share, count))
    if args.reach is not None:
        costs = reach(grid, check, args.poses, args.seed, args.reach)
        found = costs[np.isfinite(costs)]
        shares = ', '.join('%.0f %% within %g m' % (100.0 * np.mean(costs <= limit), limit)
                           for limit in (0.0, 1.0, 2.0, 4.0, args.reach))
        print('%s: a viewpoint (path + %.1f m/rad of turn): %s; median %.1f m where found' % (
            name, TURN_COST, shares, np.median(found) if found.size else math.nan))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
