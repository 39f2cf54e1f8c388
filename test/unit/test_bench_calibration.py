"""Unit tests of lost_and_found.bench.calibration on tiny synthetic streams (no ROS master)."""
import dataclasses
import json
import math
import os
import re

import numpy as np
import pytest
import yaml

from lost_and_found.bench import calibration as cal
from lost_and_found.bench import detectors
from lost_and_found.core.lost_detector import LostDetectorConfig, covariance_features

#: Reading period of the synthetic streams (s).
DT = 0.5
#: Feature pairs (sigma_xy, sigma_theta) of the synthetic readings.
TRACKING = (0.06, 0.04)
BORDERLINE = (0.18, 0.09)   # P(lost) ~0.73 under FIT: lost at 0.5, not at 0.99
WIDE = (1.0, 0.8)
RIGHT = (0.05, 0.02)
WRONG = (4.0, 1.0)
#: A classifier with well separated classes (normal ~TRACKING, lost ~WIDE).
FIT = cal.ClassifierFit(slice_mu=(0.06, 0.04, 1.0, 0.8), slice_sigma=(0.03, 0.02, 0.5, 0.4),
                        tier0_normal_prior=0.8, n_normal=0, n_lost=0, n_dropped=0)


def reading_row(t, features, error, phase, miss=None):
    """One stream row whose covariance has exactly the given features."""
    sxy, syaw = features
    return [t, 0.0, 0.0, 0.0, sxy ** 2, (0.5 * sxy) ** 2, 0.0, syaw ** 2,
            error[0], error[1], phase, miss]


def make_stream(segments, label='lab'):
    """A detection_stream.json document and its trials from (phase, [(features, error)]) runs.

    Every ``teleport``/``bringup`` segment ends a trial that started at the preceding
    ``settle`` segment.
    """
    rows, trials, t = [], [], 0.0
    trial = {}
    for phase, items in segments:
        start = t
        for features, error in items:
            rows.append(reading_row(t, features, error, phase))
            t += DT
        if phase == 'settle':
            trial = {'index': len(trials), 't_reset': start}
        elif phase == 'normal':
            trial['t_normal'] = start
        elif phase in ('teleport', 'bringup'):
            trial.update({'kind': phase, 'distance': 5.0, 't_event': start, 't_end': t})
            trials.append(trial)
    return {'map': label, 'fields': list(cal.MISS_FIELDS), 'readings': rows}, trials


def make_recording(segments, label='lab', seed=100):
    """A Recording built from :func:`make_stream`."""
    data, trials = make_stream(segments, label)
    label, readings, errors, phases, _, _, _ = cal.parse_stream(data)
    keys = ('index', 'kind', 'distance', 't_normal', 't_event', 't_end')
    return cal.Recording(path='synthetic', label=label, readings=readings, errors=errors,
                         phases=phases, trials=[{k: tr[k] for k in keys} for tr in trials],
                         seed=seed, command='synthetic')


def trial_segments(burst=False, event=None):
    """settle, normal (with an optional borderline burst while right), then a delocalization.

    The event's first readings are borderline (a tight cloud at a wrong pose), then wide.
    """
    normal = [(TRACKING, RIGHT)] * 20
    if burst:
        normal = normal[:8] + [(BORDERLINE, RIGHT)] * 5 + normal[13:]
    event = event or [(BORDERLINE, WRONG)] * 4 + [(WIDE, WRONG)] * 10
    return [('settle', [(TRACKING, RIGHT)] * 4), ('normal', normal), ('teleport', event),
            ('other', [(TRACKING, RIGHT)] * 12)]


# ----------------------------------------------------------------------------- labels

def test_labels_follow_the_error_thresholds_and_phases():
    errors = [(0.1, 0.1), (0.1, 0.1), (0.6, 0.0), (0.0, 0.4), (0.47, 0.0), (math.inf, 0.0),
              (0.1, 0.1), (0.45, 0.35)]
    phases = ['normal', 'teleport', 'normal', 'settle', 'normal', 'normal', 'other', 'settle']
    labels = cal.label_readings(errors, phases)
    assert list(labels) == [cal.NORMAL, cal.AMBIGUOUS, cal.LOST, cal.LOST, cal.AMBIGUOUS,
                            cal.AMBIGUOUS, cal.NORMAL, cal.NORMAL]


def test_features_are_the_nodes_and_a_bad_covariance_gives_nan():
    readings = [(0.0, 0.04, 0.01, 0.005, 0.0025), (1.0, -1.0, 0.01, 0.0, 0.01, 0.5),
                (2.0, 0.04, 0.01, 0.005, 0.0025, 0.25)]
    features = cal.reading_features(readings)
    expected = covariance_features(detectors.covariance_of(readings[0]))
    assert features[0, :2] == pytest.approx(expected) and np.isnan(features[0, 2])
    assert np.all(np.isnan(features[1, :2])) and features[1, 2] == 0.5
    assert features[2, 2] == 0.25


def test_old_streams_without_the_scan_column_still_load_and_bad_misses_are_named():
    old = {'map': 'lab', 'fields': list(cal.OLD_FIELDS),
           'readings': [reading_row(0.0, TRACKING, (0.0, 0.0), 'normal')[:-1]]}
    _, readings, _, _, _, _, _ = cal.parse_stream(old)
    assert readings[0][5] is None
    bad = {'map': 'lab', 'fields': list(cal.MISS_FIELDS),
           'readings': [reading_row(0.0, TRACKING, (0.0, 0.0), 'normal', 1.5)]}
    with pytest.raises(cal.CalibrationError, match='scan_miss=1.5'):
        cal.parse_stream(bad)


def test_fit_of_the_scan_feature_uses_only_readings_with_a_scan():
    rng = np.random.default_rng(3)
    normal = np.column_stack([rng.normal(0.06, 0.01, 400), rng.normal(0.04, 0.01, 400),
                              rng.normal(0.05, 0.1, 400).clip(0, 1)])
    lost = np.column_stack([rng.normal(1.0, 0.2, 100), rng.normal(0.8, 0.1, 100),
                            rng.normal(0.7, 0.2, 100).clip(0, 1)])
    normal[:100, 2] = np.nan                          # no scan for these
    features = np.vstack([normal, lost])
    labels = [cal.NORMAL] * 400 + [cal.LOST] * 100
    fit = cal.fit_classifier(features, labels)
    assert fit.n_scan == (300, 100)
    assert fit.scan_miss_mu[0] == pytest.approx(np.nanmean(normal[:, 2]), abs=1e-3)
    assert fit.scan_miss_mu[1] == pytest.approx(lost[:, 2].mean(), abs=1e-3)
    assert fit.scan_miss_sigma[1] == pytest.approx(lost[:, 2].std(), rel=1e-2)
    config = cal.make_config(fit, {'prob_thresh': 0.9, 'window_meta_tier2_lost': 10,
                                   'ratio_thresh_detections_tier2_lost': 0.6,
                                   'queue_min': 3, 'window_meta_tier0_normal': 10})
    assert config.scan_miss_mu == fit.scan_miss_mu
    # A tight covariance with a scan that misses: only the scan says lost.
    p = cal.reading_probabilities([[0.06, 0.04, 0.9], [0.06, 0.04, np.nan]], config)
    assert p[0][0] > 0.9 and p[0][1] and p[1][0] < 0.01 and not p[1][1]
    # Without any scan in the training data the node's defaults stay.
    no_scan = cal.fit_classifier(features[:, :2], labels)
    assert no_scan.scan_miss_mu is None and no_scan.n_scan == (0, 0)


# ----------------------------------------------------------------------------- fit

def test_fit_recovers_known_class_means_sigmas_and_prior():
    rng = np.random.default_rng(3)
    normal = rng.normal((0.1, 0.05), (0.02, 0.01), size=(3000, 2))
    lost = rng.normal((1.0, 0.8), (0.2, 0.1), size=(1000, 2))
    features = np.vstack([normal, lost, [[np.nan, 0.1]], [[5.0, 5.0]]])
    labels = np.array([0] * 3000 + [1] * 1000 + [1, cal.AMBIGUOUS])
    fit = cal.fit_classifier(features, labels)
    assert fit.slice_mu == pytest.approx((0.1, 0.05, 1.0, 0.8), abs=0.02)
    assert fit.slice_sigma == pytest.approx((0.02, 0.01, 0.2, 0.1), rel=0.06)
    assert fit.tier0_normal_prior == pytest.approx(0.75, abs=0.001)
    assert (fit.n_normal, fit.n_lost, fit.n_dropped) == (3000, 1000, 2)
    # Rounded to DIGITS significant digits, as written to the YAML.
    assert all(v == cal.round_sig(v) for v in fit.slice_mu + fit.slice_sigma)


def test_fit_refuses_a_missing_class():
    with pytest.raises(cal.CalibrationError, match='0 lost'):
        cal.fit_classifier([[0.1, 0.05]] * 5, [0] * 5)


# ----------------------------------------------------------------------------- replay

def test_replay_equals_the_nodes_detector_run():
    rec = make_recording(trial_segments(burst=True) + trial_segments())
    rec.readings[10] = (rec.readings[10][0], -1.0, 0.01, 0.0, 0.01)   # refused by the node
    config = cal.make_config(FIT, {'prob_thresh': 0.9, 'window_meta_tier2_lost': 4,
                                   'ratio_thresh_detections_tier2_lost': 0.5, 'queue_min': 3,
                                   'window_meta_tier0_normal': 4})
    features = cal.reading_features(rec.readings)
    replayed = cal.replay_tiers(cal.reading_probabilities(features, config), config)
    assert replayed == detectors.lost_detector_tiers(rec.readings, config)
    assert 2 in replayed and 0 in replayed


