"""bench/real_logs.py: the pure parts of the real-logs suite (planning and scoring).

No shared data and no ROS master: synthetic tracks and tier streams.
"""
import argparse
import dataclasses
import math

import numpy as np
import pytest

from lost_and_found.bench import detectors, real_logs


def straight_truth(seconds=600.0, step=3.0, speed=0.2):
    """A robot driving along x at ``speed`` m/s, one pose every ``step`` s."""
    return [(t, speed * t, 0.0, 0.0) for t in np.arange(0.0, seconds + 1e-9, step)]


def test_find_inputs_names_what_is_missing(tmp_path):
    logs, maps = tmp_path / 'logs', tmp_path / 'maps'
    logs.mkdir()
    (logs / 'intel-corrected.log.gz').write_bytes(b'')
    (logs / 'aces-corrected.log.gz').write_bytes(b'')
    (maps / 'aces_austin').mkdir(parents=True)
    (maps / 'aces_austin' / 'aces.yaml').write_text('image: aces.pgm\n')
    inputs, missing = real_logs.find_inputs(str(logs), str(maps))
    assert [i[0] for i in inputs] == ['aces']
    assert inputs[0][3] == 50.0
    assert len(missing) == 1 and missing[0].startswith('intel: no map')
    inputs, missing = real_logs.find_inputs(str(tmp_path / 'none'), str(maps))
    assert inputs == [] and all('no log' in m for m in missing)


def test_run_skips_cleanly_without_data(tmp_path):
    class Ctx:
        args = argparse.Namespace(logs=str(tmp_path / 'absent'), trials=None, quick=True)
        lines = []

        def progress(self, text):
            self.lines.append(text)

    result = real_logs.run(Ctx())
    assert result['skipped'].startswith('no Carmen log')
    assert result['trials'] == [] and result['summary'] == {} and result['plots'] == []
    assert result['markdown'].startswith('Skipped: ')


def test_plan_splices_is_seeded_and_respects_the_windows():
    truth = straight_truth()
    a = real_logs.plan_splices(np.random.default_rng(3), truth, 4)
    b = real_logs.plan_splices(np.random.default_rng(3), truth, 4)
    assert a == b
    meter = real_logs.odometer(truth)
    for spec in a:
        assert real_logs.WARMUP <= spec['t'] <= 600.0 - real_logs.WITHIN - 1.0
        assert spec['start'] == pytest.approx(spec['t'] - real_logs.WARMUP)
        assert spec['end'] == pytest.approx(spec['t'] + real_logs.WITHIN + 1.0)
        assert real_logs.JUMP_RANGE[0] <= spec['distance'] <= real_logs.JUMP_RANGE[1]
        assert math.hypot(*spec['jump'][:2]) == pytest.approx(spec['distance'])
        assert -math.pi <= spec['jump'][2] < math.pi
        assert real_logs.driven(meter, spec['t'], spec['t'] + real_logs.WITHIN) >= \
            real_logs.MIN_DRIVEN


def test_plan_splices_refuses_short_or_standing_logs():
    with pytest.raises(ValueError, match='too short'):
        real_logs.plan_splices(np.random.default_rng(0), straight_truth(100.0), 1)
    standing = [(t, 0.0, 0.0, 0.0) for t in range(0, 600, 3)]
    with pytest.raises(ValueError, match='no splice time'):
        real_logs.plan_splices(np.random.default_rng(0), standing, 1, tries=5)


def test_driven_interpolates_the_odometer():
    meter = real_logs.odometer([(0.0, 0.0, 0.0, 0.0), (10.0, 3.0, 4.0, 0.0)])
    assert real_logs.driven(meter, 0.0, 5.0) == pytest.approx(2.5)
    assert real_logs.driven(meter, 2.0, 100.0) == pytest.approx(4.0)


def test_reading_errors_use_the_nearest_truth():
    truth = [(0.0, 0.0, 0.0, 0.0), (3.0, 1.0, 0.0, 3.1)]
    readings = [(0.4, 0.0, 0.5, 0.1), (2.9, 1.0, 0.0, -3.1)]
    errors = real_logs.reading_errors(readings, truth)
    assert errors[0] == pytest.approx((0.5, 0.1))
    assert errors[1] == pytest.approx((0.0, 2 * math.pi - 6.2))
    assert real_logs.is_wrong((0.6, 0.0)) and real_logs.is_wrong((0.1, 0.4))
    assert not real_logs.is_wrong((0.5, 0.35))
    assert real_logs.is_right((0.45, 0.35)) and not real_logs.is_right((0.46, 0.0))


