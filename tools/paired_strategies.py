#!/usr/bin/python3
"""Two search strategies on the same lift kidnaps: which trials each one's goal was resumed in.

Usage: tools/paired_strategies.py [--strategies A,B] DIR [DIR ...]   (output folders of
`bench recovery` run with both strategies; A,B default spiral,reactive)
       tools/paired_strategies.py --before B1,B2,... [--approaches] DIR [DIR ...]   (DIR i paired
with B i, each strategy with itself)

With ``--before`` the pairs are two runs of the same commands (the same seed, so the same
trials; a pair whose start or goal differs is an error), for instance the package before and
after a change: a row per folder and strategy, the first numbers of each column the
``--before`` run's. A put-down planned within 5 m of where the robot was actually lifted is
drawn again from there, so on a small map a pair's put-downs can differ (as they can between
two strategies of one run); the report counts those pairs. ``--approaches`` adds a sentence on
the pairs in which either run approached a distant tag (``recovery: tag N seen`` in its
rosout.log): goals resumed, and over the pairs both recovered the medians of the time to
recover and of its change; and the same on the pairs in which either run left its first turn
for such a tag (``approach_at_once``: an approach whose line says ``the spin cut short``,
begun within ``FIRST_TURN`` s of the put-down; a trial counts once, whichever of its spins in
that time was cut). When both runs recorded where the robot stopped at the end of the
errand (``goal_end_error``), a sentence compares those stops over the pairs both resumed.

The recovery suite gives every strategy the same trials (the seed fixes the start, the goal,
the lift and the put-down of trial i, but for a put-down drawn again as above), so trial i of
A and trial i of B are a pair. Per folder
and over all of them: the pairs, the goals each strategy resumed, the pairs only one of them
resumed, NEED_HELP and collisions per strategy, and the median time to recover over the pairs
both recovered (the two medians on the same kidnaps). Below the table, the exact two-sided
sign test on the pairs only one strategy resumed: the chance of a split at least that uneven
if each were as likely as the other to be the one. The graph runs as fast as the machine
allows, so a pair is not a controlled repeat (two runs of one trial drift apart); the test
says how surprising the split is, not why. Prints Markdown; writes nothing.
"""
import argparse
import math
import os
import statistics
import sys

# The sibling script that already reads a run's files (also when loaded by path).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recovery_failures import (SPIN_CUT, approach_list, by_put_down,  # noqa: E402
                               log_matches, owner, read_run)

TOOL = 'paired_strategies'

#: Seconds after a put-down within which an approach that cut a spin short cut the first turn:
#: the 5 s turn at the default spin_speed and the put-down's way to the recovery node. Another
#: spin in that time needs an approach (cut short or blocked at once), or a new LOST episode (a
#: fix that did not hold); the trial, counted once, then had its first turn left or cut too.
FIRST_TURN = 6.0


def pairs(trials, first, second):
    """``[(trial of first, trial of second)]`` for every trial index both strategies ran, in
    index order."""
    by = {}
    for trial in trials:
        by.setdefault(trial['strategy'], {})[trial['index']] = trial
    a, b = by.get(first, {}), by.get(second, {})
    return [(a[i], b[i]) for i in sorted(set(a) & set(b))]


def pairs_across(before, after):
    """``{strategy: [(trial of before, trial of after)]}`` for every (strategy, index) both
    runs have, in index order.

    Raises:
        ValueError: when a pair's start or goal differ (not the same commands and seed).
    """
    def by_key(trials):
        return {(trial['strategy'], trial['index']): trial for trial in trials}
    a, b = by_key(before), by_key(after)
    paired = {}
    for key in sorted(set(a) & set(b)):
        for field in ('start', 'goal'):
            if a[key].get(field) != b[key].get(field):
                raise ValueError('%s trial %d: %s %r in one run and %r in the other: not the '
                                 'same trials' % (key[0], key[1], field, a[key].get(field),
                                                  b[key].get(field)))
        paired.setdefault(key[0], []).append((a[key], b[key]))
    return paired


def redrawn(paired):
    """How many of ``paired`` (before, after) trials were put down at different places."""
    return sum(a.get('put_down') != b.get('put_down') for a, b in paired)


def _per_side(paired, count):
    """``(sum of count(trial) over the first strategy's trials, ... the second's)``."""
    return (sum(count(a) for a, _ in paired), sum(count(b) for _, b in paired))


