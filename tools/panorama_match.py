#!/usr/bin/python3
"""How often a full turn's laser returns find a lost robot in the map: the panorama fix,
offline.

Usage: tools/panorama_match.py MAP.yaml --fiducials FID.yaml [--poses 200] [--seed 7]
       [--all] [--cell C] [--headings N] [--sigma S] [--keep K] [--min-points N]
       [--max-range R] [--turn-drift D] [--parts DEG,DEG,...] [--clutter D]

panorama_localizer (core/panorama.py) matches the returns of a full turn, placed by odometry,
against every free place and heading of the map, and publishes the best place as a fix only
when no other place scores within ``keep`` of it. This tool measures, without ROS, how often
that best place is right and how often a fix would be published and be right, on put-downs
drawn as the recovery suite draws them (uniform over the map's free region, ``CLEARANCE`` from
walls, a uniform heading); by default only those whose turn shows the camera no tag (the
put-downs that need a search; ``--all`` keeps every one).

Each put-down's turn is simulated with the laser of ``config/sim_world.yaml`` (one scan every
1 / ``scan_rate`` s at the recovery node's ``spin_speed``; every ``BEAM_STEP``-th beam, as the
node's ``beam_step``), each return placed in the frame of the robot at the put-down with a
heading error growing to ``--turn-drift`` (rad, standard deviation) by the end of the turn
(odometry's). The world is the map itself: nothing unmapped stands in it, so this is the
matcher's best case; ``--clutter D`` puts about D unmapped boxes per 100 m^2 of free space
into the world the laser and the camera see (as ``bench --clutter``: ``bench/clutter.py``,
the same boxes for the same seed), while the matcher keeps the map. ``--cell``,
``--headings``, ``--sigma``, ``--keep``, ``--min-points`` and ``--max-range`` default to
``config/panorama_localizer.yaml``'s values (PanoramaConfig's).

Prints, per map, a Markdown table: put-downs tried; the best place within the recovery
suite's tolerance of the truth (0.45 m, 0.35 rad: "recovered"); best places that stand alone,
and of those the right ones; fixes (alone and scoring at least ``min_score``) and the right
ones; the median best score; the scores of lone places that were wrong; the lowest score of
a right fix; the median seconds per match. With ``--parts``, a second table: for each body
turn given, the share of the headings the laser has looked at by then (``partial_share``'s
measure), the fixes a match of the turn so far gives (right, wrong: every part is matched,
also after an earlier part's fix, which the node would not do), and the put-downs whose
first fix over the parts up to it is right or wrong. Writes nothing.
"""
import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

#: Beams of each simulated scan used (every n-th): panorama_localizer's beam_step.
BEAM_STEP = 8
#: The simulator's configuration: its laser, and its scan rate.
SIM_WORLD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'config',
                         'sim_world.yaml')


def turn_scans(laser, pose, scans, drift, rng):
    """The returns of each of the ``scans`` scans of one turn from ``pose`` (scan k at
    360 k / ``scans`` deg), in the put-down's base frame, with a heading error growing
    linearly to a normal(0, ``drift``) draw by the turn's end: a list of ``(n, 2)`` arrays."""
    import numpy as np
    x, y, yaw = pose
    error = rng.normal(0.0, drift) if drift > 0 else 0.0
    points = []
    beams = laser.angles[::BEAM_STEP]
    offsets = laser.config.x, laser.config.y
    for k in range(scans):
        turned = 2.0 * math.pi * k / scans
        ranges = laser.scan((x, y, yaw + turned))[::BEAM_STEP]
        ok = np.isfinite(ranges)
        # In the put-down's frame, as odometry has it.
        believed = turned + error * k / max(1, scans - 1)
        c, s = math.cos(believed), math.sin(believed)
        lx = c * offsets[0] - s * offsets[1]
        ly = s * offsets[0] + c * offsets[1]
        a = believed + laser.config.yaw + beams[ok]
        points.append(np.stack([lx + ranges[ok] * np.cos(a), ly + ranges[ok] * np.sin(a)], 1))
    return points


