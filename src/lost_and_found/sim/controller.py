"""The sim_navigator's local controller and goal execution (move_base's decisions, pure).

:class:`PathFollower` is a pure-pursuit follower driven by the *estimated* pose, as move_base's
local planner is (it never sees ground truth):

- **Rotate first.** When the heading error to the lookahead point exceeds ``rotate_angle``
  (1 rad), turn in place until it is below ``rotate_exit_angle`` (hysteresis: no chatter
  between turning and driving).
- **Drive** towards the point ``lookahead`` (0.4 m) ahead on the path with the pure-pursuit
  curvature ``2 sin(alpha) / L``, at most ``max_linear`` (0.3 m/s) and ``max_angular``
  (1.0 rad/s). These are the slow TurtleBot2 navigation defaults (turtlebot_navigation's
  DWA ``max_vel_x`` 0.3 (0.5 on newer configs), ``max_rot_vel`` 1.0-5.0), well below the
  base's 0.5 m/s and 2.0 rad/s so that amcl keeps up. Speed falls linearly within
  ``slowdown_distance`` of the goal.
- **Align.** Once within ``xy_tolerance`` of the goal (latched, like move_base's
  ``latch_xy_goal_tolerance``), turn in place to the goal yaw; done within ``yaw_tolerance``.
- **Obstacle stop.** Laser points in the corridor the robot would sweep driving straight ahead
  (half-width ``robot_radius + footprint_margin``) closer than ``stop_distance`` to the robot
  centre stop forward motion; the robot turns in place to face the path (within
  ``BLOCKED_FACE_ANGLE``), which frees it when the obstacle is beside the path rather than on it.
- **Progress.** When the robot has not moved ``progress_distance`` from where it was when the
  progress clock last restarted within ``progress_timeout`` (move_base's
  ``oscillation_distance``/``oscillation_timeout``: a detour that leads away from the goal is
  progress too), the follower reports NO_PROGRESS. While aligning, a drop of the yaw error by
  ``ALIGN_PROGRESS`` counts as progress instead.

:class:`Navigation` is the executive of one goal: plan (with retries), re-plan periodically,
follow, and decide SUCCEEDED or ABORTED (no path, no progress after one re-plan, no pose).
:class:`NavigatorConfig` holds every parameter of the ``sim_navigator`` node.

Pure numpy: no ROS, no clock (time is a float argument, seconds).
"""
import dataclasses
import enum
import logging
import math

import numpy as np

from lost_and_found.core.config import Checker, ConfigError
from lost_and_found.core.geometry import turn_rate, wrap_angle
from lost_and_found.sim.planner import PlannerConfig

_log = logging.getLogger('rosout')

#: Decrease (rad) of the yaw error that counts as progress while aligning to the goal yaw.
ALIGN_PROGRESS = 0.1

#: While the obstacle stop holds the robot, it turns in place until it faces the path's
#: lookahead point within this angle (rad): facing a little off the path, the corridor ahead can
#: take in an obstacle the path passes clear of, and the robot would wait for ever.
BLOCKED_FACE_ANGLE = 0.05

#: Searching this far (m) along the path past the last closest point for the new closest point:
#: far enough to skip a corner cut, near enough never to jump to a later leg of a U-shaped path.
_CLOSEST_WINDOW = 1.0


def scan_points(ranges, angles, laser_pose=(0.0, 0.0, 0.0), range_min=0.0,
                range_max=math.inf):
    """Laser returns as (N, 2) points in the robot (base) frame.

    Args:
        ranges: beam ranges (m); NaN, inf, <= ``range_min`` or > ``range_max`` are no return.
        angles: beam angles (rad) in the laser frame, one per range.
        laser_pose: (x, y, yaw) of the laser in the base frame.
        range_min: ranges at or below this are invalid (REP 117: too close to measure).
        range_max: ranges above this are invalid.

    Raises:
        ValueError: when ranges and angles differ in length.
    """
    ranges = np.asarray(ranges, dtype=float).ravel()
    angles = np.asarray(angles, dtype=float).ravel()
    if ranges.shape != angles.shape:
        raise ValueError('%d ranges but %d angles' % (ranges.size, angles.size))
    with np.errstate(invalid='ignore'):
        ok = np.isfinite(ranges) & np.isfinite(angles) & (ranges > max(range_min, 0.0)) & \
            (ranges <= range_max)
    lx, ly, lyaw = laser_pose
    r, a = ranges[ok], angles[ok] + lyaw
    return np.column_stack((lx + r * np.cos(a), ly + r * np.sin(a)))


