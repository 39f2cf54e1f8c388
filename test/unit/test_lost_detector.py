"""Unit tests of lost_and_found.core.lost_detector (no ROS master)."""
import dataclasses
import math
import os

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from lost_and_found.core.config import ConfigError, config_from_params
from lost_and_found.core.lost_detector import (
    CovarianceError, LostDetector, LostDetectorConfig, Tier, covariance_features, stamp_order)

CONFIG_YAML = os.path.join(os.path.dirname(__file__), '..', '..', 'config', 'lost_detector.yaml')

#: Features far inside each class for the default config (P(lost) ~0.002 and ~1).
NORMAL = (0.1, 0.05)
LOST = (2.0, 1.2)


def make_cov(xx=0.01, xy=0.0, yy=0.01, yawyaw=0.0025):
    """A row-major 6x6 covariance as amcl fills it (x, y and yaw only)."""
    cov = [0.0] * 36
    cov[0], cov[1], cov[6], cov[7], cov[35] = xx, xy, xy, yy, yawyaw
    return cov


def rotated_cov(sigma_major, sigma_minor, angle, yaw_sigma=0.1):
    """A covariance whose x-y ellipse has the given axes, rotated by ``angle``."""
    rot = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    block = rot @ np.diag([sigma_major ** 2, sigma_minor ** 2]) @ rot.T
    block = (block + block.T) / 2  # exact symmetry despite round-off
    return make_cov(block[0, 0], block[0, 1], block[1, 1], yaw_sigma ** 2)


def config(**changes):
    """The default config with ``changes``."""
    return dataclasses.replace(LostDetectorConfig(), **changes)


def run(detector, stream):
    """Feed a list of features and return the tiers."""
    return [detector.update(features) for features in stream]


# ---------------------------------------------------------------- features

def test_features_axis_aligned():
    sigma_xy, sigma_theta = covariance_features(make_cov(0.04, 0.0, 0.01, 0.09))
    assert sigma_xy == pytest.approx(0.2)
    assert sigma_theta == pytest.approx(0.3)


def test_features_rotated_ellipse_uses_the_major_axis():
    cov = rotated_cov(0.8, 0.1, math.radians(30), yaw_sigma=0.4)
    # Neither diagonal entry is the major variance of a rotated ellipse.
    assert math.sqrt(max(cov[0], cov[7])) < 0.8 - 0.05
    sigma_xy, sigma_theta = covariance_features(cov)
    assert sigma_xy == pytest.approx(0.8, rel=1e-9)
    assert sigma_theta == pytest.approx(0.4)


def test_features_match_eigenvalue_by_hand():
    # [[a, b], [b, c]]: largest eigenvalue (a + c)/2 + sqrt(((a - c)/2)^2 + b^2).
    a, b, c = 0.5, 0.2, 0.1
    expected = math.sqrt((a + c) / 2 + math.sqrt(((a - c) / 2) ** 2 + b ** 2))
    assert covariance_features(make_cov(a, b, c))[0] == pytest.approx(expected)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(major=st.floats(1e-3, 50.0), ratio=st.floats(0.0, 1.0),
       angle=st.floats(-math.pi, math.pi), yaw=st.floats(0.0, 3.0))
def test_features_property_rotated(major, ratio, angle, yaw):
    sigma_xy, sigma_theta = covariance_features(rotated_cov(major, major * ratio, angle, yaw))
    assert sigma_xy == pytest.approx(major, rel=1e-6)
    assert sigma_theta == pytest.approx(yaw, rel=1e-9, abs=1e-12)


def test_features_accept_zero_and_a_6x6_array():
    assert covariance_features([0.0] * 36) == (0.0, 0.0)
    assert covariance_features(np.array(make_cov(0.04)).reshape(6, 6))[0] == pytest.approx(0.2)


def test_features_tolerate_round_off_asymmetry():
    cov = make_cov(1.0, 0.3, 1.0)
    cov[6] += 1e-13
    assert covariance_features(cov)[0] == pytest.approx(math.sqrt(1.3))


@pytest.mark.parametrize('cov, words, kind', [
    ([0.0] * 35, '35 entries', 'length'),
    ([0.0] * 37, '37 entries', 'length'),
    ([], '0 entries', 'length'),
    (['a'] * 36, 'not numeric', 'not_numeric'),
    (make_cov(xx=float('nan')), 'NaN', 'not_finite'),
    (make_cov(yawyaw=float('inf')), 'infinite', 'not_finite'),
    (make_cov(xx=-float('inf')), 'infinite', 'not_finite'),
    (make_cov(xy=0.001)[:6] + [0.002] + make_cov()[7:], 'not symmetric', 'not_symmetric'),
    (make_cov(yy=-0.01), 'negative variance', 'negative_variance'),
    (make_cov(yawyaw=-1e-6), 'negative variance', 'negative_variance'),
    (make_cov(xx=0.01, xy=0.02, yy=0.01), 'not positive semidefinite', 'not_psd'),
])
def test_covariance_errors(cov, words, kind):
    with pytest.raises(CovarianceError, match=words) as error:
        covariance_features(cov)
    assert error.value.kind == kind


@pytest.mark.parametrize('changes', [dict(yawyaw=-4.4e-16), dict(xx=-1e-18)])
def test_a_variance_below_zero_by_round_off_reads_as_zero(changes):
    # amcl's yaw variance is -2 ln R of the particles' mean heading vector: for a cloud with
    # one heading, round-off puts R a hair above 1 about every other heading.
    cov = make_cov(**{'xx': 0.01, 'yy': 0.01, 'yawyaw': 0.0025, **changes})
    sigma_xy, sigma_theta = covariance_features(cov)
    assert sigma_theta == (0.0 if 'yawyaw' in changes else pytest.approx(0.05))
    assert sigma_xy == pytest.approx(0.1)


def test_covariance_error_is_a_value_error():
    assert issubclass(CovarianceError, ValueError)


def test_non_symmetric_outside_the_xy_block_is_rejected():
    cov = make_cov()
    cov[5] = 0.5  # x-yaw, without its mirror at [5][0]
    with pytest.raises(CovarianceError, match=r'\[0\]\[5\]'):
        covariance_features(cov)


# ---------------------------------------------------------------- classifier

def normal_pdf(x, mu, sigma):
    return math.exp(-0.5 * ((x - mu) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))


def posterior_lost_by_hand(cfg, xy, th):
    mu, sd = cfg.slice_mu, cfg.slice_sigma
    normal = cfg.tier0_normal_prior * normal_pdf(xy, mu[0], sd[0]) * normal_pdf(th, mu[1], sd[1])
    lost = (1 - cfg.tier0_normal_prior) * normal_pdf(xy, mu[2], sd[2]) * \
        normal_pdf(th, mu[3], sd[3])
    return lost / (normal + lost)