def test_episodes_classify_by_the_error_when_they_begin():
    times = [0, 1, 2, 3, 4, 5, 6, 7]
    tiers = [2, 2, 0, 2, 2, 0, 2, 2]
    ok, off = (0.1, 0.0), (2.0, 0.0)
    errors = [ok, ok, ok, off, ok, ok, ok, off]
    spells = real_logs.episodes(times, tiers, errors, 0.5, 6.0)
    # Already in tier 2 at the start: a spell beginning at the first reading in the window.
    assert [s['t_start'] for s in spells] == [1, 3, 6]
    assert [s['wrong_at_start'] for s in spells] == [False, True, False]
    assert [s['wrong_later'] for s in spells] == [False, True, True]
    assert spells[0]['t_end'] == 2 and spells[2]['t_end'] == 7
    assert spells[2]['max_error_xy'] == 2.0
    assert real_logs.episodes(times, tiers, errors, 7.5, 9.0) == []


def test_time_at_least_and_score_unmodified():
    times = [0.0, 10.0, 20.0, 30.0]
    tiers = [0, 2, 1, 2]
    assert real_logs.time_at_least(times, tiers, 2, 0.0, 40.0) == pytest.approx(20.0)
    assert real_logs.time_at_least(times, tiers, 1, 5.0, 35.0) == pytest.approx(25.0)
    errors = [(0.1, 0.0), (0.1, 0.0), (0.1, 0.0), (1.0, 0.0)]
    score = real_logs.score_unmodified(times, tiers, errors, 0.0, 3600.0)
    assert score['alarms'] == 2 and score['false_alarms'] == 1 and score['true_alarms'] == 1
    assert score['false_alarms_wrong_later'] == 0
    later = real_logs.score_unmodified(times, [0, 2, 2, 2], errors, 0.0, 3600.0)
    assert later['false_alarms'] == 1 and later['false_alarms_wrong_later'] == 1
    assert score['false_alarms_per_hour'] == pytest.approx(1.0)
    assert score['time_tier2_s'] == pytest.approx(10.0 + 3570.0)


def test_localization_summary_window():
    times = [0.0, 1.0, 2.0, 3.0]
    errors = [(5.0, 0.0), (0.1, 0.0), (0.3, 0.5), (0.2, 0.0)]
    summary = real_logs.localization_summary(times, errors, 0.5, 3.0)
    assert summary['readings'] == 3
    assert summary['error_xy']['median'] == pytest.approx(0.2)
    assert summary['wrong_share'] == pytest.approx(1 / 3)


def splice_stream():
    times = [float(t) for t in range(0, 100, 5)]
    meter = real_logs.odometer([(t, 0.1 * t, 0.0, 0.0) for t in times])
    return times, meter


def test_score_splice_detection_delay_and_distance():
    times, meter = splice_stream()
    tiers = [0] * 10 + [0, 1, 2, 2] + [2] * 6
    errors = [(0.1, 0.0)] * 10 + [(3.0, 0.0)] * 10
    score = real_logs.score_splice(times, tiers, errors, 48.0, 60.0, meter)
    assert score['delocalized'] and not score['alarmed_before']
    assert score['delay_s'] == pytest.approx(12.0)
    assert score['delay_m'] == pytest.approx(1.2)
    assert score['self_corrected_s'] is None and score['readings_after'] == 10
    assert score['first_error_xy'] == 3.0


def test_score_splice_self_correction_first_is_a_miss():
    times, meter = splice_stream()
    tiers = [0] * 10 + [0, 0, 0, 2] + [2] * 6
    errors = [(0.1, 0.0)] * 10 + [(3.0, 0.0), (0.2, 0.0)] + [(0.2, 0.0)] * 8
    score = real_logs.score_splice(times, tiers, errors, 48.0, 60.0, meter)
    assert score['self_corrected_s'] == pytest.approx(7.0)
    assert score['delay_s'] is None and score['delay_m'] is None


