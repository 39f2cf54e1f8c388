"""Suite ``detection``: how fast each lost detector notices a silent delocalization, and how
often it cries wolf while the robot drives normally.

One simulated graph (sim.launch: world, amcl stand-in, move_base stand-in) on the given map.
The robot keeps driving to random goals; each trial is

    re-seed at a random pose (a person's rviz initial pose, correct) -> ``settle`` s
    -> ``normal`` s of normal driving (false alarms are counted here)
    -> the event: a silent teleport of 1-10 m with a random heading (the localizer is not
       told), or every 4th trial a wrong initial pose at bring-up (the robot stays, amcl is
       told a pose 1-10 m off, with rviz's covariance)
    -> ``observe`` s of driving on (detections are looked for here).

Every amcl_pose published is recorded once; afterwards the three detectors of
:mod:`lost_and_found.bench.detectors` run over that same stream, so they are compared on
identical inputs. A trial counts as delocalized when the first reading after the event is
off by more than :data:`detectors.LOST_XY` m or :data:`detectors.LOST_YAW` rad; a detection
is tier 2 within the observation window before amcl found the truth again by itself
(``self_corrected``). The run's folder keeps the stream (``detection_stream.json``), the ground
truth (``detection_truth.json``) and each reading's scan, as its returns in the robot's base
frame with the odometry pose of its instant (``detection_returns.json``), so that other
detectors can be scored on the same inputs afterwards.

With ``--clutter D`` the simulated world holds about D unmapped boxes per 100 m^2 of free space
(:mod:`lost_and_found.bench.clutter`): the laser sees them, the localizer and the lost detector
keep the clean map, as on a real robot among chairs and people. With ``--stale D`` about D
openings per 100 m^2 are cut into the mapped obstacles of the simulated world (doors open that
were shut when the building was mapped, furniture moved away): the laser sees through mapped
walls at the right pose, and the normal-driving false alarms say what that costs.
"""
import json
import math
import os

import numpy as np

from lost_and_found.bench import clutter, detectors, report
from lost_and_found.bench.places import FreeSpace
from lost_and_found.bench.simrun import Driver, SimSession
from lost_and_found.core.geometry import wrap_angle
from lost_and_found.sim.gridmap import load_map

#: Trials per run, and with --quick.
DEFAULT_TRIALS = 40
QUICK_TRIALS = 2
#: Sim seconds of each phase (full run, --quick).
PHASES = {'settle': 10.0, 'normal': 120.0, 'observe': 30.0}
QUICK_PHASES = {'settle': 5.0, 'normal': 15.0, 'observe': 15.0}
#: The target: tier 2 within this many seconds of driving after the event. Reported both ways:
#: in seconds elapsed since the event, and in seconds during which the robot was moving
#: (amcl publishes only after motion, so a robot parked by the navigator gives no reading).
WITHIN = 15.0
#: The robot counts as moving (driving seconds) over a ground-truth step faster than this
#: (m/s, or rad/s for turning in place).
MOVING_SPEED = 0.02
MOVING_TURN = 0.05
#: Headline delocalizations are at least this far (m).
HEADLINE_DISTANCE = 2.0
#: Delocalization distances (m) are drawn uniformly from this range.
DISTANCES = (1.0, 10.0)
#: Seconds after the event within which the estimate must be seen wrong for the trial to
#: count as a delocalization.
ONSET = 5.0
#: Every BRINGUP_EVERY-th trial is a wrong initial pose instead of a teleport.
BRINGUP_EVERY = 4


def plan_trials(rng, count):
    """The kind, distance and random seed of every trial, drawn before anything runs.

    Each trial draws its poses from its own seed, and the driver from another stream, so that
    how many goals the driver happened to send (which depends on timing) does not change the
    trials.
    """
    plan = []
    for index in range(count):
        kind = 'bringup' if index % BRINGUP_EVERY == BRINGUP_EVERY - 1 else 'teleport'
        plan.append({'index': index, 'kind': kind,
                     'distance': float(rng.uniform(*DISTANCES)),
                     'seed': int(rng.integers(2 ** 31))})
    return plan