@pytest.mark.parametrize('features', [
    (0.0, 0.0), (0.15, 0.1), (0.3, 0.2), (0.4, 0.3), (0.35, 0.05), (1.0, 0.8), (0.6, 0.2)])
def test_probability_matches_hand_computed_bayes(features):
    cfg = LostDetectorConfig()
    expected = posterior_lost_by_hand(cfg, *features)
    assert LostDetector(cfg).probability_lost(features) == pytest.approx(expected, rel=1e-9,
                                                                         abs=1e-12)


def test_probability_with_other_parameters():
    cfg = config(tier0_normal_prior=0.4, slice_mu=(0.2, 0.2, 0.5, 0.5),
                 slice_sigma=(0.2, 0.1, 0.3, 0.4))
    for features in [(0.3, 0.25), (0.1, 0.4), (0.45, 0.3)]:
        expected = posterior_lost_by_hand(cfg, *features)
        assert LostDetector(cfg).probability_lost(features) == pytest.approx(expected, rel=1e-9)


def test_prior_moves_the_posterior():
    features = (0.35, 0.25)
    low = LostDetector(config(tier0_normal_prior=0.9)).probability_lost(features)
    high = LostDetector(config(tier0_normal_prior=0.1)).probability_lost(features)
    assert low < high


def test_huge_covariance_is_lost_and_tight_is_normal():
    detector = LostDetector(LostDetectorConfig())
    assert detector.probability_lost(NORMAL) < 0.01
    assert detector.probability_lost(LOST) > 0.99
    # Right after global_localization: far outside both classes, still lost (no NaN).
    assert detector.probability_lost((1e3, 3.0)) == pytest.approx(1.0)
    assert detector.is_lost((1e3, 3.0)) and not detector.is_lost(NORMAL)


@pytest.mark.parametrize('features', [
    (float('nan'), 0.1), (0.1, float('inf')), (-0.1, 0.1), (0.1,), 'ab', None])
def test_bad_features_raise_and_leave_state_alone(features):
    detector = LostDetector(LostDetectorConfig())
    run(detector, [LOST] * 3)
    tier, length = detector.tier, detector.queue_length
    with pytest.raises(ValueError):
        detector.update(features)
    assert (detector.tier, detector.queue_length) == (tier, length)


# ---------------------------------------------------------------- tiers

def test_starts_normal():
    detector = LostDetector(LostDetectorConfig())
    assert detector.tier == Tier.NORMAL and detector.queue_length == 0
    assert [t.status for t in Tier] == ['normal', 'confused', 'lost']
    assert [int(t) for t in Tier] == [0, 1, 2]


def test_queue_min_gates_lost_readings():
    detector = LostDetector(config(queue_min=3, ratio_thresh_detections_tier2_lost=0.99))
    assert run(detector, [LOST, LOST]) == [Tier.NORMAL, Tier.NORMAL]
    assert detector.update(LOST) != Tier.NORMAL


def test_confused_on_a_single_lost_reading_after_queue_min():
    detector = LostDetector(LostDetectorConfig())
    assert run(detector, [NORMAL] * 5) == [Tier.NORMAL] * 5
    assert detector.update(LOST) == Tier.CONFUSED
    # Not sticky: the next normal reading is normal again.
    assert detector.update(NORMAL) == Tier.NORMAL


def test_ratio_crossing_gives_lost():
    # Window 10, ratio 0.6: after 10 normals, lost readings 1..6 give ratios 0.1..0.6 (not
    # above), the 7th gives 0.7.
    detector = LostDetector(LostDetectorConfig())
    run(detector, [NORMAL] * 10)
    assert run(detector, [LOST] * 6) == [Tier.CONFUSED] * 6
    assert detector.lost_ratio == pytest.approx(0.6)
    assert detector.update(LOST) == Tier.LOST


def test_ratio_over_a_short_queue():
    # Fewer readings than the window: the ratio is over those that arrived.
    detector = LostDetector(LostDetectorConfig())
    assert run(detector, [LOST] * 3) == [Tier.NORMAL, Tier.NORMAL, Tier.LOST]


def test_ratio_is_over_the_last_window_only():
    detector = LostDetector(config(window_meta_tier2_lost=4, queue_min=2,
                                   ratio_thresh_detections_tier2_lost=0.5))
    # Old lost readings slide out of the window before the ratio gets above 0.5.
    tiers = run(detector, [NORMAL, NORMAL, LOST, NORMAL, NORMAL, LOST, NORMAL, NORMAL, LOST])
    assert Tier.LOST not in tiers
    assert detector.queue_length == 4
    assert detector.update(LOST) == Tier.CONFUSED  # 2/4, not above 0.5
    assert detector.update(LOST) == Tier.LOST      # 3/4


def test_lost_is_sticky_until_tier0_window_of_normals():
    detector = LostDetector(LostDetectorConfig())
    run(detector, [LOST] * 5)
    assert detector.tier == Tier.LOST
    # One fewer than window_meta_tier0_normal normals in a row: still lost.
    assert run(detector, [NORMAL] * 9) == [Tier.LOST] * 9
    # The 10th resets the detector entirely.
    assert detector.update(NORMAL) == Tier.NORMAL
    assert detector.queue_length == 0
    # Reset means gating again: a lost reading right after is normal, not confused.
    assert detector.update(LOST) == Tier.NORMAL


def test_a_lost_reading_restarts_the_normal_run():
    detector = LostDetector(config(window_meta_tier0_normal=4))
    run(detector, [LOST] * 3)
    assert run(detector, [NORMAL] * 3 + [LOST] + [NORMAL] * 3) == [Tier.LOST] * 7
    assert detector.update(NORMAL) == Tier.NORMAL


def test_sticky_even_when_the_window_looks_normal():
    # A tier-0 window longer than the tier-2 window: the queue is all normal but still lost.
    detector = LostDetector(config(window_meta_tier2_lost=4, queue_min=2,
                                   window_meta_tier0_normal=8))
    run(detector, [LOST] * 3)
    assert run(detector, [NORMAL] * 7) == [Tier.LOST] * 7
    assert detector.lost_ratio == 0.0
    assert detector.update(NORMAL) == Tier.NORMAL


def test_reset_empties_queue_and_returns_to_normal():
    detector = LostDetector(LostDetectorConfig())
    run(detector, [LOST] * 5)
    assert detector.tier == Tier.LOST
    detector.reset()
    assert detector.tier == Tier.NORMAL and detector.queue_length == 0
    assert detector.last_probability is None
    # Gated again after the reset.
    assert run(detector, [LOST, LOST]) == [Tier.NORMAL, Tier.NORMAL]
    assert detector.update(LOST) == Tier.LOST


