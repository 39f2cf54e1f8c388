"""tools/detector_variants.py: the CUSUM rule and the split-feature classifier."""
import dataclasses

import numpy as np
import pytest

from lost_and_found.bench import calibration
from tool_loader import load_tool

variants = load_tool('detector_variants')


def test_evidence_is_the_log_likelihood_ratio_without_the_prior():
    # P(lost) equal to the prior's share of lost says nothing: ratio 0.
    llrs = variants.evidence([(0.25, True, 0.25), None], prior_normal=0.75)
    assert llrs[0] == pytest.approx((0.0, 0.0), abs=1e-9) and llrs[1] is None


def test_evidence_takes_what_the_calibration_gives_and_window_keeps_through_lost():
    from lost_and_found.core.lost_detector import LostDetectorConfig
    config = LostDetectorConfig(through_lost=0.4)
    given = calibration.reading_probabilities(np.array([[0.05, 0.03, 0.1, 0.5, 0.0]]), config)
    assert len(given[0]) == 4 and given[0][3] == 0.5
    assert variants.evidence(given, prior_normal=0.75)[0][0] == pytest.approx(
        variants.log_odds(given[0][0]) - variants.log_odds(0.25))
    grid = variants.window_grid(dataclasses.replace(config))
    assert grid and {c.through_lost for c in grid} == {0.4}


def test_cusum_needs_enough_evidence_and_falls_back_when_it_is_spent():
    lost, normal = (2.0, 2.0), (-3.0, -3.0)
    tiers = variants.cusum_tiers([lost] * 6 + [normal] * 3, set(), clip=5.0, drift=0.5,
                                 threshold=5.0, settle=0, queue_min=3)
    # 1.5 per reading: 1.5, 3.0, 4.5 (tier 1), 6.0 (tier 2) ... 9.0, then -3.5 per normal
    # reading: 5.5 and 2.0 stay in tier 2, 0 leaves it.
    assert tiers == [1, 1, 1, 2, 2, 2, 2, 2, 0]


def test_cusum_clips_one_extreme_reading_and_restarts_at_a_reset():
    tiers = variants.cusum_tiers([(100.0, None), (1.0, None), None, (1.0, None)], {2},
                                 clip=3.0, drift=0.0, threshold=4.5, settle=0, queue_min=1)
    # 3 (clipped) + 1 = 4 < 4.5: no alarm; the reset before index 2 empties the sum.
    assert tiers == [1, 1, 0, 1]


def test_cusum_waits_for_queue_min_readings_before_tier_2():
    # One reading alone reaches the threshold; tier 2 only once three have arrived.
    tiers = variants.cusum_tiers([(10.0, 10.0)] * 4, set(), clip=10.0, drift=0.0,
                                 threshold=5.0, settle=0, queue_min=3)
    assert tiers == [1, 1, 2, 2]


def test_cusum_reads_the_scan_alone_while_settling():
    tiers = variants.cusum_tiers([(-5.0, 5.0), (-5.0, 5.0)], set(), clip=10.0, drift=0.0,
                                 threshold=9.0, settle=2, queue_min=1)
    assert tiers == [1, 2]


def test_a_settling_reading_without_a_scan_counts_but_adds_nothing():
    # The wide covariance of a re-seed (4.0) must not count while settling; once settled it
    # does. Three readings settle: the unscanned one among them adds nothing.
    tiers = variants.cusum_tiers([(4.0, None), (4.0, 1.0), (4.0, 1.0), (4.0, None)], set(),
                                 clip=10.0, drift=0.0, threshold=5.5, settle=3, queue_min=1)
    assert tiers == [0, 1, 1, 2]


def test_the_split_model_reads_beams_through_walls_as_lost_and_skips_missing_features():
    rng = np.random.default_rng(0)
    n = 200
    normal = np.column_stack([rng.normal(0.1, 0.02, n), rng.normal(0.05, 0.01, n),
                              rng.uniform(0.0, 0.05, n), rng.uniform(0.0, 0.4, n)])
    lost = np.column_stack([rng.normal(0.1, 0.02, n), rng.normal(0.05, 0.01, n),
                            rng.uniform(0.2, 0.8, n), rng.uniform(0.0, 0.4, n)])
    labels = np.array([calibration.NORMAL] * n + [calibration.LOST] * n)
    model = variants.SplitModel.fit(np.vstack([normal, lost]), labels)
    assert model.prior_normal == pytest.approx(0.5)
    through, clear, unscanned, refused = model.probabilities(np.array([
        [0.1, 0.05, 0.5, 0.2], [0.1, 0.05, 0.0, 0.2], [0.1, 0.05, np.nan, np.nan],
        [np.nan, 0.05, 0.0, 0.0]]))
    assert through[0] > 0.99 and clear[0] < 0.05 and through[1] and through[2] > 0.99
    assert unscanned[1] is False and unscanned[2] is None and 0.2 < unscanned[0] < 0.8
    assert refused is None


