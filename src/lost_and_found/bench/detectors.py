"""The lost detectors compared by the benchmarks, run over one recorded amcl pose stream.

Each detector maps every amcl_pose reading to a tier (0 normal, 1 confused, 2 lost):

- ``lost_detector``: this package's detector (:class:`lost_and_found.core.lost_detector.
  LostDetector`) with a given YAML, as the node runs it, reset at every pose fix as
  lost_service resets it (the replay does not model lost_service's exception: no reset while
  LOCALIZING).
- ``amcl_diag``: amcl's diagnostics rule: tier 2 when the standard deviation of x or y exceeds
  0.2 m or that of yaw exceeds 0.1 rad (amcl's ``std_warn_level_x/y/yaw`` defaults).
- ``nav2_islocalized``: the historic Nav2 ``IsLocalized`` condition: localized when
  var_x < 0.25, var_y < 0.25 and var_yaw < pi/4; tier 2 otherwise.

The two rules know no tier 1. A reading is ``(t, var_x, var_y, cov_xy, var_yaw)`` in s, m^2,
m^2, m^2, rad^2, taken from the covariance of geometry_msgs/PoseWithCovarianceStamped.
"""
import bisect
import math

import numpy as np
import yaml

from lost_and_found.core.config import config_from_params
from lost_and_found.core.geometry import wrap_angle
from lost_and_found.core.lost_detector import LostDetector, LostDetectorConfig, \
    covariance_features
from lost_and_found.core.scan_agreement import through_share

#: The estimate is wrong (delocalized) beyond these (m, rad)...
LOST_XY, LOST_YAW = 0.5, 0.35
#: ...and right (recovered, DESIGN.md §5) within these.
FOUND_XY, FOUND_YAW = 0.45, 0.35

#: The lost_detector numbers that decide how its scan feature is computed: a stream records
#: them with the feature, since a feature recorded one way cannot be scored another way.
SCAN_CHECK_KEYS = ('hit_tolerance', 'short_weight', 'min_range', 'open_beams', 'unmapped_ends',
                   'max_beams', 'min_beams')
#: What streams recorded before the stream said so were computed with (the node's numbers then:
#: every missed end point counted, every beam with a return used).
LEGACY_SCAN_CHECK = {'hit_tolerance': 0.2, 'short_weight': 1.0, 'min_range': 0.0,
                     'open_beams': False, 'unmapped_ends': False, 'max_beams': 60,
                     'min_beams': 10}
#: The keys streams wrote only later, and what the streams before them used.
LATER_KEYS = ('min_range', 'open_beams', 'unmapped_ends')
#: The ``scan_check/min_range`` values (m) at which the benchmarks also record the two kinds of
#: misses of every reading, without and with open beams (``scan_check/open_beams``), so that
#: the calibration can choose among them without recording again (``scan_near`` and
#: ``scan_open`` in the streams).
MIN_RANGES = (0.0, 0.75, 1.0, 1.25, 1.5, 2.0)

#: The detectors, in table order.
NAMES = ('lost_detector', 'amcl_diag', 'nav2_islocalized')

#: amcl's diagnostic warning levels (standard deviations).
AMCL_STD_XY = 0.2
AMCL_STD_YAW = 0.1
#: Nav2's historic IsLocalized tolerances (variances, as that condition compares them).
NAV2_VAR_XY = 0.25
NAV2_VAR_YAW = math.pi / 4


def scan_check_of(config):
    """The :data:`SCAN_CHECK_KEYS` of a LostDetectorConfig as a dict (for a stream file)."""
    return {key: getattr(config, key) for key in SCAN_CHECK_KEYS}


def detector_map(grid):
    """The lost detector's DistanceMap of a map_server map (a sim.gridmap.GridMap), as the node
    builds it from the OccupancyGrid map_server publishes: its unknown cells known as such
    (``scan_check/unmapped_ends`` reads them)."""
    from lost_and_found.core.scan_agreement import DistanceMap
    return DistanceMap(grid.occupied, grid.resolution, grid.origin, free=grid.free)


def recorded_scan_check(recorded):
    """A stream's ``scan_check`` dict (None: a stream from before streams said so,
    :data:`LEGACY_SCAN_CHECK`) with the :data:`LATER_KEYS`, which streams wrote only later,
    filled in: those streams used every beam with a return."""
    if recorded is None:
        return dict(LEGACY_SCAN_CHECK)
    return dict({key: LEGACY_SCAN_CHECK[key] for key in LATER_KEYS}, **recorded)