def test_last_probability_follows_updates():
    detector = LostDetector(LostDetectorConfig())
    detector.update(NORMAL)
    assert detector.last_probability == pytest.approx(detector.probability_lost(NORMAL))


def test_p_lost_is_the_scans_while_rule_0_holds_a_reading_back():
    detector = LostDetector(config(window_meta_tier2_lost=4, queue_min=2,
                                   window_meta_tier0_normal=2))
    assert detector.p_lost is None
    scan_lost, tight = NORMAL + (0.95,), NORMAL + (None,)
    detector.update(scan_lost)
    scan_p = detector.probability_lost(scan_lost)
    assert detector.p_lost == pytest.approx(scan_p) and scan_p > 0.99
    # a tight covariance-only reading: its own P(lost) is low, but the scan's lost stands
    detector.update(tight)
    assert detector.last_probability == pytest.approx(detector.probability_lost(tight))
    assert detector.last_probability < 0.5
    assert detector.p_lost == pytest.approx(scan_p)
    detector.reset()
    assert detector.p_lost is None
    detector.update(tight)          # no scan verdict after the reset: the reading's own
    assert detector.p_lost == pytest.approx(detector.probability_lost(tight))


def test_queue_min_one_and_tier0_one():
    detector = LostDetector(config(queue_min=1, window_meta_tier2_lost=1,
                                   ratio_thresh_detections_tier2_lost=0.0,
                                   window_meta_tier0_normal=1))
    assert run(detector, [LOST, NORMAL, LOST]) == [Tier.LOST, Tier.NORMAL, Tier.LOST]


def test_a_tight_cloud_without_a_scan_cannot_overturn_the_scans_lost():
    # Rule 0: the scan says lost; covariance-only normal readings are skipped (no reset of a
    # sticky tier 2, nothing queued), a covariance-only lost reading still counts, and the
    # next reading with a scan decides again.
    detector = LostDetector(config(window_meta_tier2_lost=4, queue_min=2,
                                   window_meta_tier0_normal=2))
    scan_lost, scan_fits, tight = NORMAL + (0.95,), NORMAL + (0.0,), NORMAL + (None,)
    assert run(detector, [scan_lost] * 3) == [Tier.NORMAL, Tier.LOST, Tier.LOST]
    length = detector.queue_length
    assert run(detector, [tight] * 5) == [Tier.LOST] * 5
    assert detector.queue_length == length
    assert detector.update(LOST + (None,)) == Tier.LOST
    assert detector.queue_length == length + 1
    # Scanned normal readings end it as usual, and then the covariance counts again.
    assert run(detector, [scan_fits] * 2) == [Tier.LOST, Tier.NORMAL]
    assert run(detector, [tight] * 2) == [Tier.NORMAL] * 2
    assert detector.queue_length == 2


def test_the_scans_verdict_holds_for_at_most_hold_readings():
    detector = LostDetector(config(window_meta_tier2_lost=4, queue_min=2,
                                   window_meta_tier0_normal=2, hold_readings=3))
    run(detector, [NORMAL + (0.95,)] * 3)
    assert detector.tier == Tier.LOST
    tight = NORMAL + (None,)
    # Three skipped, then they count again: two normals end the sticky tier 2.
    assert run(detector, [tight] * 5) == [Tier.LOST] * 4 + [Tier.NORMAL]
    # A scan that misses again restarts the hold.
    run(detector, [NORMAL + (0.95,)] * 3)
    assert run(detector, [tight] * 3) == [Tier.LOST] * 3
    detector.update(NORMAL + (0.95,))
    assert run(detector, [tight] * 3) == [Tier.LOST] * 3


@pytest.mark.parametrize('probability', [float('nan'), -0.1, 1.5])
def test_add_refuses_a_probability_outside_0_1(probability):
    detector = LostDetector(LostDetectorConfig())
    run(detector, [LOST] * 3)
    tier, length = detector.tier, detector.queue_length
    with pytest.raises(ValueError):
        detector.add(probability, scanned=False)
    assert (detector.tier, detector.queue_length) == (tier, length)


def test_without_any_scan_covariance_normal_readings_count():
    # No scan verdict yet (or after a reset): the covariance alone decides, both ways.
    detector = LostDetector(config(window_meta_tier2_lost=4, queue_min=2,
                                   window_meta_tier0_normal=2))
    run(detector, [LOST] * 3)
    assert run(detector, [NORMAL + (None,)] * 2) == [Tier.LOST, Tier.NORMAL]
    run(detector, [NORMAL + (0.95,)] * 3)
    assert detector.tier == Tier.LOST
    detector.reset()
    assert run(detector, [NORMAL + (None,)] * 2) == [Tier.NORMAL] * 2
    assert detector.queue_length == 2


# ---------------------------------------------------------------- settling

def settling_config(**changes):
    """Small windows, a scan feature with well separated classes, three settling readings."""
    return config(**dict(dict(window_meta_tier2_lost=4, queue_min=2, window_meta_tier0_normal=2,
                              ratio_thresh_detections_tier2_lost=0.5, settle_readings=3,
                              scan_miss_mu=(0.05, 0.6), scan_miss_sigma=(0.05, 0.2)),
                         **changes))


def test_a_right_fix_with_a_wide_cloud_is_judged_by_the_scan_while_settling():
    # An rviz initial pose at the right place: amcl's cloud is wide, the scan fits the map.
    detector = LostDetector(settling_config())
    assert detector.is_lost(LOST + (0.02,))       # what the covariance would have said
    assert run(detector, [LOST + (0.02,)] * 3) == [Tier.NORMAL] * 3
    assert detector.queue_length == 3 and not detector.settling
    # Settled: the covariance counts again; a cloud still this wide reads lost.
    assert run(detector, [LOST + (0.02,)] * 3) == [Tier.CONFUSED, Tier.CONFUSED, Tier.LOST]


def test_a_wrong_fix_is_caught_by_the_scan_while_settling():
    detector = LostDetector(settling_config())
    assert run(detector, [NORMAL + (0.7,)] * 3) == [Tier.NORMAL, Tier.LOST, Tier.LOST]
    assert detector.p_lost == pytest.approx(detector.probability_lost_scan(0.7))


def test_a_settling_reading_without_a_scan_is_counted_but_not_queued():
    detector = LostDetector(settling_config())
    assert run(detector, [LOST + (None,)] * 3) == [Tier.NORMAL] * 3
    assert detector.queue_length == 0 and not detector.settling
    assert detector.last_probability is None and detector.p_lost is None
    assert run(detector, [LOST + (None,)] * 2) == [Tier.NORMAL, Tier.LOST]


