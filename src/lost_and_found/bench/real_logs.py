"""Suite ``real-logs``: the real Intel and ACES Carmen logs replayed through sim_localizer and
lost_detector, unmodified (false alarms) and with spliced kidnaps (detection).

For each log of ../shared/data/logs (or ``--logs``) with its map in ../shared/data/maps:

1. The log becomes a bag (:mod:`lost_and_found.bench.carmen`): wheel odometry rebuilt from
   the log (the log's ODOM stream restarts at the corrected pose after every scan; the
   rebuilt odometry drifts as the robot's did) as ``/tf`` odom -> base_footprint, the laser
   as ``/scan`` (180 beams, 1 deg, no return = inf), the corrected (SLAM) pose in the map
   frame (aligned by the map YAML's comments, then registered to the map by each scan:
   :func:`carmen.register_truth`) as ``/ground_truth``.
2. ``launch/bench_replay.launch`` starts sim_localizer on the map (initial pose = the first
   ground-truth pose, amcl's default initial spread) and lost_detector; ``rosbag play --clock``
   plays the bag at :data:`RATE` times real time. Every amcl_pose (with its covariance) and
   every /lost_detector/status is recorded; that the localizer kept up is checked by counting
   its amcl_pose messages against the updates its motion trigger implies.
3. **Unmodified log**: the robot was never lost. Every entry into tier 2 after
   :data:`SETTLE` s is an alarm; it is *false* when the estimate was right at that moment
   (within :data:`LOST_XY` m and :data:`LOST_YAW` rad of the ground truth), *true* when the
   localizer itself had lost track. Also: time in tier 2, the localization error.
4. **Spliced copies**: a window of the log from :data:`WARMUP` s before a random time ``t_k``
   to :data:`WITHIN` s after it, in which the odometry jumps at ``t_k`` by 2-5 m and a random
   heading (a rigid offset of the odom frame, so the estimate moves though the robot does
   not). Detection: tier 2 within :data:`WITHIN` s of ``t_k``, before the localizer corrected
   itself; delay in seconds and in metres driven (ground truth).

All three detectors of :mod:`lost_and_found.bench.detectors` are run over the same recorded
amcl_pose stream; the live lost_detector node's own status stream is reported next to its
offline twin as a cross-check (``lost_detector_live``). Every bag is replayed once per
localizer profile (:data:`PROFILES`); the splices are the same for every profile.
``--trials N``: N spliced copies per log. Writes ``real_logs_stream.json`` (every amcl_pose of
the unmodified replays with its error and tiers), the bags (``bags/``) and the plots. The
suite skips (with the reason) when the data is absent.
"""
import math
import os
import subprocess
import threading
import time

import numpy as np
import yaml

from lost_and_found.bench import carmen, detectors, report
from lost_and_found.bench.cli import package_dir
from lost_and_found.bench.detectors import LOST_XY, LOST_YAW, is_right, is_wrong, \
    reading_errors
from lost_and_found.bench.graph import GraphError, RosGraph
from lost_and_found.bench.detection import detector_reading, scan_values
from lost_and_found.core.scan_agreement import DistanceMap
from lost_and_found.sim.gridmap import load_map

#: The logs: name, log file (in the logs folder), map YAML (in the maps folder), laser range.
LOGS = (
    ('intel', 'intel-corrected.log.gz', os.path.join('intel_lab_seattle', 'intel.yaml'), 81.83),
    ('aces', 'aces-corrected.log.gz', os.path.join('aces_austin', 'aces.yaml'), 50.0),
)
#: rosbag play rate (log time per wall time); the localizer keeps up at this rate (checked).
RATE = 20.0
#: Spliced copies per log (full run, --quick; ``--trials`` overrides both) and the log
#: seconds replayed unmodified with --quick (the full run replays the whole log).
DEFAULT_SPLICES = 5
QUICK_SPLICES = 1
QUICK_SECONDS = 300.0
#: Log seconds replayed before a splice (the localizer converges from the initial pose).
WARMUP = 60.0
#: Detection window after a splice (log seconds); the spliced copy ends this much later (+1 s).
WITHIN = 60.0
#: A splice moves the odometry by a distance drawn from this range (m), any direction, and
#: turns it by a heading drawn uniformly from [-pi, pi).
JUMP_RANGE = (2.0, 5.0)
#: A splice time is kept only where the robot drives at least this far (m, ground truth) in
#: the detection window: a standing robot gives amcl nothing to update on.
MIN_DRIVEN = 5.0
#: Log seconds after the start of a replay in which alarms are not counted (convergence from
#: amcl's initial spread), as the detection suite's settle phase.
SETTLE = 30.0
#: The localizer kept up when it published at least this share of the expected amcl_poses.
KEEP_UP = 0.95
#: Wall seconds the amcl_pose count must stay still after the bag ended before the replay is
#: taken as finished (the localizer may still be busy with the last scans).
QUIET_WALL = 3.0
#: Localizer profiles, each replaying every bag: sim_localizer parameters over the shipped
#: config/sim_localizer.yaml. ``stock`` is that file as shipped. The logs hold
#: one scan per ~0.55 m and large turns, and amcl's diff model draws noise with a standard
#: deviation proportional to the *square* of the motion per update, so with the stock
#: odom_alpha 0.2 the cloud stays broad (sigma_xy ~1 m) on them; ``alpha0.1`` halves the
#: odometry noise (the best of 0.05 / 0.1 / 0.2 in an offline sweep of the unmodified logs: a
#: choice made on these logs, so read it as a localizer tuned for this robot).
PROFILES = {
    'stock': {},
    'alpha0.1': {'odom_alpha1': 0.1, 'odom_alpha2': 0.1, 'odom_alpha3': 0.1,
                 'odom_alpha4': 0.1},
}
#: Live lost_detector status -> tier.
TIERS = {'normal': 0, 'confused': 1, 'lost': 2}


def skipped(reason):
    """The result of a suite that could not run for want of data."""
    return {'skipped': reason, 'summary': {}, 'trials': [], 'markdown': 'Skipped: %s' % reason,
            'plots': []}


