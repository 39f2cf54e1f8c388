"""A differential-drive robot disc on an occupancy grid, and its wheel odometry.

:class:`DiffDrive` follows commanded ``(v, w)`` within a TurtleBot2's velocity and
acceleration limits and integrates each step exactly along its arc. It never enters
obstacles: a step that would bring the disc closer than its radius to an occupied cell is not
taken, the velocity drops to zero and, once per contact episode, ``collisions`` counts it.

:class:`Odometry` integrates the motion the robot *actually made*, with drift, in the ``odom``
frame that starts at the identity. Its errors are a random walk: the variance of the distance
error grows in proportion to the distance travelled, that of the heading error in proportion
to the rotation and the distance. Per-step errors scaled with the step itself would make the
drift depend on the simulation step; variances proportional to the motion do not.
"""
import dataclasses
import math

import numpy as np

from lost_and_found.core.config import Checker

#: A step is "in place" (no translation) below this arc length (m); avoids 0/0 in the arc.
_EPS = 1e-12


def arc(distance, rotation):
    """Relative pose ``(dx, dy, dyaw)`` after driving ``distance`` (m) while turning ``rotation``.

    The motion is a circular arc at constant speeds (a straight line when ``rotation`` is 0),
    expressed in the robot frame at its start.
    """
    if abs(rotation) < 1e-9:
        # Second-order expansion of the arc: exact to machine precision here.
        return distance, 0.5 * distance * rotation, rotation
    radius = distance / rotation
    return radius * math.sin(rotation), radius * (1.0 - math.cos(rotation)), rotation


def compose_pose(pose, delta):
    """The pose ``(x, y, yaw)`` reached from ``pose`` by the relative motion ``delta``.

    The yaw is wrapped into [-pi, pi).
    """
    x, y, yaw = pose
    dx, dy, dyaw = delta
    c, s = math.cos(yaw), math.sin(yaw)
    new_yaw = math.fmod(yaw + dyaw + math.pi, 2.0 * math.pi)
    new_yaw = new_yaw + 2.0 * math.pi if new_yaw < 0 else new_yaw
    return x + c * dx - s * dy, y + s * dx + c * dy, new_yaw - math.pi


def _ramp(current, target, max_change):
    """``current`` moved toward ``target`` by at most ``max_change``."""
    return current + max(-max_change, min(max_change, target - current))


@dataclasses.dataclass(frozen=True)
class RobotConfig:
    """The TurtleBot2 (Kobuki) base.

    Attributes:
        radius: radius of the robot's disc footprint (m).
        max_linear_speed: largest forward and backward speed (m/s).
        max_angular_speed: largest turn rate (rad/s).
        max_linear_accel: largest change of speed (m/s^2).
        max_angular_accel: largest change of turn rate (rad/s^2).
    """

    radius: float = 0.18
    max_linear_speed: float = 0.5
    max_angular_speed: float = 2.0
    max_linear_accel: float = 1.0
    max_angular_accel: float = 3.0

    def validate(self):
        """Raise ConfigError naming every bad value."""
        check = Checker(self)
        for field in dataclasses.fields(self):
            check.positive(field.name)
        check.done()


