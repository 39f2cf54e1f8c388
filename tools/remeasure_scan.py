#!/usr/bin/python3
"""Measure the scan feature of finished detection-suite runs again, from their ground truth.

The detection suite records, for every amcl pose, the through and short miss fractions the
lost detector reads (core/scan_agreement.py), and the robot's true path. The simulated laser
is a ray cast in the run's world map, so the scan of every reading can be cast again from the
true pose and measured at the recorded estimate under another rule of the feature, on the
same poses. This compares the shipped rule with ``unmapped_ends`` (beams that end in or near
unmapped space, crossing no mapped obstacle, left out)::

    /usr/bin/python3 tools/remeasure_scan.py RUN_DIR [...] [--config config/lost_detector.yaml] \
        [--write OUT_DIR]

For each run and in total it prints how many readings were measured again, how closely the
rule the run was recorded with (its stream's ``scan_check``) reproduces the recorded through
fraction (the laser's range noise is drawn afresh), and, at right poses (the suite's found
tolerance) and wrong ones (delocalized), the share of readings whose through share
(``scan_agreement.through_share``) is above the ``--config`` file's
``scan_check/through_lost`` and above its ``burst_share``, under each rule. The scan check's
numbers (hit tolerance, beams, ``min_range``, ``open_beams``) are the stream's own; the
laser is config/sim_world.yaml's (``--sim-config``) with the run's own settings (``bench
--laser-no-return``, from its ``sim_params.yaml``). The world is the run's
``logs/detection/world.yaml`` when it ran with clutter or a map out of date, else its map; a
relative map path in ``detection.json`` is taken from ``--map-root`` (default: here).

With ``--write OUT_DIR`` it also writes a copy of each run (``OUT_DIR/<run's folder name>``:
its ``detection.json``, ``detection_truth.json`` and a ``detection_stream.json`` whose scan
columns, every one the suite records, are measured again with ``unmapped_ends`` on, as the
stream's ``scan_check`` says), for tools/calibrate_detector.py, tools/detector_variants.py
and tools/rescore_detection.py to score a detector file with ``scan_check/unmapped_ends:
true`` on the same poses (``--write-rule shipped``: measured again as recorded, a control).

Run with /usr/bin/python3 and the catkin devel space sourced.
"""
import argparse
import dataclasses
import json
import os
import shutil
import sys

import numpy as np
import yaml

from lost_and_found.bench import detection, detectors, report, simrun
from lost_and_found.core import scan_agreement as sa
from lost_and_found.core.lost_detector import LostDetectorConfig
from lost_and_found.sim.gridmap import MapError, load_map
from lost_and_found.sim.laser import LaserConfig, LaserModel

HERE = os.path.dirname(os.path.abspath(__file__))

#: The rules compared: the shipped one, then ``unmapped_ends``.
RULES = (False, True)
#: How far (s) a scan's stamp may be from its pose's: the scans cast again carry the pose's.
STAMP_TOLERANCE = 0.01


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


def run_laser(run, laser):
    """``laser`` with the run's own laser settings (``bench --laser-no-return``, written to its
    ``sim_params.yaml`` under ``logs``), if it has any.

    Raises:
        ValueError: naming the file when they are unreadable or bad.
    """
    for folder, _dirs, files in sorted(os.walk(os.path.join(run, 'logs'))):
        if 'sim_params.yaml' in files:
            path = os.path.join(folder, 'sim_params.yaml')
            try:
                with open(path) as f:
                    params = yaml.safe_load(f) or {}
                overrides = (params.get('sim_world') or {}).get('laser') or {}
                laser = dataclasses.replace(laser, **overrides)
                laser.validate()
            except (OSError, yaml.YAMLError, TypeError, ValueError, AttributeError) as error:
                raise ValueError('%s: bad laser settings: %s' % (path, error))
            return laser
    return laser


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


def laser_mount(laser):
    """The LaserMount of a LaserConfig."""
    return sa.LaserMount(x=laser.x, y=laser.y, yaw=laser.yaw)


def remeasure(stream, scans, distance_map, laser):
    """Every reading with a recorded through fraction, measured again: a list of
    ``(error, recorded_through, [(through, short) or None per rule of RULES], recorded_rule)``,
    ``recorded_rule`` the index in RULES of the rule the run was recorded with.

    Args:
        stream: the parsed ``detection_stream.json``.
        scans: its :func:`laser_scans`.
        distance_map: the map the detector read (``detectors.detector_map``).
        laser: the LaserConfig.
    """
    fields = stream['fields']
    column = {name: fields.index(name) for name in ('x', 'y', 'yaw', 'scan_through')}
    check = detectors.recorded_scan_check(stream.get('scan_check'))
    mount = laser_mount(laser)
    recorded_rule = RULES.index(bool(check.get('unmapped_ends', False)))
    out = []
    for row, true_pose, scan in scans:
        if row[column['scan_through']] is None:
            continue
        estimate = tuple(row[column[k]] for k in ('x', 'y', 'yaw'))
        measured = []
        for unmapped in RULES:
            counts = sa.miss_counts(distance_map, estimate, mount, scan, check['hit_tolerance'],
                                    check['max_beams'], check['min_beams'],
                                    check['min_range'], check['open_beams'], unmapped)
            measured.append(None if counts is None else
                            (counts[0] / counts[2], counts[1] / counts[2]))
        out.append((detectors.pose_error(estimate, true_pose), row[column['scan_through']],
                    measured, recorded_rule))
    return out


