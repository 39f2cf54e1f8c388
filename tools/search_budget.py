#!/usr/bin/python3
"""Which searches a shorter budget would have cut: the trials of a recovery-suite run whose
search was still on when a budget of B seconds ran out, and how each of those searches ended.

Usage: tools/search_budget.py [--budget B] DIR [DIR ...]   (output folders of `bench recovery`;
B defaults to 120, the recovery node's `max_search_time` before 2026-11-29)

An episode begins when lost_service enters ``LOST`` from any state but ``LOCALIZING`` and ends
at the first later state that is neither ``LOST`` nor ``LOCALIZING``: the recovery node's
budget runs from the same moment, and a fix that is not confirmed (``LOCALIZING`` -> ``LOST``)
does not restart it. With a budget of B s the node asks for help as soon as the episode is B s
old and in ``LOST`` (while ``LOCALIZING`` it waits for the verdict), so an episode is *cut* by B
when it is in ``LOST`` at some moment after B s. With B the trial would have ended in the first
such episode (the node stops and waits for a person), so that episode is the one counted per
trial. Measured with a longer budget, what it did after B is what the longer budget bought
(or cost): it ended in a localization (``IDLE``/``NAVIGATING``; *goal resumed* when the trial
went on to resume its goal), in ``NEED_HELP`` (the run's own budget spent: help asked for
later than B would have), or otherwise (the trial's record ended first, or a lift). Up to B s
the node behaves the same with either budget, so the counts need no second run. A trial's
record ends with its 1 Hz trace. (After ``NEED_HELP`` a person's fix that is not confirmed,
``NEED_HELP`` -> ``LOCALIZING`` -> ``LOST``, starts a new episode, here as in the node.) Prints
Markdown; writes nothing.
"""
import argparse
import os
import sys

# The sibling script that already reads a run's files (also when loaded by path).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recovery_failures import SETTLED, read_run  # noqa: E402

#: The states of one LOST episode; any other ends it.
SEARCHING = ('LOST', 'LOCALIZING')


def episodes(states, record_end=None):
    """The LOST episodes of a trial's ``states`` ([t, state] in time order): a list of
    (start, end or None, end state or None, [(t0, t1) of each LOST stretch]); a stretch still
    on when the states end lasts until ``record_end`` (None: unknown)."""
    out, current = [], None
    for k, (t, state) in enumerate(states):
        t_next = states[k + 1][0] if k + 1 < len(states) else record_end
        if state in SEARCHING:
            if current is None:
                if state != 'LOST':
                    continue            # LOCALIZING without LOST first: not a search
                current = [t, None, None, []]
            if state == 'LOST':
                current[3].append((t, t_next))
            continue
        if current is not None:
            current[1], current[2] = t, state
            out.append(tuple(current))
            current = None
    if current is not None:
        out.append(tuple(current))
    return out


def is_cut(episode, budget):
    """Whether a budget of ``budget`` s would have asked for help in this episode (one whose
    record ended at an unknown time: yes)."""
    start, _, _, stretches = episode
    return any(t1 is None or t1 > start + budget for _, t1 in stretches)


def outcomes(trials, budget):
    """Per strategy: [trials, cut, localized and the goal resumed, localized and not, need
    help, otherwise, [(seconds into the episode at which each cut one ended or None: the
    record ended first, the state it ended in or None)]]."""
    out = {}
    for trial in trials:
        row = out.setdefault(trial['strategy'], [0, 0, 0, 0, 0, 0, []])
        row[0] += 1
        trace = trial.get('trace') or []
        found = episodes(trial.get('states', []), trace[-1][0] if trace else None)
        cut = next((episode for episode in found if is_cut(episode, budget)), None)
        if cut is None:
            continue
        start, end, state, _ = cut
        row[1] += 1
        if state in SETTLED:
            row[2 if trial.get('resumed') else 3] += 1
        elif state == 'NEED_HELP':
            row[4] += 1
        else:
            row[5] += 1
        row[6].append((None if end is None else end - start, state))
    return out


def _end(seconds, state):
    """A cut episode's end for the table: seconds into it, the state when not a localization
    nor NEED_HELP, '-' when the record ended first."""
    if seconds is None:
        return '-'
    text = '%.0f' % seconds
    return text if state in SETTLED or state == 'NEED_HELP' else '%s (%s)' % (text, state)


def report(folders, budget):
    """The Markdown table of the folders."""
    lines = ['| run | strategy | trials | search cut by a %.0f s budget | then: localized, goal '
             'resumed | localized, goal not resumed | NEED_HELP (the run\'s budget) | record '
             'ended first, or otherwise | their ends (s into the episode) |' % budget,
             '|---|---|---|---|---|---|---|---|---|']
    for folder in folders:
        result = read_run(folder, 'search_budget')
        label = os.path.basename(os.path.normpath(folder))
        for strategy, row in outcomes(result.get('trials', []), budget).items():
            ends = ', '.join(_end(*end) for end in row[6]) or '-'
            lines.append('| %s | `%s` | %s | %s |' % (
                label, strategy, ' | '.join(str(n) for n in row[:6]), ends))
            label = ''
    return '\n'.join(lines)


def main(argv):
    """Print the table of the folders named in argv."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--budget', type=float, default=120.0,
                        help='the shorter budget (s, > 0; default 120)')
    parser.add_argument('folders', nargs='+', metavar='DIR')
    args = parser.parse_args(argv)
    if not args.budget > 0:
        parser.error('--budget must be > 0, got %r' % args.budget)
    print(report(args.folders, args.budget))


if __name__ == '__main__':
    main(sys.argv[1:])