def test_replay_equals_the_nodes_detector_run_with_scans_coming_and_going():
    # A tight cloud at a wrong pose: the scan misses, then some readings have no scan (rule 0
    # skips them), then the scan misses again.
    event = [(TRACKING, WRONG)] * 3 + [(TRACKING, WRONG)] * 5 + [(TRACKING, WRONG)] * 3
    rec = make_recording(trial_segments(event=event))
    start = len(rec.readings) - 12 - len(event)
    misses = [0.9] * 3 + [None] * 5 + [0.9] * 3
    for i, miss in enumerate(misses):
        rec.readings[start + i] = tuple(rec.readings[start + i][:5]) + (miss,)
    fit = dataclasses.replace(FIT, scan_miss_mu=(0.02, 0.8), scan_miss_sigma=(0.05, 0.2))
    config = cal.make_config(fit, {'prob_thresh': 0.9, 'window_meta_tier2_lost': 4,
                                   'ratio_thresh_detections_tier2_lost': 0.7, 'queue_min': 3,
                                   'window_meta_tier0_normal': 4})
    features = cal.reading_features(rec.readings)
    replayed = cal.replay_tiers(cal.reading_probabilities(features, config), config)
    assert replayed == detectors.lost_detector_tiers(rec.readings, config)
    # Tier 2 after the first three misses, kept through the five readings without a scan.
    assert replayed[start + 2:start + 11] == [2] * 9


def test_replay_equals_the_nodes_detector_run_with_through_shares():
    # Readings whose miss fraction says normal but whose beams that reached the walls went
    # through them: only the through share says lost, and not while settling after the start.
    rec = make_recording(trial_segments(event=[(TRACKING, WRONG)] * 8))
    start = len(rec.readings) - 12 - 8
    for i in range(len(rec.readings)):
        through, short = (0.3, 0.4) if start <= i < start + 8 or i < 3 else (0.0, 0.05)
        rec.readings[i] = tuple(rec.readings[i][:5]) + (0.05, through, short)
    fit = dataclasses.replace(FIT, scan_miss_mu=(0.02, 0.8), scan_miss_sigma=(0.05, 0.2))
    params = {'prob_thresh': 0.9, 'window_meta_tier2_lost': 4,
              'ratio_thresh_detections_tier2_lost': 0.5, 'queue_min': 3,
              'window_meta_tier0_normal': 4, 'settle_readings': 3}
    config = cal.make_config(fit, dict(params, through_lost=0.4))
    features = cal.reading_features(rec.readings)
    assert features[0, 3:] == pytest.approx([0.3, 0.4])
    probabilities = cal.reading_probabilities(features, config)
    assert probabilities[start][3] == pytest.approx(0.5)        # 0.3 of the 0.6 that reached
    replayed = cal.replay_tiers(probabilities, config)
    assert replayed == detectors.lost_detector_tiers(rec.readings, config)
    assert replayed[:3] == [0, 0, 0] and 2 in replayed[start:start + 8]
    off = cal.make_config(fit, dict(params, through_lost=1.0))
    assert 2 not in cal.replay_tiers(cal.reading_probabilities(features, off), off)


def test_replay_resets_the_detector_at_pose_fixes_as_lost_service_does():
    # A wide burst puts the detector in (sticky) tier 2; a pose fix right after it resets it,
    # so the normal readings that follow are normal at once instead of after the tier-0 run.
    rec = make_recording(trial_segments(event=[(WIDE, WRONG)] * 6))
    config = cal.make_config(FIT, {'prob_thresh': 0.9, 'window_meta_tier2_lost': 4,
                                   'ratio_thresh_detections_tier2_lost': 0.5, 'queue_min': 3,
                                   'window_meta_tier0_normal': 4})
    end = rec.trials[0]['t_end']
    features = cal.reading_features(rec.readings)
    probabilities = cal.reading_probabilities(features, config)
    without = cal.replay_tiers(probabilities, config)
    rec.trials[0]['pose_fixes'] = [end]
    assert rec.pose_fixes == [end]
    fixed_at = int(np.searchsorted(rec.times, end))
    assert rec.resets == {fixed_at}
    replayed = cal.replay_tiers(probabilities, config, rec.resets)
    assert replayed == detectors.lost_detector_tiers(rec.readings, config, rec.pose_fixes)
    assert without[fixed_at] == 2 and replayed[fixed_at] == 0
    assert replayed[:fixed_at] == without[:fixed_at]


def test_scores_count_false_alarms_and_detections_like_the_suite():
    rec = make_recording(trial_segments(burst=True))
    config = cal.make_config(FIT, {'prob_thresh': 0.5, 'window_meta_tier2_lost': 4,
                                   'ratio_thresh_detections_tier2_lost': 0.5, 'queue_min': 3,
                                   'window_meta_tier0_normal': 4})
    score = cal.evaluate([rec], config)
    # prob 0.5 labels the borderline burst lost: one false entry into tier 2.
    assert score['false_alarms'] == 1
    assert score['delocalized']['events'] == 1
    assert score['delocalized']['within'] == 1
    # Tier 2 at the 3rd event reading (ratio 3/4 > 0.5): 1 s after the event.
    assert score['delocalized']['delay_s']['median'] == pytest.approx(2 * DT)


def parked_after_the_event(parked=16.0):
    """A trial whose detection comes 19 s after the event, 16 s of which the robot stood
    still, and its ground-truth path (0.2 m/s, parked for ``parked`` s after the event)."""
    event = [(TRACKING, WRONG)] * 36 + [(WIDE, WRONG)] * 10
    data, trials = make_stream(trial_segments(event=event))
    t_event = trials[0]['t_event']
    times = np.arange(0.0, data['readings'][-1][0] + DT, DT / 2)
    parked_now = (times > t_event) & (times <= t_event + parked)
    x = np.concatenate([[0.0], np.cumsum(np.where(parked_now[1:], 0.0, 0.2 * DT / 2))])
    truth = [[float(t), float(v), 0.0, 0.0] for t, v in zip(times, x)]
    return data, trials, truth


def test_within_counts_seconds_of_driving_when_the_run_recorded_its_path(tmp_path):
    data, trials, truth = parked_after_the_event()
    (tmp_path / 'detection_stream.json').write_text(json.dumps(data))
    (tmp_path / 'detection.json').write_text(json.dumps({'seed': 100, 'trials': trials}))
    elapsed_only = cal.load_recording(str(tmp_path))
    assert elapsed_only.truth is None
    (tmp_path / 'detection_truth.json').write_text(json.dumps({'truth': truth}))
    recording = cal.load_recording(str(tmp_path))
    assert recording.truth.shape == (len(truth), 4)
    config = cal.make_config(FIT, {'prob_thresh': 0.5, 'window_meta_tier2_lost': 4,
                                   'ratio_thresh_detections_tier2_lost': 0.5, 'queue_min': 3,
                                   'window_meta_tier0_normal': 4})
    by_driving = cal.evaluate([recording], config)
    by_elapsed = cal.evaluate([elapsed_only], config)
    # Tier 2 at the 3rd wide reading: 19 s after the event, 3 s of them driving.
    for score in (by_driving, by_elapsed):
        assert score['delocalized']['detected'] == 1
        assert score['delocalized']['delay_s']['median'] == pytest.approx(38 * DT)
        assert score['delocalized']['within_elapsed'] == 0
    assert by_driving['measure'] == 'driving' and by_driving['delocalized']['within'] == 1
    assert by_driving['delocalized']['mean_delay_within'] == pytest.approx(38 * DT - 16.0)
    assert by_elapsed['measure'] == 'elapsed' and by_elapsed['delocalized']['within'] == 0
    assert 'within 15 s of driving' in cal.score_sentence(by_driving)
    assert 'of driving' not in cal.score_sentence(by_elapsed)
    # Both kinds pooled say so, and count each trial in its own measure.
    pooled = cal.evaluate([recording, elapsed_only], config)
    assert pooled['measure'] == 'mixed'
    assert pooled['delocalized']['within'] == 1 and 'elapsed where not' in \
        cal.score_sentence(pooled)
    # The motion along the path is computed once per recording, not per score.
    assert recording.motion is recording.motion
    for bad in ('{not json', json.dumps({'truth': [[0.0, 1.0, 2.0]] * 4}),
                json.dumps({'truth': [[0.0, 1.0, 2.0, None]]}),
                json.dumps({'truth': [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]})):
        (tmp_path / 'detection_truth.json').write_text(bad)
        with pytest.raises(cal.CalibrationError, match='detection_truth.json'):
            cal.load_recording(str(tmp_path))


# ----------------------------------------------------------------------------- grid search

def small_grid():
    return cal.Grid(prob_thresh=(0.5, 0.99), window_meta_tier2_lost=(4, 6),
                    ratio_thresh_detections_tier2_lost=(0.5,), queue_min=(3,),
                    window_meta_tier0_normal=(4,), settle_readings=(0,))


def test_grid_search_prefers_zero_false_alarms_over_faster_detection():
    recordings = [make_recording(trial_segments(burst=True) + trial_segments())]
    loose = cal.make_config(FIT, {'prob_thresh': 0.5, 'window_meta_tier2_lost': 4,
                                  'ratio_thresh_detections_tier2_lost': 0.5, 'queue_min': 3,
                                  'window_meta_tier0_normal': 4})
    loose_score = cal.evaluate(recordings, loose)
    assert loose_score['false_alarms'] > 0
    result = cal.grid_search(recordings, FIT, small_grid())
    assert result.score['false_alarms'] == 0
    assert result.params['prob_thresh'] == 0.99
    assert result.score['delocalized']['within'] == 2
    # Slower than the loose config (it waits for the wide readings), but no false alarm.
    assert result.score['delocalized']['mean_delay_within'] > \
        loose_score['delocalized']['mean_delay_within']
    assert result.tried == 4 and result.zero_false_alarms == 2
    # False alarms buy no extra detection here: the trade-off has one step.
    assert [step[:2] for step in result.frontier] == [(0, 2)]
    # One step more sensitive (prob_thresh 0.5) brings the false alarm back.
    assert result.margin['prob_thresh'][0] == 0.5 and result.margin['prob_thresh'][1] > 0
    # Between the two zero-false-alarm windows the shorter detects sooner.
    assert result.params['window_meta_tier2_lost'] == 4


