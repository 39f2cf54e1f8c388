"""The simulated world: a TurtleBot2, its laser, camera, Kobuki switches and dock, in sim time.

:class:`World` owns the truth. Each :meth:`World.step` advances sim time by ``dt``: the drive
follows the last velocity command (dropped after ``cmd_timeout`` without a new one, as the
Kobuki's own watchdog does), odometry integrates the motion with drift, and the scheduled
Kobuki events of a kidnap happen. Sensors are read on demand (:meth:`World.scan`,
:meth:`World.detections`) so that the node decides their rates.

A **kidnap** is the sequence a person carrying the robot produces on a real Kobuki: lift (left
wheel drops, the right one ``wheel_gap`` later), hold in the air for ``hold`` s (the robot
does not move, commands are ignored, odometry does not change), put down at the target (left
wheel touches, the right one ``wheel_gap`` later). :meth:`World.teleport` moves the robot
silently instead (a slip or a push that the wheel switches do not notice).

:class:`SimWorldConfig` holds every parameter of the ``sim_world`` node; the robot, odometry,
laser and camera parameters live in groups (``robot/radius``, ``laser/beams``, ...) and are
validated by the part they configure.
"""
import collections
import dataclasses
import enum
import math

import numpy as np

from lost_and_found.core.config import Checker, ConfigError, param_field
from lost_and_found.sim.camera import Camera, CameraConfig
from lost_and_found.sim.laser import LaserConfig, LaserModel
from lost_and_found.sim.robot import DiffDrive, Odometry, OdometryConfig, RobotConfig

#: Kobuki wheel ids (kobuki_msgs/WheelDropEvent LEFT and RIGHT).
LEFT, RIGHT = 0, 1

#: Extra clearance (m) beyond the robot radius of a random put-down pose, so it never lands
#: touching a wall.
RANDOM_POSE_MARGIN = 0.1

WheelDrop = collections.namedtuple('WheelDrop', 'wheel dropped time')
WheelDrop.__doc__ = """A wheel-drop switch edge.

``wheel`` is LEFT or RIGHT, ``dropped`` a bool, ``time`` the sim time (s) of the edge.
"""

#: The parameter groups: prefix -> config class of the part they configure.
_GROUPS = collections.OrderedDict([('robot', RobotConfig), ('odometry', OdometryConfig),
                                   ('laser', LaserConfig), ('camera', CameraConfig)])


def _group_fields(prefix, cls):
    """Dataclass field specs ``(name, type, field)`` for every field of a group's config."""
    return [('%s_%s' % (prefix, f.name), f.type,
             param_field('%s/%s' % (prefix, f.name), f.default))
            for f in dataclasses.fields(cls)]


@dataclasses.dataclass(frozen=True)
class _SimWorldBase:
    """The sim_world parameters that belong to no group (documented on SimWorldConfig)."""

    map_file: str = ''
    fiducial_map: str = ''
    speed: float = 5.0
    step: float = 0.02
    start_pose: tuple = (0.0, 0.0, 0.0)
    dock_pose: tuple = ()
    dock_radius: float = 0.15
    scan_rate: float = 10.0
    odom_rate: float = 20.0
    sensor_state_rate: float = 10.0
    camera_rate: float = 5.0
    cmd_timeout: float = 0.5
    kidnap_hold: float = 3.0
    wheel_gap: float = 0.005
    seed: int = 0
    map_frame: str = 'map'
    odom_frame: str = 'odom'
    base_frame: str = 'base_footprint'
    laser_frame: str = 'base_laser_link'
    camera_frame: str = 'camera_rgb_optical_frame'


# The group fields are generated from the part configs so that each default is written once.
SimWorldConfig = dataclasses.make_dataclass(
    'SimWorldConfig',
    [spec for prefix, cls in _GROUPS.items() for spec in _group_fields(prefix, cls)],
    bases=(_SimWorldBase,), frozen=True, namespace={'__module__': __name__})