def test_reset_settles_again_and_zero_never_settles():
    detector = LostDetector(settling_config())
    run(detector, [NORMAL + (0.0,)] * 4)
    assert not detector.settling
    detector.reset()
    assert detector.settling
    assert run(detector, [LOST + (0.0,)] * 3) == [Tier.NORMAL] * 3
    plain = LostDetector(settling_config(settle_readings=0))
    assert not plain.settling
    assert run(plain, [LOST + (0.0,)] * 2)[-1] == Tier.LOST


def test_a_refused_reading_does_not_count_towards_settling():
    detector = LostDetector(settling_config())
    with pytest.raises(ValueError):
        detector.update((float('nan'), 0.1, 0.0))
    run(detector, [LOST + (0.0,)] * 2)
    assert detector.settling


def test_add_needs_a_probability_once_settled_and_with_a_scan():
    detector = LostDetector(settling_config(settle_readings=1))
    with pytest.raises(ValueError, match='with a scan'):
        detector.add(None, scanned=True)
    assert detector.settling
    assert detector.add(None, scanned=False) == Tier.NORMAL
    with pytest.raises(ValueError, match='settled'):
        detector.add(None, scanned=False)
    assert detector.queue_length == 0


def test_a_scans_lost_while_settling_still_holds_back_covariance_only_normals():
    # Rule 0 after settling: the scan said lost during the settle time; once settled, tight
    # covariance-only readings do not overturn it.
    detector = LostDetector(settling_config(settle_readings=2, hold_readings=5))
    run(detector, [NORMAL + (0.7,)] * 2)
    assert detector.tier == Tier.LOST and not detector.settling
    length = detector.queue_length
    assert run(detector, [NORMAL + (None,)] * 3) == [Tier.LOST] * 3
    assert detector.queue_length == length


# ---------------------------------------------------------------- through share

def test_a_through_share_above_through_lost_makes_a_settled_reading_lost():
    # A tight cloud and a scan whose miss fraction alone says normal: only the share of the
    # beams that reached the map's walls and went through them says lost.
    detector = LostDetector(settling_config(settle_readings=0, through_lost=0.3))
    assert not detector.is_lost(NORMAL + (0.1,))
    assert run(detector, [NORMAL + (0.1,)] * 2) == [Tier.NORMAL] * 2
    tiers = [detector.update(NORMAL + (0.1,), through=0.5) for _ in range(3)]
    assert tiers == [Tier.CONFUSED, Tier.CONFUSED, Tier.LOST]       # 3 of the last 4
    # The classifier's own P(lost) is still what is reported.
    assert detector.p_lost == pytest.approx(detector.probability_lost(NORMAL + (0.1,)))


def test_a_through_share_at_or_below_through_lost_or_none_changes_nothing():
    detector = LostDetector(settling_config(settle_readings=0, through_lost=0.3))
    tiers = [detector.update(NORMAL + (0.1,), through=t) for t in (0.3, 0.0, None, 0.29)]
    assert tiers == [Tier.NORMAL] * 4 and detector.lost_ratio == 0.0


def test_the_through_share_is_not_used_while_settling_nor_when_off():
    settling = LostDetector(settling_config(through_lost=0.3))
    assert [settling.update(NORMAL + (0.05,), through=0.9) for _ in range(3)] == \
        [Tier.NORMAL] * 3
    assert settling.lost_ratio == 0.0 and not settling.settling
    assert settling.update(NORMAL + (0.05,), through=0.9) == Tier.CONFUSED
    off = LostDetector(settling_config(settle_readings=0))      # through_lost 1: off
    assert [off.update(NORMAL + (0.05,), through=1.0) for _ in range(4)] == [Tier.NORMAL] * 4


@pytest.mark.parametrize('through', [-0.1, 1.01, float('nan'), 'high', True])
def test_a_bad_through_share_is_refused_and_changes_nothing(through):
    detector = LostDetector(settling_config(settle_readings=0, through_lost=0.3))
    with pytest.raises(ValueError, match='through share'):
        detector.update(NORMAL + (0.1,), through=through)
    assert detector.queue_length == 0


# ---------------------------------------------------------------- burst (rule 7)

def burst_config(**changes):
    """A detector whose window never fills on a burst (6 lost of 8 needed, ratio 0.75) and
    whose through share alone never labels a reading lost, with the burst rule: 3 of the last
    4 readings with a share above 0.5 through walls more than 1 m apart."""
    return settling_config(**dict(dict(
        settle_readings=0, window_meta_tier2_lost=8, queue_min=2, window_meta_tier0_normal=3,
        ratio_thresh_detections_tier2_lost=0.75, burst_count=3, burst_window=4,
        burst_share=0.5, burst_min_span=1.0), **changes))


def test_a_burst_of_beams_through_walls_far_apart_raises_tier_2_and_it_sticks():
    detector = LostDetector(burst_config())
    steps = [(0.1, 0.0), (0.9, 2.0), (0.9, 2.0), (None, None), (0.9, 2.0), (0.1, 0.0),
             (0.1, 0.0), (0.1, 0.0)]
    tiers = [detector.update(NORMAL + (0.05,), through=t, span=s) for t, s in steps]
    # High readings are lost (tier 1 while the window is short of 6 of 8); a reading without
    # a share is skipped; at the third high one of the last four: tier 2, which lasts until
    # three normal readings in a row (rule 2), as rule 4's.
    assert tiers == [Tier.NORMAL, Tier.CONFUSED, Tier.CONFUSED, Tier.NORMAL] + \
        [Tier.LOST] * 3 + [Tier.NORMAL]


def test_a_burst_through_one_place_or_without_a_span_or_a_low_share_counts_nothing():
    for through, span in ((0.9, 1.0), (0.9, 0.3), (0.9, None), (0.5, 2.0)):
        detector = LostDetector(burst_config())
        tiers = [detector.update(NORMAL + (0.05,), through=through, span=span)
                 for _ in range(6)]
        assert Tier.LOST not in tiers, (through, span)
    off = LostDetector(burst_config(burst_count=0))
    assert [off.update(NORMAL + (0.05,), through=0.9, span=3.0) for _ in range(6)] == \
        [Tier.NORMAL] * 6


def test_settling_and_a_reset_empty_the_burst():
    detector = LostDetector(burst_config(settle_readings=2))
    # Two high readings while settling do not count (nor are they lost): the burst needs
    # three settled ones.
    tiers = [detector.update(NORMAL + (0.05,), through=0.9, span=2.0) for _ in range(4)]
    assert tiers == [Tier.NORMAL, Tier.NORMAL, Tier.CONFUSED, Tier.CONFUSED]
    assert detector.update(NORMAL + (0.05,), through=0.9, span=2.0) == Tier.LOST
    fresh = LostDetector(burst_config())
    for _ in range(2):
        fresh.update(NORMAL + (0.05,), through=0.9, span=2.0)
    fresh.reset()
    assert fresh.update(NORMAL + (0.05,), through=0.9, span=2.0) == Tier.NORMAL