def settling_recording():
    """Two trials whose correct re-seed leaves amcl's cloud wide while the scan fits the map;
    every reading has a scan (0.02 missed at a right pose, 0.8 at a wrong one)."""
    segments = []
    for _ in range(2):
        trial = trial_segments()
        trial[0] = ('settle', [(WIDE, RIGHT)] * 4)
        segments += trial
    rec = make_recording(segments)
    rec.readings = [tuple(r[:5]) + (0.8 if detectors.is_wrong(e) else 0.02,)
                    for r, e in zip(rec.readings, rec.errors)]
    for trial in rec.trials:
        trial['pose_fixes'] = [trial['t_normal'] - 4 * DT]
    return rec


def test_grid_search_counts_false_alarms_while_settling_and_settles_them_away():
    rec = settling_recording()
    fit = dataclasses.replace(FIT, scan_miss_mu=(0.02, 0.8), scan_miss_sigma=(0.05, 0.2))
    params = {'prob_thresh': 0.99, 'window_meta_tier2_lost': 4,
              'ratio_thresh_detections_tier2_lost': 0.5, 'queue_min': 3,
              'window_meta_tier0_normal': 4}
    plain = cal.evaluate([rec], cal.make_config(fit, dict(params, settle_readings=0)))
    # The wide cloud of each right re-seed reads lost: one false alarm per trial, counted
    # once (as a settle alarm) though it lasts into normal driving.
    assert (plain['settle_false_alarms'], plain['false_alarms']) == (2, 0)
    settled = cal.evaluate([rec], cal.make_config(fit, dict(params, settle_readings=4)))
    assert (settled['settle_false_alarms'], settled['false_alarms']) == (0, 0)
    assert settled['delocalized']['within'] == plain['delocalized']['within'] == 2
    grid = dataclasses.replace(small_grid(), settle_readings=(0, 4, 8))
    result = cal.grid_search([rec], fit, grid)
    assert cal.all_false_alarms(result.score) == 0
    assert result.params['settle_readings'] == 4       # the shortest settle that does
    config = result.config
    assert config.settle_readings == 4
    features = cal.reading_features(rec.readings)
    assert cal.replay_tiers(cal.reading_probabilities(features, config), config,
                            rec.resets) == \
        detectors.lost_detector_tiers(rec.readings, config, rec.pose_fixes)


def test_without_pose_fixes_nothing_is_scored_as_a_settle_alarm():
    # No pose fix, no reset: a tier 2 still standing from the previous trial's detection when
    # the next trial's settle time begins is not that trial's false alarm.
    rec = make_recording(trial_segments() + trial_segments())
    config = cal.make_config(FIT, {'prob_thresh': 0.9, 'window_meta_tier2_lost': 4,
                                   'ratio_thresh_detections_tier2_lost': 0.5, 'queue_min': 3,
                                   'window_meta_tier0_normal': 15, 'settle_readings': 0})
    rec.phase_seconds = dict(rec.phase_seconds, settle=4.0)
    assert rec.pose_fixes == []
    tiers = detectors.lost_detector_tiers(rec.readings, config)
    second = rec.trials[1]['t_normal']
    before = int(np.searchsorted(rec.times, second - rec.phase_seconds['settle']))
    assert tiers[before] == 2 and cal.detectors.is_right(rec.errors[before])  # from trial 1
    assert cal.evaluate([rec], config)['settle_false_alarms'] == 0


def test_objective_ranks_false_alarms_then_detections_then_delay():
    def score(false_alarms, within, delay):
        return {'false_alarms': false_alarms, 'tier1_normal': 0,
                'delocalized': {'within': within, 'mean_delay_within': delay}}
    ranked = sorted([score(1, 9, 1.0), score(0, 2, 9.0), score(0, 3, 12.0), score(0, 3, 5.0)],
                    key=cal.objective)
    assert [(s['false_alarms'], s['delocalized']['within'],
             s['delocalized']['mean_delay_within']) for s in ranked] == \
        [(0, 3, 5.0), (0, 3, 12.0), (0, 2, 9.0), (1, 9, 1.0)]


def test_grid_refuses_windows_shorter_than_a_few_readings():
    rec = make_recording(trial_segments())
    with pytest.raises(cal.CalibrationError, match='>= %d' % cal.MIN_WINDOW):
        cal.grid_search([rec], FIT, cal.Grid(window_meta_tier2_lost=(2, 6)))


# ----------------------------------------------------------------------------- calibrate, YAML

def synthetic_training():
    return [make_recording(trial_segments(burst=True) + trial_segments(), seed=100),
            make_recording(trial_segments() + trial_segments(burst=True), seed=101)]


def config_keys_default(section, shipped, newer):
    """The newer keys the shipped YAML lacks load as the node's defaults, which are what
    its training streams were recorded with (every beam used)."""
    loaded = detectors.load_detector_config(cal.TARGET_PATH)
    return all(key in shipped[section] or getattr(loaded, key) ==
               getattr(LostDetectorConfig(), key) == detectors.LEGACY_SCAN_CHECK.get(
                   key, getattr(LostDetectorConfig(), key))
               for key in newer[section])


def test_calibrate_writes_a_yaml_that_loads_validates_and_reproduces_the_score(tmp_path):
    recordings = synthetic_training()
    result = cal.calibrate(recordings, small_grid())
    text = cal.render_yaml(result, ['/tmp/a', '/tmp/b'], '2025-01-02')
    path = tmp_path / 'out.yaml'
    path.write_text(text)
    config = detectors.load_detector_config(str(path))
    assert config == result.search.config
    assert config.slice_mu == result.fit.slice_mu
    assert cal.objective(cal.evaluate(recordings, config)) == \
        cal.objective(result.search.score)
    # Same layout as config/lost_detector.yaml: the node's private keys.
    params = yaml.safe_load(text)
    assert set(params) == {'modified_prob_classifier', 'lost_detector', 'scan_check'}
    with open(cal.TARGET_PATH) as stream:
        shipped = yaml.safe_load(stream)
    # Every key the shipped file has. A shipped file fitted before scan_check/min_range or
    # open_beams existed, on streams that used every beam with a return, leaves the key at its
    # default (0, false); one fitted before through_lost, the rule off (1).
    newer = {'scan_check': {'min_range', 'open_beams', 'through_lost', 'through_min_reach'},
             'lost_detector': {'settle_readings'}}
    # The burst rule's keys only --keep-fit --burst writes (the rule off without them), and
    # unmapped_ends only --keep-fit --unmapped-ends.
    burst = set(cal.BURST_KEYS) if 'burst_count' in shipped['scan_check'] else set()
    burst |= {'unmapped_ends'} & set(shipped['scan_check'])
    for section in params:
        extra = newer.get(section, set())
        only_keep_fit = burst if section == 'scan_check' else set()
        assert set(params[section]) - extra == set(shipped[section]) - extra - only_keep_fit, \
            section
        assert set(shipped[section]) - only_keep_fit <= set(params[section]), section
        assert not only_keep_fit & set(params[section])
    assert LostDetectorConfig().burst_count == 0
    assert config_keys_default('scan_check', shipped, newer)
    assert set(params['lost_detector']) == {
        'queue_min', 'window_meta_tier2_lost', 'ratio_thresh_detections_tier2_lost',
        'window_meta_tier0_normal', 'settle_readings'}
    # A comment right above every key; the header names the generator, date and inputs.
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() and not line.lstrip().startswith('#') and line.startswith('  '):
            assert lines[i - 1].lstrip().startswith('#'), line
    assert 'tools/calibrate_detector.py' in lines[0] and '2025-01-02' in lines[0]
    assert '/tmp/a: map lab, seed 100' in text and 'synthetic' in text
    assert all(len(line) <= 100 for line in lines if not line.startswith('#   /usr/bin'))


def test_a_searched_through_lost_is_written_with_how_it_was_chosen(tmp_path):
    recordings = synthetic_training()
    grid = dataclasses.replace(small_grid(), through_lost=(1.0, 0.4))
    result = cal.calibrate(recordings, grid)
    assert result.search.params['through_lost'] in (1.0, 0.4)
    options = ['--through-lost', '1', '0.4']
    text = cal.render_yaml(result, ['/tmp/a', '/tmp/b'], '2025-01-02', options)
    path = tmp_path / 'out.yaml'
    path.write_text(text)
    config = detectors.load_detector_config(str(path))
    assert config == result.search.config
    assert config.through_lost == result.search.params['through_lost']
    comments = ' '.join(line.lstrip('# ') for line in text.splitlines())
    assert 'Grid search over 1.0, 0.4' in comments
    off = cal.render_yaml(cal.calibrate(recordings, small_grid()), ['a'], '2025-01-02')
    assert yaml.safe_load(off)['scan_check']['through_lost'] == 1.0
    assert 'Not searched' in ' '.join(line.lstrip('# ') for line in off.splitlines())


