#!/usr/bin/python3
"""Score the lost detector's strip rule (rule 9, ``strip_check/*``) on recorded detection runs.

The detection suite keeps each reading's scan with its odometry (``detection_returns.json``);
this measures every reading's strip once per window (its score at amcl's estimate and, where
that is low enough to matter, the best place of the map: core/strip_check.py), then replays the
lost detector of ``--base`` with rule 9 at every combination of the other numbers, as the node
runs it, and scores each as the detection suite does::

    /usr/bin/python3 tools/strip_rule.py RUN [RUN ...] --base config/lost_detector.yaml \\
        [--windows 10] [--ratios 0.5 0.6 0.7] [--rules 2/3 3/5 4/5 5/8] \\
        [--min-distances 0.5 1 2] [--min-points 100]

Prints one line per combination, fewest false tier-2 alarms (normal driving and settling,
every run) first, then most silent delocalizations of >= 2 m caught within 15 s of driving,
and the base file's own line. Choose on training runs (lab, the Stata basement, seeds >= 100);
score a chosen file on held-out runs with tools/rescore_detection.py --map.

With one value of every number, ``--write YAML`` also writes that rule, with its training score
and this command, as the ``strip_check:`` section at the end of YAML (replacing one there;
tools/calibrate_detector.py --keep-fit keeps it)::

    /usr/bin/python3 tools/strip_rule.py RUN [RUN ...] --base config/lost_detector.yaml \
        --ratios 0.6 --rules 4/5 --min-distances 1 --slacks 0.3/0.2 \
        --write config/lost_detector.yaml

Each run's map is the one its ``detection.json`` names (relative paths are tried from here
and from the package's root), or ``--map RUN_DIR=MAP.yaml``. Run with /usr/bin/python3 and the
catkin devel space sourced.
"""
import argparse
import dataclasses
import itertools
import os
import shlex
import sys

from lost_and_found.bench import calibration, detection, detectors, report
from lost_and_found.core.strip_check import StripCheck, is_low
from lost_and_found.sim.gridmap import load_map

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parser():
    """The command line."""
    p = argparse.ArgumentParser(description='Score the strip rule (strip_check/*) on recorded '
                                'detection runs.')
    p.add_argument('runs', nargs='+', metavar='RUN_DIR', help='output folders of '
                   '`bench detection` with detection_returns.json')
    p.add_argument('--base', default=os.path.join(ROOT, 'config', 'lost_detector.yaml'),
                   help='the lost_detector YAML the rule is added to')
    p.add_argument('--windows', type=float, nargs='+', default=[10.0],
                   help='seconds of scans in a strip (strip_check/window)')
    p.add_argument('--ratios', type=float, nargs='+', default=[0.5, 0.6, 0.7],
                   help='strip_check/ratio values')
    p.add_argument('--rules', nargs='+', default=['2/3', '3/5', '4/5', '5/8'],
                   help='COUNT/READINGS pairs (strip_check/count, strip_check/readings)')
    p.add_argument('--min-distances', type=float, nargs='+', default=[0.5, 1.0, 2.0],
                   help='strip_check/min_distance values (m)')
    p.add_argument('--min-points', type=int, default=100, help='strip_check/min_points')
    p.add_argument('--slacks', nargs='+', default=['0/0'],
                   help='XY/YAW pairs (strip_check/slack_xy m, slack_yaw rad)')
    p.add_argument('--map', action='append', default=[], metavar='RUN_DIR=MAP',
                   help='the map of a run whose detection.json does not name one that exists')
    p.add_argument('--write', metavar='YAML', help='with one value of every number: write '
                   'the rule as the strip_check section at the end of YAML')
    return p


#: What the YAML says above the strip rule's keys (the training score and command are added).
STRIP_TEXT = (
    'Rule 9 (core/lost_detector.py, core/strip_check.py): the returns of the last window '
    'seconds of scans, placed by odometry (tf odom_frame -> scan_check/base_frame), scored at '
    'amcl\'s estimate (the best pose within slack_xy m and slack_yaw rad of it) under a '
    'likelihood field; a reading is low when that is below ratio of the best place of the map, '
    'more than min_distance m away; tier 2 when count of the last readings settled readings '
    'with a strip verdict are low; count 0: off. amcl can keep a wrong estimate that fits each '
    'scan on its own; the wheels do not follow its nudges. Chosen on the training runs by '
    'tools/strip_rule.py (bench/RESULTS.md, "Several scans at once, placed by odometry").')


