"""Decide from amcl's pose covariance and the scan whether the robot is localized or lost.

Two features come from each ``amcl_pose`` covariance (:func:`covariance_features`): the standard
deviation along the major axis of the x-y error ellipse and the standard deviation of yaw. A
third, optional one says whether amcl is *right* rather than sure: the miss fraction of the scan
at the estimated pose (:mod:`lost_and_found.core.scan_agreement`). A Gaussian Naive Bayes
classifier whose parameters are *given* (YAML numbers, not trained at start-up) labels each
reading *lost* when ``P(lost | features) > prob_thresh``; a reading without the scan feature
(no map or scan yet, too few usable beams) is classified on the covariance alone, which for a
Naive Bayes model is exactly the three-feature model with that feature marginalised out.
:class:`LostDetector` turns that stream of per-reading labels into a tier.

State kept between readings:

- ``queue``: the labels of the most recent readings, at most ``window_meta_tier2_lost`` of them
  (so the queue *is* the tier-2 window);
- ``normal_run``: how many normal readings arrived in a row;
- ``tier``: the tier returned for the previous reading (tier 2 is sticky);
- ``scan_says_lost``: the label of the latest reading that had the scan feature (None before
  the first one and after a reset), and ``held``: how many readings rule 0 skipped since;
- ``readings``: how many valid readings arrived since the start or the last reset.

While ``readings`` is below ``settle_readings`` the detector *settles* (after the start and
after :meth:`LostDetector.reset`; leaving tier 2 under rule 2 does not settle again): amcl's
covariance then is still the one it was started or re-seeded with (an rviz initial pose, a
put-down re-seed, its own ``initial_cov_*`` at bring-up, global localization), so it says how
sure the person or the service that gave the pose was, not how well the pose fits the world.
A settling reading is classified on the scan feature alone (for a Naive Bayes model: the
covariance features marginalised out), and one without the scan feature carries no evidence:
it is counted, but neither queued nor classified (the previous tier is returned). A right fix
thus does not read as lost while amcl's cloud shrinks, and a wrong one is still caught by the
laser.

Rules, applied in this exact order to every reading (:meth:`LostDetector.update`; settling
readings as said above):

0. The covariance cannot overturn the scan: a reading *without* the scan feature that the
   covariance alone labels normal, while ``scan_says_lost`` is True, is skipped (nothing is
   queued, the previous tier is returned). amcl's cloud can be tight at a wrong pose, so a tight
   covariance is no evidence against the laser's latest verdict; it lasts until the next
   reading with a scan, a reset, or ``hold_readings`` skipped readings (a laser that stays
   blind, or one odd scan near a wall, must not freeze the detector for ever). Without a scan
   check (disabled, or no map or usable scan yet) this rule never applies. A covariance-only
   *lost* reading always counts: a wide cloud is lost whatever the scan said.
1. Classify the reading, append its label to ``queue`` (the oldest label drops out once the
   queue holds ``window_meta_tier2_lost`` labels) and update ``normal_run`` (a lost reading
   sets it to 0). A settled reading whose scan's through share (of the beams that reached the
   map's obstacles, those that went through one: :func:`~lost_and_found.core.scan_agreement.
   through_share`) is above ``through_lost`` is lost whatever P(lost) says: unmapped clutter
   makes beams short, never makes them pass through walls, so this evidence holds among
   clutter where the miss fraction does not. While settling it is not used (a fix a few
   centimetres off puts beams just behind the walls they hit).
2. Sticky tier 2: if the previous tier was ``LOST`` then, when ``normal_run`` has reached
   ``window_meta_tier0_normal``, reset the detector entirely (empty the queue and the
   readings rules 7-9 keep, ``normal_run`` 0) and return ``NORMAL``; otherwise return
   ``LOST``, whatever this reading says.
3. Gating: with fewer than ``queue_min`` labels in the queue, return ``NORMAL``.
4. Tier 2: if the fraction of lost labels in the queue (the last ``window_meta_tier2_lost``
   readings, or all of them while fewer have arrived) is strictly greater than
   ``ratio_thresh_detections_tier2_lost``, return ``LOST`` (sticky from now on).
5. Tier 1: if this reading is lost, return ``CONFUSED``.
6. Tier 0: return ``NORMAL``.
7. Burst (off with ``burst_count`` 0, the default): every settled reading with a through share
   is also kept in ``burst``, the last ``burst_window`` of them: *high* when its share is
   strictly above ``burst_share`` and its beams through walls enter them more than
   ``burst_min_span`` apart (:func:`~lost_and_found.core.scan_agreement.through_span`); a
   high reading is also labelled lost in rule 1. When at least ``burst_count`` of them are
   high, the tier is ``LOST`` whatever rules 2-6 said (sticky as rule 4's). Right after a
   silent delocalization the through share often comes in a short burst and fades as amcl
   settles on a wrong place that fits, too short to fill rule 4's window; a door the map has
   shut makes a burst too, but through one place, which the span tells apart. Settling
   readings and a reset empty ``burst``.
8. Sure readings (off with ``sure_count`` 0, the default): every settled reading with the scan
   feature is also kept in ``sure``, the last ``sure_window`` of them: *sure* when its P(lost)
   (covariance and scan) is strictly above ``sure_prob`` (at least ``prob_thresh``, so a sure
   reading is a lost one in rule 1). When at least ``sure_count`` of them are sure, the tier
   is ``LOST`` whatever rules 2-7 said (sticky as rule 4's). amcl publishes only while the
   robot moves, about one reading per 0.2 m, so rule 4's 20-reading window may not fill in
   the first metres after a silent delocalization even when every scan in it misses the map;
   a few readings that the classifier is far surer of than its threshold say so sooner.
   Settling readings and a reset empty ``sure``.
9. Strip (off with ``strip_count`` 0, the default): every settled reading with a strip verdict
   (:mod:`lost_and_found.core.strip_check`: the returns of the last seconds of scans, placed by
   odometry, scored at amcl's estimate against the best place of the map) is also kept in
   ``strip``, the last ``strip_readings`` of them: *low* when the estimate scored below
   ``strip_ratio`` of a place more than ``strip_min_distance`` away; a low reading is also
   labelled lost in rule 1 (so that rule 2 does not end the tier 2 it raises while the strips
   stay low). When at least ``strip_count`` of them are low, the tier is ``LOST`` whatever
   rules 2-8 said (sticky as rule 4's). amcl can keep a wrong estimate that fits each scan
   on its own, nudged scan by scan; the wheels do not follow the nudges, and the strip keeps
   the returns' true shape. Settling readings and a reset empty ``strip``.

:meth:`LostDetector.reset` empties the queue, zeroes ``normal_run`` and ``readings``, forgets
``scan_says_lost`` and sets tier 0, as if the detector had just started (so it settles again).
Outside tier 2 a run of normal readings resets nothing: the queue just slides, so tiers 0 and 1
never go back through the ``queue_min`` gate on their own.

amcl publishes a pose only after a filter update (the robot must move), so the detector counts
readings and has no notion of time. Right after ``global_localization`` amcl's covariance is
huge by construction: lost_service resets the detector then, so those readings settle (the scan
judges the cloud's mean pose), and once settled a cloud still that wide reads lost.
"""
import dataclasses
import enum
import math
from collections import deque

