#!/usr/bin/python3
"""Measure the scan feature of finished detection-suite runs again, from their ground truth.

The detection suite records, for every amcl pose, the through and short miss fractions the
lost detector reads (core/scan_agreement.py), and the robot's true path. The simulated laser
is a ray cast in the run's world map, so the scan of every reading can be cast again from the
true pose and measured at the recorded estimate under another rule of the feature, on the
same poses. This compares the shipped rule with ``unmapped_ends`` (beams that end in or near
unmapped space, crossing no mapped obstacle, left out)::

    /usr/bin/python3 tools/remeasure_scan.py RUN_DIR [...] [--config config/lost_detector.yaml]

For each run and in total it prints how many readings were measured again, how closely the
shipped rule reproduces the recorded through fraction (the laser's range noise is drawn
afresh), and, at right poses (the suite's found tolerance) and wrong ones (delocalized), the
share of readings whose through share (``scan_agreement.through_share``) is above the
``--config`` file's ``scan_check/through_lost`` and above its ``burst_share``, under each
rule. The scan check's numbers (hit tolerance, beams, ``min_range``, ``open_beams``) are the
stream's own; the laser is config/sim_world.yaml's (``--sim-config``). The world is the run's
``logs/detection/world.yaml`` when it ran with clutter or a map out of date, else its map;
a relative map path in ``detection.json`` is taken from ``--map-root`` (default: here).

Run with /usr/bin/python3 and the catkin devel space sourced.
"""
import argparse
import json
import os
import sys

import numpy as np
import yaml

from lost_and_found.bench import detectors
from lost_and_found.core import scan_agreement as sa
from lost_and_found.sim.gridmap import MapError, load_map
from lost_and_found.sim.laser import LaserConfig, LaserModel

HERE = os.path.dirname(os.path.abspath(__file__))

#: The rules compared: the shipped one, then ``unmapped_ends``.
RULES = (False, True)


def laser_config(path):
    """The ``laser`` group of a sim_world YAML as a validated LaserConfig.

    Raises:
        ValueError: naming the file and what is wrong with it.
    """
    try:
        with open(path) as f:
            params = yaml.safe_load(f) or {}
        config = LaserConfig(**(params.get('laser') or {}))
        config.validate()
    except (OSError, yaml.YAMLError, TypeError, ValueError) as error:
        raise ValueError('%s: no usable laser group: %s' % (path, error))
    return config


def run_inputs(run, map_root):
    """``(stream, truth, map YAML, world YAML)`` of a run folder.

    Raises:
        ValueError: naming the missing or unreadable file.
    """
    def read(name):
        path = os.path.join(run, name)
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError) as error:
            raise ValueError('%s: cannot read: %s' % (path, error))
    summary, stream, truth = (read(name) for name in (
        'detection.json', 'detection_stream.json', 'detection_truth.json'))
    map_path = summary.get('map')
    if not map_path:
        raise ValueError('%s: detection.json names no map' % run)
    if not os.path.isabs(map_path):
        map_path = os.path.join(map_root, map_path)
    world = os.path.join(run, 'logs', 'detection', 'world.yaml')
    return stream, truth, map_path, world if os.path.exists(world) else map_path


def remeasure(stream, truth, grid, world, laser):
    """Every reading with a recorded through fraction, measured again: a list of
    ``(error, recorded_through, [(through, short) or None per rule of RULES])``.

    Args:
        stream: the parsed ``detection_stream.json``.
        truth: the parsed ``detection_truth.json`` (``fields`` t, x, y, yaw; ``truth``).
        grid: the map the detector read (a GridMap).
        world: the map the laser saw (a GridMap).
        laser: the LaserConfig.
    """
    fields = stream['fields']
    column = {name: fields.index(name) for name in ('t', 'x', 'y', 'yaw', 'scan_through')}
    check = detectors.recorded_scan_check(stream.get('scan_check'))
    distance_map = sa.DistanceMap(grid.occupied, grid.resolution, grid.origin, free=grid.free)
    model = LaserModel(laser, world, np.random.default_rng(0))
    mount = sa.LaserMount(x=laser.x, y=laser.y, yaw=laser.yaw)
    path = truth['truth']
    times = [p[0] for p in path]
    out = []
    for row in stream['readings']:
        recorded = row[column['scan_through']]
        if recorded is None:
            continue
        true_pose = tuple(path[detectors.nearest_index(times, row[column['t']])][1:4])
        estimate = tuple(row[column[k]] for k in ('x', 'y', 'yaw'))
        ranges = model.scan(true_pose)
        scan = sa.Scan(tuple(ranges), laser.angle_min, model.angle_increment, laser.range_min,
                       laser.range_max)
        measured = []
        for unmapped in RULES:
            counts = sa.miss_counts(distance_map, estimate, mount, scan, check['hit_tolerance'],
                                    check['max_beams'], check['min_beams'],
                                    check['min_range'], check['open_beams'], unmapped)
            measured.append(None if counts is None else
                            (counts[0] / counts[2], counts[1] / counts[2]))
        out.append((detectors.pose_error(estimate, true_pose), recorded, measured))
    return out