def find_inputs(logs_dir, maps_dir):
    """The logs that can be replayed and why the others cannot.

    Returns:
        (inputs, missing): inputs = [(name, log path, map YAML, max range)], missing = [text].
    """
    inputs, missing = [], []
    for name, log_file, map_file, max_range in LOGS:
        log_path = os.path.join(logs_dir, log_file)
        map_path = os.path.join(maps_dir, map_file)
        if not os.path.isfile(log_path):
            missing.append('%s: no log %s' % (name, log_path))
        elif not os.path.isfile(map_path):
            missing.append('%s: no map %s' % (name, map_path))
        else:
            inputs.append((name, log_path, map_path, max_range))
    return inputs, missing


# ---------------------------------------------------------------------------- planning

def odometer(truth):
    """(times, cumulative metres) of a ground-truth track [(t, x, y, yaw)] sorted by time."""
    return np.array([p[0] for p in truth], dtype=float), np.array(carmen.path_length(truth))


def driven(meter, t0, t1):
    """Metres driven between two times, from an :func:`odometer` (linear between poses)."""
    times, dist = meter
    if not len(times):
        return 0.0
    return float(np.interp(t1, times, dist) - np.interp(t0, times, dist))


def plan_splices(rng, truth, count, warmup=WARMUP, within=WITHIN, jump_range=JUMP_RANGE,
                 min_driven=MIN_DRIVEN, tries=200):
    """Draw ``count`` splices: times and jumps, every number from ``rng``.

    Args:
        rng: numpy Generator.
        truth: the log's ground truth [(t, x, y, yaw)] (log times, sorted).
        count: how many.

    Returns:
        list of dicts: ``t`` (log time), ``jump`` (dx, dy, dyaw) in the odom frame,
        ``distance`` (m), ``start`` and ``end`` (the window of the spliced copy).

    Raises:
        ValueError: the log is too short, or no time with enough driving was found.
    """
    first, last = truth[0][0], truth[-1][0]
    low, high = first + warmup, last - within - 1.0
    if high <= low:
        raise ValueError('a log of %.0f s is too short for a %.0f s warm-up and a %.0f s '
                         'window' % (last - first, warmup, within))
    meter = odometer(truth)
    plan = []
    for index in range(count):
        for _ in range(tries):
            t = float(rng.uniform(low, high))
            if driven(meter, t, t + within) >= min_driven:
                break
        else:
            raise ValueError('no splice time with %.0f m of driving in %.0f s found in %d '
                             'draws' % (min_driven, within, tries))
        distance = float(rng.uniform(*jump_range))
        direction = float(rng.uniform(-math.pi, math.pi))
        dyaw = float(rng.uniform(-math.pi, math.pi))
        plan.append({'index': index, 't': t, 'distance': distance,
                     'jump': [distance * math.cos(direction), distance * math.sin(direction),
                              dyaw],
                     'start': t - warmup, 'end': t + within + 1.0})
    return plan


# ---------------------------------------------------------------------------- scoring

def episodes(times, tiers, errors, start, end, tier=2):
    """The spells at tier >= ``tier`` that begin within [start, end].

    Being at that tier at ``start`` already counts as a spell beginning at ``start``
    (as :func:`detectors.alarms` counts it).

    Returns:
        list of dicts: ``t_start``, ``t_end`` (the first reading below the tier, or the last
        reading), ``wrong_at_start`` (the estimate was off when it began), ``wrong_later``
        (it was off at some reading of the spell), ``max_error_xy``.
    """
    out = []
    current = None
    for t, value, error in zip(times, tiers, errors):
        if t < start:
            continue
        if value >= tier:
            if current is None:
                if t > end:
                    break
                current = {'t_start': t, 't_end': t, 'wrong_at_start': is_wrong(error),
                           'wrong_later': False, 'max_error_xy': error[0]}
                out.append(current)
            current['t_end'] = t
            current['wrong_later'] = current['wrong_later'] or is_wrong(error)
            current['max_error_xy'] = max(current['max_error_xy'], error[0])
        elif current is not None:
            current['t_end'] = t
            current = None
            if t > end:
                break
    return out


def time_at_least(times, tiers, tier, start, end):
    """Seconds within [start, end] during which the latest reading was at tier >= ``tier``."""
    total = 0.0
    for i, (t, value) in enumerate(zip(times, tiers)):
        t_next = times[i + 1] if i + 1 < len(times) else end
        lo, hi = max(t, start), min(t_next, end)
        if value >= tier and hi > lo:
            total += hi - lo
    return total


def score_unmodified(times, tiers, errors, start, end):
    """False and true alarms, and time in tier 2, of one detector on an unmodified replay.

    Args:
        times, tiers, errors: per reading.
        start, end: the scored window (log times; start after the settle time).
    """
    spells = episodes(times, tiers, errors, start, end)
    hours = max(end - start, 0.0) / 3600.0
    false_alarms = sum(1 for s in spells if not s['wrong_at_start'])
    return {
        'alarms': len(spells),
        'false_alarms': false_alarms,
        # False when raised, but the localizer did lose track before the spell ended.
        'false_alarms_wrong_later': sum(1 for s in spells
                                        if not s['wrong_at_start'] and s['wrong_later']),
        'true_alarms': len(spells) - false_alarms,
        'false_alarms_per_hour': false_alarms / hours if hours else None,
        'time_tier2_s': time_at_least(times, tiers, 2, start, end),
        'time_tier2_share': (time_at_least(times, tiers, 2, start, end) / (end - start)
                             if end > start else None),
        'time_tier_ge1_share': (time_at_least(times, tiers, 1, start, end) / (end - start)
                                if end > start else None),
        'episodes': spells,
    }


def localization_summary(times, errors, start, end):
    """Median/p95/max of the xy and yaw error and the share of wrong readings in [start, end]."""
    chosen = [e for t, e in zip(times, errors) if start <= t <= end]
    return {'readings': len(chosen),
            'error_xy': report.stats([e[0] for e in chosen]),
            'error_yaw': report.stats([e[1] for e in chosen]),
            'wrong_share': report.rate(sum(1 for e in chosen if is_wrong(e)), len(chosen))}