def strip_section(config, score, command):
    """The strip_check section of the YAML for ``config``, under its comment."""
    how = ' Training runs: %d/%d silent delocalizations >= 2 m caught within 15 s of driving, ' \
        '%d + %d false tier-2 alarms in normal driving + settling; redo: %s' % (
            tuple(score) + (command,))
    lines = ['# The strip rule, written by tools/strip_rule.py --write: do not edit by hand.',
             'strip_check:'] + calibration._indented(STRIP_TEXT + how) + [
        '  count: %d' % config.strip_count,
        '  readings: %d' % config.strip_readings,
        '  window: %s' % calibration._yaml_float(config.strip_window),
        '  min_points: %d' % config.strip_min_points,
        '  ratio: %s' % calibration._yaml_float(config.strip_ratio),
        '  min_distance: %s' % calibration._yaml_float(config.strip_min_distance),
        '  slack_xy: %s' % calibration._yaml_float(config.strip_slack_xy),
        '  slack_yaw: %s' % calibration._yaml_float(config.strip_slack_yaw)]
    return '\n'.join(lines) + '\n'


def write_rule(path, config, score, command):
    """Write ``config``'s strip rule into the YAML at ``path`` and check it loads so."""
    with open(path) as stream:
        text = stream.read()
    text = calibration.with_strip_section(text, strip_section(config, score, command))
    scratch = path + '.tmp'
    with open(scratch, 'w') as stream:
        stream.write(text)
    loaded = detectors.load_detector_config(scratch)
    if loaded != config:
        raise ValueError('%s does not load as the rule written; left in %s' % (path, scratch))
    os.replace(scratch, path)


def pairs(texts, option, form, convert, ok, need):
    """``[(a, b)]`` of ``A/B`` texts given to ``option``, each ``convert``-ed and satisfying
    ``ok(a, b)``; ValueError naming a bad one (``form`` and ``need`` say what is wanted)."""
    out = []
    for text in texts:
        try:
            a, b = (convert(v) for v in text.split('/'))
        except ValueError:
            raise ValueError('%s %s: must be %s' % (option, text, form)) from None
        if not ok(a, b):
            raise ValueError('%s %s: need %s' % (option, text, need))
        out.append((a, b))
    return out


def rules(texts):
    """``[(count, readings)]`` of ``COUNT/READINGS`` texts; ValueError naming a bad one."""
    return pairs(texts, '--rules', 'COUNT/READINGS, whole numbers', int,
                 lambda count, readings: 1 <= count <= readings, '1 <= COUNT <= READINGS')


def slack_pairs(texts):
    """``[(xy, yaw)]`` of ``XY/YAW`` texts; ValueError naming a bad one."""
    return pairs(texts, '--slacks', 'XY/YAW, numbers', float,
                 lambda xy, yaw: 0.0 <= xy <= 0.5 and 0.0 <= yaw <= 0.5,
                 '0 <= XY <= 0.5 and 0 <= YAW <= 0.5')


def map_of(run, given):
    """The map_server YAML of ``run``: ``given`` (from --map), else its detection.json's."""
    if run in given:
        return given[run]
    found = detection.run_map(run)
    if found is None:
        raise ValueError('%s: its map %r is not found: give --map %s=MAP.yaml' % (
            run, report.read_json(os.path.join(run, 'detection.json')).get('map'), run))
    return found


class Run:
    """One recorded run: its stream, trials, phases, pose fixes, returns and map."""

    def __init__(self, folder, base, map_path):
        """Read the run (ValueError naming what is missing or bad)."""
        self.folder = folder
        record = report.read_json(os.path.join(folder, 'detection.json'))
        data = report.read_json(os.path.join(folder, 'detection_stream.json'))
        self.stream, _ = detection.recorded_stream(folder, data,
                                                   detection.read_truth(folder), base)
        self.returns = detection.read_returns(folder, len(self.stream.readings))
        self.records = record['trials']
        self.phases = (record.get('summary') or {}).get('phases') or detection.PHASES
        self.fixes = detection.pose_fixes(self.records)
        self.distance_map = detectors.detector_map(load_map(map_path))

    def measure(self, window, min_points, search_below, slack=(0.0, 0.0)):
        """Each reading's strip measure (or None), emptied at the pose fixes as the node."""
        check = StripCheck(window, min_points, search_below, 0.0, slack_xy=slack[0],
                           slack_yaw=slack[1])
        check.set_map(self.distance_map)
        return detectors.replay_strip(
            self.stream.readings, self.returns, check, self.fixes,
            lambda stamp, odom, estimate: check.measure(stamp, odom, estimate, search_below))

    def score(self, config, strips):
        """(caught, delocalized, false alarms in normal driving, false alarms settling)."""
        tiers = {'lost_detector': detectors.lost_detector_tiers(
            self.stream.detector_readings(), config, self.fixes, strips)}
        tiers['amcl_diag'] = tiers['nav2_islocalized'] = tiers['lost_detector']
        caught = delocalized = normal = settle = 0
        for record in self.records:
            trial = detection.score_trial(record, self.stream, tiers, self.phases)
            scores = trial['detectors']['lost_detector']
            normal += scores['false_alarms']
            settle += scores['settle_false_alarms']
            if trial['kind'] == 'teleport' and trial['distance'] >= \
                    detection.HEADLINE_DISTANCE and trial['delocalized']:
                delocalized += 1
                caught += detection.within_driving(scores)
        return caught, delocalized, normal, settle