class Motion:
    """How far and how long the robot moved between two times, from its ground-truth path.

    Args:
        truth: (t, x, y, yaw) of the ground truth, in order.
    """

    def __init__(self, truth):
        truth = np.asarray(truth, dtype=float).reshape(-1, 4)
        self.truth = truth
        steps = np.hypot(np.diff(truth[:, 1]), np.diff(truth[:, 2])) if len(truth) > 1 \
            else np.zeros(0)
        turns = np.abs(wrap_angle(np.diff(truth[:, 3]))) if len(truth) > 1 else np.zeros(0)
        # A teleport is not driving: steps faster than any robot are left out.
        dt = np.diff(truth[:, 0]) if len(truth) > 1 else np.zeros(0)
        jumps = steps > 2.0 * np.maximum(dt, 1e-3) + 0.05
        steps[jumps] = 0.0
        self._odometer = np.concatenate([[0.0], np.cumsum(steps)])
        moving = ~jumps & ((steps > MOVING_SPEED * dt) | (turns > MOVING_TURN * dt))
        self._moving_clock = np.concatenate([[0.0], np.cumsum(np.where(moving, dt, 0.0))])

    def driven(self, t0, t1):
        """Metres the robot drove (ground truth) between two times."""
        return self._between(self._odometer, t0, t1)

    def driving_seconds(self, t0, t1):
        """Seconds between two times during which the robot moved (ground truth)."""
        return self._between(self._moving_clock, t0, t1)

    def _between(self, cumulative, t0, t1):
        """The increase of a per-truth-sample running total between two times."""
        if not len(self.truth):
            return 0.0
        i0 = int(np.searchsorted(self.truth[:, 0], t0))
        i1 = int(np.searchsorted(self.truth[:, 0], t1))
        i0, i1 = min(i0, len(cumulative) - 1), min(i1, len(cumulative) - 1)
        return float(cumulative[i1] - cumulative[i0])


def detector_reading(row):
    """One recorded reading ``(t, x, y, yaw, var_x, var_y, cov_xy, var_yaw[, miss[, through,
    short, near, open[, span[, spans]]]])`` as :mod:`detectors` takes it: (t, var_x, var_y, cov_xy,
    var_yaw, scan miss fraction or None[, through and short miss fractions or None[, through
    span or None]])."""
    out = (row[0],) + tuple(row[4:8]) + (row[8] if len(row) > 8 else None,) + tuple(row[9:11])
    return out + (row[13],) if len(row) > 13 else out


def reading_window(times, start, end):
    """Indices of the sorted reading ``times`` with ``start <= t < end``, as a range."""
    lo = int(np.searchsorted(times, start, side='left'))
    hi = int(np.searchsorted(times, end, side='left'))
    return range(lo, hi)


class Stream(Motion):
    """Recorded readings and ground truth, with the errors of every reading.

    Args:
        readings: (t, x, y, yaw, var_x, var_y, cov_xy, var_yaw[, scan miss[, through,
            short, ...]]) of every amcl_pose, in order.
        truth: (t, x, y, yaw) of the ground truth, in order.
    """

    def __init__(self, readings, truth):
        """Interpolate nothing: each reading is compared with the truth nearest in time."""
        super().__init__(truth)
        self.readings = [tuple(r) for r in readings]
        self.times = np.array([r[0] for r in self.readings], dtype=float)
        self.errors = detectors.reading_errors(self.readings, self.truth) if len(self.truth) \
            else [(math.inf, math.inf)] * len(self.readings)

    def detector_readings(self):
        """The readings as :mod:`detectors` takes them: (t, var_x, var_y, cov_xy, var_yaw,
        scan miss fraction or None[, through and short miss fractions or None])."""
        return [detector_reading(r) for r in self.readings]

    def window(self, start, end):
        """Indices of the readings with ``start <= t < end``."""
        return reading_window(self.times, start, end)