import numpy as np
import sklearn
from sklearn.naive_bayes import GaussianNB

from lost_and_found.core.config import Checker, param_field, param_name

#: Relative tolerance of the symmetry and positive-semidefiniteness checks: amcl computes the
#: covariance in float64, so anything beyond round-off is a real defect.
REL_TOL = 1e-9

#: The range of a class's sigma: its square (the Gaussian's variance) must be a normal float,
#: or every P(lost) comes out NaN.
SIGMA_RANGE = (1e-150, 1e150)
SIGMA_MUST = 'be between %g and %g' % SIGMA_RANGE


def _usable_sigma(value):
    """Whether ``value`` (a finite number) can be a class's sigma (SIGMA_RANGE)."""
    return SIGMA_RANGE[0] <= value <= SIGMA_RANGE[1]


#: Indices into the row-major 6x6 covariance (x, y, z, roll, pitch, yaw).
_XX, _XY, _YX, _YY, _YAWYAW = 0, 1, 6, 7, 35


class CovarianceError(ValueError):
    """A pose covariance that cannot be classified; the message says what is wrong with it.

    Attributes:
        kind: which check failed, one of ``'length'``, ``'not_numeric'``, ``'not_finite'``,
            ``'not_symmetric'``, ``'negative_variance'``, ``'not_psd'`` (so that a node can
            throttle its warnings per kind of problem).
    """

    def __init__(self, message, kind):
        """Keep ``kind`` next to the message."""
        super().__init__(message)
        self.kind = kind


class Tier(enum.IntEnum):
    """How lost the robot is; values match lost_and_found/LocalizationStatus constants."""

    NORMAL = 0
    CONFUSED = 1
    LOST = 2

    @property
    def status(self):
        """The string published on ``/lost_detector/status``: normal, confused or lost."""
        return self.name.lower()