def test_keep_fit_chooses_only_through_lost_and_keeps_the_base_file(tmp_path):
    recordings = synthetic_training()
    base_text = cal.render_yaml(cal.calibrate(recordings, small_grid()), ['a', 'b'],
                                '2025-01-02')
    path = tmp_path / 'base.yaml'
    path.write_text(base_text)
    base = detectors.load_detector_config(str(path))
    # The synthetic streams have no split misses: only 1 (off) can be scored on them.
    assert all(r.splits is None for r in recordings)
    config, scores = cal.choose_through_lost(recordings, base, (1.0,))
    assert [v for v, _ in scores] == [1.0] and config == base
    text = cal.render_keep_fit(base_text, dataclasses.replace(config, through_lost=0.5), scores,
                               ['a', 'b'], '2025-01-03', 'CMD')
    assert text.startswith(cal.KEEP_FIT_MARK) and '#   CMD' in text
    # The base as it was, but its own through-share keys, which come last, chosen.
    body = text[text.index('\n#\n') + 3:]
    kept = base_text[:base_text.index("  # A settled reading whose scan's through share")]
    assert body.startswith(kept) and body.count('through_min_reach:') == 1
    out = tmp_path / 'out.yaml'
    out.write_text(text)
    loaded = detectors.load_detector_config(str(out))
    assert loaded == dataclasses.replace(base, through_lost=0.5)
    assert all(len(line) <= 100 for line in text.splitlines() if not line.startswith('#   '))
    # Redone on its own output: the header and the keys are replaced, not added again.
    again = cal.render_keep_fit(text, dataclasses.replace(config, through_lost=0.5), scores,
                                ['a', 'b'], '2025-01-03', 'CMD')
    assert again == text and again.count('through_lost:') == 1
    # With unmapped_ends its key comes after them, and a rerun replaces it too.
    unmapped = dataclasses.replace(config, through_lost=0.5, unmapped_ends=True)
    marked = cal.render_keep_fit(text, unmapped, scores, ['a', 'b'], '2025-01-03', 'CMD')
    out.write_text(marked)
    assert detectors.load_detector_config(str(out)) == unmapped
    assert marked.rstrip('\n').endswith('  unmapped_ends: true')
    assert cal.render_keep_fit(marked, unmapped, scores, ['a', 'b'], '2025-01-03',
                               'CMD') == marked
    # A strip_check section after scan_check (tools/strip_rule.py --write) stays last.
    section = '# The strip rule\nstrip_check:\n  # why\n  count: 2\n  readings: 3\n'
    with_strip = cal.with_strip_section(marked, section)
    redone = cal.render_keep_fit(with_strip, unmapped, scores, ['a', 'b'], '2025-01-03', 'CMD')
    assert redone == with_strip and redone.endswith('\n\n' + section)
    out.write_text(redone)
    assert detectors.load_detector_config(str(out)) == dataclasses.replace(
        unmapped, strip_count=2, strip_readings=3)
    with pytest.raises(cal.CalibrationError, match='in \\(0, 1\\]'):
        cal.choose_through_lost(recordings, base, (0.0,))
    with pytest.raises(cal.CalibrationError, match='outside the block'):
        cal.render_keep_fit(text.replace('  through_min_reach: 0.2\n', ''), config, scores,
                            ['a'], '2025-01-03', 'CMD')
    with pytest.raises(cal.CalibrationError, match='not recorded by kind'):
        cal.choose_through_lost(recordings, base, (1.0, 0.5))
    # A --keep-fit header edited by hand (its closing "#" gone): refused, not cut elsewhere.
    edited = text.replace('\n#\n# lost_detector parameters', '\n# lost_detector parameters', 1)
    assert edited != text
    with pytest.raises(cal.CalibrationError, match='does not end with a line'):
        cal.render_keep_fit(edited, config, scores, ['a'], '2025-01-03', 'CMD')
    with pytest.raises(cal.CalibrationError, match='scan_check section'):
        cal.render_keep_fit('lost_detector:\n  queue_min: 3\n', config, scores, ['a'],
                            '2025-01-03', 'CMD')


def test_same_inputs_give_a_byte_identical_file():
    first = cal.render_yaml(cal.calibrate(synthetic_training(), small_grid()), ['a', 'b'],
                            '2025-01-02')
    second = cal.render_yaml(cal.calibrate(synthetic_training(), small_grid()), ['a', 'b'],
                             '2025-01-02')
    assert first == second


def test_held_out_maps_and_seeds_are_refused():
    for label, seed, match in (('office', 100, 'office'), ('lab', 5, 'seed 5'),
                               ('lab', None, 'seed None')):
        with pytest.raises(cal.CalibrationError, match=match):
            cal.calibrate([make_recording(trial_segments(), label=label, seed=seed)],
                          small_grid())


def test_yaml_floats_never_use_exponents():
    for value in (1e-05, 0.999, 2.0, 1234.5):
        text = cal._yaml_float(value)
        assert 'e' not in text
        assert yaml.safe_load('v: %s' % text)['v'] == value


# ----------------------------------------------------------------------------- loading

def test_parse_stream_names_the_bad_value():
    data, _ = make_stream(trial_segments())
    bad = json.loads(json.dumps(data))
    bad['readings'][3][4] = float('nan')
    with pytest.raises(cal.CalibrationError, match='reading 3: var_x'):
        cal.parse_stream(bad, 'x.json')
    bad = json.loads(json.dumps(data))
    bad['readings'][2][10] = 'lunch'
    with pytest.raises(cal.CalibrationError, match="phase='lunch'"):
        cal.parse_stream(bad, 'x.json')
    with pytest.raises(cal.CalibrationError, match='fields'):
        cal.parse_stream(dict(data, fields=['t']), 'x.json')
    # null errors (no truth) load as inf and are ambiguous.
    data['readings'][0][8] = None
    _, _, errors, phases, _, _, _ = cal.parse_stream(data)
    assert errors[0][0] == math.inf
    assert cal.label_readings(errors[:1], phases[:1])[0] == cal.AMBIGUOUS


def test_load_recording_reads_the_trials_or_infers_them(tmp_path):
    data, trials = make_stream(trial_segments() + trial_segments())
    (tmp_path / 'detection_stream.json').write_text(json.dumps(data))
    inferred = cal.load_recording(str(tmp_path))
    assert inferred.trials_inferred and inferred.seed is None
    assert [(t['t_normal'], t['t_event'], t['kind']) for t in inferred.trials] == \
        [(t['t_normal'], t['t_event'], t['kind']) for t in trials]
    (tmp_path / 'detection.json').write_text(json.dumps({
        'seed': 104, 'command': 'rosrun lost_and_found bench detection --seed 104',
        'summary': {'phases': {'settle': 2.0, 'normal': 10.0, 'observe': 7.0}},
        'trials': trials}))
    recording = cal.load_recording(str(tmp_path))
    assert not recording.trials_inferred and recording.seed == 104
    assert recording.trials[1]['t_end'] == trials[1]['t_end']
    assert recording.phase_seconds['settle'] == 2.0
    cal.check_training(recording)
    with pytest.raises(cal.CalibrationError, match='no detection_stream.json'):
        cal.load_recording(str(tmp_path / 'missing'))


def test_a_stream_says_how_its_scan_feature_was_computed(tmp_path):
    data, _ = make_stream(trial_segments())
    (tmp_path / 'detection_stream.json').write_text(json.dumps(data))
    # Streams from before the key: every missed end point counted, the only rule there was.
    assert cal.load_recording(str(tmp_path)).scan_check == detectors.LEGACY_SCAN_CHECK
    data['scan_check'] = dict(detectors.LEGACY_SCAN_CHECK, short_weight=0.5, hit_tolerance=0.3)
    (tmp_path / 'detection_stream.json').write_text(json.dumps(data))
    recording = cal.load_recording(str(tmp_path))
    assert recording.scan_check['short_weight'] == 0.5
    data['scan_check'] = {'short_weight': 0.5}
    (tmp_path / 'detection_stream.json').write_text(json.dumps(data))
    with pytest.raises(cal.CalibrationError, match='scan_check=.*must map hit_tolerance'):
        cal.load_recording(str(tmp_path))
    # Scoring a config that computes the feature otherwise is refused, naming both.
    with pytest.raises(cal.CalibrationError, match="hit_tolerance=0.3, the config asks for "
                       "scan_check/hit_tolerance=0.2"):
        cal.evaluate([recording], LostDetectorConfig(short_weight=0.5))
    cal.evaluate([recording], LostDetectorConfig(hit_tolerance=0.3, short_weight=0.5))
    cal.evaluate([recording], LostDetectorConfig(scan_check=False))   # no feature: no matter


def split_stream(segments):
    """A stream that holds the misses by kind: a right estimate misses 5 % of its beams short
    (clutter), 80 % during a borderline burst (a crowd in front of the laser); a wrong one
    misses 50 % through walls and 30 % short. ``scan_miss`` weighs short misses with 1."""
    data, trials = make_stream(segments)
    data['fields'] = list(cal.SPLIT_FIELDS)
    for row in data['readings']:
        if row[8] > detectors.LOST_XY:
            through, short = 0.5, 0.3
        else:
            through, short = 0.0, 0.8 if row[4] == BORDERLINE[0] ** 2 else 0.05
        row[11:] = [through + short, through, short]
    data['scan_check'] = dict(detectors.LEGACY_SCAN_CHECK)
    return data, trials


def load_split(tmp_path, name, segments, seed, stream=None):
    """A Recording loaded from a split stream (or ``stream(segments)``) written under
    ``tmp_path/name``."""
    folder = tmp_path / name
    folder.mkdir()
    data, trials = (stream or split_stream)(segments)
    (folder / 'detection_stream.json').write_text(json.dumps(data))
    (folder / 'detection.json').write_text(json.dumps({'seed': seed, 'trials': trials}))
    return cal.load_recording(str(folder))