def test_score_splice_already_alarmed_and_outside_window():
    times, meter = splice_stream()
    tiers = [2] * 20
    errors = [(3.0, 0.0)] * 20
    score = real_logs.score_splice(times, tiers, errors, 48.0, 60.0, meter)
    assert score['alarmed_before'] and score['delay_s'] == pytest.approx(2.0)
    late = real_logs.score_splice(times, [0] * 19 + [2], errors, 48.0, 30.0, meter)
    assert late['delay_s'] is None


def test_live_agreement():
    assert real_logs.live_agreement([0, 1, 2, 2], [0, 1, 1, 2, 9]) == pytest.approx(0.75)
    assert real_logs.live_agreement([], [0]) is None


def fake_trials():
    base = {'profile': 'stock', 'kept_up': True, 'amcl_poses': 10, 'expected_amcl_poses': 10,
            'live_agreement': 1.0}
    unmodified = dict(base, log='aces', kind='unmodified', scored_s=3600.0, driven_m=500.0,
                      localization=real_logs.localization_summary([0.0], [(0.1, 0.0)], 0, 1))
    unmodified['detectors'] = {
        name: {'alarms': 2, 'false_alarms': 1, 'true_alarms': 1, 'false_alarms_per_hour': 1.0,
               'false_alarms_wrong_later': 0,
               'time_tier2_s': 360.0, 'time_tier2_share': 0.1, 'time_tier_ge1_share': 0.2}
        for name in real_logs.detectors.NAMES}
    spliced = []
    for index, (delay, before, deloc) in enumerate([(10.0, False, True), (None, False, True),
                                                    (0.0, True, True), (None, False, False)]):
        t = dict(base, log='aces', kind='spliced', t_splice=100.0, distance=3.0,
                 jump=[3.0, 0.0, 0.5], index=index)
        t['detectors'] = {name: {'alarmed_before': before, 'delocalized': deloc,
                                 'first_error_xy': 3.0, 'self_corrected_s': None,
                                 'delay_s': delay, 'delay_m': None if delay is None else 1.0,
                                 'readings_after': 5}
                          for name in real_logs.detectors.NAMES}
        spliced.append(t)
    return [unmodified] + spliced


def test_summarize_and_markdown():
    trials = fake_trials()
    summary = real_logs.summarize(trials)
    d = summary['detectors']['lost_detector']
    assert d['false_alarms'] == 1 and d['false_alarms_per_hour'] == pytest.approx(1.0)
    assert d['time_tier2_share'] == pytest.approx(0.1)
    assert d['splices'] == 4 and d['alarmed_before_splice'] == 1
    assert d['delocalized'] == 2 and d['detected'] == 1
    assert d['detection_rate'] == pytest.approx(0.5)
    assert d['delay_s']['median'] == pytest.approx(10.0)
    # The live node's stream is absent here: nothing is invented for it.
    assert summary['detectors']['lost_detector_live']['splices'] == 0
    assert summary['detectors']['lost_detector_live']['unmodified_replays'] == 0
    text = real_logs.markdown(summary, trials, {'rate': 20.0, 'profile': 'stock',
                                                'particles': 2000, 'overrides': {}})
    assert '## Localizer profile `stock`' in text
    assert '| aces | `lost_detector` | 1 | 1.00 | 0 | 1 |' in text
    assert '| `lost_detector` | 4 | 1 | 1/2 | 50 % | 10.0 |' in text


