#!/usr/bin/python3
"""How long each recovery trial's search spent where the map knows nothing.

Usage: tools/unknown_space.py DIR [DIR ...] [--map MAP.yaml] [--min-seconds S] [--list]
       (output folders of `bench recovery`)

Offline, from the trials' records in ``recovery.json`` and the map they ran on (the run's own
``map`` path, or ``--map`` where that path is not on this machine). For every trial, the
seconds from the put-down until it recovered (or, unrecovered, the recovery suite's budget)
during which the true pose lay in an *unknown* cell of the map: summed over the trace's
samples (about one a second), each counting until the next. The simulator treats unknown
cells as open space that its laser and camera see through (sim_world.yaml
``unknown_is_occupied``), and no tag hangs there: a search that wanders into such space finds
nothing, however long it drives. Prints, per folder and strategy, how many trials resumed
their goal and how many did not, and of each how many spent ``--min-seconds`` or more in
unknown space; with ``--list``, one row per trial that did not resume. Markdown; writes
nothing.
"""
import argparse
import os
import sys

import numpy as np

try:
    import lost_and_found  # noqa: F401  (the devel space puts the package on the path)
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src'))

from lost_and_found.bench.recovery import RECOVERY_BUDGET  # noqa: E402
from lost_and_found.sim.gridmap import MapError, load_map  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recovery_failures import read_run  # noqa: E402

T, X, Y = 0, 1, 2


def unknown_seconds(trace, until, unknown_at):
    """Seconds in ``[0, until]`` after the put-down that the truth spent where ``unknown_at``
    (``(xs, ys) -> bool array``) is True; each sample ``[t, x, y, ...]`` of the sorted
    ``trace`` counts until the next (the last until ``until``)."""
    inside = [s for s in trace if 0.0 <= s[T] <= until]
    if not inside:
        return 0.0
    flags = unknown_at([s[X] for s in inside], [s[Y] for s in inside])
    ends = [s[T] for s in inside[1:]] + [until]
    return sum(end - s[T] for s, end, flag in zip(inside, ends, flags) if flag)


def trial_rows(run, grid):
    """``(strategy, index, resumed, seconds in unknown space)`` of every trial of ``run``."""
    unknown = grid.unknown

    def unknown_at(xs, ys):
        rows, cols = grid.cell_index(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float))
        inside = grid.in_bounds(rows, cols)
        flags = np.zeros(len(xs), dtype=bool)
        flags[inside] = unknown[rows[inside], cols[inside]]
        return flags

    rows = []
    for trial in run.get('trials', []):
        recovered = trial.get('recovered') and trial.get('time_to_recover') is not None
        until = trial['time_to_recover'] if recovered else RECOVERY_BUDGET
        rows.append((trial.get('strategy', '?'), trial.get('index'), bool(trial.get('resumed')),
                     unknown_seconds(trial.get('trace') or [], until, unknown_at)))
    return rows


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('dirs', nargs='+', metavar='DIR')
    parser.add_argument('--map', help='the map the runs used, when their own path is not here')
    parser.add_argument('--min-seconds', type=float, default=10.0,
                        help='count trials with at least this long in unknown space (s)')
    parser.add_argument('--list', action='store_true', help='one row per trial not resumed')
    args = parser.parse_args(argv)
    lines = ['| folder | strategy | resumed: trials | >= %g s in unknown space | not resumed: '
             'trials | >= %g s in unknown space |' % (args.min_seconds, args.min_seconds),
             '|---|---|---|---|---|---|']
    listed = []
    for folder in args.dirs:
        run = read_run(folder, 'unknown_space')
        path = args.map or run.get('map')
        try:
            grid = load_map(path)
        except (MapError, OSError, TypeError) as error:
            sys.exit('unknown_space: cannot load the map of %s (%r; give --map): %s'
                     % (folder, path, error))
        counts = {}
        for strategy, index, resumed, seconds in trial_rows(run, grid):
            row = counts.setdefault(strategy, [0, 0, 0, 0])
            long = seconds >= args.min_seconds
            row[0 if resumed else 2] += 1
            row[1 if resumed else 3] += long
            if not resumed:
                listed.append('| %s | %s | %s | %.0f |' % (folder, strategy, index, seconds))
        for strategy, (ok, ok_long, failed, failed_long) in sorted(counts.items()):
            lines.append('| %s | `%s` | %d | %d | %d | %d |' % (
                folder, strategy, ok, ok_long, failed, failed_long))
    print('\n'.join(lines))
    if args.list:
        print('\n| folder | strategy | trial not resumed | s in unknown space |\n|---|---|---|---|')
        print('\n'.join(listed))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