def summarize(rows, thresholds, min_reach):
    """The comparison of :func:`remeasure`'s rows: a dict with ``readings``, ``reproduced``
    (share of readings whose shipped-rule through fraction is within 0.05 of the recorded
    one) and, for ``right`` and ``wrong`` readings, ``count`` and per rule the share of them
    whose through share is above each threshold (a reading without one counts as not)."""
    def share_above(group, rule, threshold):
        if not group:
            return None
        above = 0
        for _error, _recorded, measured in group:
            fractions = measured[rule]
            share = None if fractions is None else sa.through_share(*fractions, min_reach)
            above += share is not None and share > threshold
        return above / len(group)
    close = sum(1 for _e, recorded, m in rows
                if m[0] is not None and abs(m[0][0] - recorded) <= 0.05)
    result = {'readings': len(rows), 'reproduced': close / len(rows) if rows else None}
    for name, test in (('right', detectors.is_right), ('wrong', detectors.is_wrong)):
        group = [r for r in rows if test(r[0])]
        result[name] = {'count': len(group), 'above': [
            [share_above(group, rule, t) for t in thresholds] for rule in range(len(RULES))]}
    return result


def table(results, thresholds):
    """A Markdown table of :func:`summarize` results, ``[(name, result)]``."""
    def pct(value):
        return '-' if value is None else '%.1f %%' % (100.0 * value)
    heads = ['run', 'readings', 'reproduced']
    for group in ('right', 'wrong'):
        heads.append('%s poses' % group)
        heads += ['%s, share > %g: %s' % (group, t, rule) for t in thresholds
                  for rule in ('shipped', 'unmapped_ends')]
    lines = ['| ' + ' | '.join(heads) + ' |', '|' + '---|' * len(heads)]
    for name, r in results:
        cells = [name, str(r['readings']), pct(r['reproduced'])]
        for group in ('right', 'wrong'):
            g = r[group]
            cells.append(str(g['count']))
            cells += [pct(g['above'][rule][i]) for i in range(len(thresholds))
                      for rule in range(len(RULES))]
        lines.append('| ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


def main(argv=None):
    """Measure again and print the table; exit 1 with a message on bad input."""
    p = argparse.ArgumentParser(description='Measure the scan feature of detection-suite runs '
                                'again from their ground truth, as shipped and with '
                                'unmapped_ends.')
    p.add_argument('runs', nargs='+', metavar='RUN_DIR')
    p.add_argument('--config', default=os.path.join(HERE, '..', 'config', 'lost_detector.yaml'),
                   help='lost_detector YAML whose through_lost and burst_share to count above')
    p.add_argument('--sim-config', default=os.path.join(HERE, '..', 'config', 'sim_world.yaml'),
                   help='sim_world YAML whose laser the runs simulated')
    p.add_argument('--map-root', default='.', help='folder relative map paths start from')
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        config = detectors.load_detector_config(args.config)
        laser = laser_config(args.sim_config)
        thresholds = (config.through_lost, config.burst_share)
        results, every = [], []
        for run in args.runs:
            stream, truth, map_path, world_path = run_inputs(run, args.map_root)
            grid = load_map(map_path)
            world = grid if world_path == map_path else load_map(world_path)
            rows = remeasure(stream, truth, grid, world, laser)
            every += rows
            results.append((run, summarize(rows, thresholds, config.through_min_reach)))
            print('%s: %d readings measured again' % (run, len(rows)), file=sys.stderr)
    except (ValueError, MapError, OSError) as error:
        print('remeasure_scan: %s' % error, file=sys.stderr)
        return 1
    if len(results) > 1:
        results.append(('all', summarize(every, thresholds, config.through_min_reach)))
    print(table(results, thresholds))
    return 0


if __name__ == '__main__':
    sys.exit(main())