def test_misses_recorded_by_kind_are_weighed_again(tmp_path):
    recording = load_split(tmp_path, 'a', trial_segments(burst=True), 100)
    assert recording.splits is not None and len(recording.splits) == len(recording.readings)
    half = recording.weighed(0.5)
    for r, w, split in zip(recording.readings, half.readings, recording.splits):
        assert w[5] == pytest.approx(split[0] + 0.5 * split[1])
        assert r[5] == pytest.approx(split[0] + split[1])
    assert half.scan_check['short_weight'] == 0.5 and recording.scan_check['short_weight'] == 1
    # A config with another weight can be scored on it; an old stream cannot be weighed again.
    cal.evaluate([recording], LostDetectorConfig(short_weight=0.25))
    old = dataclasses.replace(recording, splits=None)
    with pytest.raises(cal.CalibrationError, match='not recorded by kind'):
        old.weighed(0.5)
    data, _ = split_stream(trial_segments())
    data['readings'][3][12] = None
    (tmp_path / 'a' / 'detection_stream.json').write_text(json.dumps(data))
    with pytest.raises(cal.CalibrationError, match='all null or all numbers'):
        cal.load_recording(str(tmp_path / 'a'))


def test_calibration_tries_every_short_weight_and_keeps_the_best(tmp_path):
    recordings = [load_split(tmp_path, 'a', trial_segments(burst=True) + trial_segments(), 100),
                  load_split(tmp_path, 'b', trial_segments() + trial_segments(burst=True), 101)]
    result = cal.calibrate(recordings, small_grid(), short_weights=(0.0, 1.0))
    assert [w for w, _ in result.weights] == [0.0, 1.0]
    scores = dict(result.weights)
    # Counting the crowd's short misses costs a false alarm or a detection here: 0 wins.
    assert cal.objective(scores[0.0]) < cal.objective(scores[1.0])
    assert result.search.config.short_weight == 0.0
    assert result.fit.scan_check['short_weight'] == 0.0
    assert all(r.scan_check['short_weight'] == 0.0 for r in result.recordings)
    text = cal.render_yaml(result, ['/tmp/a', '/tmp/b'], '2025-01-02')
    assert '\n  short_weight: 0.0\n' in text
    assert 'Chosen by training score among 0.0, 1.0' in ' '.join(
        line.lstrip('# ') for line in text.splitlines())


def test_calibration_keeps_the_recorded_weight_of_old_streams_and_refuses_a_mix():
    recordings = synthetic_training()
    for recording in recordings:
        recording.scan_check = dict(detectors.LEGACY_SCAN_CHECK)
    result = cal.calibrate(recordings, small_grid())
    assert result.search.config.short_weight == 1.0 and len(result.weights) == 1
    assert 'short_weight: 1.0' in cal.render_yaml(result, ['/tmp/a', '/tmp/b'], '2025-01-02')
    recordings[1].scan_check = dict(detectors.LEGACY_SCAN_CHECK, hit_tolerance=0.3)
    with pytest.raises(cal.CalibrationError, match='computed their scan feature differently'):
        cal.calibrate(recordings, small_grid())
    recordings[1].scan_check = dict(detectors.LEGACY_SCAN_CHECK, short_weight=0.5)
    with pytest.raises(cal.CalibrationError, match='computed their scan feature differently'):
        cal.calibrate(recordings, small_grid())


def test_a_stream_by_kind_is_weighed_like_the_old_streams_it_is_fitted_with(tmp_path):
    old = synthetic_training()[0]
    old.scan_check = dict(detectors.LEGACY_SCAN_CHECK)
    split = load_split(tmp_path, 'b', trial_segments() + trial_segments(burst=True), 101)
    result = cal.calibrate([old, split], small_grid())
    assert [w for w, _ in result.weights] == [1.0]
    assert result.search.config.short_weight == 1.0


def near_stream(segments):
    """:func:`split_stream` with the misses also recorded at min_range 0 and 1 m: the crowd of
    the borderline burst stands within 1 m (beyond it too few beams are left: no feature); a
    wrong estimate's misses stay what they were."""
    data, trials = split_stream(segments)
    data['fields'] = list(cal.NEAR_FIELDS)
    data['min_ranges'] = [0.0, 1.0]
    for row in data['readings']:
        crowd = row[13] == 0.8
        row.append([[row[12], row[13]], None if crowd else [row[12], row[13]]])
    return data, trials


def open_stream(segments):
    """:func:`near_stream` with the misses also recorded with open beams; here the crowd
    stands more than 1 m away (its misses stay at both min_ranges) in an otherwise open view,
    whose open beams agree with the map (5 % short misses left); a wrong estimate's open beams
    run through walls (60 % through, 20 % short)."""
    data, trials = near_stream(segments)
    data['fields'] = list(cal.FIELDS)
    for row in data['readings']:
        row[14] = [[row[12], row[13]]] * 2
        pair = [0.6, 0.2] if row[12] == 0.5 else [0.0, 0.05]
        row.append([pair, pair])
    return data, trials


def load_near(tmp_path, name, segments, seed):
    """A Recording loaded from a :func:`near_stream` written under ``tmp_path/name``."""
    return load_split(tmp_path, name, segments, seed, near_stream)


def test_misses_recorded_at_other_min_ranges_are_read_from_scan_near(tmp_path):
    recording = load_near(tmp_path, 'a', trial_segments(burst=True), 100)
    assert recording.min_ranges == (0.0, 1.0) and len(recording.near) == len(recording.readings)
    far = recording.weighed(1.0, 1.0)
    assert far.scan_check['min_range'] == 1.0 and recording.scan_check['min_range'] == 0.0
    crowd = [i for i, split in enumerate(recording.splits) if split[1] == 0.8]
    assert crowd and all(far.readings[i][5] is None for i in crowd)
    assert all(f[5] == pytest.approx(r[5]) for i, (f, r) in
               enumerate(zip(far.readings, recording.readings)) if i not in crowd)
    # A config measuring at a recorded min_range can be scored; any other is refused by name.
    cal.evaluate([recording], LostDetectorConfig(short_weight=1.0, min_range=1.0))
    with pytest.raises(cal.CalibrationError, match='scan_check/min_range'):
        cal.evaluate([recording], LostDetectorConfig(short_weight=1.0, min_range=0.5))
    with pytest.raises(cal.CalibrationError, match='measure them at 0.5'):
        recording.weighed(1.0, 0.5)


def test_a_bad_scan_near_column_is_named(tmp_path):
    data, _ = near_stream(trial_segments())
    data['readings'][2][14] = [[0.0, 0.1]]
    with pytest.raises(cal.CalibrationError, match='reading 2: scan_near=.*2 \\[through'):
        cal.parse_stream(data)
    data['readings'][2][14] = [[0.0, 0.1], [0.0, 1.5]]
    with pytest.raises(cal.CalibrationError, match='fractions must be in'):
        cal.parse_stream(data)
    data['readings'][2][14] = None
    with pytest.raises(cal.CalibrationError, match='min_ranges=1.0: must be a list'):
        cal.parse_stream(dict(data, min_ranges=1.0))
    with pytest.raises(cal.CalibrationError, match='min_ranges=None'):
        cal.parse_stream(dict(data, min_ranges=None))
    folder = tmp_path / 'a'
    folder.mkdir()
    (folder / 'detection_stream.json').write_text(json.dumps(dict(data, min_ranges=[-1, 1])))
    with pytest.raises(cal.CalibrationError, match='min_ranges'):
        cal.load_recording(str(folder))


def test_calibration_tries_every_min_range_and_keeps_the_best(tmp_path):
    recordings = [load_near(tmp_path, 'a', trial_segments(burst=True) + trial_segments(), 100),
                  load_near(tmp_path, 'b', trial_segments() + trial_segments(burst=True), 101)]
    result = cal.calibrate(recordings, small_grid(), short_weights=(1.0,))
    assert [(m, w) for m, w, _ in result.ranges] == [(0.0, 1.0), (1.0, 1.0)]
    scores = {m: score for m, _, score in result.ranges}
    # Leaving out the crowd's near returns keeps every short miss of the wrong estimates.
    assert cal.objective(scores[1.0]) < cal.objective(scores[0.0])
    assert result.search.config.min_range == 1.0
    assert all(r.scan_check['min_range'] == 1.0 for r in result.recordings)
    # Fitted in two processes: the same choice and scores, each candidate reported in order.
    reported = []
    twice = cal.calibrate(recordings, small_grid(), short_weights=(1.0,), jobs=2,
                          progress=lambda *call: reported.append(call))
    assert twice.ranges == result.ranges and twice.search.params == result.search.params
    assert [(done, total, candidate[1:]) for done, total, candidate, _ in reported] == [
        (1, 2, (0.0, 1.0)), (2, 2, (1.0, 1.0))]
    assert [search.score for *_, search in reported] == [s for _, _, s in result.ranges]
    text = cal.render_yaml(result, ['/tmp/a', '/tmp/b'], '2025-01-02')
    assert '\n  min_range: 1.0\n' in text
    assert 'Chosen by training score among 0.0, 1.0, with short_weight' in ' '.join(
        line.lstrip('# ') for line in text.splitlines())


def test_split_pairs_are_the_misses_the_weighing_uses(tmp_path):
    recording = load_split(tmp_path, 'a', trial_segments(burst=True), 100, open_stream)
    assert recording.split_pairs() == [None if s is None else tuple(s)
                                       for s in recording.splits]
    opened = recording.weighed(0.5, 0.0, True)
    pairs = recording.split_pairs(0.0, True)
    assert any(p != tuple(s) for p, s in zip(pairs, recording.splits) if p is not None)
    for reading, pair in zip(opened.readings, pairs):
        assert (reading[5] is None) == (pair is None)
        if pair is not None:
            assert reading[5] == pytest.approx(pair[0] + 0.5 * pair[1])
    with pytest.raises(cal.CalibrationError, match='not recorded by kind'):
        dataclasses.replace(recording, splits=None).split_pairs()
    near = load_near(tmp_path, 'n', trial_segments(), 100)
    with pytest.raises(cal.CalibrationError, match='open_beams=True'):
        near.split_pairs(0.0, True)


