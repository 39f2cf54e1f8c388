"""A ray-cast 2D laser on an occupancy grid.

:func:`cast_rays` is an exact grid traversal in the manner of Amanatides & Woo's DDA: along a
beam, the k-th crossing of a vertical cell boundary happens at ``t_0 + k / |cos|`` and that of
a horizontal one at ``t_0' + k / |sin|``. Because that sequence is closed-form, the steps need
no Python loop either: every crossing of every beam is evaluated in one numpy pass per axis
(about 3 ms for a 640-beam, 5 m scan at 0.05 m/cell, three times faster than looping over the
steps with numpy over the beams). The range is the exact distance from the origin to the
boundary of the first blocking cell, so a wall drawn as occupied cells reads where its cells
begin, not at their centres.

:class:`LaserModel` turns a base pose into a ``sensor_msgs/LaserScan``-style range array.
Its defaults copy the fake laser a TurtleBot2 gets from its Kinect through
``depthimage_to_laserscan`` (turtlebot_bringup's ``3dsensor.launch``): the depth camera's
~57 degree horizontal field of view as -0.5..0.5 rad over 640 columns, no returns nearer than
0.45 m (the Kinect's minimum depth), and a 5 m useful range (depth noise grows with the square
of the distance, so TurtleBot2 configurations trust little beyond that). Readings follow
REP 117 by default (``no_return: inf``): ``+inf`` when nothing is within ``range_max``, ``-inf``
when the obstacle is nearer than ``range_min``. depthimage_to_laserscan itself reports ``NaN``
for both (it fills a scan with ``NaN`` and writes only the columns with a depth in range):
``no_return: nan`` copies that. The map's edge reads as a wall (:func:`distance_to_edge`), as it
is one for the robot's body.
"""
import dataclasses
import math

import numpy as np

from lost_and_found.core.config import Checker


def cast_rays(grid, x, y, angles, max_range, unknown_is_occupied=False):
    """Distances from a point to the first blocking cell along many directions.

    Args:
        grid: a :class:`lost_and_found.sim.gridmap.GridMap`.
        x: origin x in the map frame (m).
        y: origin y in the map frame (m).
        angles: beam directions in the map frame (rad), any 1D array-like.
        max_range: beams are followed this far (m, finite and >= 0).
        unknown_is_occupied: treat unknown cells as walls (default: as free space).

    Returns:
        A float array like ``angles``: the distance (m) to the boundary of the first blocking
        cell, 0 when the origin itself is in one, ``inf`` when no blocking cell starts within
        ``max_range`` (cells off the map never block).

    Raises:
        ValueError: on a non-finite origin, angle or max_range.
    """
    angles = np.atleast_1d(np.asarray(angles, dtype=float))
    if angles.ndim != 1:
        raise ValueError('angles must be a 1D array, got shape %s' % (angles.shape,))
    if not (math.isfinite(x) and math.isfinite(y)) or not np.all(np.isfinite(angles)):
        raise ValueError('ray origin and angles must be finite')
    if not (math.isfinite(max_range) and max_range >= 0):
        raise ValueError('max_range=%r must be finite and >= 0' % (max_range,))
    blocked = grid.occupied | grid.unknown if unknown_is_occupied else grid.occupied
    flat = blocked.ravel()
    ranges = np.full(angles.shape, np.inf)

    # Everything below is in grid units (cells) along the grid's own axes.
    gx, gy = (float(v) for v in grid.to_grid(x, y))
    ix, iy = math.floor(gx), math.floor(gy)
    rows, cols = grid.shape
    if 0 <= ix < cols and 0 <= iy < rows and flat[iy * cols + ix]:
        ranges[:] = 0.0
        return ranges
    limit = max_range / grid.resolution
    phi = angles - grid.origin[2]
    direction = (np.cos(phi), np.sin(phi))
    # A ray first meets a blocking cell either through a vertical cell boundary or through a
    # horizontal one: find the first blocked cell behind each kind of crossing separately
    # (both vectorised over beams and crossings) and keep the nearer.
    nearest = np.minimum(
        _first_crossing_hit(flat, (rows, cols), (gx, gy), (ix, iy), direction, 0, limit),
        _first_crossing_hit(flat, (rows, cols), (gx, gy), (ix, iy), direction, 1, limit))
    ranges[:] = nearest * grid.resolution
    return ranges