@pytest.mark.parametrize('span', [-0.1, float('nan'), 'far', True])
def test_a_bad_span_is_refused_and_changes_nothing(span):
    detector = LostDetector(burst_config())
    with pytest.raises(ValueError, match='through span'):
        detector.update(NORMAL + (0.1,), through=0.9, span=span)
    assert detector.queue_length == 0


# ---------------------------------------------------------------- sure readings (rule 8)

SURE = 0.999999     # above the rule's 0.9999; NOT_SURE is lost (above 0.99) but not sure
NOT_SURE = 0.999


def sure_config(**changes):
    """A detector whose window never decides (8 readings needed, then 7 lost of 8) with rule 8:
    3 of the last 4 readings with a scan above P(lost) 0.9999."""
    return settling_config(**dict(dict(
        settle_readings=0, window_meta_tier2_lost=8, queue_min=8, window_meta_tier0_normal=3,
        ratio_thresh_detections_tier2_lost=0.85, prob_thresh=0.99, sure_count=3, sure_window=4,
        sure_prob=0.9999), **changes))


def feed(detector, steps):
    """The tiers of ``(P(lost), scanned)`` readings given to :meth:`LostDetector.add`."""
    return [detector.add(probability, scanned) for probability, scanned in steps]


SURE_STEPS = [(0.5, True), (SURE, True), (SURE, True), (0.5, False), (SURE, True),
              (0.1, True), (0.1, True), (0.1, True)]


def test_a_run_of_sure_readings_raises_tier_2_and_it_sticks():
    detector = LostDetector(sure_config())
    # A reading without a scan is not counted (here rule 0 skips it too); at the third sure
    # one of the last four with a scan: tier 2, before the window could say anything, and it
    # lasts until three normal readings in a row (rule 2), as rule 4's.
    assert feed(detector, SURE_STEPS) == [Tier.NORMAL] * 4 + [Tier.LOST] * 3 + [Tier.NORMAL]


@pytest.mark.parametrize('changes, steps', [
    ({'sure_count': 0}, SURE_STEPS),                                    # off
    ({}, [(NOT_SURE if p == SURE else p, s) for p, s in SURE_STEPS]),   # lost, not sure
    ({}, [(p, False) if p == SURE else (p, s) for p, s in SURE_STEPS]),  # no scan
    ({}, [(0.9999, s) if p == SURE else (p, s) for p, s in SURE_STEPS]),  # not above
])
def test_readings_that_are_not_sure_or_without_a_scan_count_nothing(changes, steps):
    assert Tier.LOST not in feed(LostDetector(sure_config(**changes)), steps)


def test_readings_without_a_scan_push_no_sure_reading_out():
    steps = [(SURE, True), (SURE, True)] + [(0.5, False)] * 3 + [(SURE, True)]
    assert feed(LostDetector(sure_config()), steps)[-1] == Tier.LOST


def test_leaving_tier_2_forgets_the_sure_readings_and_the_burst():
    # Tier 2 from rule 8, then the laser gives no scan feature: after one skipped reading
    # (rule 0, hold_readings 1) three normal ones end it (rule 2), and the three sure
    # readings from before, which nothing pushed out, do not raise it again.
    steps = [(SURE, True)] * 3 + [(0.1, False)] * 4
    assert feed(LostDetector(sure_config(hold_readings=1)), steps) == \
        [Tier.NORMAL] * 2 + [Tier.LOST] * 4 + [Tier.NORMAL]
    # The same with rule 7's burst of beams through walls (the window says tier 2 as well
    # here, from the second reading).
    detector = LostDetector(burst_config(hold_readings=1))
    tiers = [detector.update(NORMAL + (0.05,), through=0.9, span=2.0) for _ in range(3)]
    tiers += [detector.update(NORMAL) for _ in range(4)]
    assert tiers == [Tier.NORMAL] + [Tier.LOST] * 5 + [Tier.NORMAL]


def test_settling_and_a_reset_empty_the_sure_readings():
    detector = LostDetector(sure_config(settle_readings=2))
    # Two sure readings while settling do not count: rule 8 needs three settled ones.
    assert feed(detector, [(SURE, True)] * 5) == [Tier.NORMAL] * 4 + [Tier.LOST]
    fresh = LostDetector(sure_config())
    feed(fresh, [(SURE, True)] * 2)
    fresh.reset()
    assert feed(fresh, [(SURE, True)] * 2) == [Tier.NORMAL] * 2
    assert feed(fresh, [(SURE, True)]) == [Tier.LOST]


# ---------------------------------------------------------------- strip (rule 9)

def strip_config(**changes):
    """A detector whose window never decides (8 readings needed, then 7 lost of 8) with rule 9:
    3 of the last 4 readings with a strip verdict low."""
    return sure_config(**dict(dict(sure_count=0, strip_count=3, strip_readings=4), **changes))


STRIP_STEPS = [False, True, True, None, True, False, False, False]


def feed_strips(detector, strips, probability=0.5):
    """The tiers of readings with a scan, P(lost) ``probability``, and these strip verdicts."""
    return [detector.add(probability, True, strip=strip) for strip in strips]


def test_a_run_of_low_strips_raises_tier_2_and_it_sticks():
    # A reading without a verdict is not counted; at the third low one of the last four:
    # tier 2, before the window could say anything, lasting until three normal readings in a
    # row (rule 2), as rule 4's. A low strip labels its reading lost.
    assert feed_strips(LostDetector(strip_config()), STRIP_STEPS) == \
        [Tier.NORMAL] * 4 + [Tier.LOST] * 3 + [Tier.NORMAL]
    detector = LostDetector(strip_config())
    feed_strips(detector, [False, True])
    assert detector.lost_ratio == 0.5
    off = LostDetector(strip_config(strip_count=0))
    feed_strips(off, [True, True])
    assert off.lost_ratio == 0.0


@pytest.mark.parametrize('changes, strips', [
    ({'strip_count': 0}, STRIP_STEPS),                                   # off
    ({}, [None if s else s for s in STRIP_STEPS]),                       # no verdicts
    ({}, [True, False, True, False, True, False, True, False]),           # 2 of every 4
])
def test_strips_that_are_not_low_enough_count_nothing(changes, strips):
    assert Tier.LOST not in feed_strips(LostDetector(strip_config(**changes)), strips)