def test_suite_constants_are_the_ones_the_labels_use():
    # The labels must stay in step with the suite's own definition of right and wrong.
    errors = [(detectors.FOUND_XY, detectors.FOUND_YAW),
              (detectors.LOST_XY + 1e-9, 0.0)]
    assert list(cal.label_readings(errors, ['normal', 'normal'])) == [cal.NORMAL, cal.LOST]


def test_calibration_tries_open_beams_and_keeps_them_when_they_score_better(tmp_path):
    recordings = [load_split(tmp_path, 'a', trial_segments(burst=True) + trial_segments(), 100,
                             open_stream),
                  load_split(tmp_path, 'b', trial_segments() + trial_segments(burst=True), 101,
                             open_stream)]
    assert recordings[0].opens is not None and len(recordings[0].opens) == \
        len(recordings[0].readings)
    opened = recordings[0].weighed(1.0, 0.0, True)
    assert opened.scan_check['open_beams'] is True
    crowd = [i for i, split in enumerate(recordings[0].splits) if split[1] == 0.8]
    assert crowd and all(opened.readings[i][5] == pytest.approx(0.05) for i in crowd)
    result = cal.calibrate(recordings, small_grid(), short_weights=(1.0,))
    assert [o for o, _, _, _ in result.opens] == [False, True]
    scores = {o: score for o, _, _, score in result.opens}
    assert cal.objective(scores[True]) < cal.objective(scores[False])
    assert result.search.config.open_beams is True
    assert all(r.scan_check['open_beams'] is True for r in result.recordings)
    text = cal.render_yaml(result, ['/tmp/a', '/tmp/b'], '2025-01-02', ['--min-ranges', '0'])
    assert '\n  open_beams: true\n' in text
    assert 'tools/calibrate_detector.py /tmp/a /tmp/b --min-ranges 0 --date' in text
    config = detectors.load_detector_config(_write(tmp_path / 'c.yaml', text))
    assert config.open_beams is True
    # Scored with open beams, and without; a stream without them cannot be.
    cal.evaluate(recordings, config)
    cal.evaluate(recordings, LostDetectorConfig(short_weight=1.0, min_range=1.0))
    near = load_near(tmp_path, 'n', trial_segments(), 100)
    with pytest.raises(cal.CalibrationError, match='open_beams'):
        cal.evaluate([near], config)
    with pytest.raises(cal.CalibrationError, match='open_beams=True'):
        near.weighed(1.0, 0.0, True)


def test_the_tool_keeps_open_beams_off_for_a_nan_laser(tmp_path, monkeypatch, capsys):
    """--open-beams off: the fit a Kinect through depthimage_to_laserscan can use, even where
    open beams would score better on the training runs."""
    tool = _calibrate_tool()
    standard = cal.Grid                            # the standard grid takes minutes
    monkeypatch.setattr(cal, 'Grid', lambda **kw: standard(**kw) if kw else small_grid())
    for name, seed, segments in (('a', 100, trial_segments(burst=True) + trial_segments()),
                                 ('b', 101, trial_segments() + trial_segments(burst=True))):
        load_split(tmp_path, name, segments, seed, open_stream)
    out = tmp_path / 'off.yaml'
    args = tool.parser().parse_args([str(tmp_path / 'a'), str(tmp_path / 'b'), '--out',
                                     str(out), '--min-ranges', '0', '--open-beams', 'off',
                                     '--jobs', '1', '--date', '2025-01-02'])
    tool.run_calibration(args)
    text = out.read_text()
    assert '\n  open_beams: false\n' in text
    assert '--min-ranges 0 --open-beams off --date 2025-01-02 --out %s\n' % cal.TARGET in text
    assert 'Set by --open-beams off, not chosen by training score.' in ' '.join(
        line.lstrip('# ') for line in text.splitlines())
    # The tool says which shipped file the header names when --out is named otherwise, and
    # with open beams that is the other one.
    said = capsys.readouterr().out
    assert 'its header names %s, not off.yaml' % cal.TARGET in said
    # A line per candidate as its grid search ends (the real fit is silent for minutes).
    assert re.search(r'candidate 1/\d+ \(open_beams off, min_range 0, short_weight 0\) after '
                     r'\d+ s: \d+ false tier-2 alarm', said), said
    tool.run_calibration(tool.parser().parse_args([
        str(tmp_path / 'a'), str(tmp_path / 'b'), '--out', str(out), '--min-ranges', '0',
        '--open-beams', 'on', '--jobs', '1', '--date', '2025-01-02']))
    text = out.read_text()
    assert '\n  open_beams: true\n' in text
    assert '--open-beams on --date 2025-01-02 --out %s\n' % cal.OPEN_BEAMS_TARGET in text
    assert 'file="$(find lost_and_found)/%s"' % cal.OPEN_BEAMS_TARGET in text
    assert 'its header names %s, not off.yaml' % cal.OPEN_BEAMS_TARGET in capsys.readouterr().out
    # What each choice hands the calibration.
    tried = []
    real = cal.calibrate
    monkeypatch.setattr(cal, 'calibrate', lambda *a, **kw: tried.append(kw['open_beams'])
                        or real(*a, **kw))
    for choice in ('off', 'on', 'both'):
        tool.run_calibration(tool.parser().parse_args([
            str(tmp_path / 'a'), str(tmp_path / 'b'), '--out', str(tmp_path / 'x.yaml'),
            '--min-ranges', '0', '--jobs', '1', '--open-beams', choice]))
    assert tried == [(False,), (True,), cal.OPEN_BEAMS]
    with pytest.raises(SystemExit):
        tool.parser().parse_args(['x', '--open-beams', 'maybe'])


def test_a_bad_scan_open_column_is_named(tmp_path):
    data, _ = open_stream(trial_segments())
    data['readings'][3][15] = [[0.0, 0.1]]
    with pytest.raises(cal.CalibrationError, match='reading 3: scan_open=.*2 \\[through'):
        cal.parse_stream(data)


def _write(path, text):
    path.write_text(text)
    return str(path)


def _calibrate_tool():
    import importlib.util
    import os
    spec = importlib.util.spec_from_file_location(
        'calibrate_detector', os.path.join(os.path.dirname(cal.TARGET_PATH), '..', 'tools',
                                           'calibrate_detector.py'))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def test_the_tool_refuses_an_out_folder_that_is_not_there_before_it_loads_anything(tmp_path):
    tool = _calibrate_tool()
    # TRAIN_DIR does not exist either: the --out check comes first, before any loading.
    args = tool.parser().parse_args([str(tmp_path / 'missing_run'), '--out',
                                     str(tmp_path / 'nowhere' / 'o.yaml')])
    with pytest.raises(cal.CalibrationError, match=r'--out .*nowhere.*\(create it first\)'):
        tool.run_calibration(args)
    args = tool.parser().parse_args([str(tmp_path / 'missing_run'), '--out', str(tmp_path)])
    with pytest.raises(cal.CalibrationError, match='a folder; give the YAML file'):
        tool.run_calibration(args)


@pytest.mark.parametrize('target, choice', [('TARGET_PATH', 'both'), ('TARGET_PATH', 'on'),
                                            ('OPEN_BEAMS_TARGET_PATH', 'off'),
                                            ('OPEN_BEAMS_TARGET_PATH', 'both')])
def test_the_tool_regenerates_a_shipped_file_only_with_its_own_open_beams(tmp_path, target,
                                                                          choice):
    """Refused before anything is loaded (the training folders do not exist)."""
    tool = _calibrate_tool()
    args = tool.parser().parse_args([str(tmp_path / 'absent'), '--out',
                                     getattr(cal, target), '--open-beams', choice])
    with pytest.raises(cal.CalibrationError, match='regenerate it with --open-beams'):
        tool.run_calibration(args)


def test_the_tool_refuses_a_min_range_the_training_runs_did_not_record(tmp_path):
    tool = _calibrate_tool()
    load_split(tmp_path, 'a', trial_segments(), 100, open_stream)
    args = tool.parser().parse_args([str(tmp_path / 'a'), '--out', str(tmp_path / 'o.yaml'),
                                     '--min-ranges', '0.5'])
    with pytest.raises(cal.CalibrationError, match='--min-ranges 0.5: not recorded by .*'
                       'they have 0, 1'):
        tool.run_calibration(args)


# ----------------------------------------------------------------------------- a robot's logs

def real_log_series(points, short_weight):
    """A real-logs replay's series from ``(t, features, error, through, short)`` points."""
    readings, errors = [], []
    for t, (sxy, syaw), error, through, short in points:
        pair = [through, short]
        miss = min(1.0, through + short_weight * short)
        readings.append((t, 0.0, 0.0, 0.0, sxy ** 2, (0.5 * sxy) ** 2, 0.0, syaw ** 2, miss,
                         through, short, [pair] * len(detectors.MIN_RANGES),
                         [pair] * len(detectors.MIN_RANGES)))
        errors.append(error)
    return {'readings': readings, 'errors': errors,
            'tiers': {'lost_detector': [0] * len(points)}}