def check_min_ranges(value, source):
    """A stream's ``min_ranges`` as a tuple of floats.

    Raises:
        ValueError: naming ``source`` unless ``value`` is a list of finite numbers >= 0 (m).
    """
    ok = isinstance(value, (list, tuple)) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
        for v in value)
    if not ok:
        raise ValueError('%s: min_ranges=%r: must be a list of numbers >= 0 (m)'
                         % (source, value))
    return tuple(float(v) for v in value)


def near_pairs(value, count, where, column='scan_near'):
    """One ``scan_near`` (or ``scan_open``: ``column``) cell of a stream: None, or ``count``
    ``(through, short)`` pairs of fractions in [0, 1] (each pair or None), as a tuple.

    Raises:
        ValueError: naming ``where`` and the bad value.
    """
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != count:
        raise ValueError('%s: %s=%r: must be null or %d [through, short] pairs (one per '
                         'min_ranges value)' % (where, column, value, count))
    out = []
    for pair in value:
        if pair is None:
            out.append(None)
            continue
        ok = isinstance(pair, (list, tuple)) and len(pair) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in pair)
        if not ok:
            raise ValueError('%s: %s: %r is not a [through, short] pair' % (where, column, pair))
        if not all(0.0 <= v <= 1.0 for v in pair):
            raise ValueError('%s: %s: %r: fractions must be in [0, 1]' % (where, column, pair))
        out.append((float(pair[0]), float(pair[1])))
    return tuple(out)


def split_at(through, short, near, min_ranges, recorded_min_range, min_range,
             same_beams=True):
    """The ``(through, short)`` miss fractions of one recorded reading at ``min_range``, or
    None when the reading has no scan feature there.

    Args:
        through, short: the fractions recorded at the stream's own ``recorded_min_range``
            (None: no feature).
        near: the ``(through, short)`` pairs (or None) recorded at each of ``min_ranges``
            with the ``open_beams`` wanted (the stream's ``scan_near`` or ``scan_open``), or
            None.
        min_ranges: the stream's candidate ``min_range`` values.
        recorded_min_range: the ``min_range`` the stream's own fractions were measured at.
        min_range: the one wanted; must be ``recorded_min_range`` or one of ``min_ranges``
            (:func:`check_scan_check` says so first).
        same_beams: the ``open_beams`` wanted is the stream's own (False: only ``near`` has
            the reading as wanted).

    Raises:
        ValueError: ``min_range`` was not recorded, or ``near`` does not hold one entry per
            ``min_ranges`` value.
    """
    own = min_range == recorded_min_range and same_beams
    if own or near is None:
        return None if through is None or not own else (through, short)
    if min_range not in min_ranges:
        raise ValueError('scan_check/min_range=%r: not recorded (the stream has %r and %s)'
                         % (min_range, recorded_min_range, list(min_ranges)))
    if len(near) != len(min_ranges):
        raise ValueError('scan_near holds %d pairs for %d min_ranges %r'
                         % (len(near), len(min_ranges), list(min_ranges)))
    pair = near[list(min_ranges).index(min_range)]
    return None if pair is None else (pair[0], pair[1])