def test_settling_leaving_tier_2_and_a_reset_empty_the_strip():
    detector = LostDetector(strip_config(settle_readings=2))
    # Two low strips while settling do not count: rule 9 needs three settled ones.
    assert feed_strips(detector, [True] * 5) == [Tier.NORMAL] * 4 + [Tier.LOST]
    fresh = LostDetector(strip_config())
    feed_strips(fresh, [True] * 2)
    fresh.reset()
    assert feed_strips(fresh, [True] * 2) == [Tier.NORMAL] * 2
    assert feed_strips(fresh, [True]) == [Tier.LOST]
    # Rule 2 ends tier 2 after three normal readings; the low strips before do not raise it
    # again at once.
    assert feed_strips(fresh, [None] * 3, probability=0.1) == [Tier.LOST] * 2 + [Tier.NORMAL]
    assert feed_strips(fresh, [None, True, True]) == [Tier.NORMAL] * 3


def test_update_passes_the_strip_verdict_to_rule_9():
    detector = LostDetector(strip_config(settle_readings=0))
    tiers = [detector.update(NORMAL + (0.05,), strip=True) for _ in range(3)]
    assert tiers == [Tier.NORMAL] * 2 + [Tier.LOST]


def test_scan_only_probability_is_bayes_on_the_miss_fraction_alone():
    cfg = settling_config(tier0_normal_prior=0.8)
    detector = LostDetector(cfg)
    for miss in (0.0, 0.2, 0.35, 0.9):
        normal = cfg.tier0_normal_prior * normal_pdf(miss, 0.05, 0.05)
        lost = (1 - cfg.tier0_normal_prior) * normal_pdf(miss, 0.6, 0.2)
        assert detector.probability_lost_scan(miss) == pytest.approx(lost / (normal + lost),
                                                                     rel=1e-9, abs=1e-12)
    for bad in (None, 1.5, float('nan')):
        with pytest.raises(ValueError):
            detector.probability_lost_scan(bad)


# ---------------------------------------------------------------- config

def test_default_config_is_valid():
    LostDetectorConfig().validate()


def test_shipped_yaml_loads_and_validates():
    with open(CONFIG_YAML) as stream:
        params = yaml.safe_load(stream)
    assert set(params) == {'modified_prob_classifier', 'lost_detector', 'scan_check',
                           'strip_check'}
    warnings = []
    cfg = config_from_params(LostDetectorConfig, params, warn=warnings.append)
    assert warnings == []
    # The strip rule (rule 9) is on, with the numbers tools/strip_rule.py --write chose.
    assert (cfg.strip_count, cfg.strip_readings, cfg.strip_window, cfg.strip_min_points,
            cfg.strip_ratio, cfg.strip_min_distance, cfg.strip_slack_xy, cfg.strip_slack_yaw,
            cfg.odom_frame) == (4, 5, 10.0, 100, 0.6, 1.0, 0.3, 0.2, 'odom')
    assert len(cfg.slice_mu) == 4 and len(cfg.slice_sigma) == 4
    assert isinstance(cfg.queue_min, int)
    # The shipped numbers classify the obvious cases the obvious way.
    detector = LostDetector(cfg)
    assert not detector.is_lost(NORMAL) and detector.is_lost((3.0, 1.8))
    # With the scan check: a tight cloud whose scan misses the map is lost, one whose scan
    # fits is not, and a missing scan falls back to the covariance.
    assert cfg.scan_check
    assert detector.is_lost(NORMAL + (0.9,)) and not detector.is_lost(NORMAL + (0.05,))
    assert detector.is_lost((3.0, 1.8, None)) and not detector.is_lost(NORMAL + (None,))


def test_params_with_exact_names_are_read():
    params = {
        'modified_prob_classifier': {'tier0_normal_prior': 0.5, 'prob_thresh': 0.8,
                                     'slice_mu': [0.1, 0.1, 1, 1],
                                     'slice_sigma': [0.1, 0.1, 1, 1]},
        'lost_detector': {'queue_min': 2, 'window_meta_tier2_lost': 5,
                          'ratio_thresh_detections_tier2_lost': 0.5,
                          'window_meta_tier0_normal': 7},
    }
    cfg = config_from_params(LostDetectorConfig, params, warn=pytest.fail)
    assert cfg == LostDetectorConfig(0.5, 0.8, (0.1, 0.1, 1.0, 1.0), (0.1, 0.1, 1.0, 1.0),
                                     2, 5, 0.5, 7)


def test_unknown_key_is_warned():
    warnings = []
    config_from_params(LostDetectorConfig, {'lost_detector': {'queue_mni': 3}},
                       warn=warnings.append)
    assert len(warnings) == 1 and 'lost_detector/queue_mni' in warnings[0]