class Status(enum.Enum):
    """What the follower is doing (or why it stopped)."""

    IDLE = 'idle'                  # no path
    ROTATING = 'rotating'          # turning in place towards the path
    FOLLOWING = 'following'        # driving along the path
    BLOCKED = 'blocked'            # an obstacle ahead: forward motion stopped
    ALIGNING = 'aligning'          # at the goal position, turning to the goal yaw
    REACHED = 'reached'            # within both tolerances
    NO_PROGRESS = 'no_progress'    # no progress for progress_timeout


@dataclasses.dataclass(frozen=True)
class Command:
    """One velocity command of the follower.

    Attributes:
        linear: forward speed (m/s), never negative.
        angular: yaw rate (rad/s), counter-clockwise positive.
        status: a Status.
    """

    linear: float
    angular: float
    status: Status


@dataclasses.dataclass(frozen=True)
class FollowerConfig:
    """Parameters of the path follower (SI units).

    Attributes:
        lookahead: pure-pursuit lookahead distance (m).
        max_linear: forward speed limit (m/s).
        max_angular: yaw rate limit (rad/s).
        min_linear: the least forward speed while driving (m/s): keeps creeping near the goal.
        min_angular: the least yaw rate when turning in place (rad/s): the Kobuki barely turns
            below about 0.3 rad/s.
        angular_gain: yaw rate per radian of error when turning in place (1/s).
        rotate_angle: heading error (rad) above which the robot turns in place first.
        rotate_exit_angle: turning in place ends below this heading error (rad).
        slowdown_distance: speed falls linearly to ``min_linear`` within this distance (m)
            of the goal.
        xy_tolerance: the goal position is reached within this distance (m).
        yaw_tolerance: the goal yaw is reached within this angle (rad).
        robot_radius: the robot's radius (m), TurtleBot2 0.18.
        footprint_margin: added to ``robot_radius`` for the obstacle corridor's half-width (m).
        stop_distance: obstacles in the corridor closer than this to the robot centre (m) stop
            forward motion.
        progress_distance: the robot must move this far (m) from where it was when the
            progress clock last restarted ...
        progress_timeout: ... within this time (s), or the follower reports NO_PROGRESS.
    """

    lookahead: float = 0.4
    max_linear: float = 0.3
    max_angular: float = 1.0
    min_linear: float = 0.05
    min_angular: float = 0.3
    angular_gain: float = 1.5
    rotate_angle: float = 1.0
    rotate_exit_angle: float = 0.4
    slowdown_distance: float = 0.6
    xy_tolerance: float = 0.2
    yaw_tolerance: float = 0.3
    robot_radius: float = 0.18
    footprint_margin: float = 0.05
    stop_distance: float = 0.35
    progress_distance: float = 0.1
    progress_timeout: float = 10.0

    def validate(self):
        """Raise ConfigError naming every bad value."""
        check = Checker(self)
        for name in ('lookahead', 'max_linear', 'max_angular', 'angular_gain',
                     'slowdown_distance', 'xy_tolerance', 'robot_radius', 'stop_distance',
                     'progress_distance', 'progress_timeout'):
            check.positive(name)
        for name in ('min_linear', 'min_angular', 'footprint_margin'):
            check.non_negative(name)
        check.in_range('rotate_angle', 0.0, math.pi, low_open=True)
        check.in_range('rotate_exit_angle', 0.0, math.pi, low_open=True)
        check.in_range('yaw_tolerance', 0.0, math.pi, low_open=True)
        if not check.problems:
            if self.min_linear > self.max_linear:
                check.problem('min_linear=%r: must be <= max_linear=%r' % (
                    self.min_linear, self.max_linear))
            if self.min_angular > self.max_angular:
                check.problem('min_angular=%r: must be <= max_angular=%r' % (
                    self.min_angular, self.max_angular))
            if self.rotate_exit_angle > self.rotate_angle:
                check.problem('rotate_exit_angle=%r: must be <= rotate_angle=%r' % (
                    self.rotate_exit_angle, self.rotate_angle))
            if self.stop_distance <= self.robot_radius:
                check.problem('stop_distance=%r: must exceed robot_radius=%r (it is measured '
                              'from the robot centre)' % (self.stop_distance, self.robot_radius))
        check.done()