class StreamMisses:
    """The miss fraction of every row of a recorded stream, as a config computes it.

    Args:
        scan_check: the stream's ``scan_check`` dict (None: :data:`LEGACY_SCAN_CHECK`).
        fields: the stream's column names.
        min_ranges: the stream's ``min_ranges`` (used when it has the ``scan_near`` column,
            and ``scan_open`` for a config with ``open_beams``).
        config: the LostDetectorConfig to score.
        source: names the stream in error messages.

    Raises:
        ValueError: the stream's scan feature cannot be computed as ``config`` computes it
            (:func:`check_scan_check`), or its ``min_ranges`` is bad.
    """

    def __init__(self, scan_check, fields, min_ranges, config, source):
        """Check the stream against ``config`` once."""
        self._field = {name: i for i, name in enumerate(fields)}
        self._split = 'scan_through' in self._field and 'scan_short' in self._field
        self._min_ranges = check_min_ranges(min_ranges or [], source) \
            if 'scan_near' in self._field else ()
        self._source = source
        self._recorded = recorded_scan_check(scan_check)
        check_scan_check(self._recorded, config, source, reweighable=self._split,
                         min_ranges=self._min_ranges, open_recorded='scan_open' in self._field)
        self._config = config
        self._column = 'scan_open' if config.open_beams else 'scan_near'

    def miss(self, row, index=0):
        """The miss fraction of row ``index``, or None (no scan feature, or the config's scan
        check is off).

        Raises:
            ValueError: naming the stream and the row when its ``scan_near`` or
                ``scan_open`` cell is bad.
        """
        return self.values(row, index)[0]

    def values(self, row, index=0):
        """``(miss, through, short)`` of row ``index`` as the config computes them: the miss
        fraction and the through and short fractions it was weighed from (each None without a
        scan feature or with the config's scan check off; the two fractions also None for a
        stream that did not record its misses by kind).

        Raises:
            ValueError: as :meth:`miss`.
        """
        from lost_and_found.core.scan_agreement import weighted_miss
        field = self._field
        if not self._config.scan_check:
            return None, None, None
        if not self._split:
            return (row[field['scan_miss']] if 'scan_miss' in field else None), None, None
        near = near_pairs(row[field[self._column]], len(self._min_ranges),
                          '%s: reading %d' % (self._source, index), self._column) \
            if self._min_ranges and self._column in field else None
        pair = split_at(row[field['scan_through']], row[field['scan_short']], near,
                        self._min_ranges, self._recorded['min_range'], self._config.min_range,
                        self._config.open_beams == self._recorded['open_beams'])
        if pair is None:
            return None, None, None
        return (weighted_miss(pair[0], pair[1], self._config.short_weight),) + tuple(pair)

    def span(self, row, index=0):
        """The recorded through span of row ``index`` as the config measures it, or None: the
        stream has none, the config's scan check is off, or the stream did not record spans
        as the config measures its beams (:func:`span_source`).

        Raises:
            ValueError: naming the stream and the row when its ``scan_spans`` cell is not
                null or two values.
        """
        source = self._span_source()
        if source is None:
            return None
        column, side = source
        cell = row[self._field[column]]
        if side is None or cell is None:
            return cell
        if not isinstance(cell, (list, tuple)) or len(cell) != 2:
            raise ValueError('%s: reading %d: scan_spans=%r: must be null or two spans, '
                             'without and with the open beams' % (self._source, index, cell))
        return cell[side]

    def has_spans(self):
        """Whether the stream has a column of the through span as the config measures it
        (without one :meth:`span` is None on every row, and a burst rule never fires)."""
        return self._span_source() is not None

    def _span_source(self):
        if not self._config.scan_check:
            return None
        return span_source(self._recorded, self._config.min_range, self._config.open_beams,
                           'scan_span' in self._field, 'scan_spans' in self._field)


def span_source(recorded, min_range, open_beams, has_span, has_pair):
    """Where a stream keeps the through span measured at ``min_range`` with or without the
    open beams: ``('scan_span', None)`` (its span as its ``scan_check`` measured it),
    ``('scan_spans', 0 or 1)`` (its pair of spans without and with the open beams, at its
    own ``min_range``), or None: it recorded spans only at its own ``min_range``.

    Args:
        recorded: the stream's ``scan_check`` dict (``min_range``, ``open_beams``).
        has_span: the stream has the ``scan_span`` column.
        has_pair: the stream has the ``scan_spans`` column.
    """
    if min_range != recorded['min_range']:
        return None
    if bool(open_beams) == bool(recorded['open_beams']) and has_span:
        return 'scan_span', None
    if has_pair:
        return 'scan_spans', int(bool(open_beams))
    return None


def check_scan_check(recorded, config, source, reweighable=False, min_ranges=(),
                     open_recorded=False):
    """Raise ValueError when a stream's scan feature was not computed the way ``config``
    computes it (only while ``config`` uses the scan check at all).

    Args:
        recorded: the stream's ``scan_check`` dict (None: a stream from before streams said
            so, :data:`LEGACY_SCAN_CHECK`).
        config: the LostDetectorConfig to score.
        source: names the stream in the message.
        reweighable: the stream recorded its misses by kind, so any ``short_weight`` can be
            scored on it.
        min_ranges: the ``min_range`` values the stream also recorded its misses at (by
            kind), without open beams, so any of them can be scored on it...
        open_recorded: ...and with them too (``scan_check/open_beams`` either way).
    """
    recorded = recorded_scan_check(recorded)
    wanted = scan_check_of(config)
    free = {'short_weight'} if reweighable else set()
    if config.min_range in min_ranges and (open_recorded or not config.open_beams):
        free.update(('min_range', 'open_beams'))
    differ = [key for key in SCAN_CHECK_KEYS if recorded.get(key) != wanted[key]
              and key not in free]
    if config.scan_check and differ:
        def listed(values):
            return ', '.join('scan_check/%s=%r' % (k, values.get(k)) for k in differ)
        raise ValueError('%s: its scan feature was recorded with %s, the config asks for %s: '
                         'record it again with that config (bench --detector-config)' % (
                             source, listed(recorded), listed(wanted)))