@pytest.mark.parametrize('changes, key', [
    ({'tier0_normal_prior': 0.0}, 'modified_prob_classifier/tier0_normal_prior=0.0'),
    ({'tier0_normal_prior': 1.0}, 'modified_prob_classifier/tier0_normal_prior=1.0'),
    ({'tier0_normal_prior': float('nan')}, 'modified_prob_classifier/tier0_normal_prior=nan'),
    ({'prob_thresh': 1.0}, 'modified_prob_classifier/prob_thresh=1.0'),
    ({'prob_thresh': -0.1}, 'modified_prob_classifier/prob_thresh=-0.1'),
    ({'slice_mu': (0.1, 0.1, 1.0)}, 'modified_prob_classifier/slice_mu=(0.1, 0.1, 1.0)'),
    ({'slice_mu': (0.1, -0.1, 1.0, 1.0)}, 'modified_prob_classifier/slice_mu='),
    ({'slice_mu': (0.1, float('inf'), 1.0, 1.0)}, 'modified_prob_classifier/slice_mu='),
    ({'slice_sigma': (0.1, 0.0, 1.0, 1.0)}, 'modified_prob_classifier/slice_sigma='),
    ({'slice_sigma': (0.1, 0.1, 1.0, 1.0, 1.0)}, 'modified_prob_classifier/slice_sigma='),
    # Sigmas whose square is no normal float would make every P(lost) NaN.
    ({'slice_sigma': (0.1, 1e-160, 1.0, 1.0)}, 'modified_prob_classifier/slice_sigma='),
    ({'slice_sigma': (0.1, 0.1, 1e200, 1.0)}, 'modified_prob_classifier/slice_sigma='),
    ({'scan_miss_sigma': (1e-160, 0.1)}, 'scan_miss_sigma='),
    ({'base_frame': '/base_footprint'}, "base_frame='/base_footprint'"),
    ({'queue_min': 0}, 'lost_detector/queue_min=0'),
    ({'queue_min': 2.5}, 'lost_detector/queue_min=2.5'),
    ({'window_meta_tier2_lost': 0}, 'lost_detector/window_meta_tier2_lost=0'),
    ({'window_meta_tier0_normal': -3}, 'lost_detector/window_meta_tier0_normal=-3'),
    ({'ratio_thresh_detections_tier2_lost': 1.0},
     'lost_detector/ratio_thresh_detections_tier2_lost=1.0'),
    ({'ratio_thresh_detections_tier2_lost': -0.01},
     'lost_detector/ratio_thresh_detections_tier2_lost=-0.01'),
    ({'short_weight': 1.5}, 'scan_check/short_weight=1.5'),
    ({'short_weight': 'half'}, "scan_check/short_weight='half'"),
    ({'min_range': -0.5}, 'scan_check/min_range=-0.5'),
    ({'min_range': float('nan')}, 'scan_check/min_range=nan'),
    ({'settle_readings': -1}, 'lost_detector/settle_readings=-1'),
    ({'settle_readings': 2.5}, 'lost_detector/settle_readings=2.5'),
    ({'settle_readings': True}, 'lost_detector/settle_readings=True'),
    ({'through_lost': 0.0}, 'scan_check/through_lost=0.0'),
    ({'through_lost': 1.5}, 'scan_check/through_lost=1.5'),
    ({'through_lost': float('nan')}, 'scan_check/through_lost=nan'),
    ({'through_min_reach': 0.0}, 'scan_check/through_min_reach=0.0'),
    ({'through_min_reach': 'most'}, "scan_check/through_min_reach='most'"),
    ({'burst_count': -1}, 'scan_check/burst_count=-1'),
    ({'burst_window': 0}, 'scan_check/burst_window=0'),
    ({'burst_share': 1.0}, 'scan_check/burst_share=1.0'),
    ({'burst_min_span': -0.5}, 'scan_check/burst_min_span=-0.5'),
    ({'unmapped_ends': 'yes'}, "scan_check/unmapped_ends='yes'"),
    ({'burst_count': 6}, 'scan_check/burst_count=6'),        # more than burst_window (5)
    ({'sure_count': -1}, 'scan_check/sure_count=-1'),
    ({'sure_count': 1.5}, 'scan_check/sure_count=1.5'),
    ({'sure_window': 0}, 'scan_check/sure_window=0'),
    ({'sure_prob': 1.0}, 'scan_check/sure_prob=1.0'),
    ({'sure_prob': 'high'}, "scan_check/sure_prob='high'"),
    ({'sure_count': 5}, 'scan_check/sure_count=5'),          # more than sure_window (4)
    ({'sure_prob': 0.5, 'sure_count': 2}, 'scan_check/sure_prob=0.5'),     # < prob_thresh
    ({'sure_prob': 0.0, 'sure_count': 2}, 'scan_check/sure_prob=0.0'),     # < prob_thresh
    ({'strip_count': -1}, 'strip_check/count=-1'),
    ({'strip_count': 6}, 'strip_check/count=6'),            # more than strip_readings (5)
    ({'strip_readings': 0}, 'strip_check/readings=0'),
    ({'strip_window': 0.0}, 'strip_check/window=0.0'),
    ({'strip_window': float('inf')}, 'strip_check/window=inf'),
    ({'strip_window': 1e9}, 'strip_check/window=1000000000.0'),    # the strip never ends
    ({'strip_min_points': 0}, 'strip_check/min_points=0'),
    ({'strip_ratio': 0.0}, 'strip_check/ratio=0.0'),
    ({'strip_ratio': 1.5}, 'strip_check/ratio=1.5'),
    ({'strip_min_distance': -1.0}, 'strip_check/min_distance=-1.0'),
    ({'odom_frame': '/odom'}, "strip_check/odom_frame='/odom'"),
    ({'strip_slack_xy': 0.6}, 'strip_check/slack_xy=0.6'),
    ({'strip_slack_yaw': 0.6}, 'strip_check/slack_yaw=0.6'),
    ({'strip_slack_yaw': -0.1}, 'strip_check/slack_yaw=-0.1'),
])
def test_bad_config_names_key_and_value(changes, key):
    with pytest.raises(ConfigError) as error:
        config(**changes).validate()
    assert len(error.value.problems) == 1
    assert key in str(error.value)


def test_a_sure_prob_below_prob_thresh_is_refused_only_with_rule_8_on():
    config(sure_prob=0.5).validate()        # sure_count 0: rule 8 is off
    with pytest.raises(ConfigError) as error:
        config(sure_prob=0.5, sure_count=2).validate()
    assert 'modified_prob_classifier/prob_thresh=0.9' in str(error.value)


def test_queue_min_above_window_names_both():
    with pytest.raises(ConfigError) as error:
        config(queue_min=11, window_meta_tier2_lost=10).validate()
    message = str(error.value)
    assert 'lost_detector/queue_min=11' in message
    assert 'lost_detector/window_meta_tier2_lost=10' in message


def test_every_problem_is_reported_at_once():
    with pytest.raises(ConfigError) as error:
        config(prob_thresh=2.0, queue_min=0, slice_sigma=(0, 0, 0, 0)).validate()
    assert len(error.value.problems) == 3


def test_bad_yaml_values_name_key_and_value():
    params = {'modified_prob_classifier': {'slice_mu': 'big'},
              'lost_detector': {'queue_min': 'three'}}
    with pytest.raises(ConfigError) as error:
        config_from_params(LostDetectorConfig, params, warn=pytest.fail)
    assert "modified_prob_classifier/slice_mu='big'" in str(error.value)
    assert "lost_detector/queue_min='three'" in str(error.value)


def test_window_check_runs_alongside_other_problems():
    with pytest.raises(ConfigError) as error:
        config(prob_thresh=2.0, queue_min=5, window_meta_tier2_lost=4).validate()
    assert len(error.value.problems) == 2
    assert 'lost_detector/window_meta_tier2_lost=4' in error.value.problems[1]


# ---------------------------------------------------------------- stamps

@pytest.mark.parametrize('last, stamp, expected', [
    (None, 5.0, 'new'), (4.0, 5.0, 'new'), (5.0, 5.0, 'duplicate'), (5.0, 4.0, 'backwards'),
    (0.0, 0.0, 'new'), (5.0, 0.0, 'new'), (0.0, 3.0, 'new')])
def test_stamp_order(last, stamp, expected):
    assert stamp_order(last, stamp) == expected


# ---------------------------------------------------------------- adapter (no master)

class FakePublisher:
    """Records what the node publishes."""

    def __init__(self):
        self.sent = []

    def publish(self, msg):
        self.sent.append(msg.data)


def pose_msg(cov, stamp):
    from geometry_msgs.msg import PoseWithCovarianceStamped
    import rospy
    msg = PoseWithCovarianceStamped()
    msg.header.stamp = rospy.Time.from_sec(stamp)
    msg.pose.covariance = cov
    return msg