def score_splice(times, tiers, errors, t_splice, within, meter):
    """Detection of one spliced kidnap by one detector.

    Returns:
        dict: ``alarmed_before`` (tier 2 at the last reading before the splice),
        ``delocalized`` (the first reading after it is off), ``self_corrected_s`` (seconds
        until an estimate was right again), ``delay_s`` and ``delay_m`` (to the first tier-2
        reading after the splice within ``within`` s and before the self-correction, or None),
        ``readings_after``.
    """
    before = [i for i, t in enumerate(times) if t < t_splice]
    after = [i for i, t in enumerate(times) if t_splice <= t <= t_splice + within]
    fix = next((i for i in after if is_right(errors[i])), None)
    limit = times[fix] if fix is not None else t_splice + within
    hit = next((i for i in after if tiers[i] >= 2 and times[i] <= limit), None)
    return {
        'alarmed_before': bool(before) and tiers[before[-1]] >= 2,
        'delocalized': bool(after) and is_wrong(errors[after[0]]),
        'first_error_xy': errors[after[0]][0] if after else None,
        'self_corrected_s': (times[fix] - t_splice) if fix is not None else None,
        'delay_s': (times[hit] - t_splice) if hit is not None else None,
        'delay_m': driven(meter, t_splice, times[hit]) if hit is not None else None,
        'readings_after': len(after),
    }


def rescore_unmodified(run, streams, config):
    """Score another lost_detector config on the unmodified replays of a recorded run.

    Args:
        run: the suite's ``real_logs.json`` document (its trials carry the scored windows).
        streams: its ``real_logs_stream.json`` document (every reading of each replay).
        config: a LostDetectorConfig.

    Returns:
        One dict per unmodified replay: ``log``, ``profile`` and the
        :func:`score_unmodified` scores of ``config`` over the window the suite scored.

    Raises:
        ValueError: when the documents do not match (a stream without its trial), or the
            streams' scan feature was computed otherwise than ``config`` computes it.
    """
    out = []
    for stream in streams['streams']:
        if stream.get('kind', 'unmodified') != 'unmodified':    # older files: unmodified only
            continue
        misses = detectors.StreamMisses(streams.get('scan_check'), stream['fields'],
                                        streams.get('min_ranges'), config, 'real-logs streams')
        trial = next((t for t in run['trials'] if t.get('kind') == 'unmodified'
                      and t['log'] == stream['log'] and t['profile'] == stream['profile']),
                     None)
        if trial is None:
            raise ValueError('no unmodified trial for the stream of %s (%s)'
                             % (stream['log'], stream['profile']))
        readings, errors = _stream_readings(stream, misses)
        tiers = detectors.lost_detector_tiers(readings, config)
        start = trial['start'] + SETTLE
        out.append({'log': stream['log'], 'profile': stream['profile'],
                    'scores': score_unmodified([r[0] for r in readings], tiers, errors, start,
                                               trial['end'])})
    return out


def _stream_readings(stream, misses):
    """The detector's readings ``(t, var_x, var_y, cov_xy, var_yaw, miss, through, short)``
    of one recorded replay, and their errors ``(error_xy, error_yaw)``."""
    field = {name: i for i, name in enumerate(stream['fields'])}
    rows = stream['readings']
    readings = [(r[0],) + tuple(r[4:8]) + misses.values(r, i) for i, r in enumerate(rows)]
    errors = [(r[field['error_xy']], r[field['error_yaw']]) for r in rows]
    return readings, errors


def rescore_spliced(streams, config):
    """Score another lost_detector config on the spliced copies of a recorded run.

    Args:
        streams: the run's ``real_logs_stream.json`` document (spliced copies are in it since
            the suite wrote them for calibration; older files give no entry).
        config: a LostDetectorConfig.

    Returns:
        One dict per spliced copy: ``log``, ``profile``, ``t_splice``, ``distance`` and the
        :func:`score_splice` scores of ``config`` (``delay_m`` None: the stream has no
        ground-truth track).

    Raises:
        ValueError: when the streams' scan feature was computed otherwise than ``config``
            computes it.
    """
    out = []
    for stream in streams['streams']:
        if stream.get('kind') != 'spliced':
            continue
        misses = detectors.StreamMisses(streams.get('scan_check'), stream['fields'],
                                        streams.get('min_ranges'), config, 'real-logs streams')
        readings, errors = _stream_readings(stream, misses)
        tiers = detectors.lost_detector_tiers(readings, config)
        scores = score_splice([r[0] for r in readings], tiers, errors, stream['t_splice'],
                              WITHIN, (np.zeros(0), np.zeros(0)))
        scores['delay_m'] = None
        out.append({'log': stream['log'], 'profile': stream['profile'],
                    't_splice': stream['t_splice'], 'distance': stream['distance'],
                    'scores': scores})
    return out


def registration_summary(registered):
    """What :func:`carmen.register_truth` did: poses moved, shifts of the moved ones."""
    moved = [s for s in registered.shifts if s[0] or s[1]]
    return {'poses': len(registered.truth), 'moved': registered.moved,
            'shift_xy': report.stats([s[0] for s in moved]),
            'shift_yaw_deg': report.stats([math.degrees(s[1]) for s in moved])}


def registration_markdown(registration):
    """A paragraph on the registered ground truth of every log."""
    parts = ['%s %d of %d poses moved, by %s m median, %s m p95, %s m at most (yaw %s deg '
             'median)' % (name, r['moved'], r['poses'], report.fmt(r['shift_xy']['median'], 2),
                          report.fmt(r['shift_xy']['p95'], 2),
                          report.fmt(r['shift_xy']['max'], 2),
                          report.fmt(r['shift_yaw_deg']['median'], 1))
             for name, r in sorted(registration.items())]
    return ('**Ground truth.** The corrected poses of the logs and the maps come from different '
            'SLAM runs: after the map YAML\'s rigid alignment a corrected pose is still off the '
            'map\'s walls by up to half a metre in places. Each is registered to the map by '
            'its own scan (carmen.register_truth: the pose within %.1f m and %.1f deg whose '
            'beam end points lie nearest the mapped walls, kept when clearly better): %s. '
            'Errors below are measured against the registered poses.\n' % (
                carmen.COARSE[0][0] + carmen.FINE[0][0],
                math.degrees(carmen.COARSE[1][0] + carmen.FINE[1][0]), '; '.join(parts)))