def pose_error(estimate, truth):
    """(xy error m, |yaw error| rad) between two (x, y, yaw) poses."""
    return (math.hypot(estimate[0] - truth[0], estimate[1] - truth[1]),
            abs(float(wrap_angle(estimate[2] - truth[2]))))


def is_wrong(error):
    """The estimate is off (delocalized) by this (xy, yaw) error."""
    return error[0] > LOST_XY or error[1] > LOST_YAW


def is_right(error):
    """The estimate is right (DESIGN.md §5 tolerances) by this (xy, yaw) error."""
    return error[0] <= FOUND_XY and error[1] <= FOUND_YAW


def nearest_index(times, t):
    """Index of the entry of the sorted ``times`` nearest to ``t`` (the earlier one on a tie).

    A binary search on the sequence as it is (a list is not copied into an array), so a
    growing log can be searched on every tick.
    """
    i = bisect.bisect_left(times, t)
    if i > 0 and (i == len(times) or t - times[i - 1] <= times[i] - t):
        i -= 1
    return i


def reading_errors(readings, truth):
    """(xy error m, |yaw error| rad) of every reading (t, x, y, yaw, ...) against the ground
    truth [(t, x, y, yaw)] nearest in time (``truth`` not empty)."""
    times = [p[0] for p in truth]
    return [pose_error(r[1:4], truth[nearest_index(times, r[0])][1:4]) for r in readings]


def reading_from_covariance(t, cov36):
    """A reading from a row-major 6x6 covariance."""
    return (float(t), float(cov36[0]), float(cov36[7]), float(cov36[1]), float(cov36[35]))


def covariance_of(reading):
    """The 36-number covariance of a reading (the pose entries only, zeros elsewhere)."""
    _, vx, vy, cxy, vyaw = reading[:5]
    cov = [0.0] * 36
    cov[0], cov[7], cov[1], cov[6], cov[35] = vx, vy, cxy, cxy, vyaw
    return cov


def load_detector_config(path):
    """A validated LostDetectorConfig from a lost_detector YAML (the node's private params).

    Raises:
        ValueError: naming the file when it cannot be read or holds bad values.
    """
    try:
        with open(path) as stream:
            text = stream.read()
    except OSError as error:
        raise ValueError('%s: %s' % (path, error)) from None
    return config_from_text(text, path)


def config_from_text(text, name):
    """A validated LostDetectorConfig from the text of a lost_detector YAML called ``name``.

    Raises:
        ValueError: naming ``name`` when the text is not YAML or holds bad values.
    """
    try:
        params = yaml.safe_load(text) or {}
        if not isinstance(params, dict):
            raise ValueError('not a YAML mapping of the node\'s parameters (it is a %s)'
                             % type(params).__name__)
        config = config_from_params(LostDetectorConfig, params)
    except yaml.YAMLError as error:
        raise ValueError('%s: %s' % (name, error)) from None
    except ValueError as error:
        raise ValueError('%s: %s' % (name, error)) from None
    return config


def amcl_diag_tier(reading):
    """2 when amcl's diagnostics would warn about this covariance, else 0."""
    _, vx, vy, _, vyaw = reading[:5]
    return 2 if (math.sqrt(max(vx, 0.0)) > AMCL_STD_XY or math.sqrt(max(vy, 0.0)) > AMCL_STD_XY
                 or math.sqrt(max(vyaw, 0.0)) > AMCL_STD_YAW) else 0


def nav2_tier(reading):
    """0 when Nav2's historic IsLocalized holds for this covariance, else 2."""
    _, vx, vy, _, vyaw = reading[:5]
    return 0 if (vx < NAV2_VAR_XY and vy < NAV2_VAR_XY and vyaw < NAV2_VAR_YAW) else 2


def reset_indices(times, resets):
    """Indices of the readings before which the detector is reset: for every reset time, the
    first reading at or after it (a reset after the last reading is left out)."""
    times = np.asarray(times, dtype=float)
    return frozenset(int(i) for i in np.searchsorted(times, sorted(resets), side='left')
                     if i < len(times))