def score_trial(record, stream, tiers, phases):
    """Score one trial for every detector.

    Args:
        record: the trial's plan plus ``t_reset``, ``t_normal``, ``t_event``, ``t_end``.
        stream: the :class:`Stream`.
        tiers: detector name -> tier per reading of the stream.
        phases: the phase durations used.

    Returns:
        A dict: the record, the delocalization facts, and per detector its scores.
    """
    out = dict(record)
    after = list(stream.window(record['t_event'], record['t_end']))
    normal = list(stream.window(record['t_normal'], record['t_event']))
    start = settle_start(record)
    settle = [] if start is None else list(stream.window(start, record['t_normal']))
    out['readings_normal'] = len(normal)
    out['readings_after'] = len(after)
    # The localizer may still publish a reading or two from before it took the event in (an
    # initial pose is handled asynchronously): the delocalization starts at the first wrong
    # reading within the first few seconds.
    lost = next((i for i in after if stream.times[i] <= record['t_event'] + ONSET
                 and detectors.is_wrong(stream.errors[i])), None)
    out['initial_error'] = list(stream.errors[lost]) if lost is not None else None
    out['delocalized'] = lost is not None
    fix = next((i for i in after if lost is not None and i > lost
                and detectors.is_right(stream.errors[i])), None)
    out['self_corrected_at'] = (stream.times[fix] - record['t_event']) if fix is not None \
        else None
    out['normal_driven_m'] = stream.driven(record['t_normal'], record['t_event'])
    per = {}
    for name, tier in tiers.items():
        scores = {}
        # Control: right after a correct re-seed (rviz covariance) plus the settle time.
        first_normal = normal[0] if normal else None
        scores['alarm_after_reseed'] = (first_normal is not None and tier[first_normal] >= 2)
        # False alarms: entries into tier 2 while the estimate is right, during the settle
        # time after the correct re-seed and during normal driving (one pass: an alarm of the
        # settle time that lasts into normal driving is counted once, as a settle alarm).
        counts = {'settle': [0, 0], 'normal': [0, 0]}      # [false, true]
        previous = False
        for phase, indices in (('settle', settle), ('normal', normal)):
            for i in indices:
                high = tier[i] >= 2
                if high and not previous:
                    counts[phase][detectors.is_wrong(stream.errors[i])] += 1
                previous = high
        scores['false_alarms'] = counts['normal'][0]
        scores['true_alarms_normal'] = counts['normal'][1]
        scores['settle_false_alarms'] = counts['settle'][0]
        scores['tier1_readings_normal'] = sum(1 for i in normal if tier[i] == 1)
        # Detection after the event, before amcl corrected itself.
        limit = stream.times[fix] if fix is not None else record['t_end']
        hit = next((i for i in after if tier[i] >= 2 and stream.times[i] <= limit), None)
        hit1 = next((i for i in after if tier[i] >= 1 and stream.times[i] <= limit), None)
        if hit is not None:
            scores['delay_s'] = float(stream.times[hit] - record['t_event'])
            scores['delay_m'] = stream.driven(record['t_event'], stream.times[hit])
            scores['delay_driving_s'] = stream.driving_seconds(record['t_event'],
                                                               stream.times[hit])
        else:
            scores['delay_s'] = scores['delay_m'] = scores['delay_driving_s'] = None
        scores['tier1_delay_s'] = (float(stream.times[hit1] - record['t_event'])
                                   if hit1 is not None else None)
        settled = next((i for i in after
                        if stream.times[i] >= record['t_event'] + phases['settle']), None)
        scores['alarm_after_settle'] = settled is not None and tier[settled] >= 2
        per[name] = scores
    out['detectors'] = per
    return out


def settle_start(record):
    """When a trial's settle time began: its first pose fix (the correct re-seed), or None for
    a record without one (older recordings, trials inferred from the phases): the replay then
    reset nothing, so a tier 2 in that window may be the previous trial's and is not scored."""
    fixes = record.get('pose_fixes') or ()
    return fixes[0] if fixes else None


def within_driving(scores):
    """Whether a detection came within :data:`WITHIN` s of driving (False: unknown, missed)."""
    seconds = scores.get('delay_driving_s')
    return seconds is not None and math.isfinite(seconds) and seconds <= WITHIN