def _first_crossing_hit(flat, shape, start, cell, direction, axis, limit):
    """Ray parameter (cells) of the first crossing of ``axis`` boundaries into a blocked cell.

    The k-th crossing of a boundary perpendicular to ``axis`` (0: x, vertical boundaries;
    1: y, horizontal ones) happens at ``t_k = t_0 + k * delta``, where ``delta = 1 / |d|``;
    the cell entered is one further along ``axis`` and, on the other axis, wherever the ray
    is at ``t_k``. Returns ``inf`` for beams with no such hit within ``limit``.
    """
    rows, cols = shape
    d, d_other = direction[axis], direction[1 - axis]
    g, g_other = start[axis], start[1 - axis]
    crossings = int(math.ceil(limit * float(np.max(np.abs(d))))) + 1
    k = np.arange(crossings)
    step = np.sign(d).astype(np.int64)
    with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
        delta = 1.0 / np.abs(d)
        first = np.where(d > 0, (cell[axis] + 1 - g) * delta, (g - cell[axis]) * delta)
        t = first[:, None] + k[None, :] * delta[:, None]     # inf or nan when d == 0
        along = cell[axis] + (k[None, :] + 1) * step[:, None]
        across = np.floor(g_other + d_other[:, None] * t)
        valid = t <= limit
    across = np.where(valid, across, -1).astype(np.int64)
    c, r = (along, across) if axis == 0 else (across, along)
    valid &= (c >= 0) & (c < cols) & (r >= 0) & (r < rows)
    hit = np.zeros(t.shape, dtype=bool)
    hit[valid] = flat[r[valid] * cols + c[valid]]
    index = np.argmax(hit, axis=1)
    beams = np.arange(t.shape[0])
    return np.where(hit[beams, index], t[beams, index], np.inf)


def distance_to_edge(grid, x, y, angles):
    """Distance (m) from a point to the edge of the grid along many directions.

    The simulated world ends at its map's edge: the robot's body cannot cross it
    (:meth:`lost_and_found.sim.robot.DiffDrive.clearance`), so the laser reads it as a wall.
    Without this a map whose free space reaches its edge (a SLAM map of an open area) would
    hold walls the robot hits and its laser cannot see.

    Args:
        grid: a :class:`lost_and_found.sim.gridmap.GridMap`.
        x: origin x in the map frame (m).
        y: origin y in the map frame (m).
        angles: directions in the map frame (rad), any 1D array-like.

    Returns:
        A float array like ``angles``; 0 everywhere when the point lies off the grid.
    """
    angles = np.atleast_1d(np.asarray(angles, dtype=float))
    gx, gy = (float(v) for v in grid.to_grid(x, y))
    rows, cols = grid.shape
    if not (0.0 <= gx <= cols and 0.0 <= gy <= rows):
        return np.zeros(angles.shape)
    phi = angles - grid.origin[2]
    exits = []
    for d, g, size in ((np.cos(phi), gx, cols), (np.sin(phi), gy, rows)):
        with np.errstate(divide='ignore', invalid='ignore'):
            exits.append(np.where(d > 0, (size - g) / d, np.where(d < 0, -g / d, np.inf)))
    return np.minimum(exits[0], exits[1]) * grid.resolution


#: How a laser driver may report a beam without a valid range (LaserConfig.no_return).
NO_RETURN = ('inf', 'nan')


