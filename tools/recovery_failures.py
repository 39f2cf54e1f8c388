#!/usr/bin/python3
"""What went wrong in a recovery-suite run: every trial that did not resume its goal, and
every collision, read from the run's own records.

Usage: tools/recovery_failures.py DIR [DIR ...]   (output folders of `bench recovery`)

For each failed trial of a search strategy (``none`` is only counted): its index, whether it
asked for help, and every time
lost_service left LOST/LOCALIZING for IDLE/NAVIGATING with the estimate still off (a false
localization: the 1 Hz trace's error at that moment). For each collision (sim_world logs
``collision (N so far)`` with its sim time in rosout.log): the trial it happened in, the
robot state and the estimate's error then. Then, per strategy, how often lost_service declared
the robot localized (and how often wrongly), how many looks the recovery node made
(``look_before_resume``: ``going to look from`` in rosout.log) and how many localizations
fiducial_localizer's tag check refuted (``should be in view``), each judged right or wrong by the
estimate's error then; how often move_base aborted the resumed goal (``aborted the resumed
goal``), with the estimate off or right then, and how many of those aborts the recovery node took
as a wrong estimate (``max_doubts``: ``taking the estimate as wrong``), right or wrong, how
many resumed goals that stood still it took so (``resume_stall_time``: ``the resumed goal has
not moved the robot``), right or wrong, and how many localizations on amcl's poses alone
lost_service refuted on probation (``refute_confused_after``: ``after a localization on amcl's
poses alone``), right or wrong.
Last, per strategy, the approaches of tags seen too far away to localize from
(``approach_tags``: ``recovery: tag N seen`` in rosout.log) and how each ended: the state left
LOST before the approach was over (a localization: usually the tag's fix), or the approach's own
end (``approach of tag N over``: faced the tag, blocked, timed out), or neither (the search
budget ran out, or the trial's record ended first). Prints Markdown; writes nothing.
"""
import glob
import json
import os
import re
import sys

#: A trace sample: (t from the put-down, x, y, yaw, error xy, error yaw, state).
ERROR_XY, STATE = 4, 6
#: An estimate this far off (m) when the search ends is a false localization.
OFF_XY = 0.45
#: States in which the robot believes it knows where it is.
SETTLED = ('IDLE', 'NAVIGATING')
LEAD = 60.0     # s before a put-down that count as that trial's drive (lift after 1-3 m)
COLLISION = re.compile(r'^(\d+(?:\.\d+)?) .*/sim_world: collision \((\d+) so far\)')
LOOK = re.compile(r'^(\d+(?:\.\d+)?) .*recovery: going to look from')
REFUTATION = re.compile(r'^(\d+(?:\.\d+)?) WARN .*should be in view .* the localization is wrong')
RESUME_ABORT = re.compile(r'^(\d+(?:\.\d+)?) WARN .*recovery: move_base aborted the resumed goal')
DOUBT = re.compile(r'^(\d+(?:\.\d+)?) WARN .*recovery: move_base aborted the resumed goal .*'
                   r'taking the estimate as wrong')
STALL_DOUBT = re.compile(r'^(\d+(?:\.\d+)?) WARN .*recovery: the resumed goal .*has not moved '
                         r'the robot .*taking the estimate as wrong')
PROBATION = re.compile(r'^(\d+(?:\.\d+)?) .*-> LOST: the lost detector read \w+ for .* after a '
                       r'localization on amcl\'s poses alone')
APPROACH = re.compile(r'^(\d+(?:\.\d+)?) .*recovery: tag (\S+) seen ')
#: An approach that left a spin (``approach_at_once``): the seconds of the turn it cut.
SPIN_CUT = re.compile(r'^(\d+(?:\.\d+)?) .*recovery: tag (\S+) seen .*; the spin cut short '
                      r'with (\d+(?:\.\d+)?) s of it left')
APPROACH_OVER = re.compile(r'^(\d+(?:\.\d+)?) .*recovery: approach of tag \S+ over: ([^;]*);')
#: How an approach's own end is named in the log (``Approach.step`` outcomes and the dwell).
APPROACH_ENDS = (('faced', 'faced the tag'), ('blocked', 'blocked'), ('timed out', 'timed out'))


def read_run(folder, tool):
    """The parsed ``recovery.json`` of a `bench recovery` output folder; exits with a message
    naming ``tool`` and the file when it cannot be read."""
    path = os.path.join(folder, 'recovery.json')
    try:
        with open(path) as stream:
            return json.load(stream)
    except (OSError, ValueError) as error:
        sys.exit('%s: cannot read %s: %s' % (tool, path, error))