SimWorldConfig.__doc__ = """Parameters of the sim_world node (all private, SI units).

Attributes:
    map_file: map_server YAML of the world (required).
    fiducial_map: fiducial map YAML of the tags on the walls ('' = no camera output).
    speed: sim time per wall time (0 = as fast as possible).
    step: sim time step (s).
    start_pose: (x, y, yaw) where the robot starts and returns on reset (map frame).
    dock_pose: (x, y, yaw) of the charging dock, or () for none.
    dock_radius: the robot is docked when its centre is this near the dock pose (m).
    scan_rate: laser scans per sim second (Hz).
    odom_rate: odometry, tf and ground truth messages per sim second (Hz).
    sensor_state_rate: Kobuki SensorState messages per sim second (Hz).
    camera_rate: fiducial detections per sim second (Hz).
    cmd_timeout: a velocity command older than this (sim s) stops the robot.
    kidnap_hold: default time in the air of a kidnap (sim s).
    wheel_gap: time between the two wheels' switch edges of a lift or put-down (s).
    seed: seed of every random number (noise, random poses).
    map_frame, odom_frame, base_frame, laser_frame, camera_frame: frame ids.
    robot_*, odometry_*, laser_*, camera_*: the fields of RobotConfig, OdometryConfig,
        LaserConfig and CameraConfig, as parameters ``robot/<name>``, ``laser/<name>``, ...
"""


def _pose_ok(value, allow_empty=False):
    """True when ``value`` is (x, y, yaw) of finite numbers (or () if allowed)."""
    if allow_empty and value == ():
        return True
    return isinstance(value, tuple) and len(value) == 3 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        for v in value)


def group_config(config, prefix):
    """The config of one part (``robot``, ``odometry``, ``laser`` or ``camera``)."""
    cls = _GROUPS[prefix]
    return cls(**{f.name: getattr(config, '%s_%s' % (prefix, f.name))
                  for f in dataclasses.fields(cls)})


def _validate(self):
    """Raise ConfigError naming every bad value (group problems carry their prefix)."""
    check = Checker(self)
    check.non_empty('map_file')
    check.require(isinstance(self.fiducial_map, str), 'fiducial_map', 'be a string')
    check.non_negative('speed')
    check.in_range('step', 0.0, 0.1, low_open=True)
    check.require(_pose_ok(self.start_pose), 'start_pose', 'be [x, y, yaw] (finite numbers)')
    check.require(_pose_ok(self.dock_pose, allow_empty=True), 'dock_pose',
                  'be [x, y, yaw] (finite numbers) or [] for no dock')
    check.positive('dock_radius')
    for name in ('scan_rate', 'odom_rate', 'sensor_state_rate', 'camera_rate'):
        check.positive(name)
    check.positive('cmd_timeout')
    check.positive('kidnap_hold')
    check.in_range('wheel_gap', 0.0, 0.5)
    check.require(isinstance(self.seed, int) and not isinstance(self.seed, bool)
                  and self.seed >= 0, 'seed', 'be an integer >= 0')
    for name in ('map_frame', 'odom_frame', 'base_frame', 'laser_frame', 'camera_frame'):
        check.non_empty(name)
    for prefix in _GROUPS:
        try:
            group_config(self, prefix).validate()
        except ConfigError as error:
            for problem in error.problems:
                check.problem('%s/%s' % (prefix, problem))
    check.done()


SimWorldConfig.validate = _validate


class KidnapPhase(enum.Enum):
    """Where the kidnap sequence is."""

    GROUNDED = 'on the ground'
    LIFTED = 'in the air'