def write_real_logs_run(folder, splices=(1000.0, 2000.0), with_splices=True, lost_before=(),
                        late=()):
    """A real-logs run of log 'intel' (profile stock) in ``folder``, written by the suite's own
    write_stream: an unmodified replay from log time 100 s to 400 s (1 reading a second, the
    localizer right, clutter misses now and then) and a copy spliced at each of ``splices``
    (60 s of warm-up, then 10 wrong readings whose scan misses the map, then right again). In
    the copies spliced at ``lost_before`` the localizer is already off for the last 10 s of the
    warm-up; in those at ``late`` the first reading after the splice comes 8 s after it."""
    from lost_and_found.bench import real_logs
    config = LostDetectorConfig()
    w = config.short_weight
    unmodified = [(100.0 + k, TRACKING, (0.1, 0.02), 0.0, 0.3 if k % 17 == 0 else 0.02)
                  for k in range(300)]
    trials = [{'log': 'intel', 'profile': 'stock', 'kind': 'unmodified', 'start': 100.0,
               'end': 400.0, 'series': real_log_series(unmodified, w)}]
    for t_splice in splices if with_splices else ():
        points = [(t_splice - 60.0 + k, TRACKING, (0.1, 0.02), 0.0, 0.02) for k in range(60)]
        if t_splice in lost_before:
            points[-10:] = [(t, TRACKING, (3.0, 1.0), 0.5, 0.3) for t, *_ in points[-10:]]
        points += [(t_splice + k, TRACKING, (3.0, 1.0), 0.5, 0.3)
                   for k in range(8 if t_splice in late else 0, 10)]
        points += [(t_splice + 10.0 + k, TRACKING, (0.1, 0.02), 0.0, 0.02) for k in range(50)]
        trials.append({'log': 'intel', 'profile': 'stock', 'kind': 'spliced',
                       'start': t_splice - 60.0, 'end': t_splice + 61.0, 't_splice': t_splice,
                       'distance': 3.0, 'series': real_log_series(points, w)})
    # Measured as the shipped file measures (its unmapped_ends), which the tool scores.
    shipped = detectors.load_detector_config(cal.TARGET_PATH)
    real_logs.write_stream(str(folder / 'real_logs_stream.json'), trials,
                           dict(detectors.scan_check_of(config),
                                unmapped_ends=shipped.unmapped_ends))
    (folder / 'real_logs.json').write_text(json.dumps({
        'seed': 1, 'command': 'rosrun lost_and_found bench real-logs --seed 1',
        'trials': [{k: v for k, v in t.items() if k != 'series'} for t in trials]}))


def test_a_robots_log_is_fitted_on_its_own_replays_and_the_yaml_says_so(tmp_path):
    from lost_and_found.bench import real_logs
    write_real_logs_run(tmp_path)
    recordings = cal.load_real_log_recordings(str(tmp_path), 'intel', 'stock')
    unmodified, first, _ = recordings
    assert [r.trials[0]['kind'] for r in recordings] == ['unmodified', 'teleport', 'teleport']
    # the unmodified log: settle for its first real_logs.SETTLE s, then normal driving to the end
    assert unmodified.phases[:30] == ['settle'] * 30 and set(unmodified.phases[30:]) == {'normal'}
    assert unmodified.trials[0]['t_event'] > unmodified.readings[-1][0]
    # a spliced copy: its warm-up settles, then drives normally until the splice, the event
    assert first.phases[:30] == ['settle'] * 30 and set(first.phases[30:60]) == {'normal'}
    assert set(first.phases[60:]) == {'teleport'}
    assert first.trials[0]['t_normal'] == 970.0 and first.trials[0]['t_event'] == 1000.0
    assert first.trials[0]['t_end'] == 1000.0 + real_logs.WITHIN
    assert first.seed == 1 and first.label == 'intel'
    # a robot's logs are held out from the shipped calibration ...
    with pytest.raises(cal.CalibrationError, match='held out'):
        cal.calibrate(recordings, small_grid())
    # ... and fitted for that robot on request
    result = cal.calibrate(recordings, small_grid(), held_out_check=False)
    score = result.search.score
    assert cal.all_false_alarms(score) == 0
    assert score['delocalized']['events'] == 2 and score['delocalized']['within'] == 2
    text = cal.render_yaml(result, ['intel unmodified', 'intel spliced at 1000.0 s',
                                    'intel spliced at 2000.0 s'], '2026-11-27', (),
                           (str(tmp_path), 'intel', 'stock', '/tmp/intel.yaml'))
    assert 'NOT the shipped file' in text and cal.TARGET not in text
    assert text.count('rosrun lost_and_found bench real-logs --seed 1') == 1
    assert '--real-logs %s --log intel --profile stock --date 2026-11-27 --out /tmp/intel.yaml' \
        % tmp_path in text
    path = tmp_path / 'intel.yaml'
    path.write_text(text)
    config = detectors.load_detector_config(str(path))
    # the rule the replays were measured with (the shipped file's) is written and loaded back
    shipped = detectors.load_detector_config(cal.TARGET_PATH)
    assert config.unmapped_ends is shipped.unmapped_ends
    assert ('As the training runs were recorded' in text) is shipped.unmapped_ends
    assert cal.objective(cal.evaluate(recordings, config)) == cal.objective(score)
    # the same YAML scored on the spliced copies as the suite scores them
    streams = json.loads((tmp_path / 'real_logs_stream.json').read_text())
    spliced = real_logs.rescore_spliced(streams, config)
    assert [e['t_splice'] for e in spliced] == [1000.0, 2000.0]
    assert all(e['scores']['delocalized'] and e['scores']['delay_s'] is not None
               and e['scores']['delay_m'] is None for e in spliced)


def test_a_robots_log_without_its_spliced_copies_or_another_log_is_named(tmp_path):
    write_real_logs_run(tmp_path)
    with pytest.raises(cal.CalibrationError, match="no replay of log 'aces'.*intel/stock"):
        cal.load_real_log_recordings(str(tmp_path), 'aces', 'stock')
    old = tmp_path / 'old'
    old.mkdir()
    write_real_logs_run(old, with_splices=False)
    with pytest.raises(cal.CalibrationError, match='run the suite again'):
        cal.load_real_log_recordings(str(old), 'intel', 'stock')
    with pytest.raises(cal.CalibrationError, match='missing'):
        cal.load_real_log_recordings(str(tmp_path / 'nowhere'), 'intel', 'stock')


