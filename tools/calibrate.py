#!/usr/bin/python3
"""Regenerate the lost detector's shipped YAML in one command: record the training runs, fit.

    /usr/bin/python3 tools/calibrate.py [--out build/calibration] [--shared ../shared/data] \\
        [--date YYYY-MM-DD] [--resume] [--install] [--trials 12]

(or ``make calibrate``; on a 2-core machine about 70 min of recording, then the fit, which took
over 25 min on 2026-12-07). The steps, each a command of its own, printed before it runs and
written into ``OUT/commands.sh``, so that any one can be run again by hand:

1. **record** the detection suite's training runs, 12 trials each (``rosrun lost_and_found
   bench detection``): the lab map (maps/lab.yaml) with seeds 100 and 101, clean, among
   unmapped clutter (``--clutter 8``) and on a map out of date (``--stale 3``); the MIT Stata
   basement (``SHARED/maps/mit_stata_basement/stata_basement.yaml``) with seed 100 clean and
   among clutter, seeds 100-102 out of date. These are the calibration's maps and seeds: the
   evaluation (``make bench``) never uses them, and the detector is scored on the office,
   Willow Garage, Intel and ACES maps with seeds below 100.
2. **fit** (tools/calibrate_detector.py, ``--open-beams off --min-ranges 0``) the classifier,
   its windows and thresholds and the scan check on the six clean and cluttered runs
   -> ``OUT/fit.yaml``.
3. **keep the fit** and add the through-wall rule and its burst rule on all eleven runs
   (``--keep-fit OUT/fit.yaml --through-lost 0.25 --burst 4 5 0.3 0 --unmapped-ends``)
   -> ``OUT/keep_fit.yaml``.
4. **add the strip rule** (tools/strip_rule.py ``--ratios 0.6 --rules 4/5 --min-distances 1
   --slacks 0.3/0.2``) chosen on the six seed-100 runs, into a copy of ``OUT/keep_fit.yaml``
   (``OUT/strip.yaml``), which becomes ``OUT/lost_detector.yaml`` when the step succeeds.

The recordings measure the scan feature with the detector file in place when the first of
them was made, copied to ``OUT/recorded_with.yaml`` and passed to every recording
(``--detector-config``), so that a run resumed after ``--install`` records as it began. (The
shipped file's own runs were recorded before ``scan_check/unmapped_ends`` existed and measured
again with it by tools/remeasure_scan.py; recordings made now measure it directly.)

The rules' numbers (steps 3 and 4) are the shipped file's, chosen in the studies of
bench/RESULTS.md; ``--through-lost`` with several values lets step 3 choose among them, and
``--burst``, ``--strip-*`` set the others. Everything the fitter fits is fitted again on the new
recordings, so the result differs from the shipped file by what the recordings differ by (the
simulator draws its noise afresh, and the package has changed since). The script then prints
the keys whose values differ from ``config/lost_detector.yaml``; ``--install`` copies the
result over it. Score it on held-out runs first, beside the shipped file on the same poses:
``tools/rescore_detection.py RUN_DIR --detector-config OUT/lost_detector.yaml --out DIR`` on a
finished detection run of the office or a real map (it replays the strip rule too).

``--resume`` keeps the recordings that already finished (their ``detection.json`` has no
error, all the trials and the very command this run would give), e.g. after an interrupted
run; the fitting steps always run again. ``--trials N`` records N trials per run instead of 12:
a quick check of the steps, not a file to ship. Exit status 1, naming the step, when a step
fails or cannot start or an input is missing (the Stata basement map comes from
``../shared/data``: without it nothing is recorded).

Run with /usr/bin/python3 and the catkin devel space sourced (``rosrun`` must find the package).
"""
import argparse
import datetime
import json
import os
import shlex
import shutil
import subprocess
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
#: The Stata basement map, relative to the shared data folder.
STATA = os.path.join('maps', 'mit_stata_basement', 'stata_basement.yaml')
#: Trials per training run.
TRIALS = 12
#: The detector file the recordings measure the scan feature with (in OUT).
RECORDED_WITH = 'recorded_with.yaml'
#: The training runs: (name, map key, seed, extra bench arguments).
RUNS = (
    ('lab_clean_100', 'lab', 100, ()),
    ('lab_clean_101', 'lab', 101, ()),
    ('lab_100', 'lab', 100, ('--clutter', '8')),
    ('lab_101', 'lab', 101, ('--clutter', '8')),
    ('stata_clean_100', 'stata', 100, ()),
    ('stata_100', 'stata', 100, ('--clutter', '8')),
    ('lab_stale_100', 'lab', 100, ('--stale', '3')),
    ('lab_stale_101', 'lab', 101, ('--stale', '3')),
    ('stata_stale_100', 'stata', 100, ('--stale', '3')),
    ('stata_stale_101', 'stata', 101, ('--stale', '3')),
    ('stata_stale_102', 'stata', 102, ('--stale', '3')),
)
#: The runs the classifier is fitted on (step 2): the clean and cluttered ones.
FIT_RUNS = ('lab_clean_100', 'lab_clean_101', 'lab_100', 'lab_101', 'stata_clean_100',
            'stata_100')
