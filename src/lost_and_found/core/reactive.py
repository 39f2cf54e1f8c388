"""Reactive wandering steered by the laser alone: head for the widest safe gap in the scan.

This is the ``reactive`` search strategy of the recovery node. It needs no map and no pose, so it
keeps working when the localization is wrong, which is exactly when the search runs.

Two parts:

* :func:`find_spans` turns one scan into the *spans* (gaps) the robot fits through. A beam is
  *clear* when its range exceeds ``clear_distance``; ``inf`` (no return) is clear at
  ``range_max``; NaN, ``-inf`` and readings below ``range_min`` are *blocked*, because they carry
  no trustworthy information (a Kinect-style fake laser reports NaN both for "too close" and "too
  far", and driving into the unknown is the unsafe choice). Clear beams are split into spans at
  blocked beams and at range discontinuities (gap edges). A scan covering the full circle is
  treated as circular, so a span may wrap across index 0. Each span is shrunk at both ends by the
  angle half the robot (plus a side margin) subtends at the edge (an edge beside a beam nearer
  than ``range_min`` counts at that beam's reading, or at ``range_min`` for ``-inf``), and
  dropped when nothing is left or when the opening is narrower than the robot.
* :class:`ReactiveWander` is a small state machine (STOPPED, FIND_NEW_DIR, TURNING, FORWARD,
  BACK_UP) that turns successive scans into velocity commands ``(v, w)``. Optional wheel
  odometry only tells it when it is stuck (driving forward without moving). Optional
  remembered returns (core/obstacle_memory.py: what earlier scans showed, placed by odometry)
  cover what the laser cannot see now: a Kinect sees 57 degrees ahead and nothing nearer than
  0.45 m, so the wall beside or just in front of the robot is known only from memory. They
  stop FORWARD like a near reading ahead and end a BACK_UP like a reading behind; gaps are
  still found in the current scan alone.

Angles follow the scan: a beam ``i`` lies at ``angle_min + i * angle_increment`` (REP 103: 0 is
straight ahead, positive to the left). Pure Python + numpy: no ROS, time is an argument.
"""
import dataclasses
import enum
import logging
import math

import numpy as np

from lost_and_found.core.config import Checker
from lost_and_found.core.geometry import turn_rate, wrap_angle as normalize_angle
from lost_and_found.core.scan_agreement import beam_reach, scan_limits

_log = logging.getLogger('rosout')

#: Two steps further apart than this (s) mean the wander was paused (e.g. the recovery node
#: stood still for a stale scan): that time is not counted as driving without progress.
STEP_GAP = 1.0


class ReactiveState(enum.Enum):
    """States of :class:`ReactiveWander`."""

    STOPPED = 'STOPPED'
    FORWARD = 'FORWARD'
    FIND_NEW_DIR = 'FIND_NEW_DIR'
    TURNING = 'TURNING'
    BACK_UP = 'BACK_UP'