def test_the_split_model_keeps_the_miss_spread_above_the_calibrations_floor():
    rows = np.array([[0.1, 0.05, 0.0, 0.0]] * 3 + [[0.3, 0.1, 0.5, 0.5], [0.2, 0.2, 0.7, 0.3]])
    labels = np.array([calibration.NORMAL] * 3 + [calibration.LOST] * 2)
    model = variants.SplitModel.fit(rows, labels)
    assert model.std[0, 2] == model.std[0, 3] == calibration.MIN_SCAN_SIGMA
    assert model.std[0, 0] == pytest.approx(1e-3)


def test_the_split_model_refuses_a_class_without_readings():
    rows = np.array([[0.1, 0.05, 0.0, 0.0]] * 3)
    with pytest.raises(calibration.CalibrationError, match='too few'):
        variants.SplitModel.fit(rows, np.array([calibration.NORMAL] * 3))


def test_choose_counts_up_to_allow_training_alarms_as_none(monkeypatch):
    scores = {'quiet': (0, -50), 'one alarm': (1, -60), 'three alarms': (3, -70)}
    monkeypatch.setattr(variants.calibration, 'score_recordings',
                        lambda train, tiers: tiers[0])
    monkeypatch.setattr(variants.calibration, 'objective', lambda score: score)

    def pick(allow):
        return variants.choose(list(scores), [None], lambda c, i: scores[c],
                               caution=lambda c: 0, allow=allow)[0]

    assert pick(0) == 'quiet' and pick(1) == 'one alarm' and pick(2) == 'one alarm'
    assert pick(3) == 'three alarms'


def test_a_negative_allowance_is_refused():
    with pytest.raises(ValueError, match='--allow -1'):
        variants.run([], [], 'window', 'unused.yaml', allow=-1)


def test_a_burst_of_beams_through_walls_raises_tier_2_while_it_lasts():
    from lost_and_found.core.lost_detector import LostDetectorConfig
    config = LostDetectorConfig(settle_readings=2, queue_min=3, window_meta_tier2_lost=10)

    def reading(through):      # a reading the classifier calls normal, with its through share
        return (0.01, True, 0.01, through)

    shares = [0.9, 0.9, 0.1, 0.9, None, 0.9, 0.9, 0.1, 0.1, 0.1]
    tiers = variants.burst_tiers([reading(s) for s in shares], config, set(), 3, 4, 0.5)
    # The first two readings settle (their shares do not count); then 0.1, 0.9, (None:
    # skipped), 0.9, 0.9 make 3 of 4 at index 6; the rule holds until a second low share
    # leaves 2 of the last 4.
    assert tiers == [0, 0, 0, 0, 0, 0, 2, 2, 0, 0]
    # The same without the burst rule is the shipped detector's replay.
    plain = variants.burst_tiers([reading(s) for s in shares], config, set(), 5, 4, 0.5)
    assert plain == calibration.replay_tiers([reading(s) for s in shares], config) == [0] * 10
    # A reset empties the count: the two high shares before it do not add to the one after
    # (no settling here, so that only the reset can empty it).
    settled = LostDetectorConfig(settle_readings=0, queue_min=3, window_meta_tier2_lost=10)
    reset = variants.burst_tiers([reading(s) for s in [0.1, 0.9, 0.9, 0.9, 0.1]], settled,
                                 {3}, 3, 4, 0.5)
    assert reset == [0] * 5
    assert variants.burst_tiers([reading(s) for s in [0.1, 0.9, 0.9, 0.9, 0.1]], settled,
                                set(), 3, 4, 0.5) == [0, 0, 0, 2, 2]