def had_scan(row, column):
    """Whether a stream row was measured against a scan: any of its scan columns holds a
    value (its own measure may have had too few beams where the open beams had enough)."""
    def filled(value):
        if isinstance(value, (list, tuple)):
            return any(filled(v) for v in value)
        return value is not None
    return any(filled(row[i]) for name, i in column.items() if name.startswith('scan_'))


def laser_scans(stream, truth, world, laser):
    """``[(row, true pose, scan)]`` of every reading of ``stream`` that was measured against
    a scan (:func:`had_scan`): its scan cast again from the true pose in ``world`` (a
    :class:`scan_agreement.Scan`), once for every use of the run."""
    fields = stream['fields']
    t_column = fields.index('t')
    column = {name: i for i, name in enumerate(fields)}
    model = LaserModel(laser, world, np.random.default_rng(0))
    path = truth['truth']
    times = [p[0] for p in path]
    scans = []
    for row in stream['readings']:
        if not had_scan(row, column):
            continue
        true_pose = tuple(path[detectors.nearest_index(times, row[t_column])][1:4])
        ranges = model.scan(true_pose)
        scans.append((row, true_pose, sa.Scan(tuple(ranges), laser.angle_min,
                                              model.angle_increment, laser.range_min,
                                              laser.range_max)))
    return scans


def remeasured_stream(stream, scans, distance_map, laser, unmapped_ends=True):
    """``stream`` with the scan columns of every reading that has them measured again with
    ``unmapped_ends`` on or off (the other readings as they were), in the suite's columns
    (arguments as :func:`remeasure`)."""
    check = dict(detectors.recorded_scan_check(stream.get('scan_check')),
                 unmapped_ends=unmapped_ends)
    checker = sa.ScanChecker.from_config(LostDetectorConfig(
        stamp_tolerance=STAMP_TOLERANCE, **{key: check[key] for key in detectors.SCAN_CHECK_KEYS}))
    checker.distance_map = distance_map
    mount = laser_mount(laser)
    fields = stream['fields']
    column = {name: fields.index(name) for name in detection.STREAM_FIELDS[:11]}
    measured = {}
    for row, _truth, scan in scans:
        checker.clear_scans()
        checker.add_scan(row[column['t']], scan, mount)
        measured[id(row)] = simrun.measure_reading(checker, [row[column[k]] for k in (
            't', 'x', 'y', 'yaw')])
    readings = []
    for row in stream['readings']:
        head = [row[column[k]] for k in detection.STREAM_FIELDS[:8]]
        values = measured.get(id(row))
        if values is None:      # no scan was recorded for it: as it was
            old = dict(zip(fields, row))
            values = tuple(old.get(k) for k in detection.STREAM_FIELDS[11:])
            readings.append(head + [old['error_xy'], old['error_yaw'], old['phase']] +
                            list(values))
            continue
        readings.append(detection.stream_row(tuple(head) + values, (
            row[column['error_xy']], row[column['error_yaw']]), row[column['phase']]))
    return dict(stream, scan_check=check, min_ranges=list(detectors.MIN_RANGES),
                fields=list(detection.STREAM_FIELDS), readings=readings)


def write_run(run, out, stream, scans, distance_map, laser, unmapped_ends=True):
    """Write the copy of ``run`` measured again (module docstring) into ``out`` (arguments
    as :func:`remeasured_stream`)."""
    os.makedirs(out, exist_ok=True)
    for name in ('detection.json', 'detection_truth.json'):
        shutil.copyfile(os.path.join(run, name), os.path.join(out, name))
    report.write_json(os.path.join(out, 'detection_stream.json'),
                      remeasured_stream(stream, scans, distance_map, laser, unmapped_ends))


def summarize(rows, thresholds, min_reach):
    """The comparison of :func:`remeasure`'s rows: a dict with ``readings``,
    ``reproduced`` (share of readings whose through fraction under the rule their run
    was recorded with is within 0.05 of the recorded one) and, for ``right`` and
    ``wrong`` readings, ``count`` and per rule the share of them whose through share is
    above each threshold (a reading without one counts as not)."""
    def share_above(group, rule, threshold):
        if not group:
            return None
        above = 0
        for _error, _recorded, measured, _rule in group:
            fractions = measured[rule]
            share = None if fractions is None else sa.through_share(*fractions, min_reach)
            above += share is not None and share > threshold
        return above / len(group)
    close = sum(1 for _e, recorded, m, rule in rows
                if m[rule] is not None and abs(m[rule][0] - recorded) <= 0.05)
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
    p.add_argument('--write', metavar='OUT_DIR', help='also write each run measured again '
                   'with unmapped_ends into OUT_DIR/<its folder name>')
    p.add_argument('--write-rule', choices=('unmapped_ends', 'shipped'), default='unmapped_ends',
                   help='the rule --write measures with (shipped: a control of how closely '
                   'the runs are measured again)')
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        config = detectors.load_detector_config(args.config)
        default_laser = laser_config(args.sim_config)
        thresholds = (config.through_lost, config.burst_share)
        results, every = [], []
        for run in args.runs:
            stream, truth, map_path, world_path = run_inputs(run, args.map_root)
            grid = load_map(map_path)
            world = grid if world_path == map_path else load_map(world_path)
            laser = run_laser(run, default_laser)
            scans = laser_scans(stream, truth, world, laser)
            distance_map = detectors.detector_map(grid)
            rows = remeasure(stream, scans, distance_map, laser)
            if args.write:
                out = os.path.join(args.write, os.path.basename(os.path.normpath(run)))
                if os.path.realpath(out) == os.path.realpath(run):
                    raise ValueError('--write %s would overwrite %s' % (args.write, run))
                write_run(run, out, stream, scans, distance_map, laser,
                          args.write_rule == 'unmapped_ends')
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