def live_agreement(live, offline):
    """Share of readings where the live node's tier equals the offline one (None: no data)."""
    n = min(len(live), len(offline))
    if not n:
        return None
    return sum(1 for a, b in zip(live[:n], offline[:n]) if a == b) / n


def summarize(trials):
    """Per log and detector: false alarms on the unmodified logs, detection on the splices."""
    summary = {'logs': {}, 'detectors': {}}
    unmodified = [t for t in trials if t['kind'] == 'unmodified']
    spliced = [t for t in trials if t['kind'] == 'spliced']
    for t in unmodified:
        summary['logs'][t['log']] = {
            'scored_hours': t['scored_s'] / 3600.0, 'driven_km': t['driven_m'] / 1000.0,
            'localization': t['localization'], 'kept_up': t['kept_up'],
            'amcl_poses': t['amcl_poses'], 'expected_amcl_poses': t['expected_amcl_poses'],
            'live_agreement': t['live_agreement']}
    hours = sum(t['scored_s'] for t in unmodified) / 3600.0
    for name in detectors.NAMES + ('lost_detector_live',):
        scores = [t['detectors'][name] for t in unmodified if name in t['detectors']]
        false_alarms = sum(s['false_alarms'] for s in scores)
        summary['detectors'][name] = dict({
            'unmodified_replays': len(scores),
            'false_alarms': false_alarms,
            'false_alarms_wrong_later': sum(s['false_alarms_wrong_later'] for s in scores),
            'true_alarms': sum(s['true_alarms'] for s in scores),
            'false_alarms_per_hour': false_alarms / hours if hours else None,
            'time_tier2_share': report.rate(sum(s['time_tier2_s'] for s in scores),
                                            sum(t['scored_s'] for t in unmodified)),
        }, **summarize_splices([t['detectors'][name] for t in spliced
                                if name in t['detectors']]))
    summary['scored_hours'] = hours
    return summary


def summarize_splices(scores):
    """Pooled :func:`score_splice` scores of one detector: the splices, those that found it in
    tier 2 already, and of the others those that delocalized the localizer, how many of them
    it detected and their delays."""
    clean = [s for s in scores if not s['alarmed_before']]
    lost = [s for s in clean if s['delocalized']]
    detected = sum(1 for s in lost if s['delay_s'] is not None)
    return {
        'splices': len(scores),
        'alarmed_before_splice': len(scores) - len(clean),
        'delocalized': len(lost),
        'detected': detected,
        'detection_rate': report.rate(detected, len(lost)),
        'delay_s': report.stats([s['delay_s'] for s in lost]),
        'delay_m': report.stats([s['delay_m'] for s in lost]),
    }


def markdown(summary, trials, settings):
    """The tables of one localizer profile."""
    overrides = ', '.join('%s %s' % (k, v) for k, v in sorted(settings['overrides'].items()))
    lines = ['## Localizer profile `%s`' % settings['profile'], '',
             'Carmen logs replayed at %gx through sim_localizer (config/sim_localizer.yaml, %d '
             'particles%s) + lost_detector; alarms counted after a %.0f s settle; an alarm is '
             '*true* when the estimate was off by > %.1f m or %.2f rad when it began.' % (
                 settings['rate'], settings['particles'],
                 '; ' + overrides if overrides else '', SETTLE, LOST_XY, LOST_YAW), '']
    rows = []
    for t in trials:
        if t['kind'] != 'unmodified':
            continue
        loc = t['localization']
        rows.append([t['log'], '%.0f' % t['scored_s'], '%.0f' % t['driven_m'],
                     '%d/%d' % (t['amcl_poses'], t['expected_amcl_poses']),
                     'yes' if t['kept_up'] else '**no**',
                     report.fmt(loc['error_xy']['median'], 2),
                     report.fmt(loc['error_xy']['p95'], 2),
                     report.fmt(loc['error_xy']['max'], 2),
                     report.fmt(loc['wrong_share'], 1, '%'),
                     report.fmt(t['live_agreement'], 1, '%')])
    lines += ['**Unmodified logs: the localizer** (error vs the corrected pose in the map):', '',
              report.markdown_table(
                  ['log', 'scored log s', 'driven m', 'amcl_pose / expected', 'kept up',
                   'error median (m)', 'p95 (m)', 'max (m)', 'readings off', 'live = offline'],
                  rows), '']
    rows = []
    for t in trials:
        if t['kind'] != 'unmodified':
            continue
        for name in detectors.NAMES + ('lost_detector_live',):
            s = t['detectors'].get(name)
            if s is None:
                continue
            rows.append([t['log'], '`%s`' % name, s['false_alarms'],
                         report.fmt(s['false_alarms_per_hour'], 2),
                         s['false_alarms_wrong_later'], s['true_alarms'],
                         report.fmt(s['time_tier2_share'], 1, '%'),
                         report.fmt(s['time_tier_ge1_share'], 1, '%')
                         if name.startswith('lost_detector') else 'n/a'])
    lines += ['**Unmodified logs: alarms** (the robot was never lost; target 0 false tier-2 '
              'alarms):', '',
              report.markdown_table(['log', 'detector', 'false tier-2 alarms', 'per hour',
                                     'of which the estimate went off later in the spell',
                                     'true alarms (localizer lost)', 'time in tier 2',
                                     'time in tier >= 1'], rows), '']
    rows = []
    for name in detectors.NAMES + ('lost_detector_live',):
        s = summary['detectors'][name]
        rows.append(['`%s`' % name, s['splices'], s['alarmed_before_splice'],
                     '%d/%d' % (s['detected'], s['delocalized']),
                     report.fmt(s['detection_rate'], 1, '%'),
                     report.fmt(s['delay_s']['median'], 1), report.fmt(s['delay_s']['max'], 1),
                     report.fmt(s['delay_m']['median'], 2), report.fmt(s['delay_m']['max'], 2)])
    lines += ['**Spliced kidnaps** (odometry jump of %.0f-%.0f m and a random heading; detected '
              '= tier 2 within %.0f s, before the localizer corrected itself; trials already '
              'in tier 2 at the splice are left out of the rate):' % (
                  JUMP_RANGE[0], JUMP_RANGE[1], WITHIN), '',
              report.markdown_table(['detector', 'splices', 'in tier 2 at the splice',
                                     'detected / delocalized', 'rate', 'delay median (s)',
                                     'max (s)', 'median (m driven)', 'max (m driven)'], rows),
              '']
    rows = []
    for t in trials:
        if t['kind'] != 'spliced':
            continue
        d = t['detectors']['lost_detector']
        rows.append([t['log'], '%.0f' % t['t_splice'], '%.1f' % t['distance'],
                     '%.0f' % math.degrees(t['jump'][2]), report.fmt(d['first_error_xy'], 2),
                     'yes' if d['delocalized'] else 'no',
                     report.fmt(d['self_corrected_s'], 1),
                     'yes' if d['alarmed_before'] else 'no', report.fmt(d['delay_s'], 1),
                     report.fmt(t['detectors']['amcl_diag']['delay_s'], 1),
                     report.fmt(t['detectors']['nav2_islocalized']['delay_s'], 1),
                     'yes' if t['kept_up'] else '**no**'])
    lines += ['**Every splice** (delays in log s; `-` = not detected):', '',
              report.markdown_table(['log', 't (log s)', 'jump (m)', 'turn (deg)',
                                     'first error (m)', 'delocalized', 'self-corrected after (s)',
                                     'tier 2 before', 'lost_detector', 'amcl_diag',
                                     'nav2_islocalized', 'kept up'], rows)]
    return '\n'.join(lines) + '\n'