class World:
    """The simulated TurtleBot2 in its map.

    Args:
        config: a validated :data:`SimWorldConfig`.
        grid: the :class:`~lost_and_found.sim.gridmap.GridMap` of the world.
        fiducial_map: a :class:`lost_and_found.core.fiducial.FiducialMap` or None (no camera).

    Attributes:
        time: sim time (s), 0 at construction.
        drive: the :class:`DiffDrive` (truth pose, speeds, collisions).
        odometry: the :class:`Odometry` (odom frame pose).
        laser: the :class:`LaserModel`.
        camera: the :class:`Camera`, or None without a fiducial map.
        wheel_dropped: ``[left, right]`` wheel-drop switch states.
        rng: the generator for random poses.
    """

    def __init__(self, config, grid, fiducial_map=None):
        """Build the parts, each with its own seeded generator, at ``start_pose``."""
        self.config = config
        self.grid = grid
        seeds = np.random.SeedSequence(config.seed).spawn(4)
        self.rng = np.random.default_rng(seeds[0])
        self.drive = DiffDrive(group_config(config, 'robot'), grid, config.start_pose)
        self.odometry = Odometry(group_config(config, 'odometry'), np.random.default_rng(seeds[1]))
        self.laser = LaserModel(group_config(config, 'laser'), grid,
                                np.random.default_rng(seeds[2]))
        self.camera = None
        if fiducial_map is not None:
            self.camera = Camera(group_config(config, 'camera'), fiducial_map, grid,
                                 np.random.default_rng(seeds[3]))
        self.time = 0.0
        self.wheel_dropped = [False, False]
        self._phase = KidnapPhase.GROUNDED
        self._schedule = []          # [(time, order, action)], sorted
        self._order = 0
        self._command_time = None

    # --- state ---------------------------------------------------------------------------

    @property
    def pose(self):
        """The true pose ``(x, y, yaw)`` in the map frame."""
        return self.drive.pose

    @property
    def lifted(self):
        """True from the start of a kidnap until the robot is back on the ground."""
        return self._phase is KidnapPhase.LIFTED

    @property
    def both_dropped(self):
        """True while both wheel-drop switches read dropped."""
        return all(self.wheel_dropped)

    @property
    def collisions(self):
        """Number of collision episodes since start or reset."""
        return self.drive.collisions

    @property
    def docked(self):
        """True when the robot stands on the dock (centre within dock_radius, on the ground)."""
        dock = self.config.dock_pose
        if not dock or any(self.wheel_dropped):
            return False
        x, y, _ = self.pose
        return math.hypot(x - dock[0], y - dock[1]) <= self.config.dock_radius

    # --- inputs --------------------------------------------------------------------------

    def command(self, v, w):
        """Velocity command (m/s, rad/s) received now; ignored while lifted.

        Raises:
            ValueError: if either value is not finite.
        """
        if self.lifted:
            return
        self.drive.command(v, w)
        self._command_time = self.time

    def free_pose(self, pose, clearance=None):
        """True when the robot fits at ``pose`` with ``clearance`` (m; default its radius)."""
        radius = self.drive.config.radius if clearance is None else clearance
        if not _pose_ok(tuple(pose)):
            return False
        return bool(self.grid.is_free(pose[0], pose[1])) and \
            self.drive.clearance(pose[0], pose[1], within=radius) >= radius

    def teleport(self, pose):
        """Move the robot silently (no wheel drops, odometry unaware), stopped.

        Raises:
            ValueError: during a kidnap, or when the robot does not fit at ``pose``.
        """
        if self.lifted:
            raise ValueError('cannot teleport during a kidnap')
        if not self.free_pose(pose):
            raise ValueError('the robot does not fit at %r' % (tuple(pose),))
        self.drive.set_pose(pose)
        self._command_time = None

    def random_free_pose(self, rng=None, min_distance_from=None, min_distance=0.0,
                         clearance=None):
        """A random pose in free space, uniformly over the eligible cells.

        Args:
            rng: a ``numpy.random.Generator`` (default: the world's).
            min_distance_from: ``(x, y)`` the pose must be at least ``min_distance`` m from.
            min_distance: see ``min_distance_from``.
            clearance: least distance (m) to any obstacle (default: robot radius + 0.1 m).

        Returns:
            ``(x, y, yaw)``: a cell centre and a uniform yaw.

        Raises:
            ValueError: when no cell qualifies.
        """
        rng = self.rng if rng is None else rng
        if clearance is None:
            clearance = self.drive.config.radius + RANDOM_POSE_MARGIN
        # distance_field is between cell centres: half a cell's diagonal more keeps every
        # obstacle's square ``clearance`` away from the pose (a cell centre). The map's edge
        # is a wall to the robot (free_pose), so it is one here too.
        ok = self.grid.free & (self.grid.distance_field(edge=True)
                               >= clearance + math.sqrt(0.5) * self.grid.resolution)
        rows, cols = np.nonzero(ok)
        xs, ys = self.grid.cell_center(rows, cols)
        if min_distance_from is not None and min_distance > 0:
            far = np.hypot(xs - min_distance_from[0], ys - min_distance_from[1]) >= min_distance
            xs, ys = xs[far], ys[far]
        if xs.size == 0:
            raise ValueError('no free pose with clearance %.2f m at least %.2f m away'
                             % (clearance, min_distance))
        n = int(rng.integers(xs.size))
        return float(xs[n]), float(ys[n]), float(rng.uniform(-math.pi, math.pi))

    def kidnap(self, target, hold=None):
        """Start a kidnap: lift now, hold ``hold`` s, put down at ``target``.

        The robot stops at once and ignores commands until it is back on the ground. The
        switch edges happen during the following :meth:`step` calls.

        Args:
            target: put-down pose ``(x, y, yaw)``; the robot must fit there.
            hold: seconds in the air (None or <= 0: ``kidnap_hold``).

        Raises:
            ValueError: if a kidnap is already running or the target is not free.
        """
        if self.lifted:
            raise ValueError('a kidnap is already in progress')
        target = tuple(float(v) for v in target)
        if not self.free_pose(target):
            raise ValueError('the robot does not fit at the put-down pose %r' % (target,))
        hold = self.config.kidnap_hold if hold is None or not hold > 0 else float(hold)
        gap = self.config.wheel_gap
        self._phase = KidnapPhase.LIFTED
        self.drive.stop()
        self._command_time = None
        t = self.time
        self._at(t, ('wheel', LEFT, True))
        self._at(t + gap, ('wheel', RIGHT, True))
        self._at(t + gap + hold, ('teleport', target))
        self._at(t + gap + hold, ('wheel', LEFT, False))
        self._at(t + 2 * gap + hold, ('wheel', RIGHT, False))
        self._at(t + 2 * gap + hold, ('landed',))

    def reset(self):
        """Back to the start pose on the ground: odometry at identity, collisions 0.

        A running kidnap is cancelled.

        Returns:
            The wheel-drop edges this causes (wheels still in the air are raised at once).
        """
        self._schedule = []
        events = []
        for wheel in (LEFT, RIGHT):
            if self.wheel_dropped[wheel]:
                self.wheel_dropped[wheel] = False
                events.append(WheelDrop(wheel, False, self.time))
        self._phase = KidnapPhase.GROUNDED
        self.drive.set_pose(self.config.start_pose)
        self.drive.collisions = 0
        self.odometry.reset()
        self._command_time = None
        return events

    # --- time ----------------------------------------------------------------------------

    def step(self, dt):
        """Advance sim time by ``dt`` seconds.

        Returns:
            The list of :data:`WheelDrop` edges that happened during the step, in order.

        Raises:
            ValueError: if ``dt`` is not a finite number > 0.
        """
        if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0):
            raise ValueError('dt=%r must be a finite number > 0' % (dt,))
        self.time += dt
        if self._command_time is not None and \
                self.time - self._command_time > self.config.cmd_timeout:
            self.drive.command(0.0, 0.0)
            self._command_time = None
        if not self.lifted:
            distance, rotation = self.drive.step(dt)
            self.odometry.update(distance, rotation, dt)
        events = []
        # Half a microsecond of slack keeps float sums of dt from delaying an edge a step.
        while self._schedule and self._schedule[0][0] <= self.time + 5e-7:
            when, _, action = self._schedule.pop(0)
            if action[0] == 'wheel':
                _, wheel, dropped = action
                if self.wheel_dropped[wheel] != dropped:
                    self.wheel_dropped[wheel] = dropped
                    events.append(WheelDrop(wheel, dropped, when))
            elif action[0] == 'teleport':
                self.drive.set_pose(action[1])
            else:
                self._phase = KidnapPhase.GROUNDED
        return events

    def _at(self, when, action):
        """Schedule ``action`` at sim time ``when`` (ties keep their insertion order)."""
        self._order += 1
        self._schedule.append((when, self._order, action))
        self._schedule.sort(key=lambda item: (item[0], item[1]))

    # --- sensors -------------------------------------------------------------------------

    def scan(self):
        """One laser scan from the true pose (see :meth:`LaserModel.scan`)."""
        return self.laser.scan(self.pose)

    def detections(self):
        """The fiducials the camera sees now from the true pose (empty without a fiducial map)."""
        if self.camera is None:
            return []
        return self.camera.detect(self.pose)