def log_matches(folder, pattern):
    """(sim time, match) of the lines of a run's rosout.log files that match ``pattern``
    (sorted by time, each time once: the same line may be in two copies of the log)."""
    found = {}
    glob_pattern = os.path.join(folder, 'logs', 'recovery', '**', 'rosout.log')
    for path in sorted(glob.glob(glob_pattern, recursive=True)):
        with open(path, errors='replace') as stream:
            for line in stream:
                match = pattern.match(line)
                if match:
                    found.setdefault(float(match.group(1)), match)
    return sorted(found.items(), key=lambda item: item[0])


def log_times(folder, pattern):
    """Sim times of the lines of a run's rosout.log files that match ``pattern`` (sorted,
    each once)."""
    return [t for t, _match in log_matches(folder, pattern)]


def localized_after(trial, t_sim):
    """Sim time at which ``trial``'s trace first shows the robot localizing or localized
    (LOCALIZING, IDLE, NAVIGATING; not NEED_HELP) after ``t_sim``, or None."""
    start = trial['t_put_down_sim']
    for sample in trial.get('trace') or []:
        t = start + sample[0]
        if t > t_sim and sample[STATE] in ('LOCALIZING',) + SETTLED:
            return t
    return None


def approach_list(folder, trials):
    """[(sim time, trial, match, outcome)] of the run's approaches (``match``: of APPROACH,
    the tag id its group 2); outcome 'localized', one of APPROACH_ENDS' names, or 'other'
    (the budget, or the end of the trial's record)."""
    ends = log_matches(folder, APPROACH_OVER)
    found = []
    for t, match in log_matches(folder, APPROACH):
        trial = owner(trials, t)
        if trial is None:
            continue
        over = next(((t_end, m.group(2)) for t_end, m in ends if t_end >= t), None)
        settled = localized_after(trial, t)
        if settled is not None and (over is None or settled <= over[0]):
            outcome = 'localized'
        elif over is not None and (settled is None or over[0] < settled) and \
                over[0] <= trial['t_put_down_sim'] + (trial['trace'][-1][0]
                                                      if trial.get('trace') else 0.0):
            outcome = next((name for name, text in APPROACH_ENDS if over[1].startswith(text)),
                           over[1])
        else:
            outcome = 'other'
        found.append((t, trial, match, outcome))
    return found


def approach_outcomes(folder, trials):
    """{(strategy, outcome): count} of the run's approaches (see :func:`approach_list`)."""
    counts = {}
    for _t, trial, _match, outcome in approach_list(folder, trials):
        key = (trial['strategy'], outcome)
        counts[key] = counts.get(key, 0) + 1
    return counts


def collisions(folder):
    """Sim times of the collisions logged in a run's rosout.log files (sorted)."""
    return log_times(folder, COLLISION)


def declarations(trial):
    """(all, wrong) steps of the trace from a searching state to a settled one."""
    trace = trial.get('trace') or []
    steps = [after for before, after in zip(trace, trace[1:])
             if before[STATE] not in SETTLED and after[STATE] in SETTLED]
    return len(steps), sum(1 for after in steps if after[ERROR_XY] > OFF_XY)


def false_localizations(trial):
    """(t, error) of every step from a searching state to a settled one with the estimate off.
    """
    out = []
    trace = trial.get('trace') or []
    for before, after in zip(trace, trace[1:]):
        if before[STATE] not in SETTLED and after[STATE] in SETTLED and \
                after[ERROR_XY] > OFF_XY:
            out.append((after[0], after[ERROR_XY]))
    return out


def at(trial, t_sim):
    """The trace sample of ``trial`` nearest to sim time ``t_sim`` (None without a trace)."""
    trace = trial.get('trace') or []
    if not trace:
        return None
    t = t_sim - trial['t_put_down_sim']
    return min(trace, key=lambda sample: abs(sample[0] - t))


def by_put_down(trials):
    """``trials`` sorted by put-down time, the order :func:`owner` and :func:`approach_list`
    expect."""
    return sorted(trials, key=lambda trial: trial['t_put_down_sim'])


def owner(trials, t_sim):
    """The trial a collision at ``t_sim`` belongs to (``trials`` sorted by put-down), or None.

    The trial whose trace (from its put-down to its last sample) spans ``t_sim``; otherwise the
    trial put down within the next ``LEAD`` s (its drive before the kidnap).
    """
    for trial in trials:
        trace = trial.get('trace') or []
        start = trial['t_put_down_sim']
        if trace and start + min(0.0, trace[0][0]) <= t_sim <= start + trace[-1][0]:
            return trial
    for trial in trials:
        if trial['t_put_down_sim'] - LEAD <= t_sim <= trial['t_put_down_sim']:
            return trial
    return None