def tally(paired):
    """The counts of one table row over ``paired`` (see :func:`pairs`)."""
    both = [(a['time_to_recover'], b['time_to_recover']) for a, b in paired
            if a['time_to_recover'] is not None and b['time_to_recover'] is not None]
    return {
        'pairs': len(paired),
        'resumed': _per_side(paired, lambda t: bool(t['resumed'])),
        'only': (sum(bool(a['resumed']) and not b['resumed'] for a, b in paired),
                 sum(bool(b['resumed']) and not a['resumed'] for a, b in paired)),
        'need_help': _per_side(paired, lambda t: bool(t['need_help'])),
        'collisions': _per_side(paired, lambda t: int(t['collisions'] or 0)),
        'medians': tuple(statistics.median(side) for side in zip(*both)) if both else None,
        'both_recovered': len(both),
    }


def sign_test(k, n):
    """Two-sided exact sign test: P(a split of ``n`` discordant pairs at least as uneven as
    ``k`` against ``n - k``) when either side is equally likely; 1.0 for ``n == 0``."""
    if n == 0:
        return 1.0
    low = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(low + 1)) / 2.0 ** n
    return min(1.0, 2.0 * tail)


def _row(name, counts):
    medians = counts['medians']
    median_text = ('%.1f / %.1f (%d)' % (medians[0], medians[1], counts['both_recovered'])
                   if medians else '-')
    return '| %s | %d | %d / %d | %d / %d | %d / %d | %d / %d | %s |' % (
        name, counts['pairs'], counts['resumed'][0], counts['resumed'][1],
        counts['only'][0], counts['only'][1], counts['need_help'][0], counts['need_help'][1],
        counts['collisions'][0], counts['collisions'][1], median_text)


def report(folders, first, second):
    """The Markdown table over ``folders`` and the sign test of the total."""
    lines = ['| run | pairs | goal resumed, `%s` / `%s` | resumed by one only | NEED_HELP | '
             'collisions | median time to recover where both recovered (s; pairs) |'
             % (first, second), '|---|---|---|---|---|---|---|']
    everything = []
    for folder in folders:
        paired = pairs(read_run(folder, TOOL)['trials'], first, second)
        everything.extend(paired)
        lines.append(_row(os.path.basename(os.path.normpath(folder)), tally(paired)))
    total = tally(everything)
    lines.append(_row('all', total))
    only_first, only_second = total['only']
    lines.append('')
    lines.append('Resumed by one strategy only: `%s` %d, `%s` %d; exact two-sided sign test '
                 'p = %.3g.' % (first, only_first, second, only_second,
                                sign_test(only_first, only_first + only_second)))
    return '\n'.join(lines)


def approached(folder, trials):
    """``{(strategy, index)}`` of the trials of a run that approached a distant tag."""
    return {(trial['strategy'], trial['index']) for _t, trial, _m, _o in
            approach_list(folder, by_put_down(trials))}


def cut_first_turn(folder, trials):
    """``{(strategy, index)}`` of the trials of a run whose first turn after the put-down was
    left for a distant tag (see ``FIRST_TURN``)."""
    ordered = by_put_down(trials)
    found = set()
    for t, _match in log_matches(folder, SPIN_CUT):
        trial = owner(ordered, t)
        if trial is not None and 0.0 <= t - trial['t_put_down_sim'] <= FIRST_TURN:
            found.add((trial['strategy'], trial['index']))
    return found


def approach_summary(marked, what='approached a distant tag', verb='approached'):
    """The sentence on the pairs in which either run ``what``.

    Args:
        marked: [((before trial, after trial), marked before, marked after)].
    """
    mine = [(pair, a, b) for pair, a, b in marked if a or b]
    pairs_only = [pair for pair, _a, _b in mine]
    counts = tally(pairs_only)
    both = [(a['time_to_recover'], b['time_to_recover']) for a, b in pairs_only
            if a['time_to_recover'] is not None and b['time_to_recover'] is not None]
    text = ('Pairs in which either run %s: %d (%s before %d, after %d); goal resumed before / '
            'after %d / %d'
            % (what, len(mine), verb, sum(a for _p, a, _b in mine),
               sum(b for _p, _a, b in mine), counts['resumed'][0], counts['resumed'][1]))
    if both:
        text += ('; over the %d both recovered, median time to recover %.1f / %.1f s, median '
                 'of the differences (after - before) %+.1f s, after sooner in %d'
                 % (len(both), counts['medians'][0], counts['medians'][1],
                    statistics.median(b - a for a, b in both), sum(b < a for a, b in both)))
    return text + '.'