#: The runs the strip rule is scored on (step 4): seed 100 of every kind on both maps.
STRIP_RUNS = ('lab_clean_100', 'lab_100', 'lab_stale_100', 'stata_clean_100', 'stata_100',
              'stata_stale_100')


def parser():
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--out', default=os.path.join(ROOT, 'build', 'calibration'),
                   help='folder of the recordings and the files (default %(default)s)')
    p.add_argument('--shared', default=os.path.join(ROOT, '..', 'shared', 'data'),
                   help='the shared data folder with the Stata basement map (default '
                        '%(default)s)')
    p.add_argument('--date', default=None,
                   help='date written in the headers, YYYY-MM-DD (default: today, UTC)')
    p.add_argument('--resume', action='store_true',
                   help='keep the recordings that already finished')
    p.add_argument('--install', action='store_true',
                   help='copy the result over config/lost_detector.yaml')
    p.add_argument('--trials', type=int, default=TRIALS,
                   help='trials per training run (default %(default)s; fewer: a quick check '
                        'of the steps)')
    p.add_argument('--through-lost', nargs='+', default=['0.25'], metavar='R',
                   help='scan_check/through_lost value(s) for step 3 (default 0.25)')
    p.add_argument('--burst', nargs=4, default=['4', '5', '0.3', '0'],
                   metavar=('K', 'N', 'S', 'E'),
                   help='the burst rule of step 3 (default 4 5 0.3 0)')
    p.add_argument('--strip-ratio', default='0.6', help='strip_check/ratio (default 0.6)')
    p.add_argument('--strip-rule', default='4/5',
                   help='strip_check/count/readings (default 4/5)')
    p.add_argument('--strip-min-distance', default='1',
                   help='strip_check/min_distance, m (default 1)')
    p.add_argument('--strip-slack', default='0.3/0.2',
                   help='strip_check/slack_xy/slack_yaw, m/rad (default 0.3/0.2)')
    return p


def check_date(text):
    """``text`` as a YYYY-MM-DD date string, or today's (UTC) when None.

    Raises:
        ValueError: naming the bad date.
    """
    if text is None:
        return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d')
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        raise ValueError('--date %s: must be YYYY-MM-DD' % text) from None
    return text


def map_paths(shared):
    """``{'lab': ..., 'stata': ...}``: the training maps' YAMLs.

    Raises:
        ValueError: naming the map that is missing and what supplies it.
    """
    paths = {'lab': os.path.join(ROOT, 'maps', 'lab.yaml'),
             'stata': os.path.join(shared, STATA)}
    if not os.path.isfile(paths['lab']):
        raise ValueError('%s is missing (make maps regenerates it)' % paths['lab'])
    if not os.path.isfile(paths['stata']):
        raise ValueError('%s is missing: the Stata basement map comes from the shared data '
                         'folder (--shared, default ../shared/data)' % paths['stata'])
    return paths


def record_command(name, map_key, seed, extra, maps, out, trials=TRIALS):
    """The ``rosrun lost_and_found bench detection`` command of one training run. (No
    ``--label``: the suite writes its label into the stream as the map's name, and the
    calibration fits only on streams of the maps lab and stata_basement.)"""
    return (['rosrun', 'lost_and_found', 'bench', 'detection', '--map', maps[map_key],
             '--trials', str(trials), '--seed', str(seed)] + list(extra)
            + ['--detector-config', os.path.join(out, RECORDED_WITH),
               '--out', os.path.join(out, 'train', name)])


def tool(name):
    """The command of a script of tools/."""
    return ['/usr/bin/python3', os.path.join(ROOT, 'tools', name)]


def fit_steps(args, out, date):
    """The fitting steps after the recordings: ``[(title, argv, copy)]``, where ``copy`` is
    None or ``(source, target)``, a file copied before the command runs."""
    train = os.path.join(out, 'train')
    fit, keep = os.path.join(out, 'fit.yaml'), os.path.join(out, 'keep_fit.yaml')
    strip = os.path.join(out, 'strip.yaml')
    return [
        ('fit the classifier, windows and scan check',
         tool('calibrate_detector.py') + [os.path.join(train, n) for n in FIT_RUNS]
         + ['--min-ranges', '0', '--open-beams', 'off', '--date', date, '--out', fit], None),
        ('keep the fit, add the through-wall and burst rules',
         tool('calibrate_detector.py') + [os.path.join(train, n) for n, _, _, _ in RUNS]
         + ['--keep-fit', fit, '--through-lost'] + list(args.through_lost)
         + ['--burst'] + list(args.burst)
         + ['--unmapped-ends', '--date', date, '--out', keep], None),
        ('add the strip rule',
         tool('strip_rule.py') + [os.path.join(train, n) for n in STRIP_RUNS]
         + ['--base', keep, '--ratios', args.strip_ratio, '--rules', args.strip_rule,
            '--min-distances', args.strip_min_distance, '--slacks', args.strip_slack,
            '--write', strip], (keep, strip)),
    ]