@dataclasses.dataclass(frozen=True)
class ReactiveConfig:
    """Parameters of the reactive wander, defaults for a TurtleBot2 (Kobuki, radius ~0.18 m).

    Attributes:
        clear_distance: a beam longer than this (m) is clear, i.e. part of a possible gap.
        discontinuity: adjacent ranges differing by more than this (m) mark a gap edge ...
        gap_horizon: ... unless both are at least this far (m; 0: off): a field of posts
            or chair legs 3-5 m away makes an edge at nearly every beam, and no span is left
            wide enough to drive into though nothing is near. Must exceed
            ``clear_distance``; acts only up to the scan's ``range_max`` (a beam with no
            return counts as ``range_max``).
        robot_radius: radius of the robot's footprint (m); the Kobuki is 0.177 m.
        side_margin: extra clearance on each side (m) when fitting through a gap.
        max_speed: forward speed in open space (m/s): move_base's TurtleBot2 speed (the
            Kobuki does 0.7 m/s), slowed near obstacles (``slow_distance``).
        slow_distance: below this front range (m) the forward speed is scaled down.
        stop_distance: a front-sector range below this (m) stops FORWARD and looks for a gap.
        front_half_angle: half-width of the front sector (rad) checked by ``stop_distance``.
        turn_speed: in-place rotation (rad/s) while no gap is visible.
        turn_gain: TURNING rotates at ``turn_gain * angle_error`` (1/s) ...
        max_turn_speed: ... clamped to this (rad/s) ...
        min_turn_speed: ... and at least this (rad/s), so it does not stall in the deadband.
        heading_tolerance: TURNING becomes FORWARD when the gap is within this angle (rad).
        steer_gain: FORWARD steers at ``steer_gain * angle`` (1/s) toward the best gap ...
        max_steer: ... clamped to this gentle rate (rad/s).
        too_close: any reading closer than this (m; at least the scan's ``range_min``) outside
            the rear sector triggers BACK_UP.
        behind_angle: beams with ``|angle|`` above this (rad) look behind the robot.
        backup_speed: reverse speed (m/s); slow, the robot cannot see much behind.
        backup_time: how long one BACK_UP lasts (s) unless something appears behind.
        oscillation_flips: more turn-direction changes than this ...
        oscillation_window: ... within this many seconds (without reaching FORWARD) -> BACK_UP.
        warn_period: minimum interval (s) between repeated warnings about bad scans.
        stall_time: driving FORWARD this long (s) while the odometry moves less than
            ``stall_distance`` means the robot is stuck against something the laser cannot
            see (a corner beside a Kinect's narrow view) -> BACK_UP, then a blind turn to the
            left by ``stall_turn`` before looking for a gap again (on the left or ahead).
            Needs odometry.
        stall_distance: ... this far (m).
        stall_turn: the blind turn (rad) after a stall's back-up: the laser never showed the
            obstacle, so only turning away from the heading that stalled avoids it; repeated
            stalls keep turning the same way, so the robot cannot swing back and forth.
        open_after_turn: after a full turn in place (``2 pi / turn_speed`` s of FIND_NEW_DIR)
            without a gap to pick, drive FORWARD at the first heading whose front (the front
            sector and the remembered returns in the footprint's path) is clear this far (m);
            0: off, turn on until a gap shows. Among scattered returns (chair legs, clutter
            0.5-5 m off) every few beams make an edge and no gap is wide enough, though the
            way ahead is clear for metres. 1 m (``slow_distance``): FORWARD starts at full
            speed.
    """

    clear_distance: float = 0.6
    discontinuity: float = 0.5
    gap_horizon: float = 0.0
    robot_radius: float = 0.18
    side_margin: float = 0.05
    max_speed: float = 0.3
    slow_distance: float = 1.0
    stop_distance: float = 0.5
    front_half_angle: float = 0.35
    turn_speed: float = 0.6
    turn_gain: float = 1.5
    max_turn_speed: float = 1.0
    min_turn_speed: float = 0.2
    heading_tolerance: float = 0.1
    steer_gain: float = 0.5
    max_steer: float = 0.3
    too_close: float = 0.25
    behind_angle: float = 2.5
    backup_speed: float = 0.05
    backup_time: float = 2.0
    oscillation_flips: int = 4
    oscillation_window: float = 10.0
    warn_period: float = 5.0
    stall_time: float = 3.0
    stall_distance: float = 0.05
    stall_turn: float = math.pi / 3
    open_after_turn: float = 1.0

    def validate(self):
        """Check every field and their relations.

        Raises:
            ConfigError: naming every bad key and value.
        """
        check = Checker(self)
        for name in ('clear_distance', 'discontinuity', 'robot_radius', 'max_speed',
                     'slow_distance', 'stop_distance', 'turn_speed', 'turn_gain',
                     'max_turn_speed', 'steer_gain', 'max_steer',
                     'too_close', 'backup_speed', 'backup_time', 'oscillation_window',
                     'warn_period', 'stall_time', 'stall_distance', 'stall_turn'):
            check.positive(name)
        check.non_negative('side_margin')
        check.non_negative('min_turn_speed')
        check.non_negative('gap_horizon')
        check.non_negative('open_after_turn')
        check.in_range('front_half_angle', 0.0, math.pi, low_open=True)
        check.in_range('behind_angle', 0.0, math.pi, low_open=True, high_open=True)
        check.in_range('heading_tolerance', 0.0, math.pi, low_open=True)
        check.positive_int('oscillation_flips')
        if not check.problems:
            if self.slow_distance < self.stop_distance:
                check.problem('slow_distance=%r < stop_distance=%r: must be >= stop_distance'
                              % (self.slow_distance, self.stop_distance))
            if self.min_turn_speed > self.max_turn_speed:
                check.problem('min_turn_speed=%r > max_turn_speed=%r: must be <= it'
                              % (self.min_turn_speed, self.max_turn_speed))
            if 0.0 < self.gap_horizon <= self.clear_distance:
                check.problem('gap_horizon=%r <= clear_distance=%r: must be 0 or above it'
                              % (self.gap_horizon, self.clear_distance))
            if 0.0 < self.open_after_turn < self.stop_distance:
                check.problem('open_after_turn=%r < stop_distance=%r: must be 0 or at least '
                              'it (FORWARD would stop at once)'
                              % (self.open_after_turn, self.stop_distance))
            if self.too_close >= self.stop_distance:
                check.problem('too_close=%r >= stop_distance=%r: the robot would back up '
                              'before it stops' % (self.too_close, self.stop_distance))
        check.done()

    @property
    def half_width(self):
        """Half the width the robot needs to pass (m): radius plus side margin."""
        return self.robot_radius + self.side_margin


