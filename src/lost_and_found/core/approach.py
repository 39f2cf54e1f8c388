"""Going closer to a mapped tag the camera saw too far away to localize from.

fiducial_localizer keeps a detection only within ``max_distance`` (3 m), ``max_view_angle``
of the tag's face and ``max_object_error``: farther or more oblique detections are too noisy to
re-seed amcl from. A lost robot that sees such a tag while it searches knows where a fix is:
a little nearer, or more in front of it. The benchmarks found searches that spent their whole
budget a few metres from a tag the camera kept reporting as too far. :class:`Approach` drives
there.

Everything is in the odometry frame, which stays right while the map pose is lost: the tag's
position and facing come from the camera through tf at the detection's stamp, the robot's
pose from odometry. No map, no planner: turn towards the goal, drive while the laser (and the
remembered returns) show nothing within ``stop_distance`` ahead, then turn to face the tag.

The goal (:func:`approach_point`) is the nearest place to the robot from which the tag is
within ``max_distance`` and ``max_view_angle`` of its face (a margin inside what
fiducial_localizer keeps), and no nearer than ``standoff``: a tag seen a little too far is
approached along the line of sight, one seen too obliquely by swinging round towards its face.
A robot already inside that region (a tag fiducial_localizer refused there: a noisy view, a
stricter camera) goes to the ``standoff`` point head-on in front of the tag instead.

A tag seen down a corridor at a grazing angle has the nearest such place across the corridor's
far wall as often as not. :func:`way_seen` says whether the laser shows the straight way to a
goal clear, blocked or cannot tell, and :func:`region_points` lays out the rest of the region,
so that the recovery node (``approach_clear_way``) can go instead to the nearest place of it
whose way the laser shows clear when it does not show the way to the nearest one clear.

Pure Python: no ROS, time is an argument.
"""
import dataclasses
import math

import numpy as np

from lost_and_found.core.geometry import turn_rate, wrap_angle
from lost_and_found.core.scan_agreement import beam_reach, scan_limits

#: Heading error (rad) above which the approach turns in place instead of driving.
TURN_IN_PLACE = 0.4

#: Heading error (rad) at which the robot faces the tag.
FACING = 0.1

#: Distance (m) to the standoff point at which it counts as reached.
ARRIVED = 0.25

#: Gain (1/s) of the heading control while driving, and of the speed on the last metres.
HEADING_GAIN = 1.5
DISTANCE_GAIN = 0.5


def standoff_point(tag_xy, facing_yaw, robot_xy, standoff):
    """The point ``standoff`` metres in front of a tag (``(x, y)``).

    Args:
        tag_xy: the tag's ``(x, y)``.
        facing_yaw: the direction its face points to (its z axis, projected on the floor), or
            None when the tag lies flat (then: towards the robot).
        robot_xy: the robot's ``(x, y)``, the fallback direction.
        standoff: metres, >= 0.
    """
    if facing_yaw is None:
        dx, dy = robot_xy[0] - tag_xy[0], robot_xy[1] - tag_xy[1]
        facing_yaw = math.atan2(dy, dx) if math.hypot(dx, dy) > 0.0 else 0.0
    return (tag_xy[0] + standoff * math.cos(facing_yaw),
            tag_xy[1] + standoff * math.sin(facing_yaw))