@dataclasses.dataclass(frozen=True)
class LostDetectorConfig:
    """Parameters of the lost detector (private params of the ``lost_detector`` node).

    The classifier's numbers are placeholders chosen for a TurtleBot2 running amcl; a benchmark
    calibrates them later.

    Attributes:
        tier0_normal_prior: prior probability of the normal class, in (0, 1); lost gets
            ``1 - tier0_normal_prior``.
        prob_thresh: a reading is lost when P(lost | features) exceeds this, in (0, 1).
        slice_mu: class means (xy-normal [m], yaw-normal [rad], xy-lost [m], yaw-lost [rad]).
        slice_sigma: class standard deviations, same order and units as ``slice_mu``, each in
            SIGMA_RANGE.
        queue_min: readings needed in the queue before any tier above 0 is reported.
        window_meta_tier2_lost: number of most recent readings whose lost ratio decides tier 2
            (also the queue length).
        ratio_thresh_detections_tier2_lost: tier 2 when the lost ratio is strictly above this,
            in [0, 1).
        window_meta_tier0_normal: normal readings in a row that end a sticky tier 2 and reset
            the detector.
        settle_readings: after the start and every reset, this many readings are classified on
            the scan feature alone (see the module docstring), >= 0 (0: never).
        scan_miss_mu: class means of the scan miss fraction [normal, lost], in [0, 1].
        scan_miss_sigma: class standard deviations of the scan miss fraction, in SIGMA_RANGE.
        scan_check: use the scan feature (the node then needs ``scan``, ``map`` and tf).
        base_frame: the robot frame amcl's pose is of (where the laser mount is looked up).
        hit_tolerance: a beam end point this close (m) to a mapped obstacle is a hit.
        short_weight: what a missed beam that ended in free space counts towards the miss
            fraction, in [0, 1]; a miss through a mapped obstacle counts 1 (unmapped clutter
            never makes one; see core/scan_agreement.py).
        min_range: beams shorter than this (m) are not used for the feature (an unmapped
            object near the laser fills its view with returns that miss the map at a right
            pose; see core/scan_agreement.py); 0 uses every beam.
        open_beams: also use the beams without a return (``+inf`` or ``>= range_max``): one
            whose ray runs through a mapped obstacle misses, any other agrees with the map
            (core/scan_agreement.py).
        unmapped_ends: leave out the missed beams that end in or near unmapped space (off
            the map, unknown cells) having crossed no mapped obstacle (core/scan_agreement.py).
        max_beams: beams per scan used for the feature, at most (evenly subsampled).
        min_beams: fewer usable beams than this give no scan feature for the reading.
        stamp_tolerance: largest gap (s) between a pose's stamp and its scan's stamp.
        hold_readings: rule 0 skips at most this many covariance-only normal readings after a
            scan said lost; the next ones count again.
        through_lost: a settled reading whose scan's through share (of the beams that reached
            the map's obstacles, those that passed through one; see :func:`through_share`) is
            strictly above this is lost, whatever P(lost) says, in (0, 1]; 1 never (off).
        through_min_reach: the through share counts only when at least this share of the
            scan's used beams reached the map's obstacles (were not short misses), in (0, 1].
        burst_count: rule 7 (module docstring) raises tier 2 when at least this many of the
            last ``burst_window`` settled readings with a through share were high; 0: off.
        burst_window: how many settled readings with a through share rule 7 looks at.
        burst_share: a reading is high for rule 7 when its through share is strictly above
            this, in [0, 1),
        burst_min_span: and its beams through walls enter them strictly more than this far
            apart (m, >= 0).
        sure_count: rule 8 (module docstring) raises tier 2 when at least this many of the
            last ``sure_window`` settled readings with the scan feature were sure; 0: off.
        sure_window: how many settled readings with the scan feature rule 8 looks at.
        sure_prob: a reading is sure for rule 8 when its P(lost) is strictly above this, in
            [``prob_thresh``, 1).
        strip_count: rule 9 (module docstring) raises tier 2 when at least this many of the
            last ``strip_readings`` settled readings with a strip verdict were low; 0: off.
        strip_readings: how many settled readings with a strip verdict rule 9 looks at.
        strip_window: seconds of scans in a strip (core/strip_check.py), in (0, 60].
        strip_min_points: a strip of fewer returns (one per 0.1 m square, within 6 m of the
            robot) gives no verdict.
        strip_ratio: a reading is low when the strip scores at amcl's estimate below this
            share of the best place of the map, in (0, 1],
        strip_min_distance: and that place lies more than this (m) from the estimate (>= 0).
        strip_slack_xy, strip_slack_yaw: the estimate's score is the best within a square of
            this half side (m, in [0, 0.5]) and this heading (rad, in [0, 0.5]) around it (0:
            its own; every pose of the square is scored, so the limits keep it small).
        odom_frame: the odometry frame the node places the strip's scans in (tf
            ``odom_frame`` -> ``base_frame``); rule 9 only.
    """

    tier0_normal_prior: float = param_field('modified_prob_classifier/tier0_normal_prior', 0.7)
    prob_thresh: float = param_field('modified_prob_classifier/prob_thresh', 0.9)
    slice_mu: tuple = param_field('modified_prob_classifier/slice_mu', (0.15, 0.1, 1.0, 0.8))
    slice_sigma: tuple = param_field('modified_prob_classifier/slice_sigma',
                                     (0.1, 0.06, 0.6, 0.5))
    queue_min: int = param_field('lost_detector/queue_min', 3)
    window_meta_tier2_lost: int = param_field('lost_detector/window_meta_tier2_lost', 10)
    ratio_thresh_detections_tier2_lost: float = param_field(
        'lost_detector/ratio_thresh_detections_tier2_lost', 0.6)
    window_meta_tier0_normal: int = param_field('lost_detector/window_meta_tier0_normal', 10)
    settle_readings: int = param_field('lost_detector/settle_readings', 0)
    scan_miss_mu: tuple = param_field('modified_prob_classifier/scan_miss_mu', (0.1, 0.6))
    scan_miss_sigma: tuple = param_field('modified_prob_classifier/scan_miss_sigma',
                                         (0.1, 0.25))
    scan_check: bool = param_field('scan_check/enabled', True)
    base_frame: str = param_field('scan_check/base_frame', 'base_footprint')
    hit_tolerance: float = param_field('scan_check/hit_tolerance', 0.2)
    short_weight: float = param_field('scan_check/short_weight', 1.0)
    min_range: float = param_field('scan_check/min_range', 0.0)
    open_beams: bool = param_field('scan_check/open_beams', False)
    unmapped_ends: bool = param_field('scan_check/unmapped_ends', False)
    max_beams: int = param_field('scan_check/max_beams', 60)
    min_beams: int = param_field('scan_check/min_beams', 10)
    stamp_tolerance: float = param_field('scan_check/stamp_tolerance', 0.01)
    hold_readings: int = param_field('scan_check/hold_readings', 10)
    through_lost: float = param_field('scan_check/through_lost', 1.0)
    through_min_reach: float = param_field('scan_check/through_min_reach', 0.2)
    burst_count: int = param_field('scan_check/burst_count', 0)
    burst_window: int = param_field('scan_check/burst_window', 5)
    burst_share: float = param_field('scan_check/burst_share', 0.3)
    burst_min_span: float = param_field('scan_check/burst_min_span', 0.0)
    sure_count: int = param_field('scan_check/sure_count', 0)
    sure_window: int = param_field('scan_check/sure_window', 4)
    sure_prob: float = param_field('scan_check/sure_prob', 0.99999)
    strip_count: int = param_field('strip_check/count', 0)
    strip_readings: int = param_field('strip_check/readings', 5)
    strip_window: float = param_field('strip_check/window', 10.0)
    strip_min_points: int = param_field('strip_check/min_points', 100)
    strip_ratio: float = param_field('strip_check/ratio', 0.6)
    strip_min_distance: float = param_field('strip_check/min_distance', 1.0)
    strip_slack_xy: float = param_field('strip_check/slack_xy', 0.0)
    strip_slack_yaw: float = param_field('strip_check/slack_yaw', 0.0)
    odom_frame: str = param_field('strip_check/odom_frame', 'odom')

    def validate(self):
        """Raise one ConfigError naming every bad key and value."""
        check = Checker(self)
        check.in_range('tier0_normal_prior', 0.0, 1.0, low_open=True, high_open=True)
        check.in_range('prob_thresh', 0.0, 1.0, low_open=True, high_open=True)
        self._check_four(check, 'slice_mu', lambda v: v >= 0, 'be >= 0')
        self._check_four(check, 'slice_sigma', _usable_sigma, SIGMA_MUST)
        self._check_pair(check, 'scan_miss_mu', lambda v: 0 <= v <= 1, 'be in [0, 1]')
        self._check_pair(check, 'scan_miss_sigma', _usable_sigma, SIGMA_MUST)
        check.require(isinstance(self.scan_check, bool), 'scan_check', 'be true or false')
        check.frame('base_frame')
        check.positive('hit_tolerance')
        check.in_range('short_weight', 0.0, 1.0)
        check.non_negative('min_range')
        check.require(isinstance(self.open_beams, bool), 'open_beams', 'be true or false')
        check.require(isinstance(self.unmapped_ends, bool), 'unmapped_ends',
                      'be true or false')
        check.positive_int('max_beams')
        check.positive_int('min_beams')
        check.positive_int('hold_readings')
        check.non_negative_int('settle_readings')
        check.positive('stamp_tolerance')
        check.in_range('through_lost', 0.0, 1.0, low_open=True)
        check.in_range('through_min_reach', 0.0, 1.0, low_open=True)
        check.non_negative_int('burst_count')
        check.positive_int('burst_window')
        check.in_range('burst_share', 0.0, 1.0, high_open=True)
        check.non_negative('burst_min_span')
        self._check_count('burst_count', 'burst_window', 7, check)
        check.non_negative_int('sure_count')
        check.positive_int('sure_window')
        check.in_range('sure_prob', 0.0, 1.0, high_open=True)
        self._check_count('sure_count', 'sure_window', 8, check)
        if _is_count(self.sure_count) and self.sure_count > 0 and \
                _is_number(self.sure_prob) and 0.0 <= self.sure_prob < 1.0 and \
                _is_number(self.prob_thresh) and 0.0 < self.prob_thresh < 1.0 and \
                self.sure_prob < self.prob_thresh:
            check.problem('scan_check/sure_prob=%r must be >= '
                          'modified_prob_classifier/prob_thresh=%r (a sure reading is a lost '
                          'one)' % (self.sure_prob, self.prob_thresh))
        check.non_negative_int('strip_count')
        check.positive_int('strip_readings')
        self._check_count('strip_count', 'strip_readings', 9, check)
        check.in_range('strip_window', 0.0, 60.0, low_open=True)
        check.positive_int('strip_min_points')
        check.in_range('strip_ratio', 0.0, 1.0, low_open=True)
        check.non_negative('strip_min_distance')
        check.in_range('strip_slack_xy', 0.0, 0.5)
        check.in_range('strip_slack_yaw', 0.0, 0.5)
        check.frame('odom_frame')
        if _is_count(self.min_beams) and _is_count(self.max_beams) and \
                self.min_beams > self.max_beams:
            check.problem('scan_check/min_beams=%r must be <= scan_check/max_beams=%r (never '
                          'more beams than that are used)' % (self.min_beams, self.max_beams))
        for name in ('queue_min', 'window_meta_tier2_lost', 'window_meta_tier0_normal'):
            check.positive_int(name)
        check.in_range('ratio_thresh_detections_tier2_lost', 0.0, 1.0, high_open=True)
        # Compare the two only when each is a valid integer on its own (one problem per cause).
        if _is_count(self.queue_min) and _is_count(self.window_meta_tier2_lost) and \
                self.queue_min > self.window_meta_tier2_lost:
            # The queue holds at most window_meta_tier2_lost readings, so a larger queue_min
            # could never be reached and the detector would report normal forever.
            check.problem(
                'lost_detector/queue_min=%r must be <= lost_detector/window_meta_tier2_lost=%r '
                '(the queue never holds more readings than that window)'
                % (self.queue_min, self.window_meta_tier2_lost))
        check.done()

    def _check_count(self, count, window, rule, check):
        """A problem when the count of a rule (7-9) is above the readings it looks at."""
        value, limit = getattr(self, count), getattr(self, window)
        if _is_count(value) and _is_count(limit) and value > limit:
            fields = {f.name: param_name(f) for f in dataclasses.fields(self)}
            check.problem('%s=%r must be <= %s=%r (rule %d never looks at more readings than '
                          'that)' % (fields[count], value, fields[window], limit, rule))

    def _check_four(self, check, name, ok, must):
        """Check that field ``name`` holds exactly 4 finite numbers, each satisfying ``ok``."""
        _check_numbers(check, getattr(self, name), name, 4,
                       '[xy-normal, theta-normal, xy-lost, theta-lost]', ok, must)

    def _check_pair(self, check, name, ok, must):
        """Check that field ``name`` holds exactly 2 finite numbers, each satisfying ``ok``."""
        _check_numbers(check, getattr(self, name), name, 2, '[normal, lost]', ok, must)