def finished(folder, command):
    """Whether ``folder`` holds a whole detection run of ``command`` (a
    :func:`record_command`): its detection.json with no error, that very command and all its
    trials, and its stream."""
    try:
        with open(os.path.join(folder, 'detection.json')) as stream:
            result = json.load(stream)
    except (OSError, ValueError):
        return False
    trials = int(command[command.index('--trials') + 1])
    return (isinstance(result, dict) and not result.get('error')
            and result.get('command') == shlex.join(command)
            and len(result.get('trials') or ()) == trials
            and os.path.isfile(os.path.join(folder, 'detection_stream.json')))


def flatten(data, prefix=''):
    """``{'a/b': value}`` of a nested dict (the YAML's keys as rosparam names)."""
    if not isinstance(data, dict):
        return {prefix: data}
    out = {}
    for key, value in data.items():
        out.update(flatten(value, '%s/%s' % (prefix, key) if prefix else str(key)))
    return out


def differences(old_path, new_path):
    """``[(key, old, new)]``: the keys whose values differ between two YAMLs (None: absent)."""
    with open(old_path) as stream:
        old = flatten(yaml.safe_load(stream) or {})
    with open(new_path) as stream:
        new = flatten(yaml.safe_load(stream) or {})
    return [(key, old.get(key), new.get(key)) for key in sorted(set(old) | set(new))
            if old.get(key) != new.get(key)]


def run(title, argv, log):
    """Run one step, its output to the terminal; False (said on stderr) when it failed."""
    line = shlex.join(argv)
    print('== calibrate: %s\n   %s' % (title, line), flush=True)
    log.write('# %s\n%s\n' % (title, line))
    log.flush()
    try:
        code = subprocess.call(argv)
    except OSError as error:
        print('calibrate: step "%s" could not start: %s' % (title, error), file=sys.stderr)
        return False
    if code != 0:
        print('calibrate: step "%s" failed (exit status %d): %s' % (title, code, line),
              file=sys.stderr)
    return code == 0


def main(argv=None):
    """Record, fit, report; exit 1 naming the step or input that failed."""
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        date = check_date(args.date)
        maps = map_paths(args.shared)
        if args.trials < 1:
            raise ValueError('--trials %d: must be 1 or more' % args.trials)
    except ValueError as error:
        print('calibrate: %s' % error, file=sys.stderr)
        return 1
    out = os.path.abspath(args.out)
    shipped = os.path.join(ROOT, 'config', 'lost_detector.yaml')
    result = os.path.join(out, 'lost_detector.yaml')
    os.makedirs(os.path.join(out, 'train'), exist_ok=True)
    recorded_with = os.path.join(out, RECORDED_WITH)
    if not (args.resume and os.path.isfile(recorded_with)):
        shutil.copyfile(shipped, recorded_with)
    if os.path.exists(result):
        os.remove(result)       # a result of an earlier run must not pass for this one's
    with open(os.path.join(out, 'commands.sh'), 'w') as log:
        log.write('# tools/calibrate.py %s\n' % shlex.join(
            sys.argv[1:] if argv is None else argv))
        for number, (name, map_key, seed, extra) in enumerate(RUNS, 1):
            command = record_command(name, map_key, seed, extra, maps, out, args.trials)
            folder = os.path.join(out, 'train', name)
            if args.resume and finished(folder, command):
                print('== calibrate: record %s: kept %s (--resume)' % (name, folder))
                log.write('# record %s: kept (--resume)\n# %s\n' % (
                    name, shlex.join(command)))
                continue
            if not run('record %d/%d: %s' % (number, len(RUNS), name), command, log):
                return 1
        for title, command, copy in fit_steps(args, out, date):
            if copy:
                shutil.copyfile(*copy)
                log.write('cp %s %s\n' % tuple(shlex.quote(c) for c in copy))
            if not run(title, command, log):
                return 1
    os.replace(os.path.join(out, 'strip.yaml'), result)
    changed = differences(shipped, result)
    print('== calibrate: %s differs from %s in %d value(s)%s'
          % (result, shipped, len(changed), ':' if changed else ''))
    for key, old, new in changed:
        print('   %-55s %s -> %s' % (key, old, new))
    if args.install:
        shutil.copyfile(result, shipped)
        print('== calibrate: installed as %s' % shipped)
    else:
        print('== calibrate: not installed; score it on held-out runs, then --install (or cp)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
