"""A short memory of laser returns around the robot, in the odometry frame.

A TurtleBot2's Kinect sees 57 degrees ahead and nothing nearer than 0.45 m: the wall the robot
is about to touch, or the door jamb beside it, has left the view by then. move_base keeps such
returns in its local costmap (marked where a beam ended, cleared where a later beam passed
through, in the ``odom`` frame so a wrong ``map`` pose does not move them), and that is what
keeps it off walls it can no longer see. :class:`ObstacleMemory` is the same idea, small enough
for a reactive controller:

* :meth:`ObstacleMemory.add_scan` first *clears* every remembered point that a beam of the new
  scan passed through (a valid range, or no return at all, longer than the point's distance),
  then *marks* the scan's returns nearer than ``mark_range``. Beams with no information (NaN,
  ``-inf``: nearer than the sensor measures, readings below ``range_min``) clear nothing: a
  Kinect facing a wall at 0.3 m reads ``-inf``, and the wall must stay remembered.
* A ``-inf`` beam (REP 117: something nearer than ``range_min``) says an obstacle is on it,
  not where. When no remembered point on the beam explains it, it marks the beam's stretch
  from ``mark_too_near`` out to ``range_min``, one point per ``cell``, where the obstacle must
  be (any nearer and the robot would be touching it). A robot put down beside a box inside its
  laser's blind zone thus remembers the box from its first spin on. The points marked too many
  are cleared by the first later beam that passes over them; those between the robot and an
  obstacle that stays in the blind zone never are, which is why a beam already explained (a
  wall seen before the robot came this close) marks nothing. (A Kinect driver that reports
  such beams as NaN gives nothing to mark.)
* Points farther than ``keep_radius`` from the sensor are forgotten (a rolling window), and at
  most one point is kept per ``cell`` (the newest), so the memory stays small.
* A robot that moved farther than ``jump_distance`` between two scans did not drive there: its
  odometry was reset (or a scan came from another run), and everything is forgotten.
* :meth:`ObstacleMemory.points_around` gives the remembered points in the robot's frame.

A scan must be placed at the odometry pose *of its own stamp*, not at the latest one: a robot
spinning at 72 deg/s turns 14 deg in the 0.2 s a busy machine may take to deliver a scan, and
a scan placed that far off both marks the wall in the wrong place and, worse, clears the right
one (a beam that really ended on it seems to pass beside it). :class:`PoseHistory` keeps the
last seconds of odometry poses by stamp and interpolates between them.

Odometry drifts slowly, so points remembered a few metres ago stay good enough to stop for.
Pure Python + numpy: no ROS; poses are ``(x, y, yaw)`` in the odometry frame.
"""
import bisect
import collections
import dataclasses
import math

import numpy as np

from lost_and_found.core.config import Checker
from lost_and_found.core.geometry import interpolate_pose
from lost_and_found.core.scan_agreement import LaserMount, beam_reach, scan_limits


@dataclasses.dataclass(frozen=True)
class ObstacleMemoryConfig:
    """How much of what the laser saw is remembered.

    Attributes:
        cell: one point is kept per square cell of this size (m): the memory's resolution.
        mark_range: only returns nearer than this (m) to the sensor are remembered.
        keep_radius: points farther than this (m) from the sensor are forgotten; at least
            ``mark_range``.
        clear_margin: a beam clears a remembered point when it reached at least this much
            (m) beyond it (range noise must not erase the wall the beam ended on).
        jump_distance: the robot's odometry moving farther than this (m) from one scan to the
            next means the odometry was reset: everything remembered is forgotten.
        mark_too_near: a ``-inf`` beam that no remembered point explains marks its stretch
            from this distance (m) from the *sensor* out to the scan's ``range_min`` (about the
            robot's radius for a laser near the robot's centre: nearer, the obstacle would be
            touching it; for a laser mounted well off the centre, make it at least the
            distance from the sensor to the footprint's edge along the beams, or the marks
            fall inside the footprint); 0 = such beams mark nothing.
    """

    cell: float = 0.05
    mark_range: float = 2.5
    keep_radius: float = 3.0
    clear_margin: float = 0.1
    jump_distance: float = 1.0
    mark_too_near: float = 0.2

    def validate(self):
        """Raise ConfigError naming every bad value."""
        check = Checker(self)
        for field in dataclasses.fields(self):
            if field.name == 'mark_too_near':
                check.non_negative(field.name)
            else:
                check.positive(field.name)
        if not check.problems and self.keep_radius < self.mark_range:
            check.problem('keep_radius=%r < mark_range=%r: a point would be forgotten as soon '
                          'as it is marked' % (self.keep_radius, self.mark_range))
        check.done()


def to_frame(points, pose):
    """``points`` (N, 2) given in the frame of the world, expressed in the frame of ``pose``."""
    x, y, yaw = pose
    c, s = math.cos(yaw), math.sin(yaw)
    dx, dy = points[:, 0] - x, points[:, 1] - y
    return np.column_stack((c * dx + s * dy, -s * dx + c * dy))