def _check_numbers(check, values, name, count, layout, ok, must):
    """Record a problem unless ``values`` is ``count`` finite numbers, each satisfying ``ok``."""
    if not isinstance(values, (tuple, list)) or len(values) != count:
        check.require(False, name, 'be a list of exactly %d numbers %s' % (count, layout))
        return
    if not all(_is_number(v) and math.isfinite(v) for v in values):
        check.require(False, name, 'hold %d finite numbers' % count)
        return
    check.require(all(ok(v) for v in values), name, 'have every value %s' % must)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def covariance_features(cov36):
    """The classifier's two features from a row-major 6x6 pose covariance.

    Args:
        cov36: 36 numbers, the covariance of (x, y, z, roll, pitch, yaw) in row-major order, as
            in geometry_msgs/PoseWithCovariance.

    Returns:
        ``(sigma_xy_major, sigma_theta)``: the standard deviation along the largest eigenvector
        of the x-y block [m] and the standard deviation of yaw [rad].

    Raises:
        CovarianceError: wrong length or non-numeric entries, NaN or infinite entries, a
            non-symmetric matrix, a negative variance on the diagonal (beyond round-off), or
            an x-y block that is not positive semidefinite.
    """
    try:
        flat = np.asarray(cov36, dtype=float).ravel()
    except (TypeError, ValueError) as error:
        raise CovarianceError('covariance is not numeric: %s' % error, 'not_numeric') from None
    if flat.size != 36:
        raise CovarianceError('covariance has %d entries, expected 36 (6x6)' % flat.size,
                              'length')
    if not np.all(np.isfinite(flat)):
        bad = [int(i) for i in np.flatnonzero(~np.isfinite(flat))]
        raise CovarianceError('covariance has NaN or infinite entries at indices %s' % bad,
                              'not_finite')
    cov = flat.reshape(6, 6)
    scale = float(np.max(np.abs(cov)))
    asym = float(np.max(np.abs(cov - cov.T)))
    if asym > REL_TOL * scale:
        row, col = np.unravel_index(int(np.argmax(np.abs(cov - cov.T))), cov.shape)
        raise CovarianceError(
            'covariance is not symmetric: [%d][%d]=%g but [%d][%d]=%g'
            % (row, col, cov[row, col], col, row, cov[col, row]), 'not_symmetric')
    diag = np.diag(cov)
    # amcl computes the yaw variance as -2 ln R of the particles' mean heading vector, which
    # round-off puts a hair below 0 for a cloud with one heading (e.g. after a re-seed with
    # no yaw spread): tolerated, as the x-y block's round-off is below, and read as 0.
    if np.any(diag < -REL_TOL * scale):
        index = int(np.argmin(diag))
        raise CovarianceError('covariance has a negative variance on the diagonal: '
                              '[%d][%d]=%g' % (index, index, diag[index]), 'negative_variance')
    block = np.array([[flat[_XX], flat[_XY]], [flat[_YX], flat[_YY]]])
    low, high = np.linalg.eigvalsh(block)
    if low < -REL_TOL * max(abs(high), abs(low)):
        raise CovarianceError(
            'x-y covariance block [[%g, %g], [%g, %g]] is not positive semidefinite '
            '(eigenvalue %g)' % (block[0, 0], block[0, 1], block[1, 0], block[1, 1], low),
            'not_psd')
    return math.sqrt(max(float(high), 0.0)), math.sqrt(max(float(flat[_YAWYAW]), 0.0))