def test_rescore_unmodified_scores_another_config_over_the_suites_window():
    from lost_and_found.core.lost_detector import LostDetectorConfig
    tight, wide = (0.01, 0.01, 0.0, 0.001), (1.0, 1.0, 0.0, 0.5)
    rows = []
    for k in range(90):                      # 1 reading per second, log time 100..189
        cov = wide if 70 <= k < 80 or k < 5 else tight
        miss = 0.9 if 40 <= k < 50 else 0.0
        rows.append([100.0 + k, 0.0, 0.0, 0.0] + list(cov) + [miss, 0.05, 0.01])
    streams = {'streams': [{'log': 'intel', 'profile': 'stock',
                            'fields': ['t', 'x', 'y', 'yaw', 'var_x', 'var_y', 'cov_xy',
                                       'var_yaw', 'scan_miss', 'error_xy', 'error_yaw'],
                            'readings': rows}]}
    run = {'trials': [{'kind': 'unmodified', 'log': 'intel', 'profile': 'stock',
                       'start': 100.0, 'end': 200.0}]}
    config = LostDetectorConfig(queue_min=2, window_meta_tier2_lost=3,
                                ratio_thresh_detections_tier2_lost=0.5,
                                window_meta_tier0_normal=3)
    # Streams that do not say how their scan feature was computed counted every missed end
    # point: refused for a config that weighs short misses otherwise.
    with pytest.raises(ValueError, match="scan_check/short_weight=1.0"):
        real_logs.rescore_unmodified(run, streams, dataclasses.replace(config,
                                                                       short_weight=0.5))
    streams['scan_check'] = detectors.scan_check_of(config)
    # a spliced copy's stream (written since the calibration reads them) is not rescored here
    streams['streams'].append(dict(streams['streams'][0], kind='spliced', t_splice=150.0,
                                   distance=3.0))
    assert len(real_logs.rescore_unmodified(run, streams, config)) == 1
    scores = real_logs.rescore_unmodified(run, streams, config)[0]['scores']
    # the wide spell before the settle is not scored; the scan spell and the wide spell are
    assert scores['false_alarms'] == 2
    off = real_logs.rescore_unmodified(
        run, streams, LostDetectorConfig(scan_check=False, queue_min=2,
                                         window_meta_tier2_lost=3,
                                         ratio_thresh_detections_tier2_lost=0.5,
                                         window_meta_tier0_normal=3))[0]['scores']
    assert off['false_alarms'] == 1          # without the scan only the wide spell
    run['trials'][0]['log'] = 'aces'
    with pytest.raises(ValueError, match='no unmodified trial'):
        real_logs.rescore_unmodified(run, streams, config)


def test_rescore_unmodified_reads_another_min_range_from_scan_near():
    from lost_and_found.core.lost_detector import LostDetectorConfig
    tight = (0.01, 0.01, 0.0, 0.001)
    rows = []
    for k in range(90):                      # 1 reading per second, log time 100..189
        # A spell of near returns (something in front of the laser) that miss the map short;
        # beyond 1 m too few beams are left for a feature.
        near = 40 <= k < 50
        through, short = (0.0, 0.9) if near else (0.0, 0.0)
        pairs = [[through, short], None if near else [through, short]]
        rows.append([100.0 + k, 0.0, 0.0, 0.0] + list(tight)
                    + [short, through, short, pairs, 0.05, 0.01])
    config = LostDetectorConfig(queue_min=2, window_meta_tier2_lost=3,
                                ratio_thresh_detections_tier2_lost=0.5,
                                window_meta_tier0_normal=3)
    streams = {'scan_check': detectors.scan_check_of(config), 'min_ranges': [0.0, 1.0],
               'streams': [{'log': 'intel', 'profile': 'stock',
                            'fields': ['t', 'x', 'y', 'yaw', 'var_x', 'var_y', 'cov_xy',
                                       'var_yaw', 'scan_miss', 'scan_through', 'scan_short',
                                       'scan_near', 'error_xy', 'error_yaw'],
                            'readings': rows}]}
    run = {'trials': [{'kind': 'unmodified', 'log': 'intel', 'profile': 'stock',
                       'start': 100.0, 'end': 200.0}]}
    assert real_logs.rescore_unmodified(run, streams, config)[0]['scores']['false_alarms'] == 1
    far = dataclasses.replace(config, min_range=1.0)
    assert real_logs.rescore_unmodified(run, streams, far)[0]['scores']['false_alarms'] == 0
    with pytest.raises(ValueError, match='scan_check/min_range=0.0'):
        real_logs.rescore_unmodified(run, streams, dataclasses.replace(config, min_range=0.5))


def test_registration_summary_counts_the_moved_poses_and_says_so():
    from lost_and_found.bench import carmen
    registered = carmen.Registration(
        truth=[(0, 0.0, 0.0, 0.0)] * 4,
        shifts=[(0.0, 0.0), (0.2, math.radians(1.0)), (0.4, 0.0), (0.0, 0.0)], moved=2)
    summary = real_logs.registration_summary(registered)
    assert summary['poses'] == 4 and summary['moved'] == 2
    assert summary['shift_xy']['median'] == pytest.approx(0.3)
    assert summary['shift_xy']['max'] == pytest.approx(0.4)
    text = real_logs.registration_markdown({'intel': summary})
    assert 'intel 2 of 4 poses moved, by 0.30 m median' in text