def lost_detector_tiers(readings, config, resets=(), strips=None):
    """The tier of every reading for a LostDetector built from ``config`` (one run, in order).

    A reading the detector refuses (bad covariance) keeps the previous tier, as the node does.
    A sixth value of a reading is its scan miss fraction (None: none), used only when the
    config's scan check is on, as in the node; a seventh and eighth, its scan's through and
    short miss fractions (None: none), give the detector its through share
    (``scan_check/through_lost``), and a ninth its through span (None: none; the burst rule,
    ``scan_check/burst_count``). ``resets`` are the times of pose fixes (an
    initial pose from a person or a fiducial): lost_service resets the detector on each (but
    not while LOCALIZING, which the replay does not model), so the replay does too, before the
    first reading at or after it (fix times are the publisher's clock, readings carry amcl's
    scan stamps: a reading may fall on the other side of a reset). ``strips``: each reading's
    strip verdict for rule 9 (:func:`strip_verdicts`), or None (none at all).
    """
    detector = LostDetector(config)
    before = reset_indices([r[0] for r in readings], resets)
    tiers = []
    for index, reading in enumerate(readings):
        if index in before:
            detector.reset()
        miss = reading[5] if len(reading) > 5 and config.scan_check else None
        through = through_share(reading[6], reading[7], config.through_min_reach) \
            if miss is not None and len(reading) > 7 and reading[6] is not None \
            and reading[7] is not None else None
        span = reading[8] if through is not None and len(reading) > 8 else None
        try:
            features = covariance_features(covariance_of(reading)) + (miss,)
            strip = strips[index] if strips is not None else None
            tiers.append(int(detector.update(features, through, span, strip)))
        except ValueError:
            tiers.append(int(detector.tier))
    return tiers


def strip_verdicts(poses, returns, distance_map, config, resets=()):
    """Rule 9's strip verdict of every reading, as the lost_detector node gives them.

    Args:
        poses: each reading's ``(t, x, y, yaw)`` (amcl's stamp and estimate), in order.
        returns: each reading's ``((n, 2) returns in the base frame, odometry (x, y, yaw) or
            None)``, or None (no scan), as the detection suite records them.
        distance_map: the map (:func:`detector_map`).
        config: the LostDetectorConfig (its ``strip_*`` numbers).
        resets: the times of the pose fixes: the strip is emptied before the first reading at
            or after each, as the node empties it when lost_service resets the detector.

    Returns:
        One verdict per reading (True: low, False, None: none), or None for every reading
        when rule 9 is off (``strip_count`` 0).
    """
    from lost_and_found.core.strip_check import StripCheck
    if not config.strip_count:
        return None
    check = StripCheck.from_config(config)
    check.set_map(distance_map)
    return replay_strip(poses, returns, check, resets, check.verdict)


def replay_strip(poses, returns, check, resets, judge):
    """``judge(stamp, odometry, estimate)`` of every reading with a scan and odometry (None
    for the others), each reading's scan added to ``check`` (a StripCheck with its map) first,
    and the strip emptied at ``resets`` as the node empties it (:func:`strip_verdicts`)."""
    before = reset_indices([p[0] for p in poses], resets)
    out = []
    for index, (pose, item) in enumerate(zip(poses, returns)):
        if index in before:
            check.clear()
        if item is None or item[1] is None:
            out.append(None)
            continue
        points, odom = item
        check.add(pose[0], odom, points)
        out.append(judge(pose[0], odom, tuple(pose[1:4])))
    return out


def run_all(readings, config, resets=(), strips=None):
    """name -> list of tiers (one per reading) for every detector of :data:`NAMES`.

    ``resets``: times at which lost_service would reset the lost detector (pose fixes); the
    covariance rules keep no state. ``strips``: the strip verdicts of rule 9
    (:func:`strip_verdicts`), or None.
    """
    return {
        'lost_detector': lost_detector_tiers(readings, config, resets, strips),
        'amcl_diag': [amcl_diag_tier(r) for r in readings],
        'nav2_islocalized': [nav2_tier(r) for r in readings],
    }


def first_at_least(times, tiers, tier, start, end):
    """The first time in ``[start, end]`` whose tier is >= ``tier``, or None."""
    for t, value in zip(times, tiers):
        if start <= t <= end and value >= tier:
            return t
    return None


def alarms(times, tiers, start, end, tier=2):
    """Number of entries into tier >= ``tier`` within ``[start, end]``.

    Being at that tier already at ``start`` counts as one entry: the alarm is raised inside the
    window as far as anyone watching the window can tell.
    """
    count = 0
    previous = False
    for t, value in zip(times, tiers):
        if t < start:
            continue
        if t > end:
            break
        high = value >= tier
        if high and not previous:
            count += 1
        previous = high
    return count