class PathFollower:
    """Pure-pursuit path following from the estimated pose (see the module docstring).

    Args:
        config: a FollowerConfig (validated here).
    """

    def __init__(self, config=FollowerConfig()):
        """An idle follower."""
        config.validate()
        self.config = config
        self._path = None
        self._goal_yaw = None
        self._index = 0
        self._rotating = False
        self._aligning = False
        self._progress_ref = math.inf
        self._progress_point = None
        self.progress_time = None
        self._last_now = None

    @property
    def path(self):
        """The (N, 2) array of waypoints being followed, or None."""
        return self._path

    @property
    def goal(self):
        """(x, y, yaw or None) of the path's end, or None when idle."""
        if self._path is None:
            return None
        return float(self._path[-1, 0]), float(self._path[-1, 1]), self._goal_yaw

    def set_path(self, path, goal_yaw, now, reset_progress=True):
        """Follow ``path`` (map-frame (x, y) waypoints, the goal last), ending at ``goal_yaw``.

        Args:
            path: sequence of (x, y), at least one point.
            goal_yaw: final yaw (rad), or None for no final alignment.
            now: time (s).
            reset_progress: restart the progress clock (a new goal); False keeps it, so that a
                periodic re-plan cannot hide a robot that is stuck.

        Raises:
            ValueError: for an empty or non-finite path or yaw.
        """
        points = np.asarray(path, dtype=float).reshape(-1, 2)
        if points.shape[0] == 0 or not np.isfinite(points).all():
            raise ValueError('a path needs at least one finite (x, y) point')
        if goal_yaw is not None and not math.isfinite(goal_yaw):
            raise ValueError('goal_yaw=%r must be finite or None' % (goal_yaw,))
        self._path = points
        self._goal_yaw = goal_yaw
        self._index = 0
        if reset_progress:
            self._rotating = False
            self._aligning = False
            self.reset_progress(now)

    def clear(self):
        """Stop following (idle)."""
        self._path = None
        self._goal_yaw = None
        self._rotating = self._aligning = False

    def reset_progress(self, now):
        """Restart the progress clock at ``now`` (e.g. after a re-plan for lack of progress)."""
        self._progress_ref = math.inf
        self._progress_point = None
        self.progress_time = now
        self._last_now = now

    # ------------------------------------------------------------------ internals

    def _closest_index(self, x, y):
        """Advance the closest-point index along the path (never backwards)."""
        rest = self._path[self._index:]
        along = np.concatenate(([0.0], np.cumsum(np.hypot(*np.diff(rest, axis=0).T))))
        distance = np.hypot(rest[:, 0] - x, rest[:, 1] - y)
        near = int(np.argmin(np.where(along <= _CLOSEST_WINDOW, distance, np.inf)))
        if distance[near] > self.config.lookahead:
            # Far from the path near where we were (the estimate jumped): search all of it.
            near = int(np.argmin(distance))
        self._index += near

    def _lookahead_point(self, x, y):
        """The first path point at least ``lookahead`` away past the closest one, else the goal."""
        rest = self._path[self._index:]
        far = np.hypot(rest[:, 0] - x, rest[:, 1] - y) >= self.config.lookahead
        return rest[int(np.argmax(far))] if far.any() else rest[-1]

    def _blocked(self, obstacles):
        """True when an obstacle lies in the corridor ahead closer than ``stop_distance``."""
        if obstacles is None or len(obstacles) == 0:
            return False
        c = self.config
        points = np.asarray(obstacles, dtype=float).reshape(-1, 2)
        px, py = points[:, 0], points[:, 1]
        return bool(np.any((px > 0.0) & (px < c.stop_distance) &
                           (np.abs(py) <= c.robot_radius + c.footprint_margin)))

    def _turn(self, error):
        """Yaw rate to turn in place by ``error`` (rad): proportional, clamped both ways."""
        c = self.config
        return turn_rate(error, c.angular_gain, c.min_angular, c.max_angular)

    def _stalled(self, now):
        """True when the progress clock has run ``progress_timeout`` since its last restart."""
        return now - self.progress_time > self.config.progress_timeout

    def _clock(self, now):
        """Note the time ``now``; a clock that went backwards restarts the progress clock."""
        if self._last_now is not None and now < self._last_now:
            self.reset_progress(now)     # the clock jumped backwards: start the window again
        self._last_now = now

    def _progress(self, value, step, now):
        """Update the progress clock with ``value`` (lower is better); True when stalled."""
        self._clock(now)
        if self._progress_ref == math.inf:
            self._progress_ref = value          # the first reading after a reset: the reference
        elif value <= self._progress_ref - step:
            self._progress_ref = value
            self.progress_time = now
        return self._stalled(now)

    def _moved(self, x, y, now):
        """Update the progress clock with the position (x, y): a move of ``progress_distance``
        from the reference point restarts it there (move_base's oscillation check); True when
        stalled."""
        self._clock(now)
        if self._progress_point is None:
            self._progress_point = (x, y)       # the first reading after a reset: the reference
        elif math.hypot(x - self._progress_point[0],
                        y - self._progress_point[1]) >= self.config.progress_distance:
            self._progress_point = (x, y)
            self.progress_time = now
        return self._stalled(now)

    # ------------------------------------------------------------------ the step

    def compute(self, x, y, yaw, now, obstacles=None, scan=None):
        """The velocity command for the estimated pose (x, y, yaw) at time ``now``.

        Args:
            x, y, yaw: the estimated pose in the path's frame (m, m, rad).
            now: time (s).
            obstacles: (N, 2) obstacle points in the robot frame (see :func:`scan_points`).
            scan: alternatively (ranges, angles) of a laser at the robot centre.

        Returns:
            A Command; zero with status IDLE when there is no path, REACHED at the goal, or
            NO_PROGRESS when stuck (it stays so until :meth:`reset_progress` or a new path).

        Raises:
            ValueError: for a non-finite pose or time.
        """
        if not all(math.isfinite(v) for v in (x, y, yaw, now)):
            raise ValueError('non-finite pose (%r, %r, %r) or time %r' % (x, y, yaw, now))
        if self._path is None:
            return Command(0.0, 0.0, Status.IDLE)
        c = self.config
        if obstacles is None and scan is not None:
            obstacles = scan_points(*scan)
        gx, gy = self._path[-1]
        goal_distance = math.hypot(gx - x, gy - y)

        # Latch the goal position, unlatch only when the estimate moved well away from it.
        if goal_distance <= c.xy_tolerance and not self._aligning:
            self._aligning = True
            self.reset_progress(now)
        elif self._aligning and goal_distance > 2.0 * c.xy_tolerance:
            self._aligning = False
            self.reset_progress(now)            # progress is measured in distance again
        if self._aligning:
            error = 0.0 if self._goal_yaw is None else wrap_angle(self._goal_yaw - yaw)
            if abs(error) <= c.yaw_tolerance:
                return Command(0.0, 0.0, Status.REACHED)
            if self._progress(abs(error), ALIGN_PROGRESS, now):
                return Command(0.0, 0.0, Status.NO_PROGRESS)
            return Command(0.0, self._turn(error), Status.ALIGNING)

        if self._moved(x, y, now):
            return Command(0.0, 0.0, Status.NO_PROGRESS)
        self._closest_index(x, y)
        lx, ly = self._lookahead_point(x, y)
        alpha = wrap_angle(math.atan2(ly - y, lx - x) - yaw)
        if self._rotating:
            self._rotating = abs(alpha) > c.rotate_exit_angle
        else:
            self._rotating = abs(alpha) > c.rotate_angle
        if self._rotating:
            return Command(0.0, self._turn(alpha), Status.ROTATING)

        if self._blocked(obstacles):
            # Forward motion stops; face the path (BLOCKED_FACE_ANGLE) to be ready to go on.
            return Command(0.0, self._turn(alpha) if abs(alpha) > BLOCKED_FACE_ANGLE else 0.0,
                           Status.BLOCKED)
        distance = max(math.hypot(lx - x, ly - y), 1e-6)
        curvature = 2.0 * math.sin(alpha) / distance
        slow = min(1.0, goal_distance / c.slowdown_distance)
        linear = max(c.min_linear, c.max_linear * slow * max(math.cos(alpha), 0.0))
        angular = curvature * linear
        if abs(angular) > c.max_angular:
            # Keep the curvature: slow down rather than cut the corner.
            linear *= c.max_angular / abs(angular)
            angular = math.copysign(c.max_angular, angular)
        return Command(linear, angular, Status.FOLLOWING)