def summarize(trials, phases):
    """Per detector: rates, delays, false alarms per hour; over the scored trials."""
    normal_hours = sum(t['t_event'] - t['t_normal'] for t in trials) / 3600.0
    summary = {'trials': len(trials), 'normal_driving_hours': normal_hours,
               'normal_driving_km': sum(t['normal_driven_m'] for t in trials) / 1000.0,
               'detectors': {}}
    for name in detectors.NAMES:
        groups = {}
        for label, keep in (
                ('silent_ge2m', lambda t: t['kind'] == 'teleport'
                 and t['distance'] >= HEADLINE_DISTANCE),
                ('silent_all', lambda t: t['kind'] == 'teleport'),
                ('bringup', lambda t: t['kind'] == 'bringup')):
            chosen = [t for t in trials if keep(t)]
            lost = [t for t in chosen if t['delocalized']]
            scores = [t['detectors'][name] for t in lost]
            delays = [s['delay_s'] for s in scores]
            groups[label] = {
                'trials': len(chosen),
                'delocalized': len(lost),
                'self_corrected': sum(1 for t in lost if t['self_corrected_at'] is not None),
                'detected': sum(1 for d in delays if d is not None),
                'detection_rate': report.rate(sum(1 for d in delays if d is not None),
                                              len(lost)),
                'detection_rate_within': report.rate(
                    sum(1 for d in delays if d is not None and d <= WITHIN), len(lost)),
                'detection_rate_within_driving': report.rate(
                    sum(1 for s in scores if within_driving(s)), len(lost)),
                'delay_s': report.stats(delays),
                'delay_driving_s': report.stats([s.get('delay_driving_s') for s in scores]),
                'delay_m': report.stats([s['delay_m'] for s in scores]),
                'tier1_rate': report.rate(
                    sum(1 for s in scores if s['tier1_delay_s'] is not None), len(lost)),
                'alarm_after_settle_rate': report.rate(
                    sum(1 for s in scores if s['alarm_after_settle']), len(lost)),
            }
        all_scores = [t['detectors'][name] for t in trials]
        false_alarms = sum(s['false_alarms'] for s in all_scores)
        normal_readings = sum(t['readings_normal'] for t in trials)
        groups['normal'] = {
            'false_alarms': false_alarms,
            'false_alarms_per_hour': (false_alarms / normal_hours) if normal_hours else None,
            'true_alarms': sum(s['true_alarms_normal'] for s in all_scores),
            'tier1_fraction': report.rate(sum(s['tier1_readings_normal'] for s in all_scores),
                                          normal_readings),
            'alarm_after_reseed_rate': report.rate(
                sum(1 for s in all_scores if s['alarm_after_reseed']), len(all_scores)),
            'settle_false_alarms': sum(s.get('settle_false_alarms', 0) for s in all_scores),
            'reseeds': len(all_scores),
        }
        summary['detectors'][name] = groups
    return summary


def markdown(summary, label):
    """The suite's tables."""
    rows = []
    for name in detectors.NAMES:
        g = summary['detectors'][name]
        s, n = g['silent_ge2m'], g['normal']
        rows.append([
            '`%s`' % name, '%d/%d' % (s['detected'], s['delocalized']),
            report.fmt(s['detection_rate_within'], 1, '%'),
            report.fmt(s['detection_rate_within_driving'], 1, '%'),
            report.fmt(s['delay_s']['median'], 1), report.fmt(s['delay_s']['p95'], 1),
            report.fmt(s['delay_driving_s']['median'], 1),
            report.fmt(s['delay_driving_s']['p95'], 1),
            report.fmt(s['delay_m']['median'], 2), report.fmt(s['delay_m']['p95'], 2),
            '%d (%s/h)' % (n['false_alarms'], report.fmt(n['false_alarms_per_hour'], 2)),
            report.fmt(s['tier1_rate'], 1, '%') if name == 'lost_detector' else 'n/a'])
    lines = ['Map `%s`: %d trials, %.2f h (%.2f km) of normal driving%s.' % (
        label, summary['trials'], summary['normal_driving_hours'],
        summary['normal_driving_km'], clutter.world_changes(summary)), '',
        '**Silent delocalizations >= %.0f m** (teleport without lift; delays over the '
        'detected ones):' % HEADLINE_DISTANCE, '',
        report.markdown_table(
            ['detector', 'detected', 'within %.0f s' % WITHIN,
             'within %.0f s of driving' % WITHIN, 'delay median (s)', 'delay p95 (s)',
             'median (s driving)', 'p95 (s driving)', 'median (m driven)', 'p95 (m driven)',
             'false tier-2 alarms', 'tier-1 rate'], rows), '']
    rows = []
    for name in detectors.NAMES:
        g = summary['detectors'][name]
        a, b, n = g['silent_all'], g['bringup'], g['normal']
        rows.append([
            '`%s`' % name, '%d/%d' % (a['detected'], a['delocalized']),
            report.fmt(a['detection_rate_within'], 1, '%'),
            '%d/%d' % (b['detected'], b['delocalized']),
            report.fmt(b['alarm_after_settle_rate'], 1, '%'),
            '%d/%d' % (n['settle_false_alarms'], n['reseeds']),
            report.fmt(n['alarm_after_reseed_rate'], 1, '%'),
            report.fmt(n['tier1_fraction'], 1, '%') if name == 'lost_detector' else 'n/a'])
    lines += ['**All silent delocalizations (1-10 m), wrong bring-ups, and re-seeds:**', '',
              report.markdown_table(
                  ['detector', 'silent 1-10 m detected', 'within %.0f s' % WITHIN,
                   'wrong bring-up detected', 'wrong bring-up: still tier 2 after settle',
                   'correct re-seed: false tier-2 alarms while settling',
                   'correct re-seed: tier 2 after settle (false)',
                   'tier-1 share of normal readings'], rows)]
    lost = summary['detectors']['lost_detector']['silent_all']
    lines += ['', 'Delocalizations amcl corrected by itself before any detection: %d of %d '
              '(they count as misses unless a detector alarmed first).'
              % (lost['self_corrected'], lost['delocalized'])]
    return '\n'.join(lines) + '\n'