# ---------------------------------------------------------------------------- ROS glue

class Recorder:
    """The bench node's subscriptions: amcl_pose (with the scan miss fraction of each, from
    /scan, as the lost_detector computes it), /lost_detector/status, ground truth.

    One bench node serves every replay of the suite (rospy initialises once per process);
    :meth:`reset` empties the buffers before a new replay's launch starts.

    Args:
        rospy: the initialised rospy module.
        detector_config: the lost_detector YAML (its ``scan_check`` numbers).
    """

    def __init__(self, rospy, detector_config):
        """Subscribe (the node must be initialised)."""
        import tf2_ros
        from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
        from sensor_msgs.msg import LaserScan
        from std_msgs.msg import String

        from lost_and_found.bench.simrun import ScanMisses
        self.rospy = rospy
        self.lock = threading.Lock()
        self.readings, self.statuses, self.truth = [], [], []
        self.last_change = time.monotonic()
        self._tf_buffer = tf2_ros.Buffer(rospy.Duration(30.0))
        self._tf_listener = tf2_ros.TransformListener(self._tf_buffer)
        self.misses = ScanMisses(detector_config, None, self._tf_buffer)
        self.scan_sub = rospy.Subscriber(carmen.SCAN_TOPIC, LaserScan, self._on_scan,
                                         queue_size=1000)
        self.pose_sub = rospy.Subscriber('/amcl_pose', PoseWithCovarianceStamped, self._on_pose,
                                         queue_size=1000)
        self.status_sub = rospy.Subscriber('/lost_detector/status', String, self._on_status,
                                           queue_size=1000)
        self.truth_sub = rospy.Subscriber(carmen.TRUTH_TOPIC, PoseStamped, self._on_truth,
                                          queue_size=1000)

    def reset(self, map_path):
        """Forget everything recorded; the next replay is on the map at ``map_path``."""
        with self.lock:
            self.readings, self.statuses, self.truth = [], [], []
            self.misses.set_map(map_path)
            self._tf_buffer.clear()
            self.last_change = time.monotonic()

    def _on_scan(self, msg):
        with self.lock:
            self.misses.on_scan(msg, self.readings)

    def _on_pose(self, msg):
        from lost_and_found.bench.simrun import pose_entry
        entry = pose_entry(msg)
        with self.lock:
            self.misses.on_pose(entry, self.readings)
            self.last_change = time.monotonic()

    def _on_status(self, msg):
        with self.lock:
            self.statuses.append(msg.data)
            self.last_change = time.monotonic()

    def _on_truth(self, msg):
        with self.lock:
            self.truth.append(msg.header.stamp.to_sec())

    def connected(self):
        """Both the pose and the status subscription have a publisher connected."""
        return self.pose_sub.get_num_connections() > 0 and \
            self.status_sub.get_num_connections() > 0

    def snapshot(self):
        """(readings, statuses, truth stamps) recorded so far (copies)."""
        with self.lock:
            return list(self.readings), list(self.statuses), list(self.truth)


def _subscribed(graph, topic, node):
    """True when ``node`` subscribes ``topic`` on the graph's master."""
    import rosgraph
    try:
        state = rosgraph.Master('/bench_probe', master_uri=graph.uri).getSystemState()
    except Exception:  # noqa: B902 - the master may be busy; try again on the next poll
        return False
    return any(name == topic and node in nodes for name, nodes in state[1])


def _param_set(graph, name):
    import rosgraph
    try:
        return bool(rosgraph.Master('/bench_probe', master_uri=graph.uri).getParam(name))
    except Exception:  # noqa: B902 - not set yet (the master answers with a fault)
        return False