# ---------------------------------------------------------------------- the node's config


def _mirror(cls, name):
    """A NavigatorConfig field mirroring ``cls.<name>`` (same parameter name and default)."""
    return dataclasses.field(default=getattr(cls, name), metadata={'part': cls.__name__})


@dataclasses.dataclass(frozen=True)
class NavigatorConfig:
    """Every parameter of the ``sim_navigator`` node (SI units, move_base names where any).

    Attributes:
        map_file: the map_server YAML of the map to plan on (required).
        global_frame: frame of the plan and of goals (goals in other frames are transformed).
        robot_base_frame: the robot frame whose pose in ``global_frame`` is the estimate.
        odom_frame: the odometry frame: the obstacle stop remembers laser returns in it, as
            move_base's local costmap does, so a wall the laser no longer sees (a Kinect sees
            nothing nearer than 0.45 m) still stops the robot. Empty: only the latest scan.
        controller_frequency: rate (Hz, sim time) of the control loop.
        planner_frequency: re-plan rate (Hz) while following; 0 plans only on new goals.
        max_planning_retries: failed plans in a row before a goal is aborted. Without any path
            a retry happens every control period; with one, the old path is followed and the
            retry waits for the next planner period.
        pose_timeout: a goal is aborted after this long (s) without a pose estimate.
        scan_timeout: scans older than this (s) are ignored by the obstacle stop.
        max_recoveries: move_base's recovery behaviours: before a goal is aborted for no
            progress or no path, the robot turns a full circle in place up to this many times
            (then re-plans); 0 aborts at once. move_base's default list rotates twice.
        recovery_rotate_speed: angular speed (rad/s) of those rotations.
        Other fields: see PlannerConfig and FollowerConfig (same names).
    """

    map_file: str = ''
    global_frame: str = 'map'
    robot_base_frame: str = 'base_footprint'
    odom_frame: str = 'odom'
    controller_frequency: float = 10.0
    planner_frequency: float = 0.5
    max_planning_retries: int = 3
    pose_timeout: float = 2.0
    scan_timeout: float = 1.0
    max_recoveries: int = 2
    recovery_rotate_speed: float = 1.0
    inflation_radius: float = _mirror(PlannerConfig, 'inflation_radius')
    planning_resolution: float = _mirror(PlannerConfig, 'planning_resolution')
    unknown_is_free: bool = _mirror(PlannerConfig, 'unknown_is_free')
    wall_cost_weight: float = _mirror(PlannerConfig, 'wall_cost_weight')
    wall_cost_distance: float = _mirror(PlannerConfig, 'wall_cost_distance')
    start_search_radius: float = _mirror(PlannerConfig, 'start_search_radius')
    unknown_escape: float = _mirror(PlannerConfig, 'unknown_escape')
    lookahead: float = _mirror(FollowerConfig, 'lookahead')
    max_linear: float = _mirror(FollowerConfig, 'max_linear')
    max_angular: float = _mirror(FollowerConfig, 'max_angular')
    min_linear: float = _mirror(FollowerConfig, 'min_linear')
    min_angular: float = _mirror(FollowerConfig, 'min_angular')
    angular_gain: float = _mirror(FollowerConfig, 'angular_gain')
    rotate_angle: float = _mirror(FollowerConfig, 'rotate_angle')
    rotate_exit_angle: float = _mirror(FollowerConfig, 'rotate_exit_angle')
    slowdown_distance: float = _mirror(FollowerConfig, 'slowdown_distance')
    xy_tolerance: float = _mirror(FollowerConfig, 'xy_tolerance')
    yaw_tolerance: float = _mirror(FollowerConfig, 'yaw_tolerance')
    robot_radius: float = _mirror(FollowerConfig, 'robot_radius')
    footprint_margin: float = _mirror(FollowerConfig, 'footprint_margin')
    stop_distance: float = _mirror(FollowerConfig, 'stop_distance')
    progress_distance: float = _mirror(FollowerConfig, 'progress_distance')
    progress_timeout: float = _mirror(FollowerConfig, 'progress_timeout')

    def _part(self, cls):
        return cls(**{f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                      if f.metadata.get('part') == cls.__name__})

    def planner_config(self):
        """The PlannerConfig part."""
        return self._part(PlannerConfig)

    def follower_config(self):
        """The FollowerConfig part."""
        return self._part(FollowerConfig)

    def validate(self):
        """Raise ConfigError naming every bad value."""
        check = Checker(self)
        check.non_empty('map_file')
        check.non_empty('global_frame')
        check.non_empty('robot_base_frame')
        # Below 1 Hz the obstacle stop reacts too late; above 100 Hz it only burns CPU.
        check.in_range('controller_frequency', 1.0, 100.0)
        check.in_range('planner_frequency', 0.0, 10.0)
        for name in ('max_planning_retries', 'max_recoveries'):
            value = getattr(self, name)
            check.require(isinstance(value, int) and not isinstance(value, bool) and value >= 0,
                          name, 'be an integer >= 0')
        check.positive('recovery_rotate_speed')
        check.positive('pose_timeout')
        check.positive('scan_timeout')
        for cls in (PlannerConfig, FollowerConfig):
            try:
                self._part(cls).validate()
            except ConfigError as error:
                check.problems.extend(error.problems)
        if not check.problems and self.inflation_radius < self.robot_radius:
            check.problem('inflation_radius=%r: must be >= robot_radius=%r, or plans graze '
                          'walls' % (self.inflation_radius, self.robot_radius))
        check.done()