def run(ctx):
    """Run the suite (see the module docstring)."""
    args = ctx.args
    phases = QUICK_PHASES if args.quick else PHASES
    count = args.trials or (QUICK_TRIALS if args.quick else DEFAULT_TRIALS)
    config = detectors.load_detector_config(args.detector_config)
    world_map, nav_map, places, changes = clutter.world_for(ctx, load_map(args.map))
    free = FreeSpace(places)
    plan = plan_trials(ctx.rng, count)
    start = free.sample(ctx.rng)
    driver_rng = np.random.default_rng(int(ctx.rng.integers(2 ** 31)))
    records = []
    with SimSession(ctx, start, 'detection', world_map=world_map, nav_map=nav_map) as session:
        session.start(navigator=True)
        driver = Driver(session, free, driver_rng)
        for spec in plan:
            record = dict(spec)
            rng = np.random.default_rng(spec['seed'])
            pose = free.sample(rng)
            driver.cancel()
            session.teleport(pose)
            session.clear_costmaps()
            # Every initial pose is a pose fix: lost_service resets the detector on it, and
            # so does the replay.
            record['pose_fixes'] = [session.now()]
            session.initial_pose(pose)
            record['reset_pose'] = list(pose)
            record['t_reset'] = session.now()
            session.wait_sim(phases['settle'], 'settling after the re-seed', tick=driver.tick)
            record['t_normal'] = session.now()
            session.wait_sim(phases['normal'], 'normal driving', tick=driver.tick)
            here = session.truth_pose()
            target = free.sample_at_distance(rng, here[:2], spec['distance'])
            if spec['kind'] == 'teleport':
                session.teleport(target)
            else:
                record['pose_fixes'].append(session.now())
                session.initial_pose(target)
            # After the call: the teleport has happened (the service answers once it has).
            record['t_event'] = session.now()
            record['event_from'] = list(here)
            record['event_to'] = list(target)
            record['distance'] = math.hypot(target[0] - here[0], target[1] - here[1])
            session.wait_sim(phases['observe'], 'driving after the event', tick=driver.tick)
            record['t_end'] = session.now()
            records.append(record)
            ctx.progress('trial %d/%d: %s %.1f m, %d amcl poses so far' % (
                spec['index'] + 1, count, spec['kind'], record['distance'],
                len(session.readings)))
        with session.lock:
            readings, truth = list(session.readings), list(session.truth_log)
            returns = session.reading_returns()
        goals, aborted = driver.goals_sent, driver.aborted
    stream = Stream(readings, truth)
    strips = detectors.strip_verdicts(stream.readings, returns,
                                      detectors.detector_map(load_map(args.map)), config,
                                      pose_fixes(records)) if config.strip_count else None
    tiers = detectors.run_all(stream.detector_readings(), config, pose_fixes(records), strips)
    trials = [score_trial(r, stream, tiers, phases) for r in records]
    summary = summarize(trials, phases)
    summary.update({'phases': phases, 'goals_sent': goals, 'goals_aborted': aborted,
                    'readings': len(readings), 'detector_config': args.detector_config,
                    'localizer_config': getattr(args, 'localizer_config', None) or
                    'the shipped file',
                    'clutter': changes['clutter'], 'stale': changes['stale']})
    write_stream(ctx.path('detection_stream.json'), stream, trials, args.label,
                 detectors.scan_check_of(config))
    write_truth(ctx.path(TRUTH_FILE), truth)
    write_returns(ctx.path(RETURNS_FILE), returns)
    plots = [plot_delays(ctx, trials, key) for key in DELAY_PLOTS]
    return {'summary': summary, 'trials': trials, 'markdown': markdown(summary, args.label),
            'plots': plots}