def approach_point(tag_xy, facing_yaw, robot_xy, standoff, max_distance, max_view_angle):
    """Where an approach of a tag drives to (``(x, y)``).

    The nearest point to ``robot_xy`` of the region from which the tag is seen between
    ``standoff`` and ``max_distance`` away and at most ``max_view_angle`` off its face (an
    annular sector in front of it); when the robot is already inside that region, the
    :func:`standoff_point` instead (a head-on view from nearer than it has).

    Args:
        tag_xy: the tag's ``(x, y)``.
        facing_yaw: the direction its face points to, or None when the tag lies flat (then
            every direction is in front of it).
        robot_xy: the robot's ``(x, y)``.
        standoff: the nearest the goal may be to the tag (m), >= 0.
        max_distance: the farthest (m), >= ``standoff``.
        max_view_angle: the largest angle (rad) off the tag's face, in [0, pi/2).
    """
    rx, ry = robot_xy[0] - tag_xy[0], robot_xy[1] - tag_xy[1]
    distance = math.hypot(rx, ry)
    bearing = math.atan2(ry, rx) if distance > 0.0 else 0.0
    off_face = 0.0 if facing_yaw is None else wrap_angle(bearing - facing_yaw)
    if standoff <= distance <= max_distance and abs(off_face) <= max_view_angle:
        return standoff_point(tag_xy, facing_yaw, robot_xy, standoff)
    if facing_yaw is None:
        r = min(max(distance, standoff), max_distance)
        return tag_xy[0] + r * math.cos(bearing), tag_xy[1] + r * math.sin(bearing)
    # Outside the sector: the nearest point is on its boundary, an arc (the robot's bearing
    # clamped to the sector) or a side (the robot projected on it, clamped to the radii).
    candidates = []
    clamped = facing_yaw + min(max(off_face, -max_view_angle), max_view_angle)
    for r in (standoff, max_distance):
        candidates.append((r * math.cos(clamped), r * math.sin(clamped)))
    for side in (facing_yaw - max_view_angle, facing_yaw + max_view_angle):
        ux, uy = math.cos(side), math.sin(side)
        r = min(max(rx * ux + ry * uy, standoff), max_distance)
        candidates.append((r * ux, r * uy))
    px, py = min(candidates, key=lambda c: math.hypot(c[0] - rx, c[1] - ry))
    return tag_xy[0] + px, tag_xy[1] + py


def region_points(tag_xy, facing_yaw, standoff, max_distance, max_view_angle, radii=5,
                  angles=9):
    """A grid of points ``[(x, y)]`` over the region :func:`approach_point` goes to the
    nearest point of: ``radii`` distances from ``standoff`` to ``max_distance`` times
    ``angles`` angles across ``max_view_angle`` either side of the tag's face (every
    direction for a tag lying flat, ``facing_yaw`` None)."""
    distances = np.linspace(standoff, max_distance, radii)
    if facing_yaw is None:
        bearings = np.linspace(-math.pi, math.pi, angles, endpoint=False)
    else:
        bearings = facing_yaw + np.linspace(-max_view_angle, max_view_angle, angles)
    return [(tag_xy[0] + r * math.cos(b), tag_xy[1] + r * math.sin(b))
            for r in distances for b in bearings]


def _scan_points(scan):
    """``(points (N, 2), bearings, ranges)`` of a scan (reactive or scan_agreement ``Scan``),
    laser at the robot's centre facing forward: the returns (a ``-inf`` beam, REP 117's
    obstacle nearer than ``range_min``, as a point at ``range_min``), and every beam's
    bearing and range (NaN where it tells nothing)."""
    angle_min, inc, range_min, range_max = scan_limits(scan)
    ranges = np.asarray(scan.ranges, dtype=float).ravel()
    bearings = angle_min + inc * np.arange(len(ranges))
    hit, reach = beam_reach(ranges, range_min, range_max)
    near = np.isneginf(ranges)
    at = np.where(near, range_min, ranges)
    mark = hit | near
    points = np.column_stack((at[mark] * np.cos(bearings[mark]),
                              at[mark] * np.sin(bearings[mark])))
    return points, bearings, reach


def way_seen(goal, scan, remembered, half_width):
    """Whether the laser shows the straight way from the robot to ``goal`` clear.

    Args:
        goal: ``(x, y)`` in the robot frame (x forward).
        scan: the latest scan (``ranges``, ``angle_min``, ``angle_increment``, ``range_min``,
            ``range_max``), taken as from the robot's centre.
        remembered: obstacle points ``(N, 2)`` in the robot frame that earlier scans showed,
            or None.
        half_width: half the width (m) of the strip the robot sweeps (its radius and margin).

    Returns:
        'blocked' when a return of the scan, or a remembered point, lies in the strip from the
        robot to ``half_width`` past the goal; 'clear' when none does and every beam across
        the strip's far end has a range there (a return beyond the goal or none within
        ``range_max``); else 'unknown' (the goal out of the laser's view, or a beam there with
        no reading, as a depth camera's ``NaN``).
    """
    return next(ways_seen([goal], scan, remembered, half_width))


def ways_seen(goals, scan, remembered, half_width):
    """:func:`way_seen` of each of ``goals`` in turn (a generator: the goals after the one
    the caller stops at are not looked at), the scan and the remembered points read once."""
    points, bearings, reach = _scan_points(scan)
    if remembered is not None and len(remembered):
        remembered = np.asarray(remembered, dtype=float).reshape(-1, 2)
        points = np.concatenate((points, remembered[np.all(np.isfinite(remembered), axis=1)]))
    for goal in goals:
        yield _way_seen(goal, points, bearings, reach, half_width)