# ---------------------------------------------------------------------- one goal


class Outcome(enum.Enum):
    """How a goal ended (the move_base action's terminal states the executive decides)."""

    SUCCEEDED = 'succeeded'
    ABORTED = 'aborted'


@dataclasses.dataclass(frozen=True)
class Step:
    """What the node must do this control period.

    Attributes:
        linear: forward speed (m/s) to command.
        angular: yaw rate (rad/s) to command.
        status: the follower's Status, or None while planning or waiting for a pose.
        outcome: an Outcome when the goal ended (the twist is then zero), else None.
        message: why it ended (for the action result's text), or ''.
        new_path: True when a new plan was made this step.
    """

    linear: float = 0.0
    angular: float = 0.0
    status: Status = None
    outcome: Outcome = None
    message: str = ''
    new_path: bool = False


class Navigation:
    """Executes one goal at a time: plan, re-plan, follow, decide success or abort.

    Args:
        planner: a Planner for the map.
        follower: a PathFollower.
        config: a NavigatorConfig (frequencies, retries, timeouts).
    """

    def __init__(self, planner, follower, config):
        """An idle executive."""
        self.planner = planner
        self.follower = follower
        self.config = config
        self.goal = None
        self._reset(0.0)

    def _reset(self, now):
        self._failures = 0
        self._force_plan = True
        self._next_plan = now
        self._pose_time = now
        self._last_now = now
        self._have_path = False
        self._stall_replan = None
        self._recoveries = 0
        self._rotate_until = None

    @property
    def active(self):
        """True while a goal is being executed."""
        return self.goal is not None

    @property
    def path(self):
        """The current path as an (N, 2) array, or None."""
        return self.follower.path if self._have_path else None

    def start(self, x, y, yaw, now):
        """Start (or replace) the goal (x, y, yaw or None) in the planning frame at ``now``.

        Raises:
            ValueError: for a non-finite goal.
        """
        if not (math.isfinite(x) and math.isfinite(y)) or \
                (yaw is not None and not math.isfinite(yaw)):
            raise ValueError('non-finite goal (%r, %r, %r)' % (x, y, yaw))
        self.goal = (float(x), float(y), yaw)
        self.follower.clear()
        self._reset(now)

    def stop(self):
        """Drop the goal (preempted or cancelled)."""
        self.goal = None
        self.follower.clear()
        self._have_path = False

    def _finish(self, outcome, message):
        self.stop()
        return Step(outcome=outcome, message=message)

    def _recover_or_abort(self, now, why):
        """Turn a full circle in place (move_base's rotate recovery), or abort when spent."""
        c = self.config
        if self._recoveries >= c.max_recoveries:
            return self._finish(Outcome.ABORTED, '%s after %d recovery rotations'
                                % (why, self._recoveries))
        self._recoveries += 1
        self._rotate_until = now + 2.0 * math.pi / c.recovery_rotate_speed
        _log.info('navigation: %s: recovery rotation %d of %d', why, self._recoveries,
                  c.max_recoveries)
        return Step(0.0, c.recovery_rotate_speed, Status.ROTATING)

    def _plan(self, pose, now):
        """Plan from ``pose``; returns a Step when the goal must end, else None."""
        c = self.config
        path = self.planner.plan(pose[:2], self.goal[:2])
        self._next_plan = now + (1.0 / c.planner_frequency if c.planner_frequency > 0
                                 else math.inf)
        if path is None:
            self._failures += 1
            if self._failures > c.max_planning_retries:
                why = 'no path from (%.2f, %.2f) to (%.2f, %.2f) after %d attempts' % (
                    pose[0], pose[1], self.goal[0], self.goal[1], self._failures)
                self._failures = 0
                return self._recover_or_abort(now, why)
            # Without any path retry next period; with one, keep following it meanwhile.
            self._force_plan = not self._have_path
            return None
        first = not self._have_path
        self.follower.set_path(path, self.goal[2], now, reset_progress=first)
        self._have_path = True
        self._failures = 0
        self._force_plan = False
        return None

    def step(self, pose, now, obstacles=None):
        """One control period.

        Args:
            pose: the estimated (x, y, yaw) in the planning frame, or None when unknown.
            now: time (s).
            obstacles: (N, 2) laser points in the robot frame, or None.

        Returns:
            A Step: the twist to publish, and the outcome when the goal ended.
        """
        if self.goal is None:
            return Step()
        c = self.config
        if now < self._last_now:
            # Sim time went backwards (a restarted /clock): restart every timer, and a
            # recovery rotation under way lasts at most one full turn from now (its end, set on
            # the old clock, would keep it turning for as long as the clock jumped back).
            self._pose_time = self._next_plan = now
            self.follower.reset_progress(now)
            if self._rotate_until is not None:
                self._rotate_until = min(self._rotate_until,
                                         now + 2.0 * math.pi / c.recovery_rotate_speed)
        self._last_now = now
        if pose is None or not all(math.isfinite(v) for v in pose):
            if now - self._pose_time > c.pose_timeout:
                return self._finish(Outcome.ABORTED, 'no pose estimate for %.1f s'
                                    % (now - self._pose_time))
            return Step()
        self._pose_time = now
        if self._rotate_until is not None:
            if now < self._rotate_until:
                return Step(0.0, c.recovery_rotate_speed, Status.ROTATING)
            # The rotation is over: start afresh from wherever the robot now believes it is.
            self._rotate_until = None
            self._stall_replan = None
            self.follower.reset_progress(now)
            self._force_plan = True
        new_path = False
        if self._force_plan or now >= self._next_plan:
            ended = self._plan(pose, now)
            if ended is not None:
                return ended
            new_path = self._failures == 0
        if not self._have_path:
            return Step()
        command = self.follower.compute(pose[0], pose[1], pose[2], now, obstacles=obstacles)
        if command.status is Status.REACHED:
            return self._finish(Outcome.SUCCEEDED, 'goal reached')
        if command.status is Status.NO_PROGRESS:
            stalled_again = self._stall_replan is not None and \
                self.follower.progress_time <= self._stall_replan
            if stalled_again:
                return self._recover_or_abort(now, 'no progress for %.1f s after a re-plan'
                                              % c.progress_timeout)
            _log.info('navigation: no progress for %.1f s: re-planning', c.progress_timeout)
            self._stall_replan = now
            self.follower.reset_progress(now)
            self._force_plan = True
            return Step(status=command.status, new_path=new_path)
        return Step(command.linear, command.angular, command.status, new_path=new_path)
