#!/usr/bin/python3
"""Where a recovery's time goes: the first fix, then the fix reaching the estimate.

Usage: tools/recovery_latency.py DIR [DIR ...]   (output folders of `bench recovery`)

A recovered trial's time to recover (the estimate within 0.45 m / 0.35 rad of the truth on
tf, from the put-down) is split at lost_service's first ``LOCALIZING`` after the put-down, which
a pose fix on ``initialpose`` starts (a tag seen by fiducial_localizer, in these runs):

* *first fix*: put-down -> ``LOCALIZING``: noticing the put-down, the spin or search until the
  camera gives a detection fiducial_localizer keeps, and the message hops. The bench's *fix
  bound* is the least time to a pose from which such a detection can be had, so the two
  compare directly.
* *fix -> recovered*: ``LOCALIZING`` -> recovered: the localizer applying the fix and the
  estimate on tf following it (amcl dates map->odom ``transform_tolerance`` into the future,
  so a lookup of the latest transform returns the old one for up to that long), or a second
  fix when the first was off (taken while the robot still turned).

Trials that recovered without entering ``LOCALIZING`` first (the localizer found the truth
alone, or a fix came after the estimate was already right) are counted apart. Also counted,
per folder, how often lost_service sent a fix again because it arrived just after its own
re-seed (``sent the fix from``). Prints Markdown; writes nothing.
"""
import os
import re
import sys

from lost_and_found.bench.report import percentile

# The sibling script that already reads a run's rosout.log files (also when loaded by path).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recovery_failures import log_times, read_run  # noqa: E402

RESEND = re.compile(r'^(\d+(?:\.\d+)?) INFO .*sent the fix from \S+ again')


def first_fix(trial):
    """Seconds from the put-down to the first LOCALIZING after it, or None."""
    for t, state in trial.get('states', []):
        if t >= 0 and state == 'LOCALIZING':
            return t
    return None


def split(trials):
    """Per strategy: (recovered, [(first fix, fix -> recovered, fix bound)], [time to recover
    of the trials recovered without a fix first])."""
    out = {}
    for trial in trials:
        entry = out.setdefault(trial['strategy'], [0, [], []])
        if not trial.get('recovered'):
            continue
        entry[0] += 1
        recover = trial['time_to_recover']
        fix = first_fix(trial)
        if fix is not None and fix <= recover:
            entry[1].append((fix, recover - fix, trial.get('oracle_fix_s')))
        else:
            entry[2].append(recover)
    return out


def resends(folder):
    """How many times lost_service sent a fix again (each logged line once)."""
    return len(log_times(folder, RESEND))


def seconds(values, fmt='%.1f'):
    """'median / p90' of a list of seconds (the bench tables' percentiles), or '-'."""
    return (fmt + ' / ' + fmt) % (percentile(values, 50), percentile(values, 90)) \
        if values else '-'


def report(folders):
    """The Markdown table of the folders."""
    lines = ['| run | strategy | recovered | through a fix first | first fix (median / p90 s) '
             '| fix bound (median / p90 s) | fix -> recovered (median / p90 s) '
             '| recovered without a fix first (median s) | fixes sent again |',
             '|---|---|---|---|---|---|---|---|---|']
    for folder in folders:
        result = read_run(folder, 'recovery_latency')
        label = os.path.basename(os.path.normpath(folder))
        again = resends(folder)
        for strategy, (recovered, fixed, alone) in split(result.get('trials', [])).items():
            bounds = [b for _, _, b in fixed if b is not None]
            lines.append('| %s | `%s` | %d | %d | %s | %s | %s | %s | %s |' % (
                label, strategy, recovered, len(fixed), seconds([f for f, _, _ in fixed]),
                seconds(bounds), seconds([d for _, d, _ in fixed]),
                '%d: %.1f' % (len(alone), percentile(alone, 50)) if alone else '0', again))
            label, again = '', ''
    return '\n'.join(lines)


def main(argv):
    """Print the table of the folders named in argv."""
    if not argv:
        sys.exit(__doc__)
    print(report(argv))


if __name__ == '__main__':
    main(sys.argv[1:])