class DiffDrive:
    """The true motion of a differential-drive disc robot in a grid map.

    Args:
        config: a validated :class:`RobotConfig`.
        grid: the :class:`~lost_and_found.sim.gridmap.GridMap` to collide with, or None for
            an empty plane.
        pose: the start pose ``(x, y, yaw)`` in the map frame.

    Attributes:
        collisions: number of contact episodes so far (a robot pushing against a wall for
            many steps counts once; it must get clear of the obstacle before it counts again).
        v: current forward speed (m/s).
        w: current turn rate (rad/s).
    """

    def __init__(self, config, grid=None, pose=(0.0, 0.0, 0.0)):
        """Place the robot at ``pose``, stopped."""
        self.config = config
        self.grid = grid
        self.collisions = 0
        #: (x, y, yaw, v, w) where the latest collision began and the speeds it stopped (None:
        #: none yet): to tell afterwards which motion ran into what.
        self.last_collision = None
        self.v = self.w = 0.0
        self._target = (0.0, 0.0)
        self._in_contact = False
        self._pose = (0.0, 0.0, 0.0)
        self.set_pose(pose)

    @property
    def pose(self):
        """The true pose ``(x, y, yaw)`` in the map frame."""
        return self._pose

    @property
    def target(self):
        """The commanded ``(v, w)`` after clipping to the speed limits."""
        return self._target

    @property
    def in_contact(self):
        """True while the robot is in the contact episode of its last collision."""
        return self._in_contact

    def command(self, v, w):
        """Set the target speeds (m/s, rad/s), clipped to the limits.

        Raises:
            ValueError: if either is not finite (the previous command stays).
        """
        v, w = float(v), float(w)
        if not (math.isfinite(v) and math.isfinite(w)):
            raise ValueError('velocity command (%r, %r) is not finite' % (v, w))
        cfg = self.config
        self._target = (max(-cfg.max_linear_speed, min(cfg.max_linear_speed, v)),
                        max(-cfg.max_angular_speed, min(cfg.max_angular_speed, w)))

    def stop(self):
        """Stop at once: zero target and speeds (e.g. the robot was lifted)."""
        self._target = (0.0, 0.0)
        self.v = self.w = 0.0

    def set_pose(self, pose):
        """Move the robot to ``pose`` instantly, stopped and out of contact.

        Raises:
            ValueError: if the pose is not three finite numbers.
        """
        pose = tuple(float(v) for v in pose)
        if len(pose) != 3 or not all(math.isfinite(v) for v in pose):
            raise ValueError('pose %r must be three finite numbers (x, y, yaw)' % (pose,))
        self._pose = compose_pose(pose, (0.0, 0.0, 0.0))
        self.stop()
        self._in_contact = False

    def clearance(self, x, y, within=None):
        """Distance (m) from a point to the nearest occupied cell, a square of the grid.

        Exact wherever it is below ``within`` (m; default: the radius plus the margin that
        ends a contact episode, every distance :meth:`step` compares): there it measures to
        the cells' squares around the point itself. Farther out it returns a lower bound from
        the grid's distance field, which measures between cell centres: the point may lie
        anywhere in its cell, so both ends lose half a cell's diagonal. (Measuring from the
        point's cell centre instead, less half a cell, put walls up to half a cell too near and
        nearly a whole cell too far: a disc in the corner of its cell counted contact with a
        wall's corner centimetres away, and one on the wall's side of its cell entered a
        straight wall uncounted.) The map's edge counts as an obstacle (the robot must stay on
        its map); without a grid the clearance is infinite.
        """
        if self.grid is None:
            return math.inf
        grid = self.grid
        res = grid.resolution
        gx, gy = (float(v) for v in grid.to_grid(x, y))
        rows, cols = grid.shape
        # The map's edge counts as a wall: there is no floor beyond it.
        edge = min(gx, cols - gx, gy, rows - gy) * res
        if edge <= 0.0:
            return edge
        if within is None:
            within = self.config.radius + self._release_margin()
        centres = float(grid.distance_at(x, y))
        bound = centres - math.sqrt(2.0) * res
        if bound >= within:
            return min(bound, edge)
        # The nearest square is no farther than the nearest centre, itself within ``centres``
        # plus half a diagonal of the point; its centre is half a diagonal beyond: the window
        # of cells within that reach (and a cell to spare) holds it.
        reach = centres / res + 2.5
        r0, r1 = max(int(math.floor(gy - reach)), 0), min(int(math.floor(gy + reach)), rows - 1)
        c0, c1 = max(int(math.floor(gx - reach)), 0), min(int(math.floor(gx + reach)), cols - 1)
        r, c = np.nonzero(grid.occupied[r0:r1 + 1, c0:c1 + 1])
        r, c = r + r0, c + c0
        dx = np.maximum(np.maximum(c - gx, gx - (c + 1)), 0.0)
        dy = np.maximum(np.maximum(r - gy, gy - (r + 1)), 0.0)
        return min(float(np.min(np.hypot(dx, dy))) * res, edge)

    def fits(self, x, y):
        """True when the robot's disc centred at ``(x, y)`` touches no occupied cell."""
        return self.clearance(x, y) >= self.config.radius

    def step(self, dt):
        """Advance the true motion by ``dt`` seconds.

        Speeds move toward the target within the acceleration limits, then the robot follows
        the arc of the new speeds. A step into an obstacle is not taken.

        Returns:
            ``(distance, rotation)``: the arc length (m, signed) and turn (rad) actually made;
            ``(0.0, 0.0)`` when the step was blocked.

        Raises:
            ValueError: if ``dt`` is not a finite number > 0.
        """
        if not (math.isfinite(dt) and dt > 0):
            raise ValueError('dt=%r must be a finite number > 0' % (dt,))
        cfg = self.config
        self.v = _ramp(self.v, self._target[0], cfg.max_linear_accel * dt)
        self.w = _ramp(self.w, self._target[1], cfg.max_angular_accel * dt)
        distance, rotation = self.v * dt, self.w * dt
        new_pose = compose_pose(self._pose, arc(distance, rotation))
        before = self.clearance(self._pose[0], self._pose[1])
        after = self.clearance(new_pose[0], new_pose[1])
        # Only moving *deeper* into contact is blocked, so a robot placed against a wall can
        # still turn in place or back away from it.
        if after < cfg.radius and after < before:
            if not self._in_contact:
                self.collisions += 1
                self._in_contact = True
                self.last_collision = tuple(self._pose) + (self.v, self.w)
            self.v = self.w = 0.0
            return 0.0, 0.0
        self._pose = new_pose
        # The contact episode ends once the robot is clearly away from every obstacle.
        if self._in_contact and after >= cfg.radius + self._release_margin():
            self._in_contact = False
        return distance, rotation

    def _release_margin(self):
        """How far (m) beyond touching the robot must get for a contact episode to end."""
        return 2.0 * self.grid.resolution if self.grid is not None else 0.0