class Replayer:
    """Runs replays on one graph: launch, play, record, stop.

    Args:
        ctx: the BenchContext.
        graph: a started :class:`RosGraph`.
        detector_config: the lost_detector YAML for the live node.
    """

    def __init__(self, ctx, graph, detector_config):
        """Nothing runs until :meth:`replay`."""
        self.ctx = ctx
        self.graph = graph
        self.detector_config = detector_config
        self.recorder = None
        self.count = 0

    def replay(self, name, bag, duration, launch_args, expected):
        """Play one bag through a fresh localizer + detector; return what was recorded.

        Args:
            name: for log files.
            bag: the bag path.
            duration: its length in log seconds (for the wall deadline).
            launch_args: bench_replay.launch arguments.
            expected: how many amcl_pose messages the localizer should publish.

        Returns:
            dict: ``readings``, ``statuses``, ``truth_stamps``, ``wall_s``.
        """
        graph = self.graph
        if self.recorder is not None:
            self.recorder.reset(launch_args['map_file'])
        args = dict(launch_args)
        args['lost_detector_config'] = self.detector_config
        launched = graph.launch('replay_%02d_%s' % (self.count, name), 'lost_and_found',
                                'bench_replay.launch', args)
        self.count += 1
        try:
            if self.recorder is None:
                graph.wait_for(lambda: _param_set(graph, '/use_sim_time'), 60,
                               '/use_sim_time from bench_replay.launch')
                self.recorder = Recorder(graph.init_node('bench'), self.detector_config)
                self.recorder.reset(launch_args['map_file'])
            recorder = self.recorder
            graph.wait_for(lambda: (_subscribed(graph, carmen.SCAN_TOPIC, '/sim_localizer')
                                    and recorder.connected() and recorder.snapshot()[1]),
                           120, 'sim_localizer and lost_detector of %s' % name)
            started = time.monotonic()
            log_path = os.path.join(graph.log_dir, 'play_%s.log' % name)
            with open(log_path, 'w') as log:
                play = subprocess.Popen(
                    ['rosbag', 'play', '--clock', '-q', '-r', '%g' % RATE,
                     '--wait-for-subscribers', bag, '--topics', '/tf', '/tf_static',
                     carmen.SCAN_TOPIC, carmen.TRUTH_TOPIC],
                    stdout=log, stderr=subprocess.STDOUT, env=graph.env,
                    start_new_session=True)
            try:
                graph.wait_for(lambda: play.poll() is not None,
                               60.0 + 4.0 * duration / RATE, 'rosbag play of %s' % name,
                               period=0.2)
            finally:
                if play.poll() is None:
                    play.kill()
                    play.wait(5.0)
            if play.returncode != 0:
                raise GraphError('rosbag play of %s exited with %s; see %s'
                                 % (bag, play.returncode, log_path))

            def finished():
                # Every expected pose and the detector's status for each (after its initial
                # one), or nothing new for a while (the count is then checked by the caller).
                with recorder.lock:
                    n, quiet = len(recorder.readings), time.monotonic() - recorder.last_change
                    statuses = len(recorder.statuses)
                return (n >= expected and statuses >= n + 1) or quiet >= QUIET_WALL

            graph.wait_for(finished, 120, 'the last amcl_pose of %s' % name, period=0.1)
            wall = time.monotonic() - started
        finally:
            graph.stop(launched)
        readings, statuses, truth = recorder.snapshot()
        return {'readings': readings, 'statuses': statuses, 'truth_stamps': truth,
                'wall_s': wall}


# ---------------------------------------------------------------------------- the suite

def _localizer_config():
    """The shipped sim_localizer parameters (for the motion trigger of the expected count)."""
    path = os.path.join(package_dir(), 'config', 'sim_localizer.yaml')
    with open(path) as stream:
        return yaml.safe_load(stream) or {}


def _evaluate(record, result, data, config, start, end):
    """Tiers of every detector, errors, and the common fields of one replay."""
    # Back to log time, the time base of the plan and of the ground truth.
    readings = [(carmen.log_time_of(data, r[0]),) + tuple(r[1:]) for r in result['readings']]
    times = [r[0] for r in readings]
    errors = reading_errors(readings, data.truth) if readings else []
    tiers = detectors.run_all([detector_reading(r) for r in readings], config)
    statuses = result['statuses']
    # The node publishes its initial 'normal', then one status per reading, in order.
    live = [TIERS.get(s, 0) for s in statuses[1:]]
    if len(live) == len(readings):
        tiers['lost_detector_live'] = live
    record.update({
        'amcl_poses': len(readings),
        'statuses': len(statuses),
        'truth_received': len(result['truth_stamps']),
        'truth_in_bag': sum(1 for p in data.truth if start <= p[0] <= end),
        'kept_up': len(readings) >= KEEP_UP * record['expected_amcl_poses'],
        'live_agreement': live_agreement(live, tiers['lost_detector']),
        'wall_s': result['wall_s'],
    })
    return times, tiers, errors, readings


def _launch_args(initial, args, seed):
    return {'initial_pose_x': '%.6f' % initial[0], 'initial_pose_y': '%.6f' % initial[1],
            'initial_pose_a': '%.6f' % initial[2], 'particles': args.particles,
            'min_particles': min(500, args.particles), 'seed': seed}