def from_frame(points, pose):
    """``points`` (N, 2) given in the frame of ``pose``, expressed in the world's frame."""
    x, y, yaw = pose
    c, s = math.cos(yaw), math.sin(yaw)
    px, py = points[:, 0], points[:, 1]
    return np.column_stack((x + c * px - s * py, y + s * px + c * py))


def full_circle(inc, n):
    """Whether ``n`` beams ``inc`` rad apart go all the way round (the last meets the first)."""
    return abs(inc) * n >= 2.0 * math.pi - 1.5 * abs(inc)


def beam_index(bearings, angle_min, inc, n):
    """The fractional beam index of each bearing (rad, sensor frame) in a scan of ``n`` beams
    from ``angle_min``, ``inc`` apart (``inc`` may be negative). Measured from the scan's
    middle, so that a bearing inside any scan up to a full circle lands inside ``[0, n - 1]``;
    one outside lands outside it (for a full circle, take the index modulo ``n``)."""
    middle = 0.5 * (n - 1)
    centre = angle_min + inc * middle
    return np.mod(np.asarray(bearings, dtype=float) - centre + math.pi, 2.0 * math.pi) \
        / inc - math.pi / inc + middle


class ObstacleMemory:
    """Laser returns remembered in the odometry frame (see the module docstring).

    Args:
        config: an :class:`ObstacleMemoryConfig` (validated here).

    Raises:
        ConfigError: when ``config`` is invalid.
    """

    def __init__(self, config=ObstacleMemoryConfig()):
        """An empty memory."""
        config.validate()
        self.config = config
        self._points = np.empty((0, 2))
        self._last_pose = None          # the robot's odometry pose at the last scan

    def __len__(self):
        """Number of remembered points."""
        return len(self._points)

    def clear(self):
        """Forget everything (e.g. the robot was carried somewhere else)."""
        self._points = np.empty((0, 2))
        self._last_pose = None

    def add_scan(self, robot_pose, scan, mount=LaserMount()):
        """Clear what the scan saw through, then remember its near returns.

        Args:
            robot_pose: the robot's ``(x, y, yaw)`` in the odometry frame when it scanned.
            scan: the scan's ``ranges`` (m; REP 117 codes allowed), ``angle_min``,
                ``angle_increment`` (rad, may be negative), ``range_min`` and ``range_max``
                (a reactive or scan_agreement ``Scan``).
            mount: where the laser sits on the robot (a scan_agreement ``LaserMount``).

        Raises:
            ValueError: for a non-finite pose or bad angles or limits; the memory is unchanged.
        """
        x, y, yaw = (float(v) for v in robot_pose)
        if not all(math.isfinite(v) for v in (x, y, yaw)):
            raise ValueError('robot pose %r must be three finite numbers' % (robot_pose,))
        angle_min, inc, range_min, range_max = scan_limits(scan)
        if self._last_pose is not None and math.hypot(
                x - self._last_pose[0], y - self._last_pose[1]) > self.config.jump_distance:
            self._points = np.empty((0, 2))
        self._last_pose = (x, y)
        if mount.upside_down:
            angle_min, inc = -angle_min, -inc       # its angles run clockwise
        sensor = from_frame(np.array([[mount.x, mount.y]]), (x, y, yaw))[0]
        sensor = (float(sensor[0]), float(sensor[1]), yaw + mount.yaw)
        ranges = np.asarray(scan.ranges, dtype=float).ravel()
        valid, reach = beam_reach(ranges, range_min, range_max)
        local = to_frame(self._points, sensor)
        kept = self._clear(local, reach, angle_min, inc)
        marked = valid & (ranges <= self.config.mark_range)
        angles = angle_min + inc * np.flatnonzero(marked)
        new = np.column_stack((ranges[marked] * np.cos(angles), ranges[marked] * np.sin(angles)))
        new = np.concatenate((new, self._too_near(ranges, angle_min, inc, range_min,
                                                  local[kept])))
        points = np.concatenate((self._points[kept], from_frame(new, sensor)))
        near = np.hypot(points[:, 0] - sensor[0], points[:, 1] - sensor[1]) <= \
            self.config.keep_radius
        self._points = self._one_per_cell(points[near])

    def _too_near(self, ranges, angle_min, inc, range_min, local):
        """Points (sensor frame) along the ``-inf`` beams that nothing remembered explains
        (no point of ``local``, the memory in the sensor frame, on the beam within
        ``range_min`` + ``clear_margin`` of the sensor), from ``mark_too_near`` to
        ``range_min`` (at most ``mark_range``), a ``cell`` apart."""
        start, end = self.config.mark_too_near, min(range_min, self.config.mark_range)
        beams = np.flatnonzero(np.isneginf(ranges)) if 0.0 < start < end else ()
        if not len(beams):
            return np.empty((0, 2))
        distance = np.hypot(local[:, 0], local[:, 1])
        close = distance < range_min + self.config.clear_margin
        if np.any(close):
            # A remembered point covers the beams within half a cell of it.
            n = len(ranges)
            centre = beam_index(np.arctan2(local[close, 1], local[close, 0]), angle_min, inc, n)
            half = np.arctan2(0.5 * self.config.cell, np.maximum(distance[close], 1e-6)) \
                / abs(inc)
            apart = np.abs(beams[:, None] - centre[None, :])
            if full_circle(inc, n):
                apart = np.minimum(apart, n - apart)
            beams = beams[~np.any(apart <= half[None, :] + 0.5, axis=1)]
            if not len(beams):
                return np.empty((0, 2))
        steps = max(1, int(math.ceil((end - start) / self.config.cell)))
        distances = np.linspace(start, end, steps + 1)
        angles = angle_min + inc * beams
        d, a = np.meshgrid(distances, angles)
        return np.column_stack(((d * np.cos(a)).ravel(), (d * np.sin(a)).ravel()))

    def _clear(self, local, reach, angle_min, inc):
        """Mask of the remembered points (``local``: in the sensor frame) that stay."""
        n = len(reach)
        keep = np.ones(len(local), dtype=bool)
        if not n or not len(local):
            return keep
        distance = np.hypot(local[:, 0], local[:, 1])
        beam = np.rint(beam_index(np.arctan2(local[:, 1], local[:, 0]), angle_min, inc,
                                  n)).astype(int)
        if full_circle(inc, n):
            beam %= n               # the beams wrap around
        inside = (beam >= 0) & (beam < n)
        seen = np.full(len(local), np.nan)
        seen[inside] = reach[beam[inside]]
        with np.errstate(invalid='ignore'):
            keep &= ~(seen >= distance + self.config.clear_margin)
        return keep

    def _one_per_cell(self, points):
        """The newest point of each cell (later rows are newer)."""
        if not len(points):
            return points
        cells = np.floor(points / self.config.cell).astype(np.int64)
        _, last = np.unique(cells[::-1], axis=0, return_index=True)
        return points[::-1][np.sort(last)][::-1]

    def points_around(self, robot_pose):
        """The remembered points (N, 2) in the frame of ``robot_pose`` (odometry frame)."""
        return to_frame(self._points, tuple(float(v) for v in robot_pose))