#: scikit-learn before 1.0 (Ubuntu 20.04, Noetic's platform, ships 0.22) keeps a GaussianNB's
#: variances in ``sigma_``; 1.0 and later in ``var_`` (1.0 and 1.1 read ``sigma_`` off it).
VARIANCES_IN_SIGMA = int(sklearn.__version__.split('.')[0]) < 1


def classifier_variances(gnb):
    """The per-class feature variances of a fitted GaussianNB, whichever scikit-learn."""
    return gnb.sigma_ if VARIANCES_IN_SIGMA else gnb.var_


def build_classifier(config, scan=False, covariance=True):
    """A scikit-learn GaussianNB whose parameters are set from ``config``, not trained.

    Classes are ``[0, 1]`` = [normal, lost]; features are (sigma_xy_major, sigma_theta), and
    with ``scan`` the scan miss fraction as a third; without ``covariance`` (and with ``scan``)
    the scan miss fraction alone.
    """
    mu = np.asarray(config.slice_mu, dtype=float).reshape(2, 2)
    sigma = np.asarray(config.slice_sigma, dtype=float).reshape(2, 2)
    if not covariance:
        mu, sigma = mu[:, :0], sigma[:, :0]
    if scan:
        mu = np.column_stack([mu, np.asarray(config.scan_miss_mu, dtype=float)])
        sigma = np.column_stack([sigma, np.asarray(config.scan_miss_sigma, dtype=float)])
    gnb = GaussianNB()
    gnb.classes_ = np.array([0, 1])
    gnb.theta_ = mu
    if VARIANCES_IN_SIGMA:
        gnb.sigma_ = sigma ** 2
    else:
        gnb.var_ = sigma ** 2
    gnb.class_prior_ = np.array([config.tier0_normal_prior, 1.0 - config.tier0_normal_prior])
    gnb.n_features_in_ = mu.shape[1]
    # epsilon_ is the variance smoothing GaussianNB adds during fit(); the YAML variances are
    # meant exactly, so none is added.
    gnb.epsilon_ = 0.0
    return gnb