def run(ctx):
    """Run the suite (see the module docstring)."""
    args = ctx.args
    root = package_dir()
    logs_dir = os.path.abspath(args.logs) if args.logs else \
        os.path.normpath(os.path.join(root, '..', 'shared', 'data', 'logs'))
    maps_dir = os.path.normpath(os.path.join(logs_dir, '..', 'maps'))
    inputs, missing = find_inputs(logs_dir, maps_dir)
    for text in missing:
        ctx.progress('skipping %s' % text)
    if not inputs:
        return skipped('no Carmen log with its map found (%s)' % '; '.join(missing))
    count = args.trials or (QUICK_SPLICES if args.quick else DEFAULT_SPLICES)
    config = detectors.load_detector_config(args.detector_config)
    loc = _localizer_config()
    bag_dir = ctx.path('bags')
    os.makedirs(bag_dir, exist_ok=True)

    # Everything random is drawn before anything runs; both profiles replay the same copies.
    jobs = []
    registration = {}
    for name, log_path, map_path, max_range in inputs:
        log = carmen.read_log(log_path)
        alignment = carmen.read_alignment(map_path)
        data = carmen.replay_data(log, alignment, max_range)
        grid = load_map(map_path)
        registered = carmen.register_truth(
            data, DistanceMap(grid.occupied, grid.resolution, grid.origin))
        data = data._replace(truth=registered.truth)
        registration[name] = registration_summary(registered)
        ctx.progress('%s: ground truth registered to the map: %d of %d poses moved, median '
                     '%.2f m' % (name, registered.moved, len(registered.truth),
                                 registration[name]['shift_xy']['median'] or 0.0))
        first, last = data.scans[0][0], data.truth[-1][0]
        end = min(last, first + QUICK_SECONDS) if args.quick else last
        jobs.append({'log': name, 'kind': 'unmodified', 'data': data, 'map': map_path,
                     'start': first, 'end': end, 'label': '%s_unmodified' % name})
        for spec in plan_splices(ctx.rng, data.truth, count):
            offset = carmen.jump_offset(carmen.interpolate(data.odometry, spec['t']),
                                        spec['jump'])
            spliced = carmen.replay_data(log, alignment, max_range,
                                         carmen.Splice(spec['t'], offset), data.origin)
            spliced = spliced._replace(truth=data.truth)
            jobs.append({'log': name, 'kind': 'spliced', 'data': spliced, 'map': map_path,
                         'start': spec['start'], 'end': spec['end'], 'spec': spec,
                         'offset': list(offset),
                         'label': '%s_spliced_%d' % (name, spec['index'])})
    for job in jobs:
        job['bag'], job['written'] = _write_bag(bag_dir, job)
    ctx.progress('%d bags written (%s); %d replays per profile, profiles %s, rate %gx' % (
        len(jobs), ', '.join(i[0] for i in inputs), len(jobs),
        ', '.join(PROFILES), RATE))

    trials = []
    with RosGraph(ctx.log_dir) as graph:
        replayer = Replayer(ctx, graph, args.detector_config)
        try:
            for profile, overrides in PROFILES.items():
                params = _write_profile(graph.log_dir, profile, overrides)
                merged = dict(loc, **overrides)
                update_d = float(merged['update_min_d'])
                update_a = float(merged['update_min_a'])
                for job in jobs:
                    trials.append(_run_job(ctx, replayer, job, len(trials), config, update_d,
                                           update_a, profile, params))
        finally:
            if replayer.recorder is not None:
                replayer.recorder.rospy.signal_shutdown('bench done')
    summary = {'profiles': {profile: summarize([t for t in trials if t['profile'] == profile])
                            for profile in PROFILES}}
    summary.update({'rate': RATE, 'settle_s': SETTLE, 'within_s': WITHIN,
                    'warmup_s': WARMUP, 'jump_range_m': list(JUMP_RANGE),
                    'profile_overrides': PROFILES,
                    'detector_config': args.detector_config, 'particles': args.particles,
                    'logs_dir': logs_dir, 'missing': missing, 'registration': registration})
    write_stream(ctx.path('real_logs_stream.json'), trials, detectors.scan_check_of(config))
    plots = [plot_unmodified(ctx, trials, profile) for profile in PROFILES]
    plots.append(plot_delays(ctx, trials))
    for t in trials:
        t.pop('series', None)
    text = [registration_markdown(registration)]
    for profile in PROFILES:
        chosen = [t for t in trials if t['profile'] == profile]
        text.append(markdown(summary['profiles'][profile], chosen, {
            'rate': RATE, 'profile': profile, 'particles': args.particles,
            'overrides': PROFILES[profile]}))
    return {'summary': summary, 'trials': trials, 'label': 'Intel and ACES Carmen logs',
            'markdown': '\n'.join(text),
            'plots': [p for p in plots if p]}


def _write_bag(bag_dir, job):
    """Write a job's bag; the window starts exactly at a scan (known odometry and truth)."""
    data = job['data']
    scans = [s for s in data.scans if job['start'] <= s[0] <= job['end']]
    if not scans:
        raise ValueError('%s: no scan between log times %.1f and %.1f'
                         % (job['label'], job['start'], job['end']))
    job['start'] = scans[0][0]
    bag = os.path.join(bag_dir, job['label'] + '.bag')
    return bag, carmen.write_bag(bag, data, job['start'], job['end'])


def _write_profile(folder, profile, overrides):
    """The extra sim_localizer parameters of a profile as a YAML file ('' when none)."""
    if not overrides:
        return ''
    path = os.path.join(folder, 'localizer_%s.yaml' % profile)
    with open(path, 'w') as stream:
        stream.write('# Written by the real-logs bench: sim_localizer overrides of profile '
                     '%s.\n' % profile)
        yaml.safe_dump(dict(overrides), stream, default_flow_style=False)
    return path


def write_stream(path, trials, scan_check):
    """Every amcl_pose of every replay with its error and tiers (for calibration), unmodified
    and spliced (``kind``; a spliced one also its ``t_splice`` and jump ``distance``, and the
    replayed window ``start`` - ``end``, in log time); ``scan_check``
    (:func:`detectors.scan_check_of`) says how the scan feature was computed."""
    streams = []
    for t in trials:
        s = t.get('series')
        if not s:
            continue
        names = sorted(s['tiers'])
        facts = {'t_splice': t['t_splice'], 'distance': t['distance']} \
            if t['kind'] == 'spliced' else {}
        streams.append(dict({
            'log': t['log'], 'profile': t['profile'], 'kind': t['kind'],
            'start': t['start'], 'end': t['end'],
            'fields': ['t', 'x', 'y', 'yaw', 'var_x', 'var_y', 'cov_xy', 'var_yaw', 'scan_miss',
                       'scan_through', 'scan_short', 'scan_near', 'scan_open', 'error_xy',
                       'error_yaw']
            + ['tier_' + n for n in names],
            'readings': [list(r[:8]) + scan_values(r) + list(e)
                         + [s['tiers'][n][i] for n in names]
                         for i, (r, e) in enumerate(zip(s['readings'], s['errors']))]},
            **facts))
    report.write_json(path, {'scan_check': scan_check, 'min_ranges': list(detectors.MIN_RANGES),
                             'streams': streams})


