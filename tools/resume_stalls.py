#!/usr/bin/python3
"""Would a stall check on the resumed goal have doubted each localization on amcl's poses alone?

Usage: tools/resume_stalls.py DIR [DIR ...] [--time S] [--distance M] [--list]
       (output folders of `bench recovery`)

Offline, from the trials' records in ``recovery.json`` alone. For every end of ``LOST`` on
amcl's poses alone (the trial's states go ``LOST`` -> ``IDLE`` or ``NAVIGATING``, no
``LOCALIZING`` between), whether it was right (the estimate within ``OFF_XY`` of the truth in
the first trace sample ``JUDGE_AFTER`` s or more after it), and whether, while the robot was
``NAVIGATING`` before it next left ``IDLE``/``NAVIGATING``, the truth stayed within
``--distance`` of one place for ``--time`` s: what lost_and_found's ``resume_stall_time``
checks on the odometry. A wrong estimate that a tag corrects while driving (the error falls
within ``OFF_XY``) ends the watch there, as the correction ends the check; a right one's
correction cannot be seen in the trace, so for right ones the count is an upper bound. For the
wrong ones it fired on, how long before the robot next left ``IDLE``/``NAVIGATING`` (the
``LOST`` that happened) it would have fired. Prints Markdown; writes nothing.
"""
import argparse
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recovery_failures import ERROR_XY, OFF_XY, SETTLED, STATE, read_run  # noqa: E402

#: A localization is judged by the first trace sample this long after it (s): amcl's new
#: map -> odom needs a moment to reach the bench.
JUDGE_AFTER = 2.0
#: The trace is sampled about once a second: a window counts as covered when its samples
#: reach this close to its end (s).
SAMPLE_SLACK = 1.5
X, Y = 1, 2


def stall_time(samples, time, distance):
    """The first time (s) at which the samples ``(t, x, y)`` (sorted) have stayed within
    ``distance`` of where they were ``time`` s before, or None."""
    for i, (t0, x0, y0) in enumerate(samples):
        window = [s for s in samples[i:] if s[0] <= t0 + time]
        if window[-1][0] < t0 + time - SAMPLE_SLACK:
            return None         # not enough record left to cover a window
        if all(math.hypot(x - x0, y - y0) < distance for _t, x, y in window):
            return t0 + time
    return None


def localizations(trial, time, distance):
    """Rows ``(s after put-down, error m, fired at s or None, left at s or None)`` of one
    trial's localizations on amcl's poses alone."""
    states = trial.get('states') or []
    trace = [s for s in trial.get('trace') or [] if s[ERROR_XY] is not None]
    rows = []
    for (_t_before, before), (t0, after) in zip(states, states[1:]):
        if before != 'LOST' or after not in SETTLED:
            continue
        judged = next((s for s in trace if s[0] >= t0 + JUDGE_AFTER), None)
        if judged is None:
            continue
        left = next((t for t, state in states if t > t0 and state not in SETTLED), None)
        end = left if left is not None else math.inf
        wrong = judged[ERROR_XY] > OFF_XY
        if wrong:
            corrected = next((s[0] for s in trace if t0 < s[0] < end and
                              s[ERROR_XY] <= OFF_XY), None)
            end = min(end, corrected) if corrected is not None else end
        driving = [(s[0], s[X], s[Y]) for s in trace
                   if t0 <= s[0] < end and s[STATE] == 'NAVIGATING']
        fired = stall_time(driving, time, distance) if driving else None
        rows.append((t0, judged[ERROR_XY], fired, left))
    return rows


def report(folders, time, distance, listing=False):
    """Markdown lines for the folders together."""
    counts = {True: [0, 0], False: [0, 0]}      # wrong? -> [localizations, fired]
    leads, lines = [], []
    for folder in folders:
        for trial in read_run(folder, 'resume_stalls')['trials']:
            for t0, error, fired, left in localizations(trial, time, distance):
                wrong = error > OFF_XY
                counts[wrong][0] += 1
                counts[wrong][1] += fired is not None
                lead = left - fired if fired is not None and left is not None else None
                if wrong and lead is not None:
                    leads.append(lead)
                if listing:
                    lines.append('| %s | `%s` %s | %.1f | %.1f | %s | %s | %s |' % (
                        folder, trial.get('strategy'), trial.get('index'), t0, error,
                        '-' if fired is None else '%.1f' % fired,
                        '-' if left is None else '%.1f' % left,
                        'yes' if trial.get('resumed') else 'no'))
    out = ['stall check: the truth within %.2f m for %.0f s while NAVIGATING' % (distance, time),
           '', '| localizations on amcl\'s poses alone | count | the check fires |',
           '|---|---|---|',
           '| right | %d | %d |' % tuple(counts[False]),
           '| wrong | %d | %d |' % tuple(counts[True]), '']
    if leads:
        out.append('wrong ones it fires on, before the robot next left IDLE/NAVIGATING: %d, '
                   'median %.1f s sooner (%.1f-%.1f)'
                   % (len(leads), statistics.median(leads), min(leads), max(leads)))
    if listing:
        out += ['', '| folder | trial | localized at (s) | error (m) | fires at (s) | '
                'left at (s) | resumed |', '|---|---|---|---|---|---|---|'] + lines
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('folders', nargs='+', metavar='DIR')
    parser.add_argument('--time', type=float, default=15.0, help='stall time (s)')
    parser.add_argument('--distance', type=float, default=0.3, help='stall distance (m)')
    parser.add_argument('--list', action='store_true', help='one row per localization')
    args = parser.parse_args(argv)
    print('\n'.join(report(args.folders, args.time, args.distance, args.list)))


if __name__ == '__main__':
    main()
