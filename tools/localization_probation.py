#!/usr/bin/python3
"""How the lost detector read after each localization in a recovery run, right ones and wrong.

Usage: tools/localization_probation.py DIR [DIR ...] [--window S] [--list]
       (output folders of `bench recovery`)

For every end of ``LOST`` or ``LOCALIZING`` on tight amcl poses that lost_service logged
(``state LOST -> IDLE: N tight poses``: on amcl's poses alone; ``state LOCALIZING -> IDLE``:
after a pose fix), the trial it belongs to, whether it was right (the estimate within
``OFF_XY`` of the truth in the trace sample nearest to it, as ``recovery_failures.py`` judges),
and, over the ``--window`` seconds after it (cut short when the robot leaves IDLE/NAVIGATING,
is picked up, a pose fix arrives or the bench moves it for the next trial), the longest run
of detector readings other than ``normal`` (from ``/lost_detector: A -> B`` in rosout.log,
a detector reset counting as ``normal``) and their total time. That is what lost_service's
``refute_confused_after`` acts on: the table says how many localizations of each kind a
threshold of so many seconds would have refuted. Prints Markdown; writes nothing.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recovery_failures import (ERROR_XY, OFF_XY, at, by_put_down, log_matches,  # noqa: E402
                               owner, read_run)

LOCALIZED = re.compile(r'^(\d+(?:\.\d+)?) .*state (LOST|LOCALIZING) -> IDLE: '
                       r'\d+ tight poses')
DETECTOR = re.compile(r'^(\d+(?:\.\d+)?) .*/lost_detector: (?:reset \()?(?:normal|confused|lost) '
                      r'-> (normal|confused|lost)')
LEFT = re.compile(r'^(\d+(?:\.\d+)?) .*state (?:IDLE|NAVIGATING) -> '
                  r'(?:LOST|FLYING|LOCALIZING|NEED_HELP)')
FIXED = re.compile(r'^(\d+(?:\.\d+)?) .*pose fix on initialpose from ')
MOVED = re.compile(r'^(\d+(?:\.\d+)?) .*/sim_world: teleported')
#: Longest runs of doubt (s) the summary counts localizations at or above.
THRESHOLDS = (2.0, 3.0, 4.0, 5.0, 8.0)


def doubt_after(t0, window, readings, ends):
    """(seconds watched, longest run, total) of detector readings other than normal in
    ``(t0, t0 + window]``, cut at the first of ``ends`` after ``t0``. ``readings`` are sorted
    (time, status) of the detector's transitions; it reads normal at ``t0`` (lost_service
    declares a localization only on normal readings)."""
    end = t0 + window
    for t in ends:
        if t0 < t < end:
            end = t
            break
    status, since, longest, total = 'normal', t0, 0.0, 0.0
    for t, new in readings:
        if t <= t0:
            continue
        if t >= end:
            break
        if status == 'normal' and new != 'normal':
            since = t
        elif status != 'normal' and new == 'normal':
            longest, total = max(longest, t - since), total + t - since
        status = new
    if status != 'normal':
        longest, total = max(longest, end - since), total + end - since
    return end - t0, longest, total


def localizations(folder, window):
    """Rows (trial index, s after put-down, 'alone' or 'fix', error m, watched s, longest s,
    total s) of one run."""
    run = read_run(folder, 'localization_probation')
    trials = by_put_down(run['trials'])
    readings = [(t, m.group(2)) for t, m in log_matches(folder, DETECTOR)]
    ends = sorted(t for pattern in (LEFT, FIXED, MOVED)
                  for t, _m in log_matches(folder, pattern))
    rows = []
    for t, match in log_matches(folder, LOCALIZED):
        trial = owner(trials, t)
        sample = at(trial, t) if trial is not None else None
        if sample is None:
            continue
        watched, longest, total = doubt_after(t, window, readings, ends)
        rows.append((trial['index'], t - trial['t_put_down_sim'],
                     'alone' if match.group(2) == 'LOST' else 'fix', sample[ERROR_XY],
                     watched, longest, total))
    return rows


def report(folders, window, listing=False):
    """Markdown lines over the runs in ``folders``."""
    rows = {folder: localizations(folder, window) for folder in folders}
    lines = ['Localizations and the detector in the %.0f s after each (cut short when the '
             'robot leaves IDLE/NAVIGATING or a pose fix arrives); right = within %.2f m of '
             'the truth.' % (window, OFF_XY), '',
             '| localized | right or wrong | count | watched >= 30 s | %s |' % ' | '.join(
                 'longest doubt >= %g s' % s for s in THRESHOLDS),
             '|---|---|---|---|%s' % ('---|' * len(THRESHOLDS))]
    every = [row for run in rows.values() for row in run]
    for kind, name in (('alone', 'on amcl\'s poses alone'), ('fix', 'after a pose fix')):
        for wrong in (False, True):
            chosen = [r for r in every if r[2] == kind and (r[3] > OFF_XY) == wrong]
            lines.append('| %s | %s | %d | %d | %s |' % (
                name, 'wrong' if wrong else 'right', len(chosen),
                sum(1 for r in chosen if r[4] >= 30.0),
                ' | '.join(str(sum(1 for r in chosen if r[5] >= s)) for s in THRESHOLDS)))
    if listing:
        lines += ['', '| run | trial | s after put-down | localized | error (m) | watched (s) '
                  '| longest doubt (s) | total doubt (s) |', '|---|---|---|---|---|---|---|---|']
        for folder, run in rows.items():
            for row in run:
                lines.append('| %s | %d | %.1f | %s | %.2f | %.1f | %.1f | %.1f |' % (
                    (folder,) + row))
    return lines


def main(argv):
    """Parse the arguments and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('folders', nargs='+', help='output folders of `bench recovery`')
    parser.add_argument('--window', type=float, default=60.0,
                        help='seconds after each localization to watch (default 60)')
    parser.add_argument('--list', action='store_true', help='also list every localization')
    args = parser.parse_args(argv)
    if not args.window > 0:
        parser.error('--window must be > 0')
    print('\n'.join(report(args.folders, args.window, args.list)))


if __name__ == '__main__':
    main(sys.argv[1:])