def verdicts(measures, readings, ratio, min_distance):
    """Rule 9's verdicts from measures taken with a search below ``ratio`` or more."""
    return [None if m is None else is_low(m, tuple(r[1:4]), ratio, min_distance)
            for m, r in zip(measures, readings)]


def main(argv=None):
    """Measure, replay, print; exit 1 with a message on bad input."""
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        pairs = rules(args.rules)
        slacks = slack_pairs(args.slacks)
        given = {}
        for item in args.map:
            run, sep, path = item.partition('=')
            if not sep:
                raise ValueError('--map %s: must be RUN_DIR=MAP.yaml' % item)
            given[run] = path
        base = detectors.load_detector_config(args.base)
        base = dataclasses.replace(base, strip_count=0)
        if args.write and any(len(v) != 1 for v in (
                args.windows, args.ratios, pairs, args.min_distances, slacks)):
            raise ValueError('--write needs one value of every number (--windows, --ratios, '
                             '--rules, --min-distances, --slacks)')
        runs = [Run(folder, base, map_of(folder, given)) for folder in args.runs]
    except (OSError, ValueError) as error:
        print('strip_rule: %s' % error, file=sys.stderr)
        return 1

    def total(config, strips_of):
        sums = [0, 0, 0, 0]
        for run in runs:
            for k, value in enumerate(run.score(config, strips_of(run))):
                sums[k] += value
        return sums
    rows = [('base (%s, rule 9 off)' % args.base, total(base, lambda run: None))]
    for window, slack in itertools.product(args.windows, slacks):
        measured = {run.folder: run.measure(window, args.min_points, max(args.ratios), slack)
                    for run in runs}
        for ratio, min_distance, (count, readings) in itertools.product(
                args.ratios, args.min_distances, pairs):
            config = dataclasses.replace(
                base, strip_count=count, strip_readings=readings, strip_window=window,
                strip_min_points=args.min_points, strip_ratio=ratio,
                strip_min_distance=min_distance, strip_slack_xy=slack[0],
                strip_slack_yaw=slack[1])
            config.validate()
            rows.append(('window %g%s ratio %g min_distance %g count %d of %d' % (
                window, ' slack %g/%g' % slack if any(slack) else '', ratio, min_distance,
                count, readings), total(
                    config, lambda run: verdicts(measured[run.folder], run.stream.readings,
                                                 ratio, min_distance))))
    if args.write:
        command = '/usr/bin/python3 tools/strip_rule.py ' + shlex.join(
            sys.argv[1:] if argv is None else argv)
        try:
            write_rule(args.write, config, rows[-1][1], command)
        except (OSError, ValueError) as error:
            print('strip_rule: %s' % error, file=sys.stderr)
            return 1
    print('%d runs: %s' % (len(runs), ' '.join(args.runs)))
    print('silent >= 2 m caught within %g s of driving / delocalized; false tier-2 alarms in '
          'normal driving + settling' % detection.WITHIN)
    print('%-60s %s' % (rows[0][0], '%d/%d  false %d + %d' % tuple(rows[0][1])))
    for name, (caught, delocalized, normal, settle) in sorted(
            rows[1:], key=lambda row: (row[1][2] + row[1][3], -row[1][0])):
        print('%-60s %d/%d  false %d + %d' % (name, caught, delocalized, normal, settle))
    return 0


if __name__ == '__main__':
    sys.exit(main())