def test_the_span_variant_replays_the_nodes_burst_rule_with_the_recorded_spans():
    from lost_and_found.core.lost_detector import LostDetectorConfig
    # A share above 0.3 is lost on its own (as the shipped 0.25); the window needs 9 of 10.
    settled = LostDetectorConfig(settle_readings=0, queue_min=3, window_meta_tier2_lost=10,
                                 ratio_thresh_detections_tier2_lost=0.85, through_lost=0.3)
    readings = [(0.01, True, 0.01, s) for s in [0.1, 0.9, 0.9, 0.9, 0.9]]
    candidate = ((3, 4), 0.5, 1.5)
    config = variants.burst_config(settled, candidate)
    assert (config.burst_count, config.burst_window, config.burst_share,
            config.burst_min_span) == (3, 4, 0.5, 1.5)
    # Three high shares through walls 2.5 m apart: tier 2 at the third, as the burst model.
    wide = [0.0, 2.5, 2.5, 2.5, 2.5]
    assert calibration.replay_tiers(readings, config, set(), wide) == \
        variants.burst_tiers(readings, settled, set(), 3, 4, 0.5) == [0, 0, 1, 2, 2]
    # Through one opening 0.8 m across, or with no span recorded, they do not count.
    narrow = [0.0, 0.8, 2.5, None, 0.8]
    assert 2 not in calibration.replay_tiers(readings, config, set(), narrow)
    assert 2 not in calibration.replay_tiers(readings, config, set())
    # Among equal scores the larger span is the more cautious.
    assert variants.span_caution(((3, 4), 0.5, 2.0)) < variants.span_caution(candidate)


def test_a_stream_without_spans_or_with_another_beam_models_spans_is_refused():
    import types
    recording = calibration.Recording(
        path='x', label='', readings=[], errors=[], phases=[], trials=[],
        scan_check={'min_range': 0.45, 'open_beams': False}, spans=[None, 2.5])
    kinect = types.SimpleNamespace(min_range=0.45, open_beams=False)
    laser = types.SimpleNamespace(min_range=0.45, open_beams=True)
    assert variants.recorded_spans(recording, kinect) == [None, 2.5]
    with pytest.raises(ValueError, match='x: no scan_span column'):
        variants.recorded_spans(dataclasses.replace(recording, spans=None), kinect)
    # A detector that counts the open beams follows other beams through walls: the span the
    # stream recorded without them is not its span...
    for other in (laser, types.SimpleNamespace(min_range=0.2, open_beams=False)):
        with pytest.raises(ValueError, match='x: its scan_span was measured with '
                           'scan_check/min_range=0.45 and open_beams=False'):
            variants.recorded_spans(recording, other)
    # ...unless the stream recorded the spans with the open beams too.
    both = dataclasses.replace(recording, beam_spans=[None, (2.5, 3.5)])
    assert variants.recorded_spans(both, laser) == [None, 3.5]
    # A stream with the pair alone gives either span from it.
    pair_only = dataclasses.replace(both, spans=None)
    assert variants.recorded_spans(pair_only, kinect) == [None, 2.5]
    assert variants.recorded_spans(pair_only, laser) == [None, 3.5]


def test_the_sure_variant_replays_the_nodes_rule_8():
    from lost_and_found.core.lost_detector import LostDetectorConfig
    # The window needs 9 of 10; three readings far surer than prob_thresh in the last four
    # raise tier 2 at the third (the grid's candidates are ((k, n), P(lost))).
    settled = LostDetectorConfig(settle_readings=0, queue_min=3, window_meta_tier2_lost=10,
                                 ratio_thresh_detections_tier2_lost=0.85, prob_thresh=0.99)
    config = variants.sure_config(settled, ((3, 4), 0.99999))
    assert (config.sure_count, config.sure_window, config.sure_prob) == (3, 4, 0.99999)
    sure = [(p, True, p, None) for p in (0.1, 0.999999, 0.999999, 0.999999)]
    assert calibration.replay_tiers(sure, config, set()) == [0, 0, 1, 2]    # queue_min 3
    lost_only = [(p, True, p, None) for p in (0.1, 0.999, 0.999, 0.999)]
    assert 2 not in calibration.replay_tiers(lost_only, config, set())
    # Among equal scores the higher P(lost) is the more cautious, then the larger count.
    assert variants.sure_caution(((3, 4), 0.999999)) < variants.sure_caution(((3, 4), 0.99999))
    assert variants.sure_caution(((4, 4), 0.99999)) < variants.sure_caution(((3, 4), 0.99999))