#: The ground truth of a run, beside its stream: with it, :func:`rescore` scores another
#: lost_detector YAML on the run exactly as the suite scored the run's own.
TRUTH_FILE = 'detection_truth.json'


def write_truth(path, truth):
    """Write the ground-truth samples ``(t, x, y, yaw)`` of a run."""
    report.write_json(path, {'fields': ['t', 'x', 'y', 'yaw'],
                             'truth': [[float(v) for v in entry] for entry in truth]})


#: Each reading's scan, beside the stream: the returns in the robot's base frame, so that a
#: rule that reads several scans together (placed by the robot's motion) can be replayed on a
#: run.
RETURNS_FILE = 'detection_returns.json'


def write_returns(path, returns):
    """Write each reading's returns (an ``(n, 2)`` array in the base frame, m) and odometry
    pose (``(x, y, yaw)`` or None), or None, in the stream's order, the returns rounded to the
    centimetre."""
    def entry(item):
        if item is None:
            return None
        points, odom = item
        return {'odom': None if odom is None else [float(v) for v in odom],
                'points': [[round(float(x), 2), round(float(y), 2)] for x, y in points]}
    data = {'frame': 'base_footprint', 'odom_frame': 'odom',
            'returns': [entry(r) for r in returns]}
    with open(path, 'w') as stream:      # one line: indented, the points would fill pages
        json.dump(data, stream, allow_nan=False)
        stream.write('\n')


def read_returns(folder, readings=None):
    """Each reading's returns and odometry pose of a run: ``((n, 2) array, (x, y, yaw) or
    None)``, or None; ValueError when the run has no returns file (recorded before the suite
    kept them), or, given the run's number of ``readings``, holds another number."""
    path = os.path.join(folder, RETURNS_FILE)
    if not os.path.exists(path):
        raise ValueError('%s: no %s (the run was recorded before the detection suite kept '
                         'each reading\'s returns)' % (folder, RETURNS_FILE))
    returns = [None if r is None else (np.asarray(r['points'], dtype=float).reshape(-1, 2),
                                       None if r['odom'] is None else tuple(r['odom']))
               for r in report.read_json(path).get('returns') or []]
    if readings is not None and len(returns) != readings:
        raise ValueError('%s: %d returns for %d readings' % (folder, len(returns), readings))
    return returns


def recorded_stream(folder, data, truth, config):
    """``(stream, misses)``: the :class:`Stream` of a run's ``detection_stream.json``
    (``data``) and truth, its scan values weighed and measured as ``config`` asks by
    ``misses`` (a :class:`detectors.StreamMisses`; near and open are not needed again, the
    span goes where a recording has it)."""
    misses = detectors.StreamMisses(data.get('scan_check'), data['fields'],
                                    data.get('min_ranges'), config, folder)
    return Stream([tuple(row[:8]) + misses.values(row, i) + (None, None, misses.span(row, i))
                   for i, row in enumerate(data['readings'])], truth), misses