@dataclasses.dataclass(frozen=True)
class LaserConfig:
    """A planar laser mounted on the robot.

    Attributes:
        beams: number of beams (>= 2), evenly spread from angle_min to angle_max inclusive.
        angle_min: first beam direction in the laser frame (rad).
        angle_max: last beam direction in the laser frame (rad).
        range_min: nearer obstacles read ``-inf`` (m).
        range_max: beams without a return this near read ``+inf`` (m).
        no_return: ``'inf'`` (REP 117: ``+inf`` and ``-inf`` as above) or ``'nan'`` (``NaN``
            for both, as depthimage_to_laserscan reports them).
        noise: standard deviation of the Gaussian range noise (m; 0 = exact).
        x: laser origin ahead of base_footprint (m).
        y: laser origin left of base_footprint (m).
        z: laser height above base_footprint (m; only for its tf).
        yaw: laser heading in base_footprint (rad).
        unknown_is_occupied: unknown map cells reflect the beam (default: they do not).
    """

    beams: int = 640
    angle_min: float = -0.5
    angle_max: float = 0.5
    range_min: float = 0.45
    range_max: float = 5.0
    noise: float = 0.01
    x: float = 0.1
    y: float = 0.0
    z: float = 0.3
    yaw: float = 0.0
    unknown_is_occupied: bool = False
    no_return: str = 'inf'

    def validate(self):
        """Raise ConfigError naming every bad value."""
        check = Checker(self)
        check.require(isinstance(self.beams, int) and not isinstance(self.beams, bool)
                      and self.beams >= 2, 'beams', 'be an integer >= 2')
        check.in_range('angle_min', -math.pi, math.pi)
        check.in_range('angle_max', -math.pi, math.pi)
        if check.finite('angle_min') and check.finite('angle_max'):
            check.require(self.angle_max > self.angle_min, 'angle_max',
                          'be > angle_min=%r' % self.angle_min)
        check.non_negative('range_min')
        check.positive('range_max')
        if check.finite('range_min') and check.finite('range_max'):
            check.require(self.range_max > self.range_min, 'range_max',
                          'be > range_min=%r' % self.range_min)
        check.non_negative('noise')
        for name in ('x', 'y', 'z', 'yaw'):
            check.finite(name)
        check.require(isinstance(self.unknown_is_occupied, bool), 'unknown_is_occupied',
                      'be true or false')
        check.require(self.no_return in NO_RETURN, 'no_return',
                      'be one of %s' % ', '.join(repr(v) for v in NO_RETURN))
        check.done()


class LaserModel:
    """Simulated scans of a laser on a robot moving in a grid map.

    Args:
        config: a validated :class:`LaserConfig`.
        grid: the :class:`~lost_and_found.sim.gridmap.GridMap` the robot moves in.
        rng: a ``numpy.random.Generator`` for the range noise (seed it for repeatable scans).
    """

    def __init__(self, config, grid, rng=None):
        """Precompute the beam angles."""
        self.config = config
        self.grid = grid
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.angles = np.linspace(config.angle_min, config.angle_max, config.beams)

    @property
    def angle_increment(self):
        """Angle between neighbouring beams (rad)."""
        return (self.config.angle_max - self.config.angle_min) / (self.config.beams - 1)

    def origin(self, pose):
        """The laser's (x, y, yaw) in the map for base pose ``(x, y, yaw)``."""
        x, y, yaw = pose
        c, s = math.cos(yaw), math.sin(yaw)
        return (x + c * self.config.x - s * self.config.y,
                y + s * self.config.x + c * self.config.y, yaw + self.config.yaw)

    def scan(self, pose):
        """Ranges (m) of one scan taken from base pose ``(x, y, yaw)``, REP 117 style.

        Returns:
            A float array of ``beams`` ranges: finite in [range_min, range_max], ``+inf`` for
            no return within range_max, ``-inf`` for an obstacle nearer than range_min (both
            ``NaN`` with ``no_return`` ``'nan'``). The map's edge is such an obstacle, so a
            laser off the map reads ``-inf`` on every beam (the robot's body keeps it on the
            map).
        """
        cfg = self.config
        lx, ly, lyaw = self.origin(pose)
        angles = self.angles + lyaw
        # the edge beyond range_max is no return, like a wall there (cast_rays stops at it)
        edge = distance_to_edge(self.grid, lx, ly, angles)
        edge[edge > cfg.range_max] = np.inf
        ranges = np.minimum(cast_rays(self.grid, lx, ly, angles, cfg.range_max,
                                      cfg.unknown_is_occupied), edge)
        finite = np.isfinite(ranges)
        if cfg.noise > 0:
            ranges[finite] += self.rng.normal(0.0, cfg.noise, int(finite.sum()))
        ranges[finite & (ranges > cfg.range_max)] = np.inf
        ranges[finite & (ranges < cfg.range_min)] = -np.inf
        if cfg.no_return == 'nan':
            ranges[~np.isfinite(ranges)] = np.nan
        return ranges