@dataclasses.dataclass(frozen=True, eq=False)
class Scan:
    """A laser scan as plain values (the fields of sensor_msgs/LaserScan that matter here).

    Attributes:
        ranges: ranges in m (tuple or numpy array); ``inf`` = no return, NaN = no information.
        angle_min: angle of beam 0 (rad).
        angle_increment: angle between beams (rad); may be negative.
        range_min: shortest valid range (m).
        range_max: longest valid range (m).
    """

    ranges: object
    angle_min: float
    angle_increment: float
    range_min: float
    range_max: float


@dataclasses.dataclass(frozen=True)
class Span:
    """A gap of clear beams the robot fits through.

    Attributes:
        start: index of the first beam of the (unshrunk) span.
        end: index of its last beam, inclusive, ``>= start``; on a circular (360 degree) scan it
            may exceed the last index, meaning the span wraps (beam ``end % n``).
        angle_start: angle (rad) of the start side after the safety shrink, continuous with the
            scan's angles (so it may lie beyond pi on a wrapping span).
        angle_end: angle (rad) of the end side after the safety shrink (same convention).
        best_angle: angle (rad) of the longest beam inside the shrunk span, as the scan gives it
            (``angle_min + i * angle_increment``, ``0 <= i < n``): normalise before steering.
        best_range: that beam's range (m); ``inf`` counted as ``range_max``.
        width: angular width (rad) after the safety shrink, > 0.
    """

    start: int
    end: int
    angle_start: float
    angle_end: float
    best_angle: float
    best_range: float
    width: float


class _Prepared:
    """A scan checked and converted once: effective ranges, clear mask, angles."""

    def __init__(self, scan, config):
        ranges = np.asarray(scan.ranges, dtype=float).ravel()
        self.n = len(ranges)
        self.angle_min, self.inc, self.range_min, self.range_max = scan_limits(scan)
        self.raw = ranges
        # "No return" (+inf, or a reading past range_max) is free space up to range_max.
        _, reach = beam_reach(ranges, self.range_min, self.range_max)
        with np.errstate(invalid='ignore'):
            self.valid = np.isfinite(reach) & (reach >= self.range_min)
            self.eff = np.where(self.valid, reach, np.nan)
            self.clear = self.valid & (self.eff > config.clear_distance)
        self.angles = self.angle_min + self.inc * np.arange(self.n)
        self.abs_inc = abs(self.inc)
        self.circular = self.n > 1 and \
            self.abs_inc * self.n >= 2.0 * math.pi - 1.5 * self.abs_inc

    def has_data(self):
        """Whether any beam carries information: a valid range, a real return below
        ``range_min`` (something very close, which must still trigger BACK_UP), or ``-inf``
        (REP 117: an obstacle nearer than the sensor can measure; a Kinect facing a wall
        closer than 0.45 m reads nothing else, and turning in place is how it gets out)."""
        if not self.n:
            return False
        with np.errstate(invalid='ignore'):
            close = (np.isfinite(self.raw) & (self.raw > 0.0)) | np.isneginf(self.raw)
        return bool(np.any(self.valid) or np.any(close))


def _runs(prep, config):
    """Index runs ``(start, end)`` of clear beams with no gap edge inside; end may wrap past n."""
    n, clear, eff = prep.n, prep.clear, prep.eff
    if n == 0 or not clear.any():
        return []
    # joined[i]: beam i and beam i+1 (mod n) belong to the same span.
    nxt = np.roll(eff, -1)
    with np.errstate(invalid='ignore'):
        smooth = np.abs(nxt - eff) <= config.discontinuity
        if config.gap_horizon > 0.0:
            # Both sides far: no edge the robot must keep clear of yet. (A beam without
            # information is never clear, so it stays an edge.)
            smooth |= np.minimum(nxt, eff) >= config.gap_horizon
    joined = clear & np.roll(clear, -1) & smooth
    if not prep.circular:
        joined[-1] = False
    if joined.all():
        return [(0, n - 1)]      # a full circle of open space: no edge at all
    runs = []
    i = 0
    while i < n:
        if not clear[i]:
            i += 1
            continue
        j = i
        while j < n - 1 and joined[j]:
            j += 1
        runs.append([i, j])
        i = j + 1
    if prep.circular and len(runs) > 1 and joined[n - 1] and runs[0][0] == 0 \
            and runs[-1][1] == n - 1:
        first = runs.pop(0)
        runs[-1][1] = n + first[1]
    return [tuple(r) for r in runs]