def read_truth(folder):
    """The ground-truth samples a run wrote with :func:`write_truth` (a list of
    ``[t, x, y, yaw]``; empty when the file holds none).

    Raises:
        ValueError: the file is missing or not JSON.
    """
    return report.read_json(os.path.join(folder, TRUTH_FILE)).get('truth') or []


def run_map(folder, run=None):
    """The map_server YAML a detection run was made on, as its ``detection.json`` names it
    (as given, or relative to the package's folder), or None when no such file is here.

    Args:
        folder: the run's output folder.
        run: its ``detection.json`` document, when already read.
    """
    from lost_and_found.bench.cli import package_dir
    if run is None:
        run = report.read_json(os.path.join(folder, 'detection.json'))
    named = run.get('map')
    if not named:
        return None
    for path in (named, os.path.join(package_dir(), named)):
        if os.path.exists(path):
            return path
    return None


def rescore(folder, config, out, label=None, map_path=None):
    """Score another lost_detector config on a finished run, as the run scored its own.

    Reads the run's ``detection.json`` (trials and phases), ``detection_stream.json`` (every
    amcl pose with the scan misses by kind) and ``detection_truth.json``; the miss fraction
    of every reading is weighed and measured as ``config`` asks (its ``short_weight``, and its
    ``min_range`` and ``open_beams`` from the stream's ``scan_near`` or ``scan_open``), then
    the three detectors are replayed and scored. The amcl_diag and nav2_islocalized rows come
    out as in the run.

    Args:
        folder: the run's output folder.
        config: the LostDetectorConfig to score.
        out: folder for the plots (made if missing).
        label: the map's name in the tables (default: the run's).
        map_path: the run's map_server YAML, for ``config``'s rule 9 (``strip_check/count``),
            whose strips are scored on the map again from the run's recorded returns (None:
            the map its ``detection.json`` names, :func:`run_map`).

    Returns:
        The suite's result dict (``summary``, ``trials``, ``markdown``, ``plots``), and
        ``spans_recorded``: whether the stream has the through span as ``config`` measures it
        (without it ``config``'s burst rule never fires).

    Raises:
        ValueError: a missing or bad file, or a stream whose scan feature cannot be computed
            as ``config`` computes it.
    """
    from types import SimpleNamespace
    run = report.read_json(os.path.join(folder, 'detection.json'))
    data = report.read_json(os.path.join(folder, 'detection_stream.json'))
    truth = read_truth(folder)
    if not truth or not run.get('trials'):
        raise ValueError('%s: no ground truth or no trials to score' % folder)
    stream, misses = recorded_stream(folder, data, truth, config)
    records = run['trials']
    phases = (run.get('summary') or {}).get('phases') or PHASES
    strips = None
    if config.strip_count:
        map_path = map_path or run_map(folder, run)
        if not map_path:
            raise ValueError('%s: rule 9 (strip_check/count %d) needs the run\'s map, and '
                             'the one its detection.json names (%r) is not here: give --map'
                             % (folder, config.strip_count, run.get('map')))
        returns = read_returns(folder, len(stream.readings))
        strips = detectors.strip_verdicts(stream.readings, returns,
                                          detectors.detector_map(load_map(map_path)), config,
                                          pose_fixes(records))
    tiers = detectors.run_all(stream.detector_readings(), config, pose_fixes(records), strips)
    trials = [score_trial(r, stream, tiers, phases) for r in records]
    summary = summarize(trials, phases)
    # What the run knew beyond the scores (its phases, clutter, goals), as the run wrote it.
    for key in ('phases', 'clutter', 'stale', 'goals_sent', 'goals_aborted', 'readings',
                'localizer_config'):
        if key in (run.get('summary') or {}):
            summary[key] = run['summary'][key]
    label = label or data.get('map') or 'map'
    os.makedirs(out, exist_ok=True)
    ctx = SimpleNamespace(out=out, args=SimpleNamespace(quick=phases == QUICK_PHASES,
                                                        label=label))
    plots = [plot_delays(ctx, trials, key) for key in DELAY_PLOTS]
    return {'summary': summary, 'trials': trials, 'markdown': markdown(summary, label),
            'plots': plots, 'label': label, 'spans_recorded': misses.has_spans()}


