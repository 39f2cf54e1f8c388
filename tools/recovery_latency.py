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
re-seed (``sent the fix from``).

A second table sorts the trials through a fix first by what came before that fix, read in
the run's rosout.log: *the first turn* (the fix came within one turn at the recovery node's
default ``spin_speed``, plus ``TURN_SLACK`` s, and nothing else was logged before it; a run
with another ``spin_speed`` is sorted by the default's turn), *an approach*
of a distant tag started in that time (``recovery: tag N seen``) and no search before it, or
*a search* (a spiral leg, the wander's look-around, the fall-back to the wander, or nothing
logged by the end of the turn: the ``reactive`` strategy wanders on without a line); with
their time to recover, the oracle bound and the fix bound (medians). Prints Markdown; writes
nothing.
"""
import math
import os
import re
import sys

from lost_and_found.bench.report import percentile
from lost_and_found.core.recovery import RecoveryConfig

# The sibling script that already reads a run's rosout.log files (also when loaded by path).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recovery_failures import (APPROACH, by_put_down, log_times, owner,  # noqa: E402
                               read_run)

RESEND = re.compile(r'^(\d+(?:\.\d+)?) INFO .*sent the fix from \S+ again')
#: The recovery node's lines that say it searches: a spiral leg, the wander's look-around, the
#: spiral's fall-back to the wander.
SEARCH = re.compile(r'^(\d+(?:\.\d+)?) .*recovery: (spiral leg \d+ to |wandered .* looking '
                    r'around|.*searching reactively)')
#: Seconds past one turn at spin_speed that still count as the first turn (the put-down to the
#: spin's start, the last frame to the fix).
TURN_SLACK = 1.0
#: The second table's rows, in order.
PATHS = ('the first turn', 'an approach', 'a search')


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


def paths(trials, approaches, searches, turn):
    """Per strategy, {path: [(time to recover, oracle bound, fix bound)]} of the trials
    through a fix first (see the module docstring); ``approaches`` and ``searches``: sim
    times of those log lines; ``turn``: seconds of one turn."""
    ordered = by_put_down(trials)
    owned = {}
    for kind, times in (('approach', approaches), ('search', searches)):
        for t in times:
            trial = owner(ordered, t)
            if trial is not None:
                owned.setdefault(id(trial), []).append((t - trial['t_put_down_sim'], kind))
    limit = turn + TURN_SLACK
    out = {}
    for trial in trials:
        fix = first_fix(trial) if trial.get('recovered') else None
        if fix is None or fix > trial['time_to_recover']:
            continue
        before = [(t, kind) for t, kind in owned.get(id(trial), []) if 0.0 <= t <= fix]
        approach = [t for t, kind in before if kind == 'approach']
        if any(kind == 'search' for _, kind in before) or \
                min([fix] + approach) > limit:
            path = PATHS[2]
        else:
            path = PATHS[1] if approach else PATHS[0]
        out.setdefault(trial['strategy'], {}).setdefault(path, []).append((
            trial['time_to_recover'], trial.get('oracle_s'), trial.get('oracle_fix_s')))
    return out


def median(values):
    """'%.1f' of the median of the known values, or '-'."""
    values = [v for v in values if v is not None]
    return '%.1f' % percentile(values, 50) if values else '-'


def resends(folder):
    """How many times lost_service sent a fix again (each logged line once)."""
    return len(log_times(folder, RESEND))


def seconds(values, fmt='%.1f'):
    """'median / p90' of a list of seconds (the bench tables' percentiles), or '-'."""
    return (fmt + ' / ' + fmt) % (percentile(values, 50), percentile(values, 90)) \
        if values else '-'


def report(folders):
    """The two Markdown tables of the folders."""
    runs = [(folder, read_run(folder, 'recovery_latency').get('trials', []))
            for folder in folders]
    lines = ['| run | strategy | recovered | through a fix first | first fix (median / p90 s) '
             '| fix bound (median / p90 s) | fix -> recovered (median / p90 s) '
             '| recovered without a fix first (median s) | fixes sent again |',
             '|---|---|---|---|---|---|---|---|---|']
    for folder, trials in runs:
        label = os.path.basename(os.path.normpath(folder))
        again = resends(folder)
        for strategy, (recovered, fixed, alone) in split(trials).items():
            bounds = [b for _, _, b in fixed if b is not None]
            lines.append('| %s | `%s` | %d | %d | %s | %s | %s | %s | %s |' % (
                label, strategy, recovered, len(fixed), seconds([f for f, _, _ in fixed]),
                seconds(bounds), seconds([d for _, d, _ in fixed]),
                '%d: %.1f' % (len(alone), percentile(alone, 50)) if alone else '0', again))
            label, again = '', ''
    turn = 2.0 * math.pi / RecoveryConfig().spin_speed
    lines += ['', '| run | strategy | first fix after | trials | time to recover (median s) | '
              'oracle bound (median s) | fix bound (median s) |', '|---|---|---|---|---|---|---|']
    for folder, trials in runs:
        label = os.path.basename(os.path.normpath(folder))
        found = paths(trials, log_times(folder, APPROACH), log_times(folder, SEARCH), turn)
        for strategy, by_path in found.items():
            for path in PATHS:
                rows = by_path.get(path, [])
                lines.append('| %s | `%s` | %s | %d | %s | %s | %s |' % (
                    label, strategy, path, len(rows), median([r[0] for r in rows]),
                    median([r[1] for r in rows]), median([r[2] for r in rows])))
                label = ''
    return '\n'.join(lines)


def main(argv):
    """Print the table of the folders named in argv."""
    if not argv:
        sys.exit(__doc__)
    print(report(argv))


if __name__ == '__main__':
    main(sys.argv[1:])