def _near_range(prep, k):
    """How far the obstacle beam ``k`` shows is, at most (m): its valid range; ``range_min``
    for ``-inf`` (REP 117: nearer than the sensor measures); the reading itself for a real
    return below ``range_min``; NaN when the beam tells nothing (NaN, or no return)."""
    r = prep.eff[k]
    if math.isfinite(r):
        return float(r)
    raw = prep.raw[k]
    if raw == -math.inf:
        return max(prep.range_min, 1e-3)      # a range_min of 0 still means "very near"
    if math.isfinite(raw) and 0.0 < raw < prep.range_min:
        return float(raw)
    return math.nan


def _edge_range(prep, inside, outside):
    """The range that bounds a span's edge: the nearer of its edge beam and the beam beyond it.

    The obstacle that makes a gap edge is the nearer side of the discontinuity (a door jamb, not
    the room behind the door), so the buffer is computed there. A beam beyond that reads
    nearer than ``range_min`` counts as :func:`_near_range` says: the Kinect's view of a wall
    0.3 m away is ``-inf``, and the far range beside it would shrink the span as if the wall
    were there.
    """
    r = prep.eff[inside % prep.n]
    if outside is not None:
        r_out = _near_range(prep, outside % prep.n)
        if math.isfinite(r_out):
            r = min(r, r_out)
    return r


def _span_from_run(prep, config, start, end):
    """Shrink one run into a Span, or None when the robot does not fit."""
    n = prep.n
    full_circle = (end - start + 1) >= n and prep.circular
    raw_width = (end - start) * prep.abs_inc
    idx = np.arange(start, end + 1) % n
    if full_circle:
        shrink_s = shrink_e = 0.0
        r_min = float(np.min(prep.eff[idx]))
    else:
        before = start - 1 if (start > 0 or prep.circular) else None
        after = end + 1 if (end < n - 1 or prep.circular) else None
        r_s = _edge_range(prep, start, before)
        r_e = _edge_range(prep, end, after)
        shrink_s = math.asin(min(1.0, config.half_width / r_s))
        shrink_e = math.asin(min(1.0, config.half_width / r_e))
        outside = [k % n for k in (before, after) if k is not None]
        near = [r for r in (_near_range(prep, k) for k in outside) if math.isfinite(r)]
        r_min = min([float(np.min(prep.eff[idx]))] + near)
    width = raw_width - shrink_s - shrink_e
    if width <= 0.0:
        return None
    chord = 2.0 * r_min * math.sin(min(raw_width, math.pi) / 2.0)
    if not full_circle and chord < 2.0 * config.half_width:
        return None
    # Beams whose centres lie inside the shrunk interval (in index units from start).
    lo = start + int(math.ceil(shrink_s / prep.abs_inc - 1e-9))
    hi = end - int(math.ceil(shrink_e / prep.abs_inc - 1e-9))
    if hi < lo:
        lo = hi = int(round((start + shrink_s / prep.abs_inc + end - shrink_e / prep.abs_inc)
                            / 2.0))
    cand = np.arange(lo, hi + 1) % n
    ranges = prep.eff[cand]
    best = ranges.max()
    ties = cand[ranges >= best - 1e-9]
    # Ties: the beam closest to straight ahead.
    pick = ties[np.argmin(np.abs([normalize_angle(prep.angles[k]) for k in ties]))]
    sign = 1.0 if prep.inc > 0 else -1.0
    return Span(start=int(start), end=int(end),
                angle_start=prep.angle_min + prep.inc * start + sign * shrink_s,
                angle_end=prep.angle_min + prep.inc * end - sign * shrink_e,
                best_angle=float(prep.angles[pick]), best_range=float(prep.eff[pick]),
                width=float(width))


def _spans(prep, config):
    spans = [_span_from_run(prep, config, s, e) for s, e in _runs(prep, config)]
    spans = [s for s in spans if s is not None]
    spans.sort(key=lambda s: (-s.width, -s.best_range))
    return spans


def find_spans(scan, config):
    """The gaps in ``scan`` that the robot fits through, best first.

    Best = widest shrunk angular width; ties go to the longer ``best_range``. Blocked beams (NaN,
    ``-inf``, below ``range_min``, or not longer than ``clear_distance``) and range
    discontinuities split spans; a full-circle scan is circular.

    Args:
        scan: a :class:`Scan`.
        config: a :class:`ReactiveConfig`.

    Returns:
        A list of :class:`Span`, best first; empty when there is no gap or the scan is unusable
        (bad angles or limits are logged, never raised).
    """
    try:
        prep = _Prepared(scan, config)
    except (TypeError, ValueError) as err:
        _log.warning('find_spans: unusable scan (%s)', err)
        return []
    return _spans(prep, config)