def main(argv):
    import numpy as np
    from first_spin import spin_views, turn_frames
    from lost_and_found.bench.detectors import FOUND_XY, FOUND_YAW, detector_map, pose_error
    from lost_and_found.bench.oracle import (_config_number, _tag_arrays, load_camera_config,
                                             localizer_acceptance)
    from lost_and_found.bench.places import CLEARANCE, FreeSpace, PlacesError
    from lost_and_found.core.config import ConfigError
    from lost_and_found.core.fiducial import load_fiducial_map
    from lost_and_found.core.recovery import RecoveryConfig
    from lost_and_found.core.panorama import Panorama, PanoramaConfig, PanoramaMatcher
    from lost_and_found.bench.clutter import STREAM as CLUTTER_STREAM, add_clutter
    from lost_and_found.sim.gridmap import GridMap, load_map
    from lost_and_found.sim.laser import LaserModel
    from remeasure_scan import laser_config
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('map', metavar='MAP.yaml')
    parser.add_argument('--fiducials', required=True, help='the fiducial YAML')
    parser.add_argument('--poses', type=int, default=200, help='put-downs (default 200)')
    parser.add_argument('--seed', type=int, default=7)
    parser.add_argument('--all', action='store_true',
                        help='keep the put-downs whose turn shows a tag too')
    defaults = PanoramaConfig()
    parser.add_argument('--cell', type=float, default=defaults.cell, help='search grid (m)')
    parser.add_argument('--headings', type=int, default=defaults.headings,
                        help='headings per place')
    parser.add_argument('--sigma', type=float, default=defaults.sigma,
                        help='field width (m)')
    parser.add_argument('--keep', type=float, default=defaults.keep,
                        help='a place scoring this share of the best is a rival')
    parser.add_argument('--min-points', type=int, default=defaults.min_points,
                        help='the fewest returns a match needs')
    parser.add_argument('--max-range', type=float, default=defaults.max_range,
                        help='the farthest return used (m)')
    parser.add_argument('--turn-drift', type=float, default=0.02,
                        help='odometry heading error by the end of the turn (rad, sd)')
    parser.add_argument('--clutter', type=float, default=0.0,
                        help='unmapped boxes per 100 m^2 of free space in the world (default 0)')
    parser.add_argument('--parts', default='',
                        help='body turns (deg, comma-separated) at which the turn so far is '
                        'matched too (partial_share); a second table says how each fares')
    args = parser.parse_args(argv)
    try:
        parts = sorted({float(v) for v in args.parts.split(',') if v.strip()})
    except ValueError:
        sys.exit('panorama_match: --parts %r: give degrees, comma-separated' % args.parts)
    if any(not 0.0 < v < 360.0 for v in parts):
        sys.exit('panorama_match: --parts %r: each must be between 0 and 360' % args.parts)
    try:
        grid = load_map(args.map)
        fiducials = load_fiducial_map(args.fiducials)
        _ids, tags = _tag_arrays(fiducials)
        world = grid
        if args.clutter:
            world, boxes = add_clutter(grid, np.random.default_rng([args.seed, CLUTTER_STREAM]),
                                       args.clutter)
            print('clutter: %d boxes (%g per 100 m^2 of free space)\n' % (len(boxes),
                                                                          args.clutter))
        free = FreeSpace(GridMap(grid.occupied | world.occupied, grid.free & world.free,
                                 grid.resolution, grid.origin), CLEARANCE)
        camera_rate = _config_number(None, 'sim_world.yaml', 'camera_rate')
        scan_rate = _config_number(None, 'sim_world.yaml', 'scan_rate')
        laser = LaserModel(laser_config(SIM_WORLD), world, np.random.default_rng(args.seed + 1))
    except (ValueError, ConfigError, PlacesError, OSError) as error:
        sys.exit('panorama_match: %s' % error)
    camera, acceptance = load_camera_config(None, exact=False), localizer_acceptance()
    spin_speed = RecoveryConfig().spin_speed
    frames = turn_frames(spin_speed, camera_rate)
    scans = max(1, int(round(2.0 * math.pi / spin_speed * scan_rate)))
    try:
        config = PanoramaConfig(cell=args.cell, headings=args.headings, sigma=args.sigma,
                                keep=args.keep, min_points=args.min_points,
                                max_range=args.max_range).validate()
        matcher = PanoramaMatcher(detector_map(grid), config)
    except ValueError as error:     # a ConfigError too
        sys.exit('panorama_match: %s' % error)
    rng = np.random.default_rng(args.seed)
    tried = right_place = unambiguous = unambiguous_right = fixes = fixes_right = 0
    seconds, scores, wrong_scores, right_fix_scores = [], [], [], []
    # per part: fixes right and wrong; put-downs whose first fix (over the parts so far)
    # came here or earlier, right and wrong
    part_counts = {v: [0, 0, 0, 0] for v in parts}
    part_scans = {v: min(scans, int(math.floor(v / 360.0 * scans + 1e-9)) + 1) for v in parts}
    part_shares = {}
    beams = laser.config.yaw + laser.angles[::BEAM_STEP]
    for degrees in parts:          # the headings a part has looked at, as the node marks them
        marks = Panorama(config.cell)
        for k in range(part_scans[degrees]):
            turned = 2.0 * math.pi * k / scans
            marks.look(turned + beams[0], turned + beams[-1])
        part_shares[degrees] = marks.looked_share()
    for _ in range(args.poses):
        pose = free.sample(rng)
        if not args.all:
            seen, _kept = spin_views(world, camera, tags, acceptance, pose, frames)
            if any(seen):
                continue
        tried += 1
        gathered = Panorama(config.cell)
        per_scan = turn_scans(laser, pose, scans, args.turn_drift, rng)
        points = np.concatenate(per_scan) if per_scan else np.zeros((0, 2))
        gathered.add(points[:, 0], points[:, 1])
        first = None
        for degrees in parts:
            part = Panorama(config.cell)
            some = np.concatenate(per_scan[:part_scans[degrees]])
            part.add(some[:, 0], some[:, 1])
            found = matcher.match(part.around((0.0, 0.0, 0.0), config.max_range))
            if found is not None and found.is_fix(config):
                error_xy, error_yaw = pose_error(found.pose, pose)
                ok = error_xy <= FOUND_XY and error_yaw <= FOUND_YAW
                part_counts[degrees][0 if ok else 1] += 1
                first = ok if first is None else first
            if first is not None:
                part_counts[degrees][2 if first else 3] += 1
        start = time.perf_counter()
        match = matcher.match(gathered.around((0.0, 0.0, 0.0), config.max_range))
        seconds.append(time.perf_counter() - start)
        if match is None:
            continue
        scores.append(match.score)
        error_xy, error_yaw = pose_error(match.pose, pose)
        right = error_xy <= FOUND_XY and error_yaw <= FOUND_YAW
        right_place += right
        unambiguous += match.alone
        unambiguous_right += match.alone and right
        fixes += match.is_fix(config)
        fixes_right += match.is_fix(config) and right
        if match.is_fix(config) and right:
            right_fix_scores.append(match.score)
        if match.alone and not right:
            wrong_scores.append(match.score)
    print('## %s (%s put-downs)\n' % (args.map, 'all' if args.all else 'turn shows no tag'))
    print('| put-downs | best place right | stands alone | alone and right | fixes (alone, '
          'score >= %.2f) | fixes right | best score (median) | scores of wrong lone places '
          '| lowest score of a right fix | s per match (median) |' % config.min_score)
    print('|---|---|---|---|---|---|---|---|---|---|')

    def pct(a, b):
        return '%d (%.0f %%)' % (a, 100.0 * a / b) if b else '%d' % a
    print('| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
        tried, pct(right_place, tried), pct(unambiguous, tried),
        pct(unambiguous_right, unambiguous), pct(fixes, tried), pct(fixes_right, fixes),
        '%.2f' % statistics.median(scores) if scores else '-',
        ', '.join('%.2f' % v for v in sorted(wrong_scores)) or '-',
        '%.2f' % min(right_fix_scores) if right_fix_scores else '-',
        '%.2f' % statistics.median(seconds) if seconds else '-'))
    if parts:
        print('\n| body turn (deg) | s into the turn | headings looked at | fixes right | '
              'fixes wrong | put-downs fixed by here: first fix right | first fix wrong |')
        print('|---|---|---|---|---|---|---|')
        for degrees in parts:
            counts = part_counts[degrees]
            print('| %.0f | %.1f | %.2f | %d | %d | %d | %d |' % (
                degrees, math.radians(degrees) / spin_speed, part_shares[degrees], *counts))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