def check_features(features):
    """Return ``features`` as a tuple of finite non-negative floats or raise ValueError.

    ``features`` is (sigma_xy, sigma_theta) or (sigma_xy, sigma_theta, miss); a third value of
    None (no scan feature for this reading) is dropped, and a miss fraction must lie in [0, 1].
    """
    try:
        values = list(features)
        if len(values) == 3 and values[2] is None:
            values = values[:2]
        if len(values) not in (2, 3):
            raise ValueError
        values = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        raise ValueError('features must be (sigma_xy, sigma_theta[, scan miss fraction]), '
                         'got %r' % (features,)) from None
    if not all(math.isfinite(v) and v >= 0 for v in values):
        raise ValueError('features must be finite and >= 0, got %r' % (values,))
    if len(values) == 3 and values[2] > 1:
        raise ValueError('the scan miss fraction must be in [0, 1], got %r' % values[2])
    return values


class LostDetector:
    """Tiers (normal, confused, lost) from a stream of covariance features.

    See the module docstring for the exact rules. Not thread-safe: the node serialises calls.

    Args:
        config: a validated :class:`LostDetectorConfig`.

    Attributes:
        last_probability: P(lost) of the latest classified reading, as :meth:`update` used it
            (while settling: of the scan feature alone; None after a reset).
        p_lost: the P(lost) the latest reading stands for: its own, or, when rule 0 held a
            covariance-only reading back, that of the scan reading whose lost still stands
            (None after a reset). lost_service reads it on ``~p_lost``.
    """

    def __init__(self, config):
        """Build the classifier from ``config`` and start at tier 0 with an empty queue."""
        self._config = config
        # keyed by the number of features: scan alone, covariance, covariance and scan
        self._classifiers = {1: build_classifier(config, True, covariance=False),
                             2: build_classifier(config), 3: build_classifier(config, True)}
        self._queue = deque(maxlen=config.window_meta_tier2_lost)
        self._burst = deque(maxlen=config.burst_window)
        self._sure = deque(maxlen=config.sure_window)
        self._strip = deque(maxlen=config.strip_readings)
        self._normal_run = 0
        self._tier = Tier.NORMAL
        self._scan_says_lost = None
        self._held = 0
        self._scan_probability = None
        self._readings = 0
        self.last_probability = None
        self.p_lost = None

    @property
    def tier(self):
        """The tier returned by the last update (NORMAL after construction or reset)."""
        return self._tier

    @property
    def settling(self):
        """True while the next reading is classified on the scan alone (see the module
        docstring)."""
        return self._readings < self._config.settle_readings

    @property
    def queue_length(self):
        """How many labels the queue holds."""
        return len(self._queue)

    @property
    def lost_ratio(self):
        """Fraction of lost labels in the queue (0 when it is empty)."""
        return sum(self._queue) / len(self._queue) if self._queue else 0.0

    def probability_lost(self, features):
        """P(lost | features) from the Gaussian Naive Bayes classifier.

        Args:
            features: (sigma_xy_major [m], sigma_theta [rad]), finite and >= 0, optionally
                followed by the scan miss fraction in [0, 1] (or None: not available).

        Raises:
            ValueError: for features that are not that.
        """
        return self._probability(check_features(features))

    def probability_lost_scan(self, miss):
        """P(lost | scan miss fraction) on the scan feature alone (what a settling detector
        uses).

        Raises:
            ValueError: for a miss fraction that is not a number in [0, 1].
        """
        values = check_features((0.0, 0.0, miss))
        if len(values) != 3:
            raise ValueError('a scan miss fraction is needed, got None')
        return self._probability(values[2:])

    def _probability(self, values):
        """P(lost) of checked feature values (1: the scan alone, 2 or 3 of them)."""
        return float(self._classifiers[len(values)].predict_proba(np.array([values]))[0, 1])

    def is_lost(self, features):
        """Whether one reading is classified lost on all its features: P(lost | features) >
        prob_thresh (what :meth:`update` uses once the detector has settled)."""
        return self.probability_lost(features) > self._config.prob_thresh

    def update(self, features, through=None, span=None, strip=None):
        """Add one reading and return the new tier.

        Args:
            features: (sigma_xy_major [m], sigma_theta [rad]) from :func:`covariance_features`,
                optionally followed by the scan miss fraction (None: not available).
            through: the scan's through share in [0, 1]
                (:func:`~lost_and_found.core.scan_agreement.through_share`), or None (no scan
                feature, or too few beams reached).
            span: how far apart (m) the scan's beams through walls entered them
                (:func:`~lost_and_found.core.scan_agreement.through_span`), or None; only
                rule 7 reads it.
            strip: the reading's strip verdict (True: low; None: none;
                :meth:`~lost_and_found.core.strip_check.StripCheck.verdict`); only rule 9
                reads it.

        Returns:
            The :class:`Tier` for this reading.

        Raises:
            ValueError: for bad features or a bad through share; the detector's state is then
                unchanged.
        """
        values = check_features(features)
        scanned = len(values) == 3
        if through is not None and not (_is_number(through) and 0.0 <= through <= 1.0):
            raise ValueError('through share must be a number in [0, 1] or None, got %r'
                             % (through,))
        if self.settling:
            probability = self._probability(values[2:]) if scanned else None
        else:
            probability = self._probability(values)
        if span is not None and not (_is_number(span) and span >= 0.0):
            raise ValueError('through span must be a number >= 0 or None, got %r' % (span,))
        return self.add(probability, scanned, self.through_says_lost(through),
                        self.burst_says(through, span), strip)

    def burst_says(self, through, span):
        """What a reading with this through share and span (or None) adds to rule 7: None
        (nothing: rule 7 is off, or the reading has no share), or whether it is high."""
        if not self._config.burst_count or through is None:
            return None
        return bool(through > self._config.burst_share and span is not None
                    and span > self._config.burst_min_span)

    def through_says_lost(self, through):
        """Whether a through share (or None) makes a reading lost on its own: above
        ``through_lost``, once the detector has settled (rule 1)."""
        return through is not None and not self.settling and through > self._config.through_lost

    def add(self, probability, scanned, through_lost=False, burst=None, strip=None):
        """Add one already classified reading and return the new tier.

        :meth:`update` classifies and calls this; a replay that has the probabilities already
        (the calibration's grid search) calls it directly, with the scan-only probability
        while :attr:`settling`.

        Args:
            probability: P(lost | features) of the reading (while :attr:`settling`, of its
                scan feature alone), or, only while settling, None for a reading without the
                scan feature (counted, nothing else).
            scanned: whether the reading had the scan feature.
            through_lost: the reading's through share says lost (:meth:`through_says_lost`):
                it is labelled lost whatever ``probability`` says.
            burst: what the reading adds to rule 7 (:meth:`burst_says`); a high one (True) is
                labelled lost too.
            strip: the reading's strip verdict for rule 9 (True: low, False, None: none); a
                low one is labelled lost too (once settled, with rule 9 on).

        Returns:
            The :class:`Tier` for this reading.

        Raises:
            ValueError: for a probability that is not in [0, 1], or None once settled or
                with ``scanned`` (state unchanged).
        """
        if probability is None:
            if not self.settling or scanned:
                raise ValueError('P(lost) is needed once the detector has settled, and for a '
                                 'reading with a scan')
            self._readings += 1
            return self._tier
        probability = float(probability)
        if not 0.0 <= probability <= 1.0:           # also NaN
            raise ValueError('P(lost) must be in [0, 1], got %r' % probability)
        settling = self.settling
        if settling:
            self._burst.clear()
            self._sure.clear()
            self._strip.clear()
        else:
            if burst is not None:
                self._burst.append(bool(burst))
            if scanned and self._config.sure_count:
                self._sure.append(probability > self._config.sure_prob)
            if strip is not None and self._config.strip_count:
                self._strip.append(bool(strip))
        self._readings += 1
        lost = probability > self._config.prob_thresh or bool(through_lost) or \
            (bool(burst) and not settling) or \
            (bool(strip) and not settling and bool(self._config.strip_count))
        self.last_probability = probability
        if scanned:
            self._scan_says_lost, self._held = lost, 0
            self._scan_probability = probability
        elif not lost and self._scan_says_lost and self._held < self._config.hold_readings:
            self._held += 1
            self.p_lost = self._scan_probability    # the scan's verdict still stands
            return self._tier                       # rule 0
        self.p_lost = probability
        # Rule 1: record the label.
        self._queue.append(lost)
        self._normal_run = 0 if lost else self._normal_run + 1
        self._tier = self._decide(lost)
        if self._config.burst_count and sum(self._burst) >= self._config.burst_count:
            self._tier = Tier.LOST                  # rule 7
        if self._config.sure_count and sum(self._sure) >= self._config.sure_count:
            self._tier = Tier.LOST                  # rule 8
        if self._config.strip_count and sum(self._strip) >= self._config.strip_count:
            self._tier = Tier.LOST                  # rule 9
        return self._tier

    def _decide(self, lost):
        """Rules 2-6 of the module docstring, for a reading already queued."""
        config = self._config
        if self._tier == Tier.LOST:
            if self._normal_run >= config.window_meta_tier0_normal:
                self._clear()
                return Tier.NORMAL
            return Tier.LOST
        if len(self._queue) < config.queue_min:
            return Tier.NORMAL
        if self.lost_ratio > config.ratio_thresh_detections_tier2_lost:
            return Tier.LOST
        return Tier.CONFUSED if lost else Tier.NORMAL

    def reset(self):
        """Forget every reading: empty the queue, return to tier 0 and settle again."""
        self._clear()
        self._readings = 0
        self._tier = Tier.NORMAL
        self.last_probability = None
        self.p_lost = None

    def _clear(self):
        # Rules 7-9 forget their readings too: a sticky tier 2 that rule 2 ends must not be
        # raised again at once by readings from before it ended (the readings without a scan
        # or a through share that make up a run of normal ones do not push those out).
        self._queue.clear()
        self._burst.clear()
        self._sure.clear()
        self._strip.clear()
        self._normal_run = 0
        self._scan_says_lost = None
        self._held = 0