@pytest.fixture
def node(monkeypatch):
    """The adapter with a fake publisher; its warnings are collected in ``.warnings``."""
    import rospy
    from lost_and_found.nodes.lost_detector import LostDetectorNode
    cfg = LostDetectorConfig()
    adapter = LostDetectorNode(LostDetector(cfg), cfg)
    adapter._status_pub = FakePublisher()
    adapter._p_lost_pub = FakePublisher()
    adapter.warnings = []
    monkeypatch.setattr(rospy, 'logwarn', adapter.warnings.append)
    return adapter


def test_pose_features_reads_the_message_covariance():
    from lost_and_found.nodes.lost_detector import pose_features
    assert pose_features(pose_msg(make_cov(0.04, 0.0, 0.01, 0.09), 1.0)) == \
        pytest.approx((0.2, 0.3))


def test_node_publishes_every_valid_reading(node):
    tight = make_cov(0.01, 0.0, 0.01, 0.0025)
    for i in range(3):
        node.on_pose(pose_msg(tight, 1.0 + i))
    assert node._status_pub.sent == ['normal'] * 3


def test_node_skips_bad_covariances_and_duplicates(node):
    huge = make_cov(4.0, 0.0, 4.0, 1.0)
    node.on_pose(pose_msg(make_cov(xx=float('nan')), 1.0))
    node.on_pose(pose_msg(make_cov(xy=0.001)[:6] + [0.0] + make_cov()[7:], 2.0))
    node.on_pose(pose_msg([0.0] * 35, 3.0))
    assert node._status_pub.sent == []
    assert len(node.warnings) == 3
    assert 'NaN' in node.warnings[0] and 'not symmetric' in node.warnings[1]
    assert '35 entries' in node.warnings[2]
    for stamp in (4.0, 4.0, 5.0, 6.0):  # the repeated stamp is counted once
        node.on_pose(pose_msg(huge, stamp))
    assert node._status_pub.sent == ['normal', 'normal', 'lost']
    assert node._detector.queue_length == 3
    assert 'again' in node.warnings[-1]


def test_node_throttles_warnings_per_kind(node):
    for stamp in (1.0, 2.0, 3.0):
        node.on_pose(pose_msg(make_cov(xx=float('nan')), stamp))
    node.on_pose(pose_msg(make_cov(yy=-1.0), 4.0))
    assert len(node.warnings) == 2
    assert 'NaN' in node.warnings[0] and 'negative variance' in node.warnings[1]


def test_node_reset_publishes_normal(node):
    huge = make_cov(4.0, 0.0, 4.0, 1.0)
    for stamp in (1.0, 2.0, 3.0):
        node.on_pose(pose_msg(huge, stamp))
    assert node._status_pub.sent[-1] == 'lost'
    node.on_reset(None)
    assert node._status_pub.sent[-1] == 'normal'
    node.on_pose(pose_msg(huge, 4.0))
    assert node._status_pub.sent[-1] == 'normal'  # gated again by queue_min


# ----------------------------------------------------------------------------- fit watch

def _shipped():
    from lost_and_found.bench import calibration, detectors
    return detectors.load_detector_config(calibration.TARGET_PATH)


def test_the_fit_watch_tells_once_when_a_wide_cloud_meets_an_agreeing_scan():
    from lost_and_found.core.lost_detector import CovarianceFitWatch
    watch = CovarianceFitWatch(_shipped(), window=20)
    said = [watch.add((0.6, 0.2), 0.02) for _ in range(19)]
    assert said == [None] * 19                       # not before the window is full
    message = watch.add((0.6, 0.2), 0.02)
    assert 'tools/adapt_detector.py' in message and 'median sigma_xy 0.60 m' in message
    assert '20 of the last 20' in message
    assert watch.add((0.6, 0.2), 0.02) is None and watch.told


def test_the_fit_watch_stays_quiet_for_a_fitting_cloud_a_disagreeing_scan_or_no_scan():
    from lost_and_found.core.lost_detector import CovarianceFitWatch
    config = _shipped()
    tight = CovarianceFitWatch(config, window=20)
    assert all(tight.add((0.1, 0.04), 0.02) is None for _ in range(100))
    # A wide cloud whose scan misses the map is lost, not a misfit.
    lost = CovarianceFitWatch(config, window=20)
    assert all(lost.add((0.6, 0.2), 0.8) is None for _ in range(100))
    blind = CovarianceFitWatch(config, window=20)
    assert all(blind.add((0.6, 0.2), None) is None for _ in range(100))
    # Below the share: 15 of 20 wide (75 %) against 80 %.
    mixed = CovarianceFitWatch(config, window=20, share=0.8)
    readings = ([(0.6, 0.2)] * 3 + [(0.1, 0.04)]) * 50
    assert all(mixed.add(f, 0.02) is None for f in readings)


@settings(max_examples=200)
@given(st.floats(0.0, 5.0), st.floats(0.0, 3.0), st.floats(0.0, 1.0))
def test_the_fit_watch_classifies_as_the_detectors_classifier(sigma_xy, sigma_theta, miss):
    from lost_and_found.core.lost_detector import CovarianceFitWatch, build_classifier
    config = _shipped()
    watch = CovarianceFitWatch(config)
    covariance = build_classifier(config).predict_proba([[sigma_xy, sigma_theta]])[0, 1]
    scan = build_classifier(config, True, covariance=False).predict_proba([[miss]])[0, 1]
    assert watch._p_lost(watch._covariance, (sigma_xy, sigma_theta)) == \
        pytest.approx(covariance, abs=1e-9)
    assert watch._p_lost(watch._scan_only, (miss,)) == pytest.approx(scan, abs=1e-9)


def test_the_classifier_keeps_its_variances_where_the_installed_scikit_learn_reads_them(
        monkeypatch):
    """scikit-learn before 1.0 (Ubuntu 20.04's 0.22) reads a GaussianNB's variances from
    ``sigma_``, later ones from ``var_``; a classifier built for either reads them back."""
    from lost_and_found.core import lost_detector
    config = LostDetectorConfig()
    sigma = np.asarray(config.slice_sigma, dtype=float).reshape(2, 2)
    from sklearn.naive_bayes import GaussianNB
    # scikit-learn 1.0 and 1.1 make sigma_ a read-only property: the old layout cannot be faked
    olds = (False,) if isinstance(getattr(GaussianNB, 'sigma_', None), property) else (True, False)
    for old in olds:
        monkeypatch.setattr(lost_detector, 'VARIANCES_IN_SIGMA', old)
        gnb = lost_detector.build_classifier(config)
        assert ('sigma_' in vars(gnb), 'var_' in vars(gnb)) == (old, not old)
        assert lost_detector.classifier_variances(gnb) == pytest.approx(sigma ** 2)
