"""Unit tests of the benchmark harness's pure parts: detectors, free space, statistics,
detection scoring and the recovery trial's bookkeeping (no ROS master)."""
import json
import math

import numpy as np
import pytest

from lost_and_found.bench import detection, detectors, recovery, report
from lost_and_found.bench.places import FreeSpace, PlacesError
from lost_and_found.bench.recovery import (FOUND_HOLD, GOAL_END_WAIT, RECOVERY_BUDGET,
                                           Odometer, Trial)
from lost_and_found.core.lost_detector import LostDetectorConfig
from lost_and_found.sim.gridmap import GridMap


def box_map(width=40, height=20, resolution=0.25, wall_at=None):
    """A walled box (cells), optionally split by a full-height wall at column ``wall_at``."""
    occupied = np.zeros((height, width), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    if wall_at is not None:
        occupied[:, wall_at] = True
    return GridMap.from_occupancy(occupied, resolution)


# ---------------------------------------------------------------- detectors

def reading(sx, sy, syaw, t=0.0):
    return (t, sx ** 2, sy ** 2, 0.0, syaw ** 2)


@pytest.mark.parametrize('sigmas, tier', [
    ((0.1, 0.1, 0.05), 0), ((0.21, 0.1, 0.05), 2), ((0.1, 0.21, 0.05), 2),
    ((0.1, 0.1, 0.11), 2)])
def test_amcl_diag_rule_uses_standard_deviations(sigmas, tier):
    assert detectors.amcl_diag_tier(reading(*sigmas)) == tier


@pytest.mark.parametrize('variances, tier', [
    ((0.24, 0.24, 0.78), 0), ((0.26, 0.1, 0.1), 2), ((0.1, 0.26, 0.1), 2),
    ((0.1, 0.1, math.pi / 4 + 0.01), 2)])
def test_nav2_rule_uses_variances(variances, tier):
    vx, vy, vyaw = variances
    assert detectors.nav2_tier((0.0, vx, vy, 0.0, vyaw)) == tier


def test_lost_detector_replay_matches_the_core_detector_rules():
    config = LostDetectorConfig()
    tight = [reading(0.1, 0.1, 0.05, t) for t in range(5)]
    wide = [reading(2.0, 2.0, 1.5, 5 + t) for t in range(10)]
    tiers = detectors.lost_detector_tiers(tight + wide, config)
    assert tiers[:5] == [0] * 5
    assert tiers[-1] == 2 and 2 not in tiers[:6]


def test_a_bad_covariance_keeps_the_previous_tier():
    config = LostDetectorConfig()
    bad = (1.0, float('nan'), 0.01, 0.0, 0.01)
    tiers = detectors.lost_detector_tiers([reading(0.1, 0.1, 0.05), bad], config)
    assert tiers == [0, 0]


def test_alarm_entries_count_a_run_once_and_a_high_start_as_one():
    times = [0, 1, 2, 3, 4, 5]
    tiers = [2, 2, 0, 2, 2, 0]
    assert detectors.alarms(times, tiers, 0, 5) == 2
    assert detectors.alarms(times, tiers, 1, 2) == 1
    assert detectors.first_at_least(times, tiers, 2, 2, 5) == 3


def test_detector_config_errors_name_the_file(tmp_path):
    path = tmp_path / 'bad.yaml'
    path.write_text('modified_prob_classifier: {prob_thresh: 2.0}\n')
    with pytest.raises(ValueError, match='bad.yaml'):
        detectors.load_detector_config(str(path))


# ---------------------------------------------------------------- free space

def test_free_space_keeps_the_largest_region_and_respects_clearance():
    grid = box_map(wall_at=10)           # a small room (cols 1-9) and a big one (11-38)
    free = FreeSpace(grid, clearance=0.5)
    rng = np.random.default_rng(0)
    for _ in range(50):
        x, y, yaw = free.sample(rng)
        assert x > 11 * 0.25 and grid.distance_at(x, y)[()] >= 0.5
        assert -math.pi <= yaw <= math.pi and free.contains(x, y)
    assert not free.contains(1.0, 2.5)


def test_sampling_in_a_distance_band_and_widening_when_empty():
    free = FreeSpace(box_map(), clearance=0.5)
    rng = np.random.default_rng(1)
    for _ in range(20):
        x, y, _ = free.sample(rng, (3.0, 2.5), 2.0, 3.0)
        assert 2.0 <= math.hypot(x - 3.0, y - 2.5) <= 3.0
    with pytest.raises(PlacesError):
        free.sample(rng, (3.0, 2.5), 100.0, 200.0)
    x, y, _ = free.sample_at_distance(rng, (3.0, 2.5), 100.0)
    assert free.contains(x, y)


def test_a_band_farther_than_the_region_reaches_shrinks_to_half_the_farthest():
    free = FreeSpace(box_map(), clearance=0.5)
    far = free.farthest((3.0, 2.5))
    assert 0.0 < far < 100.0
    assert free.band((3.0, 2.5), 1.0, 5.0) == (1.0, 5.0)
    assert free.band((3.0, 2.5), 100.0, 200.0) == (0.5 * far, 200.0)


def test_recovery_trials_plan_on_a_map_smaller_than_the_goal_distance():
    free = FreeSpace(box_map(width=24, height=16), clearance=0.5)      # 6 m x 4 m
    assert max(free.farthest((x, y)) for x, y in zip(free.xs, free.ys)) < recovery.GOAL_DISTANCE[0]
    plan = recovery.plan_trials(np.random.default_rng(3), free, 5)
    assert len(plan) == 5 and all(free.contains(*p['goal'][:2]) for p in plan)


def test_unknown_space_counts_as_an_obstacle_for_clearance():
    grid = box_map()
    unknown_band = np.zeros(grid.shape, dtype=bool)
    unknown_band[:, 20:24] = True                  # a strip nobody mapped, in the big room
    grid = GridMap(grid.occupied, grid.free & ~unknown_band, grid.resolution, grid.origin)
    free = FreeSpace(grid, clearance=0.5)
    rng = np.random.default_rng(2)
    for _ in range(50):
        x, _, _ = free.sample(rng)
        # cells 20-23 span x 5.0-6.0 m: every pose keeps 0.5 m from the strip
        assert x <= 5.0 - 0.5 or x >= 6.0 + 0.5


def test_free_space_keeps_the_clearance_from_the_maps_edge():
    """The simulated robot cannot leave its map: a place by the grid's edge is no place, as
    one by a wall is not, on a map whose free space runs off the grid."""
    grid = GridMap.from_occupancy(np.zeros((40, 80), dtype=bool), 0.05)     # 4 m x 2 m
    free = FreeSpace(grid, clearance=0.5)
    assert free.xs.size > 0
    edge = np.minimum.reduce([free.xs, 4.0 - free.xs, free.ys, 2.0 - free.ys])
    assert edge.min() >= 0.5
    assert not free.contains(0.1, 1.0) and free.contains(2.0, 1.0)


def test_a_map_without_room_for_the_robot_is_refused():
    occupied = np.ones((5, 5), dtype=bool)
    with pytest.raises(PlacesError, match='no free cell'):
        FreeSpace(GridMap.from_occupancy(occupied, 0.05))


# ---------------------------------------------------------------- statistics

def test_stats_skip_missing_values_and_say_how_many():
    out = report.stats([1.0, None, 3.0, float('nan'), 2.0])
    assert out['n'] == 3 and out['median'] == 2.0 and out['max'] == 3.0
    assert report.stats([])['median'] is None
    assert report.rate(1, 0) is None and report.rate(1, 4) == 0.25


def test_json_is_strict_and_tables_are_markdown(tmp_path):
    path = tmp_path / 'x.json'
    report.write_json(str(path), {'a': float('inf'), 'b': np.float64(1.5), 'c': (1, 2)})
    assert json.loads(path.read_text()) == {'a': None, 'b': 1.5, 'c': [1, 2]}
    table = report.markdown_table(['a', 'b'], [[1, 2]])
    assert table.splitlines() == ['| a | b |', '|---|---|', '| 1 | 2 |']
    assert report.fmt(None) == '-' and report.fmt(0.953, 2, '%') == '95.3 %'


def test_cdf_plot_writes_a_png(tmp_path):
    path = tmp_path / 'cdf.png'
    report.cdf_plot(str(path), {'a': [1.0, 2.0, None], 'b': []}, 'x', 't', censor=5.0,
                    marks={'target': 2.0})
    assert path.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


# ---------------------------------------------------------------- detection scoring

def synthetic_trial(lost_from=None, fixed_at=None, alarm_at=(), normal_alarm=None):
    """Readings every 0.5 s from t=0 to 40; truth at (0, 0); event at t=20.

    Before the event the estimate is right; from ``lost_from`` it is 3 m off until
    ``fixed_at``. Tier 2 is simulated for the lost_detector by huge covariances at
    ``alarm_at`` times (and one during normal driving at ``normal_alarm``).
    """
    readings, truth = [], []
    for k in range(81):
        t = 0.5 * k
        off = lost_from is not None and t >= lost_from and (fixed_at is None or t < fixed_at)
        wide = any(abs(t - a) < 1e-9 for a in alarm_at) or (
            normal_alarm is not None and abs(t - normal_alarm) < 1e-9)
        var = 4.0 if wide else 0.01
        readings.append((t, 3.0 if off else 0.0, 0.0, 0.0, var, var, 0.0, var))
        truth.append((t, 0.0, 0.0, 0.0))
    record = {'index': 0, 'kind': 'teleport', 'distance': 3.0, 't_reset': 0.0,
              't_normal': 0.0, 't_event': 20.0, 't_end': 40.0}
    return record, detection.Stream(readings, truth)


def rule_tiers(stream):
    return {'amcl_diag': [detectors.amcl_diag_tier(r) for r in stream.detector_readings()]}


def test_a_detection_counts_its_delay_from_the_event():
    record, stream = synthetic_trial(lost_from=20.0, alarm_at=(23.0, 23.5))
    out = detection.score_trial(record, stream, rule_tiers(stream), detection.PHASES)
    assert out['delocalized'] and out['self_corrected_at'] is None
    assert out['detectors']['amcl_diag']['delay_s'] == pytest.approx(3.0)
    assert out['detectors']['amcl_diag']['false_alarms'] == 0


def test_an_alarm_after_amcl_corrected_itself_is_no_detection():
    record, stream = synthetic_trial(lost_from=20.0, fixed_at=22.0, alarm_at=(30.0,))
    out = detection.score_trial(record, stream, rule_tiers(stream), detection.PHASES)
    assert out['self_corrected_at'] == pytest.approx(2.0)
    assert out['detectors']['amcl_diag']['delay_s'] is None


def test_a_stale_reading_right_after_the_event_does_not_hide_the_delocalization():
    record, stream = synthetic_trial(lost_from=21.0, alarm_at=(25.0,))
    out = detection.score_trial(record, stream, rule_tiers(stream), detection.PHASES)
    assert out['delocalized'] and out['self_corrected_at'] is None
    assert out['detectors']['amcl_diag']['delay_s'] == pytest.approx(5.0)


def test_false_alarms_are_alarms_while_the_estimate_is_right():
    record, stream = synthetic_trial(lost_from=None, normal_alarm=10.0)
    out = detection.score_trial(record, stream, rule_tiers(stream), detection.PHASES)
    assert not out['delocalized']
    assert out['detectors']['amcl_diag']['false_alarms'] == 1
    summary = detection.summarize([dict(out, detectors={
        name: out['detectors']['amcl_diag'] for name in detectors.NAMES})], detection.PHASES)
    normal = summary['detectors']['amcl_diag']['normal']
    assert normal['false_alarms'] == 1
    assert normal['false_alarms_per_hour'] == pytest.approx(3600.0 / 20.0)


def test_trial_plan_is_fixed_by_the_seed():
    a = detection.plan_trials(np.random.default_rng(5), 8)
    b = detection.plan_trials(np.random.default_rng(5), 8)
    assert a == b and [p['kind'] for p in a].count('bringup') == 2
    assert all(1.0 <= p['distance'] <= 10.0 for p in a)


def test_a_reading_window_is_half_open_on_sorted_times():
    times = np.array([0.0, 1.0, 1.0, 2.5, 4.0])
    assert detection.reading_window(times, 1.0, 4.0) == range(1, 4)
    empty = detection.reading_window(times, 4.5, 9.0)
    assert (empty.start, empty.stop) == (5, 5)


def test_driven_distance_ignores_teleports():
    truth = [(0.0, 0.0, 0.0, 0.0), (1.0, 0.2, 0.0, 0.0), (1.05, 5.2, 0.0, 0.0),
             (2.0, 5.4, 0.0, 0.0)]
    stream = detection.Stream([], truth)
    assert stream.driven(0.0, 2.0) == pytest.approx(0.4)


def test_driving_seconds_count_motion_and_turns_not_standing_or_teleports():
    # 0-1 s driving, 1-3 s parked, 3-4 s turning in place, a teleport at 4-4.05, 4.05-5 parked.
    truth = [(0.0, 0.0, 0.0, 0.0), (1.0, 0.2, 0.0, 0.0), (3.0, 0.2, 0.0, 0.0),
             (4.0, 0.2, 0.0, 1.0), (4.05, 5.2, 0.0, 1.0), (5.0, 5.2, 0.0, 1.0)]
    stream = detection.Stream([], truth)
    assert stream.driving_seconds(0.0, 5.0) == pytest.approx(2.0)
    assert stream.driving_seconds(1.0, 3.0) == 0.0


def test_a_detection_reports_its_driving_seconds_and_the_within_driving_rate():
    # Event at 20 s, the robot parks from 21 s to 39 s, tier 2 at 39.5 s: 19.5 s elapsed but
    # only 1.5 s of driving (truth moves 0.1 m per 0.5 s while driving).
    readings, truth = [], []
    x = 0.0
    for k in range(81):
        t = 0.5 * k
        if not 21.0 <= t < 39.0:
            x += 0.1
        var = 4.0 if t >= 39.5 else 0.01
        readings.append((t, x + (3.0 if t >= 20.0 else 0.0), 0.0, 0.0, var, var, 0.0, var))
        truth.append((t, x, 0.0, 0.0))
    record = {'index': 0, 'kind': 'teleport', 'distance': 3.0, 't_reset': 0.0,
              't_normal': 0.0, 't_event': 20.0, 't_end': 40.0}
    stream = detection.Stream(readings, truth)
    out = detection.score_trial(record, stream, rule_tiers(stream), detection.PHASES)
    scores = out['detectors']['amcl_diag']
    assert scores['delay_s'] == pytest.approx(19.5)
    assert scores['delay_driving_s'] == pytest.approx(1.5)
    summary = detection.summarize([dict(out, detectors={
        name: scores for name in detectors.NAMES})], detection.PHASES)
    group = summary['detectors']['amcl_diag']['silent_ge2m']
    assert group['detection_rate_within'] == 0.0
    assert group['detection_rate_within_driving'] == 1.0


# ---------------------------------------------------------------- recovery trial

def test_recovered_means_close_for_the_whole_hold_and_is_dated_at_its_start():
    trial = Trial(goal=(10.0, 0.0, 0.0), t_put_down=100.0)
    truth = (0.0, 0.0, 0.0)
    trial.on_sample(101.0, truth, (3.0, 0.0, 0.0))
    trial.on_sample(105.0, truth, (0.1, 0.0, 0.0))
    trial.on_sample(110.0, truth, (0.8, 0.0, 0.0))       # breaks the stretch
    trial.on_sample(112.0, truth, (0.1, 0.0, 0.1))
    trial.on_sample(112.0 + FOUND_HOLD, truth, (0.1, 0.0, 0.1))
    assert trial.t_recovered == 112.0
    trial.on_sample(140.0, (9.8, 0.1, 0.0), (9.8, 0.1, 0.0))
    result = trial.result()
    assert result['recovered'] and result['resumed']
    assert result['time_to_recover'] == pytest.approx(12.0)
    assert result['time_to_goal'] == pytest.approx(40.0)
    assert result['goal_end_error'] is None
    # Reached, but the errand has not ended: wait for it, not for ever.
    assert not trial.done(140.0)
    assert trial.done(140.0 + GOAL_END_WAIT + 0.1)


def recovered_trial(goal=(10.0, 0.0, 0.0)):
    """A trial recovered at 112 s (put down at 100 s), driving on to ``goal``."""
    trial = Trial(goal=goal, t_put_down=100.0)
    for t in (112.0, 112.0 + FOUND_HOLD):
        trial.on_sample(t, (0.0, 0.0, 0.0), (0.1, 0.0, 0.0))
    assert trial.t_recovered == 112.0
    trial.on_state(101.0, 'LOST')
    trial.on_state(125.0, 'NAVIGATING')
    return trial


def test_a_trial_records_where_the_robot_stopped_when_the_errand_ended():
    trial = recovered_trial()
    trial.on_sample(140.0, (9.7, 0.0, 0.0), (9.9, 0.0, 0.0))     # within 0.4 m: reached
    assert trial.t_goal == 140.0 and not trial.done(140.5)
    trial.on_state(141.0, 'IDLE')
    assert not trial.done(141.0)            # the stop is read from the next truth sample
    trial.on_sample(141.0, (9.75, 0.0, 0.0), (9.95, 0.0, 0.0))
    assert trial.done(141.0)
    result = trial.result()
    assert result['resumed']
    assert result['goal_end_error'] == pytest.approx(0.25)
    assert result['time_to_goal_end'] == pytest.approx(41.0)


def test_an_errand_ended_short_of_the_goal_is_recorded_though_never_reached():
    trial = recovered_trial()
    trial.on_state(150.0, 'IDLE')           # the navigator is done 0.6 m short of it
    trial.on_sample(150.0, (9.4, 0.0, 0.0), (9.85, 0.0, 0.0))
    assert not trial.done(151.0)
    result = trial.result()
    assert not result['resumed'] and result['goal_end_error'] == pytest.approx(0.6)
    # IDLE after LOST is no errand's end: the recorded stop stays the latest errand's.
    trial.on_state(160.0, 'LOST')
    trial.on_state(170.0, 'IDLE')
    trial.on_sample(170.0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    assert trial.result()['goal_end_error'] == pytest.approx(0.6)


def test_the_recovery_table_counts_stops_beyond_its_tolerance():
    trials = []
    for index, stop in enumerate((0.2, 0.4, None)):
        trial = recovered_trial()
        trial.on_sample(140.0, (9.7, 0.0, 0.0), (9.9, 0.0, 0.0))
        if stop is not None:
            trial.on_state(141.0, 'IDLE')
            trial.on_sample(141.0, (10.0 - stop, 0.0, 0.0), (9.9, 0.0, 0.0))
        trials.append(dict(trial.result(), strategy='spiral', index=index, collisions=0,
                           driven_m=1.0))
    summary = recovery.summarize(trials, ['spiral'])['spiral']
    assert summary['resumed'] == 3
    assert summary['goal_end_error']['n'] == 2
    assert summary['goal_end_error']['max'] == pytest.approx(0.4)
    assert summary['goal_end_over'] == 1 and summary['goal_end_unknown'] == 1
    table = recovery.markdown(recovery.summarize(trials, ['spiral']), 'box', ['spiral'])
    assert 'stop from goal' in table and '0.30 / 0.40 (1)' in table
    assert table.startswith('Map `box`: lift kidnaps')
    cluttered = recovery.markdown(recovery.summarize(trials, ['spiral']), 'box', ['spiral'],
                                  {'clutter': {'density': 8.0, 'boxes': 5}})
    assert cluttered.startswith('Map `box`, among 5 unmapped boxes (8 per 100 m^2: --clutter): ')


def test_search_hints_are_judged_against_the_way_the_truth_gives():
    """The corridor of test_search_hint: facing +x at x = 5 the tag's way is ahead."""
    from test_search_hint import corridor
    field = corridor()
    truths = {10.0: (5.0, 2.0, 0.0), 11.0: (5.0, 2.0, math.pi), 12.0: (18.0, 2.0, 0.0)}
    hints = [(10.0, 0.1, 0.8), (11.0, 0.1, 0.7), (12.0, 0.0, 0.9), (13.0, 0.0, 0.9)]
    judged = recovery.judge_hints(field, hints, truths.get, 9.0)
    assert [h[0] for h in judged] == [1.0, 2.0, 3.0, 4.0]
    assert judged[0][2] == pytest.approx(0.0, abs=0.2)              # right
    assert abs(judged[1][2]) == pytest.approx(math.pi, abs=0.2)     # the way is behind
    assert judged[2][2] is None and judged[3][2] is None     # a tag in view; no truth
    trials = [{'hints': judged}, {}]
    assert recovery.hint_counts(trials) == (4, 2, 1)
    # The table says so under it.
    record = dict(recovered_trial().result(), strategy='spiral', index=0, collisions=0,
                  driven_m=1.0, hints=judged)
    table = recovery.markdown(recovery.summarize([record], ['spiral']), 'box', ['spiral'])
    assert 'published 4 from the put-downs on; 2 from a true pose with a way to a tag ' \
        '(50 % within 45 deg of that way)' in table


def test_panorama_fixes_are_judged_against_the_truth_at_their_stamp():
    truths = {10.0: (5.0, 2.0, 0.0), 11.0: (5.0, 2.0, 0.0), 12.0: (1.0, 1.0, 3.0)}
    fixes = [(10.0, 5.1, 2.0, 0.05), (11.0, 5.0, 2.0, 0.5), (12.0, 4.0, 5.0, 3.0),
             (13.0, 0.0, 0.0, 0.0)]
    judged = recovery.judge_fixes(fixes, truths.get, 9.0)
    assert [f[0] for f in judged] == [1.0, 2.0, 3.0, 4.0]
    assert judged[0][1:] == [pytest.approx(0.1), pytest.approx(0.05)]
    assert judged[2][1] == pytest.approx(5.0)
    assert judged[3][1:] == [None, None]                    # no truth then
    # right: the first only (the second is 0.5 rad off, the third 5 m)
    assert recovery.fix_counts([{'panorama_fixes': judged}, {}]) == (4, 3, 1)
    record = dict(recovered_trial().result(), strategy='spiral', index=0, collisions=0,
                  driven_m=1.0, panorama_fixes=judged)
    table = recovery.markdown(recovery.summarize([record], ['spiral']), 'box', ['spiral'])
    assert 'panorama_localizer published 4 from the put-downs on; 3 with a true pose at ' \
        'their stamp, 1 of them within 0.45 m and 20 deg of it' in table
    # without fixes, no line
    record['panorama_fixes'] = []
    table = recovery.markdown(recovery.summarize([record], ['spiral']), 'box', ['spiral'])
    assert 'Panorama fixes' not in table


def test_the_cli_takes_panorama_on_or_off_for_recovery_only():
    from lost_and_found.bench import cli
    assert cli.parser().parse_args(['recovery']).panorama is None
    assert cli.parser().parse_args(['recovery', '--panorama', 'off']).panorama == 'off'
    with pytest.raises(SystemExit):
        cli.parser().parse_args(['recovery', '--panorama', 'yes'])
    with pytest.raises(SystemExit, match='--panorama is for the recovery suite only'):
        cli.resolve_inputs(cli.parser().parse_args(['detection', '--panorama', 'on']))


def test_the_cli_takes_a_panorama_config_that_exists_for_a_running_node(tmp_path):
    from lost_and_found.bench import cli
    path = tmp_path / 'panorama.yaml'
    path.write_text('partial_share: 0.6\n')
    args = cli.resolve_inputs(cli.parser().parse_args(
        ['recovery', '--panorama-config', str(path)]))
    assert args.panorama_config == str(path)
    with pytest.raises(SystemExit, match='no such file'):
        cli.resolve_inputs(cli.parser().parse_args(
            ['recovery', '--panorama-config', str(tmp_path / 'missing.yaml')]))
    with pytest.raises(SystemExit, match='the node does not run'):
        cli.resolve_inputs(cli.parser().parse_args(
            ['recovery', '--panorama', 'off', '--panorama-config', str(path)]))
    with pytest.raises(SystemExit, match='for the recovery suite only'):
        cli.resolve_inputs(cli.parser().parse_args(
            ['detection', '--panorama-config', str(path)]))


def test_the_cli_takes_a_localizer_config_and_starts_the_simulator_with_it(tmp_path):
    from lost_and_found.bench import cli
    from lost_and_found.bench.simrun import sim_launch_args
    path = tmp_path / 'amcl.yaml'
    path.write_text('laser_z_hit: 0.5\n')
    for suite in ('detection', 'recovery'):
        args = cli.resolve_inputs(cli.parser().parse_args(
            [suite, '--localizer-config', str(path)]))
        assert args.localizer_config == str(path)
        launch = sim_launch_args(args, 'p.yaml', 'w.yaml', 'n.yaml', True)
        assert launch['sim_localizer_config'] == str(path)
    default = sim_launch_args(cli.resolve_inputs(cli.parser().parse_args(['detection'])),
                              'p.yaml', 'w.yaml', 'n.yaml', False)
    assert 'sim_localizer_config' not in default and default['navigator'] == 'false'
    with pytest.raises(SystemExit, match='no such file'):
        cli.resolve_inputs(cli.parser().parse_args(
            ['detection', '--localizer-config', str(tmp_path / 'missing.yaml')]))
    with pytest.raises(SystemExit, match='detection and recovery suites only'):
        cli.resolve_inputs(cli.parser().parse_args(
            ['compute', '--localizer-config', str(path)]))


def test_a_trial_ends_unrecovered_after_the_budget_and_remembers_need_help():
    trial = Trial(goal=(10.0, 0.0, 0.0), t_put_down=0.0)
    trial.on_state(5.0, 'LOST')
    trial.on_state(125.0, 'NEED_HELP')
    trial.on_sample(RECOVERY_BUDGET - 1.0, (0.0, 0.0, 0.0), (4.0, 0.0, 0.0))
    assert not trial.done(RECOVERY_BUDGET - 1.0)
    assert trial.done(RECOVERY_BUDGET + 1.0)
    result = trial.result()
    assert not result['recovered'] and result['need_help'] and result['time_to_lost'] == 5.0


def test_the_odometer_ignores_stale_truth_from_before_the_put_down():
    odometer = Odometer(100.0, (10.0, 0.0, 0.0))
    odometer.add(99.9, (0.0, 0.0, 0.0))         # the lift point, stamped before the put-down
    odometer.add(100.2, (10.1, 0.0, 0.0))       # counts from the put-down pose
    odometer.add(101.0, (10.1, 1.0, 0.0))
    odometer.add(102.0, (10.1, 3.0, 0.0))
    assert odometer.until(101.5) == pytest.approx(1.1)
    assert odometer.until() == pytest.approx(3.1)
    assert odometer.until(50.0) == 0.0
    assert Odometer(0.0, (5.0, 5.0)).until() == 0.0


def test_the_odometer_never_adds_the_kidnap_when_the_first_sample_is_off_the_put_down():
    odometer = Odometer(100.0, (10.0, 0.0, 0.0))
    odometer.add(100.1, (12.0, 0.0, 0.0))       # not where the robot was put down
    odometer.add(101.0, (12.0, 1.0, 0.0))
    assert odometer.until() == pytest.approx(1.0)


def test_a_trial_traces_truth_error_and_state_once_per_period():
    trial = Trial(goal=(10.0, 0.0, 0.0), t_put_down=100.0)
    trial.on_sample(100.0, (1.0, 2.0, 0.5), None)
    trial.on_state(100.2, 'LOST')
    trial.on_sample(100.5, (1.0, 2.0, 0.5), (4.0, 6.0, 0.5))     # within the period: skipped
    trial.on_sample(101.0, (1.0, 2.0, 0.5), (4.0, 6.0, 0.5))
    trace = trial.result()['trace']
    assert trace == [[0.0, 1.0, 2.0, 0.5, None, None, None],
                     [1.0, 1.0, 2.0, 0.5, 5.0, 0.0, 'LOST']]


def test_an_estimate_is_judged_against_the_truth_of_its_own_instant():
    # Turning at 1 rad/s, a tf 0.5 s older than the newest truth is 0.5 rad behind it: right
    # at its own instant, wrong against the newest truth.
    def samples(trial, matched):
        for k in range(int(FOUND_HOLD) + 2):
            t = 110.0 + k
            truth, truth_then = (0.0, 0.0, 0.5 * k + 0.5), (0.0, 0.0, 0.5 * k)
            trial.on_sample(t, truth, truth_then, truth_then if matched else None)
    matched, newest = Trial(goal=(10.0, 0.0, 0.0), t_put_down=100.0), \
        Trial(goal=(10.0, 0.0, 0.0), t_put_down=100.0)
    samples(matched, True)
    samples(newest, False)
    assert matched.t_recovered == 110.0
    assert newest.t_recovered is None
    assert matched.result()['trace'][0][4:6] == [0.0, 0.0]


def test_the_truth_nearest_a_stamp():
    from lost_and_found.bench.detectors import nearest_index
    times = [1.0, 1.5, 2.0]
    assert nearest_index(times, 0.5) == 0
    assert nearest_index(times, 1.125) == 0
    assert nearest_index(times, 1.375) == 1
    assert nearest_index(times, 1.5) == 1
    assert nearest_index(times, 1.75) == 1      # as near as 2.0: the earlier
    assert nearest_index(times, 1.875) == 2
    assert nearest_index(times, 9.0) == 2
    assert nearest_index(np.array(times), 1.875) == 2


def write_run(folder, near_blob=(5.0, 10.0)):
    """A finished one-trial detection run on disk: the estimate always right, and a spell of
    readings whose scan misses the map short (something within 1 m of the laser; at
    min_range 1 m too few beams are left; with the open beams, which agree with the map, a
    tenth of the beams miss)."""
    record, stream = synthetic_trial()
    readings = []
    for r in stream.readings:
        blob = near_blob[0] <= r[0] < near_blob[1]
        short = 0.9 if blob else 0.0
        near = tuple(None if blob and m >= 1.0 else (0.0, short) for m in detectors.MIN_RANGES)
        opened = tuple((0.0, short / 9.0) for _ in detectors.MIN_RANGES)
        readings.append(r[:8] + (short, 0.0, short, near, opened))
    stream = detection.Stream(readings, stream.truth)
    config = LostDetectorConfig(queue_min=2, window_meta_tier2_lost=3,
                                ratio_thresh_detections_tier2_lost=0.5,
                                window_meta_tier0_normal=3)
    trial = detection.score_trial(record, stream, detectors.run_all(
        stream.detector_readings(), config), detection.PHASES)
    detection.write_stream(str(folder / 'detection_stream.json'), stream, [trial], 'box',
                           detectors.scan_check_of(config))
    detection.write_truth(str(folder / detection.TRUTH_FILE), stream.truth)
    report.write_json(str(folder / 'detection.json'),
                      {'trials': [trial], 'summary': {'phases': detection.PHASES,
                                                      'localizer_config': '/tmp/amcl.yaml'}})
    return config, trial


def test_rescore_scores_a_run_as_it_was_scored_and_another_min_range_from_scan_near(tmp_path):
    import dataclasses
    config, trial = write_run(tmp_path)
    assert trial['detectors']['lost_detector']['false_alarms'] == 1     # the near spell
    same = detection.rescore(str(tmp_path), config, str(tmp_path), 'box')
    assert same['trials'][0]['detectors'] == json.loads(json.dumps(trial['detectors']))
    assert '| `lost_detector` |' in same['markdown'] and len(same['plots']) == 2
    assert same['summary']['localizer_config'] == '/tmp/amcl.yaml'     # as recorded
    far = detection.rescore(str(tmp_path), dataclasses.replace(config, min_range=1.0),
                            str(tmp_path))
    assert far['trials'][0]['detectors']['lost_detector']['false_alarms'] == 0
    opened = detection.rescore(str(tmp_path), dataclasses.replace(config, open_beams=True),
                               str(tmp_path))
    assert opened['trials'][0]['detectors']['lost_detector']['false_alarms'] == 0
    assert far['trials'][0]['detectors']['amcl_diag'] == same['trials'][0]['detectors'][
        'amcl_diag']
    with pytest.raises(ValueError, match='scan_check/min_range'):
        detection.rescore(str(tmp_path), dataclasses.replace(config, min_range=0.5),
                          str(tmp_path))
    (tmp_path / detection.TRUTH_FILE).unlink()
    with pytest.raises(ValueError, match='detection_truth.json: cannot read'):
        detection.rescore(str(tmp_path), config, str(tmp_path))


def test_a_rescored_stream_gives_each_config_the_span_it_measures(tmp_path, monkeypatch):
    import dataclasses
    config, _ = write_run(tmp_path)
    laser = dataclasses.replace(config, open_beams=True)
    path = tmp_path / 'detection_stream.json'
    stream = json.loads(path.read_text())
    assert stream['fields'][-2:] == ['scan_span', 'scan_spans']
    for row in stream['readings']:
        row[-2:] = [1.5, [1.5, 4.0]]
    path.write_text(json.dumps(stream))

    def span(c, fields=stream['fields'], row=stream['readings'][0], scan_check=None):
        misses = detectors.StreamMisses(scan_check or stream['scan_check'], fields,
                                        stream['min_ranges'], c, 'x')
        return misses.span(row), misses.has_spans()
    assert span(config) == (1.5, True)
    assert span(laser) == (4.0, True)
    assert span(dataclasses.replace(config, min_range=1.0)) == (None, False)
    # Recorded with the open beams, the pair's first is the span without them.
    opened = dict(stream['scan_check'], open_beams=True)
    assert span(config, row=stream['readings'][0][:-2] + [4.0, [1.5, 4.0]],
                scan_check=opened) == (1.5, True)
    # A stream from before scan_spans has the span of its own beams only.
    older = dict(fields=stream['fields'][:-1], row=stream['readings'][0][:-1])
    assert span(config, **older) == (1.5, True)
    assert span(laser, **older) == (None, False)
    # A stream with the pair alone gives either span from it, as a parsed recording does.
    paired = dict(fields=stream['fields'][:-2] + ['scan_spans'],
                  row=stream['readings'][0][:-2] + [[1.5, 4.0]])
    assert span(config, **paired) == (1.5, True) and span(laser, **paired) == (4.0, True)
    # With the scan check off there is no span to give.
    assert span(dataclasses.replace(config, scan_check=False)) == (None, False)
    # The rescore hands each config's span to the detectors.
    given = []
    run_all = detectors.run_all
    monkeypatch.setattr(detectors, 'run_all', lambda readings, *a: given.append(
        {r[-1] for r in readings}) or run_all(readings, *a))
    for c in (config, laser):
        assert detection.rescore(str(tmp_path), c, str(tmp_path / 'out'))['spans_recorded']
    assert given == [{1.5}, {4.0}]
    stream['readings'][3][-1] = 2.0
    path.write_text(json.dumps(stream))
    with pytest.raises(ValueError, match='reading 3: scan_spans=2.0: must be null or two'):
        detection.rescore(str(tmp_path), laser, str(tmp_path / 'out'))


class OdometryAt:
    """A tf buffer that knows odom -> base_footprint at the given stamps only."""

    def __init__(self, poses):
        self.poses = poses

    def lookup_transform(self, target, source, stamp):
        import tf2_ros
        from geometry_msgs.msg import TransformStamped
        pose = self.poses.get(stamp.to_sec())
        if (target, source) != ('odom', 'base_footprint') or pose is None:
            raise tf2_ros.ExtrapolationException('no odometry at %s' % stamp.to_sec())
        t = TransformStamped()
        t.transform.translation.x, t.transform.translation.y = pose[:2]
        t.transform.rotation.z, t.transform.rotation.w = math.sin(pose[2] / 2), \
            math.cos(pose[2] / 2)
        return t


def scan_misses_in_room(ranges, range_max, open_beams=False):
    """A ScanMisses on a 4 m room (5 cm cells) holding one scan of ``ranges`` taken at t = 1 s
    from the room's centre, facing +x, and the readings list after the pose of that scan."""
    from lost_and_found.bench.simrun import ScanMisses
    from lost_and_found.core.scan_agreement import DistanceMap, LaserMount, Scan, ScanChecker
    occupied = np.zeros((80, 80), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    misses = ScanMisses.__new__(ScanMisses)
    misses.checker = ScanChecker(0.1, 100, 10, 0.05, short_weight=0.5, open_beams=open_beams)
    misses.checker.distance_map = DistanceMap(occupied, 0.05)
    misses._awaiting = []
    misses.returns = {}
    misses._tf_buffer = OdometryAt({1.0: (0.5, -0.25, 0.3)})
    misses.checker.add_scan(1.0, Scan(tuple(ranges), -0.05, 0.001, 0.45, range_max),
                            LaserMount())
    readings = []
    misses.on_pose((1.0, 2.0, 2.0, 0.0, 0.01, 0.01, 0.0, 0.001), readings)
    return misses, readings


def test_scan_misses_records_the_misses_at_every_candidate_min_range():
    # 30 returns on the wall 1.95 m ahead, 31 stopped by a box 0.6 m in front (in free space
    # on the map).
    misses, readings = scan_misses_in_room([1.95] * 30 + [0.6] * 31, 5.0)
    miss, through, short, near, open_, span, spans = readings[0][8:]
    assert (through, short) == (0.0, pytest.approx(31 / 61))
    assert span == 0.0 and spans == (0.0, 0.0)     # no beam through a wall
    assert miss == pytest.approx(0.5 * 31 / 61)
    assert len(near) == len(open_) == len(detectors.MIN_RANGES)
    for min_range, pair in zip(detectors.MIN_RANGES, near):
        expected = (0.0, 31 / 61) if min_range <= 0.6 else (0.0, 0.0)
        assert pair == pytest.approx(expected) if min_range < 1.95 else pair is None
    # Every beam has a return: with open beams the same.
    assert open_ == near
    # A pose whose scan has not come yet waits, with nothing recorded at any min_range.
    misses.on_pose((2.0, 2.0, 2.0, 0.0, 0.01, 0.01, 0.0, 0.001), readings)
    assert readings[1][8:] == (None,) * 7 and misses._awaiting == [1]


def test_scan_misses_keeps_each_reading_s_returns_in_the_base_frame_with_its_odometry():
    # 30 returns 1.95 m ahead, 31 at 0.6 m, no return for the last 10 (a 5 m laser).
    misses, readings = scan_misses_in_room([1.95] * 30 + [0.6] * 31 + [math.inf] * 10, 5.0)
    points, odom = misses.returns[0]
    assert points.shape == (61, 2)          # the returns only
    angles = -0.05 + 0.001 * np.arange(61)
    ranges = np.array([1.95] * 30 + [0.6] * 31)
    assert points == pytest.approx(np.column_stack([ranges * np.cos(angles),
                                                    ranges * np.sin(angles)]))
    assert odom == pytest.approx((0.5, -0.25, 0.3))
    # A reading whose scan has not come has no returns yet; once it comes, they are kept, and
    # without odometry at its stamp the odometry is None.
    misses.on_pose((2.0, 2.0, 2.0, 0.0, 0.01, 0.01, 0.0, 0.001), readings)
    assert 1 not in misses.returns
    import rospy
    from lost_and_found.core.scan_agreement import LaserMount
    from sensor_msgs.msg import LaserScan
    misses._mount = LaserMount()        # looked up on the first scan
    scan = LaserScan(angle_min=0.0, angle_increment=0.01, range_min=0.45, range_max=5.0,
                     ranges=[1.0] * 20)
    scan.header.stamp = rospy.Time.from_sec(2.0)
    misses.on_scan(scan, readings)
    assert misses._awaiting == [] and readings[1][8] is not None
    assert misses.returns[1][1] is None and misses.returns[1][0].shape == (20, 2)


def test_returns_round_trip_through_their_file_and_a_run_without_them_is_named(tmp_path):
    points = np.array([[1.234, -0.5], [0.0, 2.0]])
    detection.write_returns(str(tmp_path / detection.RETURNS_FILE),
                            [None, (points, (1.0, 2.0, 0.5)), (points[:1], None)])
    got = detection.read_returns(str(tmp_path))
    assert got[0] is None
    assert got[1][0] == pytest.approx(np.array([[1.23, -0.5], [0.0, 2.0]]))
    assert got[1][1] == (1.0, 2.0, 0.5)
    assert got[2][0].shape == (1, 2) and got[2][1] is None
    with pytest.raises(ValueError, match='no detection_returns.json'):
        detection.read_returns(str(tmp_path / 'older'))


def test_scan_misses_records_the_span_without_and_with_the_open_beams():
    # A 5 m laser: 30 beams see nothing, through the wall 1.95 m ahead; 31 stop at a box.
    _, readings = scan_misses_in_room([math.inf] * 30 + [0.6] * 31, 5.0)
    through, short, near, open_, span, spans = readings[0][9:]
    # The checker leaves the open beams out: nothing through a wall, for it...
    assert (through, short) == (0.0, 1.0) and span == spans[0] == 0.0
    # ...with them, 30 beams enter the wall across 1.95 * (tan 0.05 - tan 0.021) m.
    assert open_[0] == pytest.approx((30 / 61, 31 / 61))
    assert spans[1] == pytest.approx(1.95 * (math.tan(0.05) - math.tan(0.021)), abs=0.03)
    assert spans[1] > 0.0


def test_scan_misses_records_the_open_beams_too():
    # A 1.5 m laser: 30 beams see nothing, 31 stop at a box 0.6 m ahead.
    _, readings = scan_misses_in_room([math.inf] * 30 + [0.6] * 31, 1.5, open_beams=True)
    miss, through, short, near, open_, span, spans = readings[0][8:]
    assert span == spans[1] == spans[0] == 0.0      # nothing through a wall either way
    # The checker's own numbers count the open beams, and they agree with the map.
    assert (through, short) == (0.0, pytest.approx(31 / 61))
    assert miss == pytest.approx(0.5 * 31 / 61)
    assert near[0] == (0.0, 1.0) and open_[0] == pytest.approx((0.0, 31 / 61))
    assert near[-1] is None and open_[-1] == (0.0, 0.0)     # beyond 2 m: only the open beams


def test_rescore_with_the_scan_check_off_ignores_the_scan_and_a_bad_cell_is_named(tmp_path):
    import dataclasses
    config, trial = write_run(tmp_path)
    off = dataclasses.replace(config, scan_check=False, min_range=0.5)   # 0.5 not recorded
    result = detection.rescore(str(tmp_path), off, str(tmp_path / 'out'))
    assert result['trials'][0]['detectors']['lost_detector']['false_alarms'] == 0
    assert result['summary']['phases'] == detection.PHASES
    stream = json.loads((tmp_path / 'detection_stream.json').read_text())
    stream['readings'][7][14] = [[0.0, 0.1]]
    (tmp_path / 'detection_stream.json').write_text(json.dumps(stream))
    with pytest.raises(ValueError, match='reading 7: scan_near='):
        detection.rescore(str(tmp_path), dataclasses.replace(config, min_range=1.0),
                          str(tmp_path / 'out'))


def test_the_rescore_tool_refuses_to_write_over_the_run(tmp_path, capsys):
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(__file__), '..', '..', 'tools', 'rescore_detection.py')
    spec = importlib.util.spec_from_file_location('rescore_detection', path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    write_run(tmp_path)
    before = (tmp_path / 'detection.json').read_text()
    yaml_path = tmp_path / 'd.yaml'
    yaml_path.write_text('lost_detector: {queue_min: 2}\n')
    assert tool.main([str(tmp_path), '--detector-config', str(yaml_path),
                      '--out', str(tmp_path)]) == 1
    assert "the run's own folder" in capsys.readouterr().err
    assert (tmp_path / 'detection.json').read_text() == before
    assert tool.main([str(tmp_path), '--detector-config', str(yaml_path),
                      '--out', str(tmp_path / 'again')]) == 0
    assert json.loads((tmp_path / 'again' / 'detection.json').read_text())['rescored_from'] \
        == str(tmp_path)
    assert 'NOTE' not in capsys.readouterr().err
    # A burst rule on the run's own beams has its spans; one at 1 m does not (they were
    # recorded at min_range 0 only) and never fires on it.
    burst = tmp_path / 'burst.yaml'
    burst.write_text('scan_check: {burst_count: 2}\n')
    assert tool.main([str(tmp_path), '--detector-config', str(burst),
                      '--out', str(tmp_path / 'burst')]) == 0
    assert 'NOTE' not in capsys.readouterr().err
    far = tmp_path / 'far.yaml'
    far.write_text('scan_check: {burst_count: 2, min_range: 1.0}\n')
    assert tool.main([str(tmp_path), '--detector-config', str(far),
                      '--out', str(tmp_path / 'far')]) == 0
    assert 'without the through span as %s measures it' % far in capsys.readouterr().err


def test_sim_params_set_the_laser_s_no_return_only_when_asked(tmp_path):
    import yaml
    from lost_and_found.bench import cli
    from lost_and_found.bench.simrun import write_sim_params
    kept = yaml.safe_load(open(write_sim_params(str(tmp_path / 'a.yaml'), (1, 2, 0.5))))
    assert kept['sim_world'] == {'start_pose': [1.0, 2.0, 0.5]}
    nan = yaml.safe_load(open(write_sim_params(str(tmp_path / 'b.yaml'), (1, 2, 0.5), 'nan')))
    assert nan['sim_world']['laser'] == {'no_return': 'nan'}
    args = cli.parser().parse_args(['recovery', '--laser-no-return', 'nan'])
    assert args.laser_no_return == 'nan'
    assert cli.parser().parse_args(['recovery']).laser_no_return is None
    with pytest.raises(SystemExit):
        cli.parser().parse_args(['recovery', '--laser-no-return', 'zero'])
    with pytest.raises(SystemExit, match='detection and recovery suites only'):
        cli.resolve_inputs(cli.parser().parse_args(['compute', '--laser-no-return', 'nan']))


def test_strip_verdicts_replay_the_node_s_strip_with_its_resets():
    from lost_and_found.core.lost_detector import LostDetectorConfig
    from lost_and_found.core.scan_agreement import DistanceMap
    from test_strip_check import PATH, RES, ROOM, scan
    config = LostDetectorConfig(strip_count=2, strip_readings=3, strip_min_points=40)
    poses = [(0.5 * k,) + truth for k, truth in enumerate(PATH)]
    returns = [(scan(truth), truth) for truth in PATH]
    returns[3] = None                                   # no scan
    returns[4] = (returns[4][0], None)                  # no odometry
    room = DistanceMap(ROOM, RES)
    verdicts = detectors.strip_verdicts(poses, returns, room, config)
    assert verdicts[3] is None and verdicts[4] is None
    assert verdicts[-1] is False                        # the right estimate
    wrong = poses[:-1] + [poses[-1][:1] + (2.0, 2.0, 2.0)]
    assert detectors.strip_verdicts(wrong, returns, room, config)[-1] is True
    # A reset just before the last reading leaves its strip one scan: too short to judge.
    assert detectors.strip_verdicts(wrong, returns, room, config, [poses[-1][0]])[-1] is None
    off = LostDetectorConfig(strip_count=0)
    assert detectors.strip_verdicts(poses, returns, room, off) is None
    # The replay passes the verdicts to rule 9.
    readings = [(t, 0.01, 0.01, 0.0, 0.001, 0.0) for t, *_ in poses]
    assert detectors.lost_detector_tiers(readings, config, strips=[True] * len(poses))[-1] == 2
    assert detectors.lost_detector_tiers(readings, config, strips=None)[-1] == 0


def test_rescore_with_the_strip_rule_needs_the_run_s_map(tmp_path):
    import dataclasses
    config, _ = write_run(tmp_path)
    strip = dataclasses.replace(config, strip_count=1, strip_readings=1)
    with pytest.raises(ValueError, match='rule 9 .* needs the run.s map'):
        detection.rescore(str(tmp_path), strip, str(tmp_path / 'out'))
    with pytest.raises(ValueError, match='no detection_returns.json'):
        detection.rescore(str(tmp_path), strip, str(tmp_path / 'out'), map_path='any.yaml')
    # Without --map, the map the run's detection.json names, when it is here (as given or
    # relative to the package's folder): the rescore goes on to the returns.
    record = report.read_json(str(tmp_path / 'detection.json'))
    for named in ('maps/office.yaml', str(tmp_path / 'gone.yaml')):
        report.write_json(str(tmp_path / 'detection.json'), dict(record, map=named))
        found = named == 'maps/office.yaml'
        assert (detection.run_map(str(tmp_path)) is not None) == found
        with pytest.raises(ValueError, match='no detection_returns.json' if found else
                           'gone.yaml.* give --map'):
            detection.rescore(str(tmp_path), strip, str(tmp_path / 'out'))