def pose_fixes(trials):
    """The times of every initial pose the suite published (re-seeds and wrong bring-ups)."""
    return sorted(t for trial in trials for t in trial.get('pose_fixes', ()))


def scan_values(reading):
    """[miss, through, short, near, open] of a recorded reading (Nones where it has none;
    ``near`` and ``open`` as :meth:`simrun.ScanMisses._values` gives them)."""
    return list(reading[8:13]) + [None] * (13 - max(len(reading), 8))


def scan_span(reading):
    """The through span (m) of a recorded reading, or None (``simrun.ScanMisses._values``)."""
    return reading[13] if len(reading) > 13 else None


def scan_spans(reading):
    """The through spans (m) of a recorded reading without and with the open beams, at the
    recording's min_range (``simrun.ScanMisses._values``): a list of two (either None), or
    None when it has neither."""
    spans = reading[14] if len(reading) > 14 else None
    return None if spans is None or all(s is None for s in spans) else list(spans)


#: The columns of ``detection_stream.json``: the pose and covariance, the error and phase, the
#: scan values (:func:`stream_row`).
STREAM_FIELDS = ('t', 'x', 'y', 'yaw', 'var_x', 'var_y', 'cov_xy', 'var_yaw', 'error_xy',
                 'error_yaw', 'phase', 'scan_miss', 'scan_through', 'scan_short', 'scan_near',
                 'scan_open', 'scan_span', 'scan_spans')


def stream_row(reading, error, phase):
    """One row of ``detection_stream.json`` (:data:`STREAM_FIELDS`) of a recorded reading
    (``(t, x, y, yaw, var_x, var_y, cov_xy, var_yaw)`` and the scan values of
    ``simrun.ScanMisses``), its ``(error_xy, error_yaw)`` and its phase."""
    return list(reading[:8]) + list(error) + [phase] + scan_values(reading) + [
        scan_span(reading), scan_spans(reading)]


def write_stream(path, stream, trials, label, scan_check):
    """Every reading with its error and phase: the input of tools/calibrate_detector.py.

    ``scan_check`` (:func:`detectors.scan_check_of`) says how the scan feature was computed.
    """
    phase = ['other'] * len(stream.readings)
    for t in trials:
        for i in stream.window(t['t_reset'], t['t_normal']):
            phase[i] = 'settle'
        for i in stream.window(t['t_normal'], t['t_event']):
            phase[i] = 'normal'
        for i in stream.window(t['t_event'], t['t_end']):
            phase[i] = t['kind']
    report.write_json(path, {
        'map': label,
        'scan_check': scan_check,
        'min_ranges': list(detectors.MIN_RANGES),
        'fields': list(STREAM_FIELDS),
        'readings': [stream_row(r, e, p) for r, e, p in zip(stream.readings, stream.errors,
                                                            phase)],
    })


#: The delay plots: trial key -> (file name prefix, x label). The target counts seconds of
#: driving (amcl publishes only while the robot moves); elapsed seconds are shown beside them.
DELAY_PLOTS = {
    'delay_s': ('detection_delay_cdf', 'delay to tier 2 (sim s)'),
    'delay_driving_s': ('detection_driving_delay_cdf', 'delay to tier 2 (sim s of driving)'),
}


def plot_delays(ctx, trials, key='delay_s'):
    """CDF of the delay to tier 2 (``key`` of :data:`DELAY_PLOTS`) per detector, over the
    delocalized silent trials >= 2 m."""
    chosen = [t for t in trials if t['kind'] == 'teleport' and t['delocalized']
              and t['distance'] >= HEADLINE_DISTANCE]
    series = {name: [t['detectors'][name][key] for t in chosen]
              for name in detectors.NAMES}
    prefix, xlabel = DELAY_PLOTS[key]
    window = QUICK_PHASES['observe'] if ctx.args.quick else PHASES['observe']
    name = '%s_%s.png' % (prefix, ctx.args.label)
    report.cdf_plot(os.path.join(ctx.out, name), series, xlabel,
                    'Silent delocalizations >= %.0f m, map %s' % (HEADLINE_DISTANCE,
                                                                  ctx.args.label),
                    censor=window if key == 'delay_s' else None,   # the window is elapsed s
                    marks={'%.0f s target' % WITHIN: WITHIN})
    return name