def test_the_tool_fits_one_log_only_and_scores_the_spliced_copies(tmp_path, capsys):
    tool = _calibrate_tool()
    write_real_logs_run(tmp_path)
    out = str(tmp_path / 'o.yaml')
    for argv, match in (([str(tmp_path), '--real-logs', str(tmp_path), '--log', 'intel'],
                         'no TRAIN_DIR'),
                        (['--real-logs', str(tmp_path)], 'give --log NAME'),
                        ([str(tmp_path), '--log', 'intel'], 'only with --real-logs')):
        with pytest.raises(cal.CalibrationError, match=match):
            tool.run_calibration(tool.parser().parse_args(argv + ['--out', out]))
    assert tool.main(['--evaluate-real-logs', str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert '| intel | stock |' in printed and 'spliced kidnaps' in printed
    # the shipped YAML on the two synthetic splices: neither was alarmed before
    assert '| stock | 2 | 0 |' in printed


def test_a_splice_is_scored_as_the_real_logs_suite_scores_it(tmp_path):
    # 1000: the localizer was off before the splice (the detector alarmed already: no event);
    # 2000: its first reading after the splice comes 8 s late (beyond the simulator's onset);
    # 3000: an ordinary splice
    write_real_logs_run(tmp_path, splices=(1000.0, 2000.0, 3000.0), lost_before=(1000.0,),
                        late=(2000.0,))
    recordings = cal.load_real_log_recordings(str(tmp_path), 'intel', 'stock')
    config = LostDetectorConfig(queue_min=2, window_meta_tier2_lost=3,
                                ratio_thresh_detections_tier2_lost=0.5,
                                window_meta_tier0_normal=3, short_weight=0.5)
    scored = [cal.score_recording(r, detectors.lost_detector_tiers(r.readings, config))[0]
              for r in recordings]
    assert [t['delocalized'] for t in scored] == [False, False, True, True]
    assert all(t['detectors']['lost_detector']['delay_s'] is not None for t in scored[2:])
    # the localizer off before the splice was a true alarm, not a false one
    assert scored[1]['detectors']['lost_detector']['false_alarms'] == 0


def test_the_two_shipped_files_are_the_tool_s_output_with_and_without_open_beams():
    """config/lost_detector.yaml (the default: a Kinect through depthimage_to_laserscan
    reports no return as NaN) is fitted without open beams, the other file with them; each
    header's regenerate command and load line name the file itself."""
    for path, target, open_beams in ((cal.TARGET_PATH, cal.TARGET, False),
                                     (cal.OPEN_BEAMS_TARGET_PATH, cal.OPEN_BEAMS_TARGET, True)):
        with open(path) as stream:
            text = stream.read()
        assert detectors.load_detector_config(path).open_beams is open_beams
        assert cal.target_file(open_beams) == target
        assert '--open-beams %s --date ' % ('on' if open_beams else 'off') in text
        assert '--out %s\n' % target in text
        assert 'file="$(find lost_and_found)/%s"' % target in text


def test_streams_with_the_through_span_load_as_without_it():
    pair = [[0.1, 0.2]]
    row = reading_row(0.0, TRACKING, (0.0, 0.0), 'normal', 0.2) + [0.1, 0.2, pair, pair]
    plain = {'map': 'lab', 'fields': list(cal.FIELDS), 'min_ranges': [0.0], 'readings': [row]}
    span = dict(plain, fields=list(cal.SPAN_FIELDS), readings=[row + [2.5]])
    assert cal.parse_stream(span) == cal.parse_stream(plain)
    with pytest.raises(cal.CalibrationError, match='is not 17 values'):
        cal.parse_stream(dict(span, readings=[row]))


def test_a_recording_keeps_its_spans_and_weighs_them_only_as_measured(tmp_path):
    def with_spans(segments):
        data, trials = open_stream(segments)
        data['fields'] = list(cal.SPAN_FIELDS)
        for index, row in enumerate(data['readings']):
            row.append(None if index % 2 else 1.5)
        return data, trials

    recording = load_split(tmp_path, 'a', trial_segments(), 100, with_spans)
    assert recording.spans[:3] == [1.5, None, 1.5]
    weighed = recording.weighed(0.5)
    assert [r[8] for r in weighed.readings[:3]] == [1.5, None, 1.5]
    # Measured without the short beams the spans were not: none.
    assert all(r[8] is None for r in recording.weighed(0.5, min_range=1.0).readings)
    assert load_split(tmp_path, 'b', trial_segments(), 100, open_stream).spans is None
    data, _ = with_spans(trial_segments())
    data['readings'][2][-1] = -1.0
    (tmp_path / 'a' / 'detection_stream.json').write_text(json.dumps(data))
    with pytest.raises(cal.CalibrationError, match='reading 2: scan_span=-1.0'):
        cal.load_recording(str(tmp_path / 'a'))


def with_beam_spans(segments):
    """:func:`open_stream` recorded without the open beams (scan_check/open_beams false) with
    the span 1.5 m, and the spans without and with the open beams: 1.5 and 4.0 m."""
    data, trials = open_stream(segments)
    data['fields'] = list(cal.SPANS_FIELDS)
    for row in data['readings']:
        row += [1.5, [1.5, 4.0]]
    return data, trials


def test_a_recording_with_spans_for_both_beam_settings_gives_each_to_its_config(tmp_path):
    recording = load_split(tmp_path, 'a', trial_segments(), 100, with_beam_spans)
    assert not recording.scan_check['open_beams'] and recording.scan_check['min_range'] == 0.0
    assert recording.beam_spans[0] == (1.5, 4.0)
    assert recording.spans_at(0.0, False)[0] == 1.5 and recording.spans_at(0.0, True)[0] == 4.0
    assert [r[8] for r in recording.weighed(0.5, 0.0, True).readings[:2]] == [4.0, 4.0]
    assert [r[8] for r in recording.weighed(0.5, 0.0, False).readings[:2]] == [1.5, 1.5]
    # A weighed recording keeps the spans of its new measure.
    assert recording.weighed(0.5, 0.0, True).spans_at(0.0, True)[0] == 4.0
    assert recording.weighed(0.5, 0.0, True).spans_at(0.0, False)[0] == 1.5
    assert recording.weighed(0.5, 1.0, False).spans_at(1.0, False) is None
    # Spans were recorded at the recording's min_range only; a stream without scan_spans
    # has none for the other beam setting.
    assert recording.spans_at(1.0, True) is None and recording.spans_at(1.0, False) is None
    assert dataclasses.replace(recording, beam_spans=None).spans_at(0.0, True) is None
    # The stream loads as without them; a bad pair is refused, naming the row.
    data, _ = with_beam_spans(trial_segments())
    plain = dict(data, fields=list(cal.FIELDS), readings=[r[:-2] for r in data['readings']])
    assert cal.parse_stream(data) == cal.parse_stream(plain)
    for bad in ([1.5], [1.5, -1.0], 2.0, [True, 1.0]):
        data['readings'][2][-1] = bad
        (tmp_path / 'a' / 'detection_stream.json').write_text(json.dumps(data))
        with pytest.raises(cal.CalibrationError, match=r'reading 2: scan_spans=.*two spans'):
            cal.load_recording(str(tmp_path / 'a'))


def test_keep_fit_writes_the_burst_rule_after_the_through_share(tmp_path):
    recordings = synthetic_training()
    base_text = cal.render_yaml(cal.calibrate(recordings, small_grid()), ['a', 'b'],
                                '2025-01-02')
    base = detectors.load_detector_config(_write(tmp_path / 'base.yaml', base_text))
    config, scores = cal.choose_through_lost(recordings, base, (1.0,))
    rule = dataclasses.replace(config, burst_count=4, burst_window=5, burst_share=0.3,
                               burst_min_span=0.0)
    score = cal.evaluate(recordings, rule)
    text = cal.render_keep_fit(base_text, rule, scores, ['a'], '2025-01-03', 'CMD', score)
    assert text.index('through_min_reach:') < text.index('  burst_count: 4\n') < \
        text.index('  burst_min_span: 0.0\n')
    assert 'Training runs with it: ' in text and '; without it: ' in text
    loaded = detectors.load_detector_config(_write(tmp_path / 'out.yaml', text))
    assert loaded == rule
    # Redone on its own output, with or without the rule: its keys are replaced.
    assert cal.render_keep_fit(text, rule, scores, ['a'], '2025-01-03', 'CMD', score) == text
    plain = cal.render_keep_fit(text, config, scores, ['a'], '2025-01-03', 'CMD')
    assert 'burst' not in plain.split('through_min_reach:')[1]
    with pytest.raises(cal.CalibrationError, match='needs its training score'):
        cal.render_keep_fit(base_text, rule, scores, ['a'], '2025-01-03', 'CMD')


def test_keep_fit_refuses_a_burst_rule_on_runs_without_its_span(tmp_path):
    tool = _calibrate_tool()
    recordings = synthetic_training()
    assert all(r.spans is None for r in recordings)
    base = _write(tmp_path / 'base.yaml', cal.render_yaml(
        cal.calibrate(recordings, small_grid()), ['a', 'b'], '2025-01-02'))
    out = str(tmp_path / 'out.yaml')
    args = tool.parser().parse_args(['x', '--keep-fit', base, '--through-lost', '1', '--out',
                                     out, '--burst', '4', '5', '0.3', '0'])
    with pytest.raises(cal.CalibrationError, match='--burst: .* recorded without the through '
                       'span as %s measures it' % base):
        tool.keep_fit(args, recordings, '2025-01-03')
    assert not os.path.exists(out)


@pytest.mark.parametrize('values, match', [
    (['4', '5', '0.3', '0'], None), (['4.5', '5', '0.3', '0'], 'K=4.5: must be a whole'),
    (['6', '5', '0.3', '0'], 'burst_count=6 must be <= scan_check/burst_window=5'),
    (['4', '5', '1.2', '0'], 'burst_share=1.2')])
def test_the_tools_burst_values_are_checked(values, match):
    tool = _calibrate_tool()
    args = tool.parser().parse_args(['x', '--keep-fit', 'b.yaml', '--burst'] + values)
    if match is None:
        config = tool.burst_config(LostDetectorConfig(), args.burst)
        assert (config.burst_count, config.burst_window) == (4, 5)
    else:
        with pytest.raises(cal.CalibrationError, match=match):
            tool.burst_config(LostDetectorConfig(), args.burst)


def test_the_tool_refuses_a_burst_without_keep_fit(tmp_path):
    tool = _calibrate_tool()
    args = tool.parser().parse_args([str(tmp_path / 'absent'), '--out', str(tmp_path / 'o.yaml'),
                                     '--burst', '4', '5', '0.3', '0'])
    with pytest.raises(cal.CalibrationError, match='--burst goes with --keep-fit'):
        tool.run_calibration(args)
    args = tool.parser().parse_args([str(tmp_path / 'absent'), '--out', str(tmp_path / 'o.yaml'),
                                     '--unmapped-ends'])
    with pytest.raises(cal.CalibrationError, match='--unmapped-ends goes with --keep-fit'):
        tool.run_calibration(args)


def test_the_tool_says_when_a_burst_rule_cannot_be_scored_on_a_run(tmp_path, capsys):
    tool = _calibrate_tool()
    shipped = detectors.load_detector_config(cal.TARGET_PATH)
    assert shipped.burst_count > 0   # shipped: on

    def as_shipped(segments):
        """:func:`open_stream` measured with the shipped file's unmapped_ends."""
        data, trials = open_stream(segments)
        data['scan_check'] = dict(data['scan_check'], unmapped_ends=shipped.unmapped_ends)
        return data, trials
    load_split(tmp_path, 'old', trial_segments(), 5, as_shipped)
    tool.run_evaluation(tool.parser().parse_args(['--evaluate', str(tmp_path / 'old')]))
    assert 'old recorded without the through span as %s measures it (scan_span, or ' \
        'scan_spans for the other open_beams): its burst rule' % cal.TARGET_PATH \
        in capsys.readouterr().out
    # A stream with the span of its own beams only has none for a file with the open beams.
    load_split(tmp_path, 'span', trial_segments(), 5, with_beam_spans)
    kinect = _write(tmp_path / 'kinect.yaml', 'scan_check:\n  burst_count: 2\n')
    opened = _write(tmp_path / 'opened.yaml',
                    'scan_check:\n  burst_count: 2\n  open_beams: true\n')
    for config, noted in ((kinect, False), (opened, False)):
        tool.run_evaluation(tool.parser().parse_args(['--evaluate', str(tmp_path / 'span'),
                                                      '--config', config]))
        assert ('NOTE' in capsys.readouterr().out) is noted
    load_split(tmp_path, 'older', trial_segments(), 5, with_beam_spans)
    data = json.loads((tmp_path / 'older' / 'detection_stream.json').read_text())
    data['fields'] = data['fields'][:-1]
    data['readings'] = [row[:-1] for row in data['readings']]
    (tmp_path / 'older' / 'detection_stream.json').write_text(json.dumps(data))
    assert cal.load_recording(str(tmp_path / 'older')).beam_spans is None
    tool.run_evaluation(tool.parser().parse_args(['--evaluate', str(tmp_path / 'older'),
                                                  '--config', opened]))
    assert 'older recorded without the through span as %s' % opened \
        in capsys.readouterr().out
    off = _write(tmp_path / 'off.yaml', 'scan_check:\n  burst_count: 0\n  unmapped_ends: %s\n'
                 % str(shipped.unmapped_ends).lower())
    tool.run_evaluation(tool.parser().parse_args(['--evaluate', str(tmp_path / 'old'),
                                                  '--config', off]))
    assert 'NOTE' not in capsys.readouterr().out