def _run_job(ctx, replayer, job, index, config, update_d, update_a, profile, params):
    """Replay one bag with one localizer profile and score it."""
    data, start, end = job['data'], job['start'], job['end']
    label = '%s_%s' % (profile, job['label'])
    scans = [s for s in data.scans if start <= s[0] <= end]
    initial = data.truth[detectors.nearest_index([p[0] for p in data.truth], start)][1:4]
    expected = len(carmen.expected_updates(scans, update_d, update_a))
    record = {'profile': profile, 'log': job['log'], 'kind': job['kind'], 'index': index,
              'bag': job['bag'], 'start': start, 'end': end, 'initial_pose': list(initial),
              'expected_amcl_poses': expected, 'written': job['written']}
    if job['kind'] == 'spliced':
        spec = job['spec']
        record.update({'t_splice': spec['t'], 'distance': spec['distance'],
                       'jump': spec['jump'], 'offset': job['offset']})
    launch_args = _launch_args(initial, ctx.args, ctx.args.seed + index)
    launch_args['map_file'] = job['map']
    if params:
        launch_args['localizer_params'] = params
    result = replayer.replay(label, job['bag'], end - start, launch_args, expected)
    times, tiers, errors, readings = _evaluate(record, result, data, config, start, end)
    # Kept until the streams are written (calibration reads both kinds), then dropped.
    record['series'] = {'times': times, 'errors': errors, 'tiers': tiers, 'readings': readings}
    meter = odometer(data.truth)
    if job['kind'] == 'unmodified':
        scored = (start + SETTLE, end)
        record['scored_s'] = max(scored[1] - scored[0], 0.0)
        record['driven_m'] = driven(meter, *scored)
        record['localization'] = localization_summary(times, errors, *scored)
        record['detectors'] = {name: score_unmodified(times, tier, errors, *scored)
                               for name, tier in tiers.items()}
        record['series']['sigma_xy'] = [_sigma_xy(r) for r in readings]    # for the plots
        d = record['detectors']['lost_detector']
        ctx.progress('%s: %d/%d amcl_poses in %.0f s wall; error median %s m; '
                     'lost_detector %d false + %d true tier-2 alarms, tier 2 %s of the time' % (
                         label, len(readings), expected, result['wall_s'],
                         report.fmt(record['localization']['error_xy']['median'], 2),
                         d['false_alarms'], d['true_alarms'],
                         report.fmt(d['time_tier2_share'], 1, '%')))
    else:
        record['detectors'] = {name: score_splice(times, tier, errors, record['t_splice'],
                                                  WITHIN, meter)
                               for name, tier in tiers.items()}
        d = record['detectors']['lost_detector']
        ctx.progress('%s: %.1f m jump at %.0f s: %d/%d amcl_poses; delocalized %s, tier 2 '
                     'before %s, lost_detector delay %s s' % (
                         label, record['distance'], record['t_splice'], len(readings),
                         expected, d['delocalized'], d['alarmed_before'],
                         report.fmt(d['delay_s'], 1)))
    if record['truth_received'] != record['truth_in_bag']:
        ctx.progress('WARNING %s: %d of %d ground-truth poses came through the replay' % (
            label, record['truth_received'], record['truth_in_bag']))
    if not record['kept_up']:
        ctx.progress('WARNING %s: the localizer published %d of %d expected amcl_poses '
                     '(did not keep up at %gx?)' % (label, len(readings), expected, RATE))
    return record


def _sigma_xy(reading):
    """Standard deviation along the major axis of a reading's x-y covariance (m)."""
    _, _, _, _, vx, vy, cxy, _ = reading[:8]
    values = np.linalg.eigvalsh(np.array([[vx, cxy], [cxy, vy]]))
    return float(math.sqrt(max(values[-1], 0.0)))


# ---------------------------------------------------------------------------- plots

def plot_unmodified(ctx, trials, profile):
    """Error, sigma and the tiers of every detector over time on each unmodified log."""
    chosen = [t for t in trials if t['kind'] == 'unmodified' and t.get('series')
              and t['profile'] == profile]
    if not chosen:
        return None
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, len(chosen), figsize=(6.4 * len(chosen), 6.0), squeeze=False,
                             sharex='col')
    for col, t in enumerate(chosen):
        s = t['series']
        times = np.array(s['times']) - t['start']
        top, bottom = axes[0][col], axes[1][col]
        top.plot(times, [e[0] for e in s['errors']], label='xy error (m)', linewidth=0.8)
        top.plot(times, s['sigma_xy'], label='sigma_xy (m)', linewidth=0.8, alpha=0.8)
        top.axhline(LOST_XY, color='grey', linestyle='--', linewidth=0.8)
        top.set_yscale('log')
        top.set_ylim(0.01, 50.0)
        top.set_title('%s, unmodified, localizer profile %s' % (t['log'], profile))
        top.legend(loc='upper right', fontsize=8)
        top.grid(True, alpha=0.3)
        for k, name in enumerate(sorted(s['tiers'])):
            bottom.step(times, np.array(s['tiers'][name]) + 3.0 * k, where='post',
                        linewidth=0.8, label=name)
        bottom.set_yticks([3.0 * k + 1 for k in range(len(s['tiers']))])
        bottom.set_yticklabels(sorted(s['tiers']), fontsize=7)
        bottom.set_ylim(-0.5, 3.0 * len(s['tiers']) - 0.5)
        bottom.set_xlabel('log time since start (s)')
        bottom.grid(True, alpha=0.3)
        bottom.axvline(SETTLE, color='grey', linestyle=':', linewidth=0.8)
    axes[1][0].set_ylabel('tier (0-2) per detector')
    fig.tight_layout()
    name = 'real_logs_unmodified_%s.png' % profile
    fig.savefig(os.path.join(ctx.out, name), dpi=100)
    plt.close(fig)
    return name


def plot_delays(ctx, trials):
    """CDF of the detection delay per detector and profile over the delocalizing splices."""
    chosen = [t for t in trials if t['kind'] == 'spliced']
    if not chosen:
        return None
    series = {}
    for profile in PROFILES:
        for name in detectors.NAMES:
            series['%s, %s' % (name, profile)] = [
                t['detectors'][name]['delay_s'] for t in chosen if t['profile'] == profile
                and t['detectors'][name]['delocalized']
                and not t['detectors'][name]['alarmed_before']]
    name = 'real_logs_delay_cdf.png'
    report.cdf_plot(os.path.join(ctx.out, name), series, 'delay to tier 2 (log s)',
                    'Spliced odometry kidnaps, Carmen logs', censor=WITHIN)
    return name
