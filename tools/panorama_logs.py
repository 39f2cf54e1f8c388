#!/usr/bin/python3
"""The panorama fix on real laser data: the Intel and ACES Carmen logs, offline.

Usage: tools/panorama_logs.py [--logs DIR] [--maps DIR] [--beam-step 2] [--max-matches N]

panorama_localizer matches a full turn's laser returns against the map and publishes the best
place only when no other scores within ``keep`` of it (core/panorama.py). The benchmarks' world
is the map itself; these logs are real: a SICK laser in a building mapped by SLAM, with the
people, open doors and furniture of the day. For each log of the real-logs suite that is
present (bench/real_logs.py's LOGS: the log, its map and the log -> map alignment in the map
YAML), this walks the scans in time order as the node would while lost: each scan's returns
(every ``--beam-step``-th beam with a range below the laser's maximum) placed in the odometry
frame by the log's raw wheel odometry (carmen.raw_odometry: its real drift), the headings the
laser looked at marked; after a full turn of headings it matches the panorama (the settings of
config/panorama_localizer.yaml), judges the best place against the truth at the last scan (the
corrected pose moved onto the map where its scan fits better, as the real-logs suite does:
carmen.register_truth), and starts again. The robot drives rather than spins, so a full turn
of headings gathers returns along several metres of its way, odometry's drift with them.

Prints, per log, a Markdown table: matches; best place right (within 0.45 m and 0.35 rad, the
recovery suite's tolerance); best places that stand alone, and of those the right ones; fixes
(alone and scoring at least ``min_score``) and the right ones; the errors of the wrong fixes;
the median best score. Writes nothing; skips a log whose files are absent.
"""
import argparse
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CONFIG = os.path.join(ROOT, 'config', 'panorama_localizer.yaml')


def matches_of(data, matcher, config, beam_step, limit):
    """``[(scan index, match)]`` of the log's full turns, in time order (at most ``limit``)."""
    import numpy as np
    from lost_and_found.bench import carmen
    from lost_and_found.core.panorama import Panorama
    panorama = Panorama(config.cell)
    angles = carmen.ANGLE_MIN + carmen.ANGLE_INCREMENT * np.arange(len(data.scans[0][1]))
    angles = angles[::beam_step]
    out = []
    for i, (_t, ranges, odom) in enumerate(data.scans):
        ranges = np.asarray(ranges, dtype=float)[::beam_step]
        x, y, yaw = carmen.compose(odom, (data.laser_offset, 0.0, 0.0))
        ok = np.isfinite(ranges) & (ranges > 0.0) & (ranges < data.max_range)
        beams = yaw + angles
        panorama.add(x + ranges[ok] * np.cos(beams[ok]), y + ranges[ok] * np.sin(beams[ok]))
        panorama.look(beams[0], beams[-1])
        if not panorama.looked_round():
            continue
        points = panorama.around(odom, config.max_range)
        panorama.clear()
        match = matcher.match(points)
        if match is not None:
            out.append((i, match))
            if len(out) >= limit:
                break
    return out


def main(argv):
    import yaml
    from lost_and_found.bench import carmen
    from lost_and_found.bench.detectors import FOUND_XY, FOUND_YAW, detector_map, pose_error
    from lost_and_found.bench.real_logs import LOGS
    from lost_and_found.core.config import config_from_params
    from lost_and_found.core.panorama import PanoramaConfig, PanoramaMatcher
    from lost_and_found.sim.gridmap import load_map
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--logs', default=os.path.join(ROOT, '..', 'shared', 'data', 'logs'))
    parser.add_argument('--maps', default=os.path.join(ROOT, '..', 'shared', 'data', 'maps'))
    parser.add_argument('--beam-step', type=int, default=2,
                        help='every n-th of the 180 beams (default 2)')
    parser.add_argument('--max-matches', type=int, default=100000)
    args = parser.parse_args(argv)
    if args.beam_step < 1 or args.max_matches < 1:
        parser.error('--beam-step and --max-matches: at least 1')
    with open(CONFIG) as stream:
        config = config_from_params(PanoramaConfig, yaml.safe_load(stream))
    for name, log_file, map_file, max_range in LOGS:
        log_path, map_path = (os.path.join(args.logs, log_file),
                              os.path.join(args.maps, map_file))
        if not (os.path.isfile(log_path) and os.path.isfile(map_path)):
            print('## %s: skipped (no %s or no %s)\n' % (name, log_path, map_path))
            continue
        try:
            log = carmen.read_log(log_path)
            data = carmen.replay_data(log, carmen.read_alignment(map_path), max_range)
            distance_map = detector_map(load_map(map_path))
            matcher = PanoramaMatcher(distance_map, config)
        except (ValueError, OSError) as error:     # CarmenError and MapError too
            sys.exit('panorama_logs: %s' % error)
        found = matches_of(data, matcher, config, args.beam_step, args.max_matches)
        # the truth at each match's last scan, registered on the map as the suite does
        picked = data._replace(truth=[data.truth[i] for i, _ in found],
                               scans=[data.scans[i] for i, _ in found])
        truth = carmen.register_truth(picked, distance_map).truth
        right = alone = alone_right = fixes = fixes_right = 0
        wrong, scores = [], []
        for (_i, match), (_t, x, y, yaw) in zip(found, truth):
            error_xy, error_yaw = pose_error(match.pose, (x, y, yaw))
            ok = error_xy <= FOUND_XY and error_yaw <= FOUND_YAW
            right += ok
            alone += match.alone
            alone_right += match.alone and ok
            fix = match.is_fix(config)
            fixes += fix
            fixes_right += fix and ok
            if fix and not ok:
                wrong.append('%.1f m / %.0f deg' % (error_xy, math.degrees(error_yaw)))
            scores.append(match.score)

        def pct(a, b):
            return '%d (%.0f %%)' % (a, 100.0 * a / b) if b else '%d' % a
        print('## %s (%s; every %d. beam)\n' % (name, log_path, args.beam_step))
        print('| matches | best place right | stands alone | alone and right | fixes | '
              'fixes right | wrong fixes (error) | best score (median) |')
        print('|---|---|---|---|---|---|---|---|')
        print('| %d | %s | %s | %s | %s | %s | %s | %s |\n' % (
            len(found), pct(right, len(found)), pct(alone, len(found)),
            pct(alone_right, alone), pct(fixes, len(found)), pct(fixes_right, fixes),
            ', '.join(wrong) or '-',
            '%.2f' % statistics.median(scores) if scores else '-'))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