#: A scan agrees with the map when the scan feature alone gives P(lost) below this (used by
#: :class:`CovarianceFitWatch` and by tools/adapt_detector.py to pick localized readings).
SCAN_AGREES_BELOW = 0.5


class CovarianceFitWatch:
    """Notices a localizer whose cloud is wider than the YAML's normal class expects.

    The shipped YAML's covariance model is the simulated amcl's; another localizer can be right
    with a cloud several times wider, and the covariance features then read every reading as
    lost. The scan feature tells the two apart: over the latest ``window`` readings whose scan
    agrees with the map (the scan alone gives P(lost) below one half), if at least ``share`` of
    them are lost on the covariance alone, :meth:`add` returns a message once, naming the
    median sigma_xy against the normal class's mean and the tool that adapts the YAML
    (tools/adapt_detector.py). Never more than once per watch: it is advice, not an alarm.

    Args:
        config: the detector's :class:`LostDetectorConfig`.
        window: readings with an agreeing scan the verdict is taken over (>= 1; default
            :attr:`WINDOW`, a few minutes of driving).
        share: the share of them lost on the covariance alone that is a misfit, in (0, 1]
            (default :attr:`SHARE`).
    """

    WINDOW = 100
    SHARE = 0.8

    def __init__(self, config, window=None, share=None):
        """Keep the classes' parameters and start empty."""
        self._config = config
        mu = np.asarray(config.slice_mu, dtype=float).reshape(2, 2)
        sigma = np.asarray(config.slice_sigma, dtype=float).reshape(2, 2)
        self._covariance = (mu, sigma)
        self._scan_only = (np.asarray(config.scan_miss_mu, dtype=float).reshape(2, 1),
                           np.asarray(config.scan_miss_sigma, dtype=float).reshape(2, 1))
        self._recent = deque(maxlen=self.WINDOW if window is None else window)
        self._share = self.SHARE if share is None else share
        self.told = False

    def _p_lost(self, classes, values):
        """P(lost | values) of a Gaussian Naive Bayes model with the YAML's prior, as
        :func:`build_classifier`'s would give, without scikit-learn's per-call cost (this runs
        on every reading beside the detector's own)."""
        mu, sigma = classes
        x = np.asarray(values, dtype=float)
        prior = np.array([self._config.tier0_normal_prior,
                          1.0 - self._config.tier0_normal_prior])
        with np.errstate(all='ignore'):   # an absurd sigma: NaN, which counts as not lost
            log = np.log(prior) - np.sum(np.log(sigma) + 0.5 * ((x - mu) / sigma) ** 2, axis=1)
        return float(1.0 / (1.0 + math.exp(min(log[0] - log[1], 700.0))))

    def add(self, features, miss):
        """Take one reading; return the message the first time the misfit shows, else None.

        Args:
            features: (sigma_xy, sigma_theta), finite and >= 0.
            miss: the scan miss fraction in [0, 1], or None (the reading is not used).
        """
        if self.told or miss is None:
            return None
        values = check_features(tuple(features[:2]) + (miss,))
        if self._p_lost(self._scan_only, values[2:]) >= SCAN_AGREES_BELOW:
            return None
        lost = self._p_lost(self._covariance, values[:2]) > self._config.prob_thresh
        self._recent.append((lost, values[0]))
        if len(self._recent) < self._recent.maxlen:
            return None
        lost_count = sum(1 for lost, _ in self._recent if lost)
        if lost_count < self._share * len(self._recent):
            return None
        self.told = True
        median = float(np.median([sigma for _, sigma in self._recent]))
        return ('the localizer\'s cloud is wider than this YAML\'s normal class expects while '
                'the scan agrees with the map: %d of the last %d readings with an agreeing scan '
                'are lost on the covariance alone (median sigma_xy %.2f m, the normal class '
                '%.2f m), so the detector will read lost while the robot is localized. Adapt '
                'the YAML to this localizer from a bag of localized driving: '
                'tools/adapt_detector.py (README, lost_detector)' % (
                    lost_count, len(self._recent), median, self._config.slice_mu[0]))


def stamp_order(last_stamp, stamp):
    """How a message stamp relates to the last accepted one.

    Stamps are float seconds; 0 means "not stamped" and is never compared.

    Returns:
        ``'new'`` (later, or either stamp unknown), ``'duplicate'`` (the same non-zero stamp:
        the same amcl update seen twice, e.g. a latched topic re-delivered) or ``'backwards'``
        (earlier: the clock jumped back, e.g. a bag loop or a restarted simulator).
    """
    if last_stamp is None or not last_stamp or not stamp:
        return 'new'
    if stamp == last_stamp:
        return 'duplicate'
    return 'backwards' if stamp < last_stamp else 'new'
