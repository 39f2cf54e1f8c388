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

Pure Python: no ROS, time is an argument.
"""
import dataclasses
import math

from lost_and_found.core.geometry import turn_rate, wrap_angle

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