def _way_seen(goal, points, bearings, reach, half_width):
    """:func:`way_seen` of one goal, from the obstacle points and the beams' bearings and
    ranges (:func:`_scan_points`)."""
    gx, gy = float(goal[0]), float(goal[1])
    length = math.hypot(gx, gy)
    if length <= 0.0:
        return 'clear'
    ux, uy = gx / length, gy / length
    along = points[:, 0] * ux + points[:, 1] * uy
    across = points[:, 1] * ux - points[:, 0] * uy
    if np.any((along > 0.0) & (along <= length + half_width) & (np.abs(across) <= half_width)):
        return 'blocked'
    bearing = math.atan2(gy, gx)
    spread = math.atan2(half_width, length)
    off = np.abs((bearings - bearing + math.pi) % (2.0 * math.pi) - math.pi)
    across_end = off <= spread
    if not np.any(across_end):
        return 'unknown'
    with np.errstate(invalid='ignore'):
        told = np.isfinite(reach[across_end]) & (reach[across_end] >= length)
    return 'clear' if bool(np.all(told)) else 'unknown'


@dataclasses.dataclass(frozen=True)
class ApproachLimits:
    """How the approach drives (the reactive wander's speeds and stop distance).

    Attributes:
        max_speed: forward speed (m/s), > 0.
        turn_speed: largest angular speed (rad/s), > 0.
        stop_distance: no forward motion while something is nearer ahead (m).
        timeout: the whole approach (s).
        blocked_time: standing blocked this long (s) ends the approach.
    """

    max_speed: float = 0.3
    turn_speed: float = 1.0
    stop_distance: float = 0.5
    timeout: float = 30.0
    blocked_time: float = 2.0


class Approach:
    """One approach: drive to the standoff point in front of a tag, then face the tag.

    Attributes:
        fiducial_id: the tag.
        tag: its ``(x, y)`` in the odometry frame.
        goal: the standoff point.
    """

    def __init__(self, fiducial_id, tag, goal, t, limits):
        self.fiducial_id = fiducial_id
        self.tag = tuple(tag)
        self.goal = tuple(goal)
        self._limits = limits
        self._start = t
        self._blocked_since = None
        self._facing = False        # at the goal, turning to the tag

    def shift(self, delta):
        """The clock jumped by ``delta`` s: keep what remains of the timers."""
        self._start += delta
        if self._blocked_since is not None:
            self._blocked_since += delta

    def expired(self, t):
        """True once the approach has taken its whole ``timeout`` at ``t``."""
        return t - self._start >= self._limits.timeout

    def step(self, pose, clearance, t):
        """One command.

        Args:
            pose: the robot's ``(x, y, yaw)`` in the odometry frame.
            clearance: distance (m) to the nearest obstacle ahead (0: unknown, which blocks).
            t: now (s).

        Returns:
            ``(v, w, outcome)``: the twist, and None while going on, else why it ended:
            'arrived' (facing the tag from the standoff point), 'blocked' or 'timed out'.
        """
        limits = self._limits
        if self.expired(t):
            return 0.0, 0.0, 'timed out'
        x, y, yaw = pose
        distance = math.hypot(self.goal[0] - x, self.goal[1] - y)
        if distance <= ARRIVED:
            self._facing = True
        if self._facing:
            error = wrap_angle(math.atan2(self.tag[1] - y, self.tag[0] - x) - yaw)
            if abs(error) <= FACING:
                return 0.0, 0.0, 'arrived'
            return 0.0, self._turn(error), None
        error = wrap_angle(math.atan2(self.goal[1] - y, self.goal[0] - x) - yaw)
        if abs(error) > TURN_IN_PLACE:
            self._blocked_since = None
            return 0.0, self._turn(error), None
        if clearance < limits.stop_distance:
            if self._blocked_since is None:
                self._blocked_since = t
            if t - self._blocked_since >= limits.blocked_time:
                return 0.0, 0.0, 'blocked'
            return 0.0, 0.0, None
        self._blocked_since = None
        v = min(limits.max_speed, DISTANCE_GAIN * distance + 0.05)
        w = max(-limits.turn_speed, min(limits.turn_speed, HEADING_GAIN * error))
        return v, w, None

    def _turn(self, error):
        """Turn in place towards ``error`` (rad), at least a fifth of the turn speed."""
        turn = self._limits.turn_speed
        return turn_rate(error, HEADING_GAIN, 0.2 * turn, turn)