def judged(folder, trials, pattern):
    """{(strategy, estimate off): count} of the log lines matching ``pattern``, each judged
    by the estimate's error in the trace sample nearest to it."""
    counts = {}
    for t in log_times(folder, pattern):
        trial = owner(trials, t)
        sample = at(trial, t) if trial is not None else None
        if sample is not None:
            key = (trial['strategy'], sample[ERROR_XY] > OFF_XY)
            counts[key] = counts.get(key, 0) + 1
    return counts


def report(folder):
    """Markdown lines for one run."""
    run = read_run(folder, 'recovery_failures')
    trials = by_put_down(run['trials'])
    lines = ['## %s' % folder, '', '| strategy | trial | outcome | false localizations '
             '(s after put-down: error m) |', '|---|---|---|---|']
    waited = [tr for tr in run['trials'] if tr['strategy'] == 'none']
    for trial in sorted(run['trials'], key=lambda tr: (tr['strategy'], tr['index'])):
        if trial.get('resumed') or trial['strategy'] == 'none':
            continue
        outcome = 'NEED_HELP' if trial.get('need_help') else \
            ('recovered, goal not reached' if trial.get('recovered') else 'not recovered')
        wrong = ', '.join('%.0f: %.1f' % item for item in false_localizations(trial)) or '-'
        lines.append('| `%s` | %d | %s | %s |' % (trial['strategy'], trial['index'], outcome,
                                                  wrong))
    if waited:
        lines += ['', '`none` (no search: the localizer alone): %d of %d trials not resumed, %d '
                  'of them asked for help.' % (
                      sum(1 for tr in waited if not tr.get('resumed')), len(waited),
                      sum(1 for tr in waited if tr.get('need_help')))]
    lines += ['', '| collision at (sim s) | strategy | trial | s after put-down | state | '
              'estimate error (m) |', '|---|---|---|---|---|---|']
    for t in collisions(folder):
        trial = owner(trials, t)
        if trial is None:
            lines.append('| %.1f | - | - | - | - | - |' % t)
            continue
        sample = at(trial, t)
        lines.append('| %.1f | `%s` | %d | %.0f | %s | %s |' % (
            t, trial['strategy'], trial['index'], t - trial['t_put_down_sim'],
            sample[STATE] if sample else '-',
            '%.2f' % sample[ERROR_XY] if sample else '-'))
    lines += ['', '| strategy | declared localized | wrong | looks | refutations: right | '
              'wrong | resumed goal aborted: estimate off | right | doubts: right | wrong | '
              'probation: right | wrong | stall doubts: right | wrong |',
              '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    looks = {}
    for t in log_times(folder, LOOK):
        trial = owner(trials, t)
        if trial is not None:
            looks[trial['strategy']] = looks.get(trial['strategy'], 0) + 1
    refutations = judged(folder, trials, REFUTATION)
    aborts = judged(folder, trials, RESUME_ABORT)
    doubts = judged(folder, trials, DOUBT)
    probation = judged(folder, trials, PROBATION)
    stalls = judged(folder, trials, STALL_DOUBT)
    for strategy in sorted({tr['strategy'] for tr in trials}):
        counts = [declarations(tr) for tr in trials if tr['strategy'] == strategy]
        row = [sum(c[0] for c in counts), sum(c[1] for c in counts), looks.get(strategy, 0)]
        for judged_counts in (refutations, aborts, doubts, probation, stalls):
            row += [judged_counts.get((strategy, True), 0),
                    judged_counts.get((strategy, False), 0)]
        lines.append('| `%s` | %s |' % (strategy, ' | '.join(str(n) for n in row)))
    approaches = approach_outcomes(folder, trials)
    if approaches:
        names = ['localized'] + [name for name, _text in APPROACH_ENDS] + ['other']
        lines += ['', '| strategy | approaches | ended by: localization | faced the tag, no '
                  'fix | blocked | timed out | neither (budget, end of record) |',
                  '|---|---|---|---|---|---|---|']
        for strategy in sorted({tr['strategy'] for tr in trials}):
            row = [approaches.get((strategy, name), 0) for name in names]
            lines.append('| `%s` | %d | %s |' % (strategy, sum(row),
                                                 ' | '.join(str(n) for n in row)))
    return lines


def main(argv):
    """Print the report of every folder; exit 2 without one."""
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    for folder in argv[1:]:
        print('\n'.join(report(folder)) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