def stop_summary(paired, tolerance=0.3):
    """The sentence on where the robot stopped when the package ended the errand
    (``goal_end_error``, recorded by the recovery suite since 2026-12-01) over the pairs in
    which both runs resumed the goal and recorded it; None when no pair did (older runs)."""
    both = [(a['goal_end_error'], b['goal_end_error']) for a, b in paired
            if a.get('resumed') and b.get('resumed') and
            a.get('goal_end_error') is not None and b.get('goal_end_error') is not None]
    if not both:
        return None
    before, after = zip(*both)
    return ('Where the robot stopped when the errand ended (both resumed the goal, %d pairs): '
            'median %.3f / %.3f m from the goal before / after, median of the differences '
            '%+.3f m, farther after in %d; over %.1f m %d / %d.'
            % (len(both), statistics.median(before), statistics.median(after),
               statistics.median(b - a for a, b in both), sum(b > a for a, b in both),
               tolerance, sum(v > tolerance for v in before),
               sum(v > tolerance for v in after)))


def report_across(before_folders, folders, approaches=False):
    """The Markdown table of ``folders`` against ``before_folders`` (the same length), per
    strategy, and the sign test of the total; with ``approaches``, a sentence on the pairs in
    which either run approached a distant tag (read from the runs' logs)."""
    lines = ['| run | strategy | pairs | goal resumed, before / after | resumed by one only | '
             'NEED_HELP | collisions | median time to recover where both recovered (s; pairs) |',
             '|---|---|---|---|---|---|---|---|']
    everything, marked, cut = [], [], []
    for before, after in zip(before_folders, folders):
        runs = read_run(before, TOOL), read_run(after, TOOL)
        paired = pairs_across(runs[0]['trials'], runs[1]['trials'])
        if approaches:
            for find, into in ((approached, marked), (cut_first_turn, cut)):
                marks = (find(before, runs[0]['trials']), find(after, runs[1]['trials']))
                into.extend(((a, b), (a['strategy'], a['index']) in marks[0],
                             (b['strategy'], b['index']) in marks[1])
                            for strategy in paired for a, b in paired[strategy])
        for strategy in sorted(paired):
            everything.extend(paired[strategy])
            row = _row(os.path.basename(os.path.normpath(after)), tally(paired[strategy]))
            lines.append(row.replace(' |', ' | `%s` |' % strategy, 1))
    total = tally(everything)
    lines.append(_row('all', total).replace(' |', ' | |', 1))
    only_before, only_after = total['only']
    lines.append('')
    lines.append('Resumed by one run only: before %d, after %d; exact two-sided sign test '
                 'p = %.3g. Put down at different places (drawn again near the lift): %d of '
                 'the %d pairs.' % (only_before, only_after,
                                    sign_test(only_before, only_before + only_after),
                                    redrawn(everything), len(everything)))
    stops = stop_summary(everything)
    if stops:
        lines.extend(['', stops])
    if approaches:
        lines.append('')
        lines.append(approach_summary(marked))
        lines.append('')
        lines.append(approach_summary(cut, 'left its first turn for a distant tag', 'left'))
    return '\n'.join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--strategies', default='spiral,reactive',
                        help='the two strategies to pair, A,B (default spiral,reactive)')
    parser.add_argument('--before', default=None,
                        help='B1,B2,...: pair each DIR with the run folder at its place here '
                        '(the same commands before a change), each strategy with itself')
    parser.add_argument('--approaches', action='store_true',
                        help='with --before: also the pairs in which either run approached a '
                        'distant tag (from the runs\' rosout.log)')
    parser.add_argument('folders', nargs='+', metavar='DIR',
                        help='output folders of bench recovery')
    args = parser.parse_args(argv)
    if args.before is not None:
        before = [folder for folder in args.before.split(',') if folder]
        if len(before) != len(args.folders):
            parser.error('--before names %d folders for %d DIR: give one per DIR'
                         % (len(before), len(args.folders)))
        try:
            print(report_across(before, args.folders, args.approaches))
        except ValueError as error:
            sys.exit('paired_strategies: %s' % error)
        return 0
    names = [name.strip() for name in args.strategies.split(',')]
    if len(names) != 2 or not all(names) or names[0] == names[1]:
        parser.error('--strategies %r: give two different strategies, A,B' % args.strategies)
    print(report(args.folders, *names))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