class PoseHistory:
    """The robot's odometry poses of the last ``span`` seconds, by stamp, interpolated.

    Args:
        span: seconds of poses kept, counted back from the newest.
        jump: a stamp more than this (s) older than the newest means the clock jumped back (a
            bag restarted, sim time reset): everything before is forgotten. A stamp older by
            less is a message out of order (two publishers, a late one) and is ignored.
    """

    def __init__(self, span=2.0, jump=0.5):
        """An empty history."""
        self.span = float(span)
        self.jump = float(jump)
        self._stamps = collections.deque()
        self._poses = collections.deque()

    def __len__(self):
        """Number of poses kept."""
        return len(self._stamps)

    def clear(self):
        """Forget every pose."""
        self._stamps.clear()
        self._poses.clear()

    @property
    def latest(self):
        """Stamp (s) of the newest pose, or None when empty."""
        return self._stamps[-1] if self._stamps else None

    def add(self, stamp, pose):
        """Keep ``pose`` ``(x, y, yaw)`` at ``stamp`` (s); non-finite values, and stamps out of
        order by less than ``jump``, are ignored.

        Returns:
            True when the stamp was a jump back and everything before was forgotten.
        """
        stamp = float(stamp)
        pose = tuple(float(v) for v in pose)
        if not (math.isfinite(stamp) and len(pose) == 3 and all(map(math.isfinite, pose))):
            return False
        jumped = bool(self._stamps) and stamp < self._stamps[-1] - self.jump
        if jumped:
            self.clear()
        elif self._stamps and stamp < self._stamps[-1]:
            return False
        if self._stamps and stamp == self._stamps[-1]:
            self._poses[-1] = pose
            return False
        self._stamps.append(stamp)
        self._poses.append(pose)
        while self._stamps[0] < stamp - self.span:
            self._stamps.popleft()
            self._poses.popleft()
        return jumped

    def at(self, stamp):
        """The pose ``(x, y, yaw)`` at ``stamp``, interpolated between the two poses around
        it; None when ``stamp`` lies outside the kept poses (older than the oldest, or newer
        than the newest: that pose is not known yet)."""
        stamp = float(stamp)
        if not self._stamps or not (self._stamps[0] <= stamp <= self._stamps[-1]):
            return None
        k = bisect.bisect_left(self._stamps, stamp)
        if self._stamps[k] == stamp:
            return self._poses[k]
        t0, t1 = self._stamps[k - 1], self._stamps[k]
        return interpolate_pose(self._poses[k - 1], self._poses[k], (stamp - t0) / (t1 - t0))