@dataclasses.dataclass(frozen=True)
class OdometryConfig:
    """Wheel odometry drift (all zero: perfect odometry).

    Attributes:
        translation_noise: standard deviation (m) of the distance error accumulated over
            1 m of travel; it grows with the square root of the distance.
        rotation_noise: standard deviation (rad) of the heading error accumulated over 1 rad
            of rotation; it grows with the square root of the rotation.
        drift_noise: standard deviation (rad) of the heading error accumulated over 1 m of
            travel (wheel slip and unequal wheels bend straight lines).
    """

    translation_noise: float = 0.02
    rotation_noise: float = 0.02
    drift_noise: float = 0.01

    def validate(self):
        """Raise ConfigError naming every bad value."""
        check = Checker(self)
        for field in dataclasses.fields(self):
            check.non_negative(field.name)
        check.done()


class Odometry:
    """Dead reckoning in the ``odom`` frame from the motion the robot made, with drift.

    Args:
        config: a validated :class:`OdometryConfig`.
        rng: a ``numpy.random.Generator`` for the drift (seed it for repeatable runs).

    Attributes:
        v: the last measured forward speed (m/s).
        w: the last measured turn rate (rad/s).
    """

    def __init__(self, config, rng=None):
        """Start at the identity."""
        self.config = config
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self._pose = (0.0, 0.0, 0.0)
        self.v = self.w = 0.0

    @property
    def pose(self):
        """The odometry pose ``(x, y, yaw)`` of base_footprint in the odom frame."""
        return self._pose

    def reset(self):
        """Back to the identity, stopped."""
        self._pose = (0.0, 0.0, 0.0)
        self.v = self.w = 0.0

    def update(self, distance, rotation, dt):
        """Integrate one step of true motion ``(distance, rotation)`` lasting ``dt`` s.

        Raises:
            ValueError: on non-finite motion or a ``dt`` that is not > 0.
        """
        if not (math.isfinite(distance) and math.isfinite(rotation)):
            raise ValueError('motion (%r, %r) is not finite' % (distance, rotation))
        if not (math.isfinite(dt) and dt > 0):
            raise ValueError('dt=%r must be a finite number > 0' % (dt,))
        cfg = self.config
        travelled, turned = abs(distance), abs(rotation)
        if (travelled > _EPS or turned > _EPS) and \
                (cfg.translation_noise or cfg.rotation_noise or cfg.drift_noise):
            e_dist, e_rot, e_drift = self.rng.standard_normal(3)
            distance += e_dist * cfg.translation_noise * math.sqrt(travelled)
            rotation += (e_rot * cfg.rotation_noise * math.sqrt(turned)
                         + e_drift * cfg.drift_noise * math.sqrt(travelled))
        self._pose = compose_pose(self._pose, arc(distance, rotation))
        self.v, self.w = distance / dt, rotation / dt