def _finite_points(points):
    """``points`` as an (N, 2) float array of its finite rows (empty for None)."""
    if points is None:
        return np.empty((0, 2))
    points = np.asarray(points, dtype=float).reshape(-1, 2)
    return points[np.isfinite(points).all(axis=1)]


class ReactiveWander:
    """Laser-only wander: FIND_NEW_DIR -> TURNING -> FORWARD, with BACK_UP when too close.

    Feed it every scan with :meth:`step`; it returns the velocity command to publish. It never
    raises on bad scans or times: they stop the robot (STOPPED) with a throttled warning.

    Attributes:
        config: the :class:`ReactiveConfig`.
        state: the current :class:`ReactiveState`.
        best_span: the best :class:`Span` of the last scan (None when there was none).
    """

    def __init__(self, config):
        """Start STOPPED with a validated ``config``.

        Raises:
            ConfigError: when ``config`` is invalid.
        """
        config.validate()
        self.config = config
        self.reset()

    def reset(self):
        """Forget everything: STOPPED, timers and turn history cleared."""
        self.state = ReactiveState.STOPPED
        self.best_span = None
        self._turn_dir = 1.0           # remembered in-place turn direction (+ = left)
        self._avoid_dir = 0.0          # after BACK_UP: prefer gaps on this side (0 = none)
        self._last_w_sign = 0.0
        self._flips = []               # times of turn-direction changes since last FORWARD
        self._backup_start = None
        self._last_t = None
        self._last_warn = {}
        self._progress = None          # (x, y, s): odometry at the last progress, seconds since
        self._last_step = None         # time of the previous step (for the stall clock)
        self._stalled_backup = False   # the BACK_UP in progress is a stall's
        self._blind_turn_end = None    # turn left without looking until then (after a stall)
        self._memory = np.empty((0, 2))  # remembered returns of this step, robot frame
        self._no_gap_since = None      # when FIND_NEW_DIR began turning with no gap to pick

    # --- helpers -----------------------------------------------------------------------------

    def _warn(self, key, t, text, *args):
        """Log a warning at most once per ``warn_period`` per ``key``."""
        last = self._last_warn.get(key)
        if last is None or t - last >= self.config.warn_period:
            self._last_warn[key] = t
            _log.warning('reactive: ' + text, *args)

    def _set_state(self, state, t):
        if state is not self.state:
            _log.debug('reactive: %s -> %s at t=%.2f', self.state.name, state.name, t)
            self.state = state
            self._no_gap_since = None
            if state is ReactiveState.FORWARD:
                # Reaching FORWARD ends any oscillation episode and the post-BACK_UP preference.
                self._flips = []
                self._last_w_sign = 0.0
                self._avoid_dir = 0.0

    def _reset_timers(self, t):
        self._flips = []
        self._last_warn = {}
        self._progress = None
        self._last_step = None
        self._no_gap_since = None
        if self._blind_turn_end is not None:
            self._blind_turn_end = t + self.config.stall_turn / self.config.turn_speed
        if self._backup_start is not None:
            self._backup_start = t

    def _stalled(self, v, odom, t):
        """True when FORWARD has commanded ``v > 0`` for ``stall_time`` without progress.

        ``odom`` is the robot's ``(x, y)`` in the odometry frame, or None (unknown: no check).
        Only time between consecutive steps (at most :data:`STEP_GAP` apart) counts: a robot
        that was told to stand still meanwhile did not fail to move.
        """
        last, self._last_step = self._last_step, t
        if self.state is not ReactiveState.FORWARD or v <= 0.0 or odom is None:
            self._progress = None
            return False
        x, y = odom
        if self._progress is None or math.hypot(x - self._progress[0], y - self._progress[1]) \
                > self.config.stall_distance:
            self._progress = (x, y, 0.0)
            return False
        seconds = self._progress[2]
        if last is not None and 0.0 < t - last <= STEP_GAP:
            seconds += t - last
        self._progress = (self._progress[0], self._progress[1], seconds)
        return seconds >= self.config.stall_time

    def _record_turn(self, w, t):
        """Track turn-direction changes for the oscillation check."""
        sign = math.copysign(1.0, w) if w != 0.0 else 0.0
        if sign == 0.0:
            return
        if self._last_w_sign and sign != self._last_w_sign:
            self._flips.append(t)
        self._last_w_sign = sign

    def _oscillating(self, t):
        window = self.config.oscillation_window
        self._flips = [f for f in self._flips if t - f <= window]
        return len(self._flips) > self.config.oscillation_flips

    def _rotate_toward(self, angle):
        """In-place rotation toward ``angle`` (rad, normalised): proportional, clamped."""
        cfg = self.config
        return turn_rate(angle, cfg.turn_gain, cfg.min_turn_speed, cfg.max_turn_speed)

    def _pick(self, spans, prep):
        """The span to head for: the best, or after BACK_UP the best on the side away.

        While something is within ``stop_distance`` in the front sector, a span pointing into
        that sector is no way out: FORWARD would stop at once, and turning toward a span the
        robot already faces does not move it (the wander would stand still for ever, switching
        between FORWARD and FIND_NEW_DIR). Such spans are left out, so the robot turns on; so
        is any span FORWARD would stop in at once after the turn to it (:meth:`_front_min` that
        way; beams out of view now are not known and block nothing).
        """
        cfg = self.config
        if spans and self._front_min(prep) < cfg.stop_distance:
            # Wider than the heading tolerance too: a span the turn would call "faced" must go.
            ahead = max(cfg.front_half_angle, cfg.heading_tolerance)
            spans = [s for s in spans if abs(normalize_angle(s.best_angle)) > ahead]
        # Nor is a span anywhere else whose way is blocked as near: turning to it, then past it
        # as it enters the front cone, then back once it leaves it, is the turning back and
        # forth that only a short BACK_UP ended, over and over, beside a wall corner.
        spans = [s for s in spans
                 if self._front_min(prep, s.best_angle) >= cfg.stop_distance]
        if not spans:
            return None
        if self._avoid_dir:
            # Straight ahead (within the tolerance) also counts as away: backing up cleared it.
            tol = self.config.heading_tolerance
            away = [s for s in spans
                    if normalize_angle(s.best_angle) * self._avoid_dir > -tol]
            return away[0] if away else None
        return spans[0]

    @staticmethod
    def _sector(prep, low, high, heading=0.0):
        """Mask of beams whose angle from ``heading`` (rad), normalised, has an absolute
        value in [low, high]."""
        ang = np.abs(normalize_angle(prep.angles - heading))
        return (ang >= low) & (ang <= high)

    def _close_readings(self, prep, threshold):
        """Mask of the beams with a real return nearer than ``threshold`` (m).

        Readings below ``range_min`` but above 0 count: something is closer than the sensor
        can measure. Exactly 0 is the "no reading" code of several drivers and is ignored.
        """
        raw = prep.raw
        with np.errstate(invalid='ignore'):
            mask = np.isfinite(raw) & (raw > 0.0) & (raw < threshold)
        return mask

    def clearance_ahead(self, scan, remembered=None):
        """Distance (m) to the nearest reading in the front sector of ``scan``, or remembered
        point (robot frame, ``(N, 2)``) in the footprint's path ahead; 0 when the scan is
        unusable, tells nothing about what is ahead or reads ``-inf`` there (too near to
        measure). Leaves the state machine alone."""
        try:
            prep = _Prepared(scan, self.config)
        except (TypeError, ValueError, AttributeError):
            return 0.0
        return min(self._front_reading(prep), self._remembered_ahead(_finite_points(remembered)))

    # --- the state machine -------------------------------------------------------------------

    def step(self, scan, t, odom=None, remembered=None):
        """Advance the state machine with one scan and return the command.

        Args:
            scan: a :class:`Scan`.
            t: time of the scan (s), any monotonic clock; a jump backwards resets the timers.
            odom: the robot's ``(x, y)`` (m) in its odometry frame now, or None when unknown
                (then a stall goes unnoticed).
            remembered: obstacle points ``(N, 2)`` (m) in the robot frame that earlier scans
                showed (see the module docstring), or None; non-finite rows are ignored.

        Returns:
            ``(v, w)``: linear (m/s) and angular (rad/s) velocity, floats.
        """
        try:
            t = float(t)
        except (TypeError, ValueError):
            t = float('nan')
        if not math.isfinite(t):
            _log.warning('reactive: non-finite time %r, command zero', t)
            return 0.0, 0.0
        self._memory = _finite_points(remembered)
        if self._last_t is not None and t < self._last_t:
            _log.warning('reactive: clock jumped backwards (%.3f -> %.3f s), timers reset',
                         self._last_t, t)
            self._reset_timers(t)
        self._last_t = t
        try:
            prep = _Prepared(scan, self.config)
        except (TypeError, ValueError, AttributeError) as err:
            self._warn('bad_scan', t, 'unusable scan (%s): stopped', err)
            return self._stop(t)
        if not prep.has_data():
            self._warn('empty_scan', t, 'scan has no valid range (%d beams): stopped', prep.n)
            return self._stop(t)
        if self.state is ReactiveState.STOPPED:
            self._set_state(ReactiveState.FIND_NEW_DIR, t)
        spans = _spans(prep, self.config)
        self.best_span = spans[0] if spans else None
        cmd = self._check_too_close(prep, t)
        if cmd is None:
            handler = {
                ReactiveState.FIND_NEW_DIR: self._find_new_dir,
                ReactiveState.TURNING: self._turning,
                ReactiveState.FORWARD: self._forward,
                ReactiveState.BACK_UP: self._back_up,
            }[self.state]
            cmd = handler(prep, spans, t)
        v, w = cmd
        if self._stalled(v, odom, t):
            return self._start_stall_backup(prep, t)
        if self.state in (ReactiveState.FIND_NEW_DIR, ReactiveState.TURNING):
            self._record_turn(w, t)
            if self._oscillating(t):
                _log.info('reactive: turning back and forth (%d flips in %.1f s): backing up',
                          len(self._flips), self.config.oscillation_window)
                return self._start_backup(prep, t)
        return float(v), float(w)

    def _stop(self, t):
        self._set_state(ReactiveState.STOPPED, t)
        self._backup_start = None
        return 0.0, 0.0

    def _check_too_close(self, prep, t):
        """Enter BACK_UP when something outside the rear sector is too close."""
        if self.state is ReactiveState.BACK_UP:
            return None
        cfg = self.config
        close = self._close_readings(prep, max(prep.range_min, cfg.too_close))
        ahead = close & ~self._sector(prep, cfg.behind_angle, math.pi)
        if not ahead.any():
            return None
        behind = close & self._sector(prep, cfg.behind_angle, math.pi)
        if behind.any() or self._remembered_behind():
            # Boxed in: reversing would hit what is behind; turn in place instead.
            self._warn('boxed_in', t, 'obstacles closer than %.2f m ahead and behind',
                       cfg.too_close)
            return None
        return self._start_backup(prep, t)

    def _start_backup(self, prep, t):
        """Enter BACK_UP; remember the side of the nearest obstacle to turn away from later."""
        with np.errstate(invalid='ignore'):
            real = np.isfinite(prep.raw) & (prep.raw > 0.0)
        if real.any():
            k = int(np.argmin(np.where(real, prep.raw, np.inf)))
            side = normalize_angle(prep.angles[k])
            self._turn_dir = -1.0 if side > 0.0 else 1.0
        self._set_state(ReactiveState.BACK_UP, t)
        self._backup_start = t
        self._stalled_backup = False
        self._blind_turn_end = None
        self._flips = []
        self._last_w_sign = 0.0
        return -self.config.backup_speed, 0.0

    def _start_stall_backup(self, prep, t):
        """Back up from an obstacle the laser does not show; a blind left turn follows."""
        self._progress = None
        _log.info('reactive: no progress for %.1f s while driving forward: backing up, then '
                  'turning left %.0f deg', self.config.stall_time,
                  math.degrees(self.config.stall_turn))
        cmd = self._start_backup(prep, t)
        self._stalled_backup = True
        return cmd

    def _back_up(self, prep, spans, t):
        cfg = self.config
        close = self._close_readings(prep, max(prep.range_min, cfg.too_close))
        blocked_behind = bool((close & self._sector(prep, cfg.behind_angle, math.pi)).any()) \
            or self._remembered_behind()
        if blocked_behind or t - self._backup_start >= cfg.backup_time:
            self._backup_start = None
            if self._stalled_backup:
                self._stalled_backup = False
                self._turn_dir = 1.0
                self._blind_turn_end = t + cfg.stall_turn / cfg.turn_speed
            self._avoid_dir = self._turn_dir
            self._set_state(ReactiveState.FIND_NEW_DIR, t)
            return 0.0, 0.0
        return -cfg.backup_speed, 0.0

    def _find_new_dir(self, prep, spans, t):
        if self._blind_turn_end is not None:
            if t < self._blind_turn_end:
                return 0.0, self._turn_dir * self.config.turn_speed
            self._blind_turn_end = None
        span = self._pick(spans, prep)
        if span is None:
            return self._turn_without_gap(prep, spans, t)
        self._set_state(ReactiveState.TURNING, t)
        angle = normalize_angle(span.best_angle)
        if abs(angle) < self.config.heading_tolerance:
            return 0.0, 0.0            # already facing it: TURNING -> FORWARD next scan
        self._turn_dir = math.copysign(1.0, angle)
        return 0.0, self._rotate_toward(angle)

    def _turn_without_gap(self, prep, spans, t):
        """Turn on looking for a gap; with ``open_after_turn``, after a full turn without one,
        drive FORWARD once the front is clear that far."""
        cfg = self.config
        if self._no_gap_since is None:
            self._no_gap_since = t
        elif cfg.open_after_turn > 0.0 and t - self._no_gap_since >= 2.0 * math.pi / cfg.turn_speed:
            front = self._front_min(prep)
            if front >= cfg.open_after_turn:
                _log.info('reactive: no gap in a full turn: driving ahead, clear for %.1f m', front)
                self._set_state(ReactiveState.FORWARD, t)
                return self._forward(prep, spans, t)
        return 0.0, self._turn_dir * cfg.turn_speed

    def _turning(self, prep, spans, t):
        span = self._pick(spans, prep)
        if span is None:
            self._set_state(ReactiveState.FIND_NEW_DIR, t)
            return 0.0, self._turn_dir * self.config.turn_speed
        angle = normalize_angle(span.best_angle)
        if abs(angle) < self.config.heading_tolerance:
            self._set_state(ReactiveState.FORWARD, t)
            return self._forward(prep, spans, t)
        self._turn_dir = math.copysign(1.0, angle)
        return 0.0, self._rotate_toward(angle)

    def _remembered_ahead(self, points=None, heading=0.0):
        """Distance (m) from the robot centre to the nearest remembered point (``points``, or
        this step's) in the path of its footprint straight ahead, or toward ``heading`` (rad,
        robot frame); inf when there is none."""
        points = self._memory if points is None else points
        c, s = math.cos(heading), math.sin(heading)
        along = points[:, 0] * c + points[:, 1] * s
        across = points[:, 1] * c - points[:, 0] * s
        ahead = (along > 0.0) & (np.abs(across) <= self.config.half_width)
        return float(along[ahead].min()) if ahead.any() else math.inf

    def _remembered_behind(self):
        """Whether a remembered point lies within ``too_close`` behind the footprint."""
        cfg, points = self.config, self._memory
        return bool(np.any((points[:, 0] < 0.0) &
                           (points[:, 0] >= -(cfg.robot_radius + cfg.too_close)) &
                           (np.abs(points[:, 1]) <= cfg.half_width)))

    def _front_min(self, prep, heading=0.0):
        """Nearest reading in the front sector, or remembered point in the footprint's path
        ahead; 0 when the sector has no information. ``heading`` (rad): as it would read
        after turning that way, from what is in view now."""
        return min(self._front_reading(prep, heading), self._remembered_ahead(heading=heading))

    def _front_reading(self, prep, heading=0.0):
        """Nearest reading in the front sector (around ``heading``, rad); 0 when the sector
        has no information, or when a beam in it reads ``-inf`` (REP 117: an obstacle nearer
        than ``range_min``; a Kinect reads it for a chair leg 0.3 m ahead while its other
        beams see the far wall)."""
        cfg = self.config
        if prep.n == 0:
            return 0.0
        sector = self._sector(prep, 0.0, cfg.front_half_angle, heading)
        if not sector.any():
            ang = np.abs(normalize_angle(prep.angles - heading))
            k = int(np.argmin(ang))
            if ang[k] > cfg.front_half_angle + prep.abs_inc:
                return 0.0
            sector = np.zeros(prep.n, dtype=bool)
            sector[k] = True
        raw = np.where(np.isposinf(prep.raw), prep.range_max, prep.raw)[sector]
        if np.isneginf(raw).any():
            return 0.0
        with np.errstate(invalid='ignore'):
            real = raw[np.isfinite(raw) & (raw > 0.0)]
        # NaN only: nothing known ahead, which is not a reason to drive there.
        return float(real.min()) if real.size else 0.0

    def _forward(self, prep, spans, t):
        cfg = self.config
        front = self._front_min(prep)
        if front < cfg.stop_distance:
            self._set_state(ReactiveState.FIND_NEW_DIR, t)
            return 0.0, 0.0
        span = spans[0] if spans else None
        scale = 1.0
        if cfg.slow_distance > cfg.stop_distance:
            scale = (front - cfg.stop_distance) / (cfg.slow_distance - cfg.stop_distance)
        # Keep a quarter of the speed near obstacles so it still makes progress.
        v = cfg.max_speed * min(1.0, max(0.25, scale))
        w = 0.0
        if span is not None:
            w = max(-cfg.max_steer, min(cfg.max_steer,
                                        cfg.steer_gain * normalize_angle(span.best_angle)))
        return v, w
