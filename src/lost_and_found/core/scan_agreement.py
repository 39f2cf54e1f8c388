"""How well a laser scan agrees with the map at the localizer's pose estimate.

amcl's covariance says how *sure* amcl is, not whether it is *right*: after a silent kidnap, or
a re-seed near the wrong place, the particle cloud can converge tightly on a wrong pose and the
covariance looks like normal tracking. The scan says it directly. Placed at the right pose, most
beam end points fall on a mapped obstacle; placed at a wrong pose, many land in free space,
inside walls' shadows or off the map.

The feature is the **miss fraction** of one scan at one pose. Of the usable beams (finite, at
least ``range_min``, strictly below ``range_max``; a beam without a return is used only with
``open_beams``, below), evenly subsampled to at most ``max_beams``, a beam *misses* when its
end point is farther than ``hit_tolerance`` from every occupied map cell. Misses come in two kinds
(:func:`miss_counts`):

- **through**: the beam passed through a mapped obstacle on its way, or ended off the map.
  Nothing unmapped can do that: people, chairs and boxes stop beams *short* of the wall
  behind them, they never make one pass through a wall.
- **short**: the beam ended in free space, short of any mapped obstacle. At a wrong pose many
  beams do; so does every beam that hits an unmapped object.

The feature weighs them: ``(through + short_weight * short) / beams`` (:func:`miss_fraction`).
``short_weight`` 1 counts every missed end point (the strongest evidence of a wrong pose in an
empty building); 0 counts only beams through walls (blind to clutter, and to the wrong poses
whose beams all end in open space). The lost detector's calibration chooses it on training
runs with and without unmapped clutter (config/lost_detector.yaml).

**Near returns.** A beam shorter than ``min_range`` is not used. An unmapped object close to
the laser (a box or a chair the robot stopped at, a person in front of it) can fill a narrow
view with short misses at a right pose, reading like a wrong one; a return that close says
little about where the robot is. 0 uses every beam the laser reports; the calibration chooses
it on training runs with unmapped clutter, as it chooses ``short_weight``.

**Open beams.** A beam with no return (``+inf`` by REP 117, or at least ``range_max``) says
something too: nothing is within range that way. With ``open_beams`` such a beam is used as a
ray of ``range_max - hit_tolerance``: if it runs through a mapped obstacle, the map puts a wall
where the laser saw none (a *through* miss, as above); if not, it agrees with the map (a hit).
Without them a view that is mostly open space, with one unmapped box in it, is all short
misses: a right pose reads like a wrong one. ``NaN`` readings (an erroneous return, or some
drivers' way of saying "no return") are never used. Off by default; the calibration chooses,
unless ``--open-beams`` sets it (off in config/lost_detector.yaml, on in
config/lost_detector_open_beams.yaml).

**Through share.** Clutter only ever adds short misses, so the beams that were *not* short
(hits and through misses: those that reached the map's obstacles) say the most about the
pose: at a right pose almost none of them passes through a wall, at a wrong one many do. The
*through share* (:func:`through_share`) is ``through / (1 - short)``, given only when at least
``min_reach`` of the used beams reached (too few beams that reached say nothing). The lost
detector may call a reading lost on it alone (``scan_check/through_lost``).

**Ends in unmapped space.** A map covers part of a building: its grid ends, and within it some
cells are unknown (the mapping run never saw them). A beam that ends off the map, or within
``hit_tolerance`` of unknown cells or of the grid's edge, having crossed no mapped obstacle,
says nothing the map can check: at the right pose it may have gone on down a corridor the map
stops in. With ``unmapped_ends`` such a beam is not used at all (neither a hit nor a miss);
without it (the default, as the shipped files were calibrated) one that ends off the map is a
through miss and one that ends on the map in free space a short miss. A beam that crossed a
mapped obstacle on its way out stays a through miss either way.

With fewer than ``min_beams`` usable beams (a blinded laser, a view filled by something near,
and without open beams an open hall) there is no feature.
Pure numpy/scipy: no ROS.
"""
import dataclasses
import math

import numpy as np

#: OccupancyGrid values at or above this are obstacles (map_server writes 100 for occupied,
#: 0 for free and -1 for unknown; amcl counts only 100 as occupied, 65 is map_server's default
#: occupied_thresh in percent).
OCCUPIED_VALUE = 65


def check_short_weight(short_weight):
    """Raise ValueError unless ``short_weight`` is a number in [0, 1]."""
    ok = isinstance(short_weight, (int, float)) and not isinstance(short_weight, bool) and \
        0.0 <= short_weight <= 1.0
    if not ok:
        raise ValueError('short_weight=%r: must be a number in [0, 1]' % (short_weight,))


def weighted_miss(through, short, short_weight):
    """The miss fraction from the through and short fractions (see the module docstring)."""
    return through + short_weight * short


def through_share(through, short, min_reach):
    """The share of the beams that reached the map's obstacles (not short misses) that passed
    through one, from the through and short fractions of the used beams; None when fewer than
    ``min_reach`` of the used beams reached, or for fractions that are not numbers in [0, 1]
    (see the module docstring)."""
    if not all(isinstance(v, (int, float)) and 0.0 <= v <= 1.0 for v in (through, short)):
        return None                                 # also NaN: no share, never "lost"
    reached = 1.0 - short
    # Fractions are counts over beams: 1 - 0.8 must not fall below 0.2 by round-off.
    if reached < min_reach - 1e-9 or reached <= 0.0:
        return None
    return min(1.0, through / reached)


class DistanceMap:
    """Distance (m) from any map point to the nearest occupied cell.

    Args:
        occupied: bool array (rows, cols), rows bottom-up (row 0 at the lowest y), as in
            nav_msgs/OccupancyGrid.
        resolution: metres per cell, > 0.
        origin: (x, y, yaw) of the lower-left corner of cell (0, 0) in the map frame.
        free: bool array like ``occupied``, True where the map knows the cell is free; None:
            every cell that is not occupied (the distances ignore it: unknown space is not
            an obstacle to a beam).

    Attributes:
        field: the distances (m) of the cells' centres, an array like ``occupied``.
        free: the known-free cells, as given (never occupied).

    Raises:
        ValueError: for a non-2D or empty grid, a bad resolution or a non-finite origin.
    """

    def __init__(self, occupied, resolution, origin=(0.0, 0.0, 0.0), free=None):
        """Precompute the Euclidean distance transform of the free cells."""
        occupied = np.asarray(occupied, dtype=bool)
        if occupied.ndim != 2 or occupied.size == 0:
            raise ValueError('map must be a non-empty 2D grid, got shape %s' % (occupied.shape,))
        free = ~occupied if free is None else np.asarray(free, dtype=bool)
        if free.shape != occupied.shape:
            raise ValueError('free cells of shape %s for a map of shape %s'
                             % (free.shape, occupied.shape))
        free = free & ~occupied
        resolution = float(resolution)
        if not (math.isfinite(resolution) and resolution > 0):
            raise ValueError('map resolution=%r must be a finite number > 0' % resolution)
        origin = tuple(float(v) for v in origin)
        if len(origin) != 3 or not all(math.isfinite(v) for v in origin):
            raise ValueError('map origin=%r must be 3 finite numbers (x, y, yaw)' % (origin,))
        self.resolution = resolution
        self.origin = origin
        self.shape = occupied.shape
        self.occupied_cells = int(occupied.sum())
        self.free = free
        self._unmapped = None           # distance to unknown cells, computed when first asked
        if self.occupied_cells:
            from scipy.ndimage import distance_transform_edt
            self.field = distance_transform_edt(~occupied) * resolution
        else:
            self.field = np.full(occupied.shape, np.inf)

    def near_unmapped(self, xs, ys, tolerance):
        """For each map point: is it off the map, or within ``tolerance`` (m) of a cell the map
        does not know (neither occupied nor free) or of the grid's edge? Measured between cell
        centres, the grid's edge as a ring of unknown cells around it.

        Returns:
            A bool array like ``xs``.
        """
        if self._unmapped is None:
            from scipy.ndimage import distance_transform_edt
            known = np.pad(self.free | (self.field == 0.0), 1, constant_values=False)
            self._unmapped = distance_transform_edt(known) * self.resolution
        rows, cols, inside = self.cells(xs, ys)
        return ~inside | (self._unmapped[rows + 1, cols + 1] <= tolerance)

    @classmethod
    def from_occupancy_grid(cls, data, width, height, resolution, origin):
        """A map from the fields of a nav_msgs/OccupancyGrid (``data`` row-major, bottom-up).

        Raises:
            ValueError: when ``data`` does not hold ``width * height`` cells, or as the
                constructor.
        """
        values = np.asarray(data, dtype=np.int16)
        if width <= 0 or height <= 0 or values.size != width * height:
            raise ValueError('map data has %d cells, expected width %d x height %d'
                             % (values.size, width, height))
        values = values.reshape(height, width)
        # -1 is unknown; 0 .. OCCUPIED_VALUE - 1 is free (map_server's trinary maps give 0).
        return cls(values >= OCCUPIED_VALUE, resolution, origin, free=values >= 0)

    def cells(self, xs, ys):
        """``(rows, cols, inside)`` of map points: integer cell indices (meaningless where
        ``inside`` is False, off the map)."""
        x0, y0, yaw = self.origin
        dx, dy = np.asarray(xs, dtype=float) - x0, np.asarray(ys, dtype=float) - y0
        c, s = math.cos(yaw), math.sin(yaw)
        cols = np.floor((c * dx + s * dy) / self.resolution)
        rows = np.floor((-s * dx + c * dy) / self.resolution)
        inside = (rows >= 0) & (rows < self.shape[0]) & (cols >= 0) & (cols < self.shape[1])
        return np.where(inside, rows, 0).astype(int), np.where(inside, cols, 0).astype(int), \
            inside

    def centres(self, rows, cols):
        """``(xs, ys)`` in the map frame of the centres of cells ``(rows, cols)``."""
        x0, y0, yaw = self.origin
        u = (np.asarray(cols, dtype=float) + 0.5) * self.resolution
        v = (np.asarray(rows, dtype=float) + 0.5) * self.resolution
        c, s = math.cos(yaw), math.sin(yaw)
        return x0 + c * u - s * v, y0 + s * u + c * v

    def distance(self, xs, ys):
        """Distance (m) to the nearest obstacle at map points; ``inf`` off the map."""
        return self.distance_inside(xs, ys)[0]

    def distance_inside(self, xs, ys):
        """``(distance, inside)``: :meth:`distance`, and which points are on the map (on a map
        without obstacles every distance is ``inf``, on the map or off it)."""
        rows, cols, inside = self.cells(xs, ys)
        return np.where(inside, self.field[rows, cols], np.inf), inside

    def reach(self, x, y):
        """The distance (m) from (x, y) to the map's farthest corner: no obstacle is farther."""
        height, width = self.shape
        xs, ys = self.centres(np.array([-0.5, -0.5, height - 0.5, height - 0.5]),
                              np.array([-0.5, width - 0.5, -0.5, width - 0.5]))
        return float(np.max(np.hypot(xs - x, ys - y)))

    def crosses_obstacle(self, x0, y0, xs, ys):
        """For each segment from (x0, y0) to (xs[i], ys[i]): does it run through an occupied
        cell? Sampled every half cell, so a segment through a wall one cell thick is caught
        (a diagonal slip between two cells that touch only at a corner can be missed).
        Stretches off the map cross nothing.

        Returns:
            A bool array like ``xs``.
        """
        xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
        if xs.size == 0 or not self.occupied_cells:
            return np.zeros(xs.shape, dtype=bool)
        return np.any(self.distance(*self._samples(x0, y0, xs, ys)) == 0.0, axis=1)

    def first_crossings(self, x0, y0, xs, ys):
        """:meth:`crosses_obstacle`, and where each segment first enters an occupied cell.

        Returns:
            ``(crossed, px, py)``: the bool array of :meth:`crosses_obstacle` and the map
            points of the first occupied sample of each segment (NaN where it crosses none).
        """
        xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
        px, py = np.full(xs.shape, np.nan), np.full(xs.shape, np.nan)
        if xs.size == 0 or not self.occupied_cells:
            return np.zeros(xs.shape, dtype=bool), px, py
        sx, sy = self._samples(x0, y0, xs, ys)
        hit = self.distance(sx, sy) == 0.0
        crossed = np.any(hit, axis=1)
        first = np.argmax(hit, axis=1)
        rows = np.arange(xs.size)
        px[crossed] = sx[rows, first][crossed]
        py[crossed] = sy[rows, first][crossed]
        return crossed, px, py

    def _samples(self, x0, y0, xs, ys):
        """Points every half cell along each segment from (x0, y0) to (xs[i], ys[i]), start
        included, and its end unless it lies past the map's farthest corner from (x0, y0)
        (:meth:`reach`: no sample there is on the map, and a wild range of a driver would
        otherwise ask for millions of them): two arrays of one row per segment."""
        lengths = np.hypot(xs - x0, ys - y0)
        step = self.resolution / 2.0
        longest = min(float(lengths.max()), self.reach(x0, y0))
        fractions = np.arange(int(math.ceil(longest / step)) + 1) * step
        t = np.minimum(fractions[None, :] / np.maximum(lengths, step)[:, None], 1.0)
        return x0 + t * (xs - x0)[:, None], y0 + t * (ys - y0)[:, None]


@dataclasses.dataclass(frozen=True)
class LaserMount:
    """Where the laser sits on the robot, projected to the plane.

    Attributes:
        x: metres ahead of the base frame.
        y: metres left of the base frame.
        yaw: heading of the laser's x axis in the base frame (rad).
        upside_down: True when the laser's z axis points down (its angles run clockwise).
    """

    x: float = 0.0
    y: float = 0.0
    yaw: float = 0.0
    upside_down: bool = False


@dataclasses.dataclass(frozen=True)
class Scan:
    """The fields of a sensor_msgs/LaserScan the feature needs."""

    ranges: tuple
    angle_min: float
    angle_increment: float
    range_min: float
    range_max: float


def scan_limits(scan):
    """``(angle_min, angle_increment, range_min, range_max)`` of a scan (any object with those
    fields, as sensor_msgs/LaserScan) as floats, checked for the readers that place its beams.

    A negative ``range_min`` reads as 0: a negative range is no return.

    Raises:
        ValueError: for angles that are not finite or an increment of 0, a ``range_min`` that
            is not finite or a ``range_max`` that is not a finite number above 0.
    """
    angle_min, inc = float(scan.angle_min), float(scan.angle_increment)
    range_min, range_max = float(scan.range_min), float(scan.range_max)
    if not (math.isfinite(angle_min) and math.isfinite(inc) and inc != 0.0):
        raise ValueError('bad scan angles: angle_min=%r angle_increment=%r'
                         % (scan.angle_min, scan.angle_increment))
    if not (math.isfinite(range_min) and math.isfinite(range_max) and range_max > 0.0):
        raise ValueError('bad scan limits: range_min=%r range_max=%r'
                         % (scan.range_min, scan.range_max))
    return angle_min, inc, max(range_min, 0.0), range_max


def beam_reach(ranges, range_min, range_max):
    """``(hit, reach)`` of a scan's ``ranges`` (a float array; limits as :func:`scan_limits`
    gives them).

    ``hit`` is True for a return: a finite range within ``[range_min, range_max]``. ``reach``
    is how far each beam saw free space: its return, ``range_max`` for a beam without one
    (``+inf`` by REP 117, or a reading past ``range_max``), NaN for a beam that tells nothing
    (NaN, ``-inf``, a range below ``range_min``).
    """
    with np.errstate(invalid='ignore'):
        hit = np.isfinite(ranges) & (ranges >= range_min) & (ranges <= range_max)
        reach = np.where(hit, ranges, np.nan)
        reach[np.isposinf(ranges) | (ranges > range_max)] = range_max
    return hit, reach


def _finite_geometry(pose, mount, scan):
    """Whether the pose, the laser's place and the scan's angles are finite numbers (a NaN
    would put every beam's end nowhere, and count it as through a wall)."""
    try:
        values = [float(v) for v in (*pose, mount.x, mount.y, mount.yaw, scan.angle_min,
                                     scan.angle_increment)]
    except (TypeError, ValueError):
        return False
    return all(math.isfinite(v) for v in values)


def laser_origin(pose, mount):
    """The laser's (x, y) in the map frame when the robot base is at ``pose``."""
    x, y, yaw = pose
    c, s = math.cos(yaw), math.sin(yaw)
    return x + c * mount.x - s * mount.y, y + s * mount.x + c * mount.y


def check_min_range(min_range):
    """Raise ValueError unless ``min_range`` is a finite number >= 0."""
    ok = isinstance(min_range, (int, float)) and not isinstance(min_range, bool) and \
        math.isfinite(min_range) and min_range >= 0.0
    if not ok:
        raise ValueError('min_range=%r: must be a finite number >= 0 (m)' % (min_range,))


def open_mask(scan, ranges):
    """True for the beams of ``scan`` (``ranges``: its ranges as a float array) without a
    return: ``+inf`` or at least ``range_max``. None are, whatever they read, when
    ``range_max`` is not a finite number above ``range_min``: such a scan says nothing about
    where its beams would have ended."""
    if not (math.isfinite(scan.range_max) and scan.range_max > max(scan.range_min, 0.0)):
        return np.zeros(ranges.shape, bool)
    with np.errstate(invalid='ignore'):
        return ranges >= scan.range_max


def rays(pose, mount, scan, max_beams, min_range=0.0, open_beams=False):
    """Map-frame end points of the beams of ``scan`` the feature uses, seen from ``pose``.

    Args:
        pose: the robot base pose (x, y, yaw) in the map frame.
        mount: the :class:`LaserMount`.
        scan: the :class:`Scan`.
        max_beams: at most this many beams, evenly spread over the used ones.
        min_range: beams shorter than this (m) are not usable, whatever the scan's
            ``range_min``.
        open_beams: also use the beams without a return (``+inf`` or ``>= range_max``), as
            rays of ``range_max`` (module docstring).

    Returns:
        ``(xs, ys, open)``: two arrays of end points and a bool array, True for an open beam
        (whose end point is at ``range_max``); all empty when no beam is usable.
    """
    ranges = np.asarray(scan.ranges, dtype=float)
    index = np.arange(ranges.size)
    with np.errstate(invalid='ignore'):
        usable = np.isfinite(ranges) & (ranges >= max(scan.range_min, min_range)) & \
            (ranges < scan.range_max)
    is_open = open_mask(scan, ranges) if open_beams else np.zeros(ranges.shape, bool)
    index = index[usable | is_open]
    if index.size > max_beams:
        index = index[np.linspace(0, index.size - 1, max_beams).round().astype(int)]
    angles = scan.angle_min + index * scan.angle_increment
    if mount.upside_down:
        angles = -angles
    laser_x, laser_y = laser_origin(pose, mount)
    heading = pose[2] + mount.yaw + angles
    is_open = is_open[index]
    r = np.where(is_open, scan.range_max, ranges[index])
    return laser_x + r * np.cos(heading), laser_y + r * np.sin(heading), is_open


def end_points(pose, mount, scan, max_beams, min_range=0.0):
    """Map-frame end points (xs, ys) of the usable beams of ``scan`` seen from ``pose`` (the
    beams with a return: :func:`rays` without open beams)."""
    xs, ys, _ = rays(pose, mount, scan, max_beams, min_range)
    return xs, ys


def miss_counts(distance_map, pose, mount, scan, hit_tolerance, max_beams, min_beams,
                min_range=0.0, open_beams=False, unmapped_ends=False):
    """How many used beams miss the map at ``pose``, by kind, or None.

    Args:
        distance_map: the :class:`DistanceMap`.
        pose: (x, y, yaw) of the robot base in the map frame (the localizer's estimate).
        mount: the :class:`LaserMount`.
        scan: the :class:`Scan` taken at that pose.
        hit_tolerance: an end point this close (m) to an obstacle is a hit.
        max_beams: beams used at most (evenly subsampled).
        min_beams: fewer used beams than this: None (no evidence either way).
        min_range: beams shorter than this (m) are not used (module docstring).
        open_beams: also use the beams without a return (module docstring): one whose ray,
            ``hit_tolerance`` short of ``range_max``, runs through a mapped obstacle is a
            through miss, any other a hit.
        unmapped_ends: leave out the missed beams that end in or near unmapped space having
            crossed no mapped obstacle (module docstring); they are then not among ``beams``.

    Returns:
        ``(through, short, beams)``: the misses that passed through a mapped obstacle or left
        the map, the misses that ended in free space, and the used beams they are out of;
        None when there were fewer than ``min_beams`` used beams.
    """
    kinds = _beam_kinds(distance_map, pose, mount, scan, hit_tolerance, max_beams, min_beams,
                        min_range, open_beams, points=False, unmapped_ends=unmapped_ends)
    if kinds is None:
        return None
    through, short = kinds[:2]
    return int(np.count_nonzero(through)), int(np.count_nonzero(short)), int(through.size)


def _beam_kinds(distance_map, pose, mount, scan, hit_tolerance, max_beams, min_beams,
                min_range, open_beams, points=True, unmapped_ends=False):
    """Per used beam (arguments as :func:`miss_counts`): ``(through, short, px, py)``, the
    bool arrays of the two kinds of miss and where a through miss first entered a mapped
    obstacle (NaN for the other beams, and for one that only left the map; all NaN without
    ``points``, which saves following the beams that end off the map unless
    ``unmapped_ends`` needs to know what they crossed); None when there were fewer than
    ``min_beams`` used beams."""
    xs, ys, is_open = rays(pose, mount, scan, max_beams, min_range, open_beams)
    if xs.size < max(1, min_beams):
        return None
    origin = laser_origin(pose, mount)
    if np.any(is_open):
        # Pull the open rays' ends in by hit_tolerance (a wall about range_max away may or may
        # not return), and to the map's far corner (nothing is mapped beyond it).
        length = min(scan.range_max - hit_tolerance, distance_map.reach(*origin))
        scale = max(length, 0.0) / scan.range_max
        xs = np.where(is_open, origin[0] + (xs - origin[0]) * scale, xs)
        ys = np.where(is_open, origin[1] + (ys - origin[1]) * scale, ys)
    distance, inside = distance_map.distance_inside(xs, ys)
    missed = (distance > hit_tolerance) & ~is_open
    off_map = ~inside & ~is_open
    crossed = np.zeros(xs.shape, dtype=bool)
    px, py = np.full(xs.shape, np.nan), np.full(xs.shape, np.nan)
    if points:
        # A beam that ends off the map is a through miss whatever it passed; it is followed
        # too, for where it entered a mapped wall on its way out (the outer wall, mostly).
        checked = missed | is_open
        crossed[checked], px[checked], py[checked] = distance_map.first_crossings(
            origin[0], origin[1], xs[checked], ys[checked])
    else:
        checked = (missed if unmapped_ends else missed & ~off_map) | is_open
        crossed[checked] = distance_map.crosses_obstacle(origin[0], origin[1], xs[checked],
                                                         ys[checked])
    if unmapped_ends:
        used = ~(missed & ~crossed & distance_map.near_unmapped(xs, ys, hit_tolerance))
        if np.count_nonzero(used) < max(1, min_beams):
            return None
        return crossed[used], (missed & ~crossed)[used], px[used], py[used]
    return off_map | crossed, missed & ~crossed & ~off_map, px, py


def through_span(distance_map, pose, mount, scan, hit_tolerance, max_beams, min_beams,
                 min_range=0.0, open_beams=False, unmapped_ends=False):
    """How far apart (m) the beams through mapped obstacles cross them, or None.

    An opening the map has shut (a door that stands open) lets beams through at one place,
    less than a door's width across; at a wrong pose beams pass through walls all over the
    map. The span is the largest distance between two of the points where the used beams'
    through misses first enter a mapped obstacle (0.0 with fewer than two such points; a miss
    that left the map through no mapped obstacle has none). Arguments as
    :func:`miss_counts`; None when there were fewer than ``min_beams`` used beams.
    """
    kinds = _beam_kinds(distance_map, pose, mount, scan, hit_tolerance, max_beams, min_beams,
                        min_range, open_beams, unmapped_ends=unmapped_ends)
    return None if kinds is None else _span(kinds)


def _fractions(kinds):
    """``(through, short)``: the shares of :func:`_beam_kinds`' used beams of each kind."""
    beams = kinds[0].size
    return int(np.count_nonzero(kinds[0])) / beams, int(np.count_nonzero(kinds[1])) / beams


def _span(kinds):
    """The through span of :func:`_beam_kinds`' result (see :func:`through_span`)."""
    px, py = kinds[2], kinds[3]
    known = np.isfinite(px)
    if np.count_nonzero(known) < 2:
        return 0.0
    points = np.column_stack((px[known], py[known]))
    return float(np.max(np.hypot(*(points[:, None, :] - points[None, :, :]).transpose(2, 0, 1))))


def miss_fraction(distance_map, pose, mount, scan, hit_tolerance, max_beams, min_beams,
                  short_weight=1.0, min_range=0.0, open_beams=False):
    """The miss fraction of ``scan`` at ``pose`` (module docstring), or None.

    Args:
        distance_map, pose, mount, scan, hit_tolerance, max_beams, min_beams, min_range,
            open_beams: as :func:`miss_counts`.
        short_weight: what a miss that ended in free space counts, in [0, 1] (a miss through
            a mapped obstacle counts 1).

    Returns:
        ``(miss, beams)``: the fraction in [0, 1] and the number of beams it is over, or None
        when there were fewer than ``min_beams`` usable beams.

    Raises:
        ValueError: a ``short_weight`` outside [0, 1] or a ``min_range`` that is not a
            finite number >= 0.
    """
    check_short_weight(short_weight)
    check_min_range(min_range)
    counts = miss_counts(distance_map, pose, mount, scan, hit_tolerance, max_beams, min_beams,
                         min_range, open_beams)
    if counts is None:
        return None
    through, short, beams = counts
    return weighted_miss(through, short, short_weight) / beams, beams


class NoReturnWatch:
    """Tells, from the scans themselves, when ``open_beams`` is on for a laser whose driver
    does not report "no return" as ``+inf``.

    A Kinect through depthimage_to_laserscan (a stock TurtleBot2's laser) never reports
    ``+inf``: a column with no depth keeps the ``NaN`` the driver fills the scan with. Some
    lidar drivers report ``NaN`` or ``0`` instead, unless an option says otherwise. Open beams
    then get nothing, and a YAML fitted with them judges with thresholds that counted on them.
    The watch counts scans with such readings (``NaN``, or a finite range below ``range_min``)
    until a scan shows a beam without a return that open beams can use (:func:`open_mask`),
    which settles that the driver reports them; after ``scans`` scans with such readings and none
    without a return, :meth:`add` returns a warning, once.

    Args:
        scans: scans with ``NaN`` or too-short readings (and no open beam yet) that make the
            warning (integer >= 1).
    """

    def __init__(self, scans):
        """Start with nothing seen."""
        if isinstance(scans, bool) or not isinstance(scans, int) or scans < 1:
            raise ValueError('scans=%r: must be an integer >= 1' % (scans,))
        self.scans = scans
        self.invalid_scans = 0
        self.settled = False           # an open beam was seen, or the warning was given

    def add(self, scan):
        """Look at one :class:`Scan`; return the warning text the first time it is due, else
        None."""
        if self.settled:
            return None
        ranges = np.asarray(scan.ranges, dtype=float)
        if np.any(open_mask(scan, ranges)):
            self.settled = True
            return None
        with np.errstate(invalid='ignore'):
            invalid = np.isnan(ranges) | (np.isfinite(ranges) & (ranges < scan.range_min))
        if not np.any(invalid):
            return None
        self.invalid_scans += 1
        if self.invalid_scans < self.scans:
            return None
        self.settled = True
        return ('scan_check/open_beams is on, but %d scans had NaN readings (or finite ones '
                'below range_min %g m) and none a beam without a return (+inf, or at least '
                'range_max %g m): this laser\'s driver seems to report no return as NaN (as '
                'depthimage_to_laserscan does for a Kinect) or 0, which open beams cannot use, '
                'and these parameters were fitted with them. Load config/lost_detector.yaml '
                '(fitted without open beams) instead, or fit one with '
                'tools/calibrate_detector.py --open-beams off'
                % (self.invalid_scans, scan.range_min, scan.range_max))


class ScanBuffer:
    """The last few scans, to pair a pose with the scan it was computed from.

    amcl stamps each ``amcl_pose`` with the stamp of the scan it just integrated, so the scan
    whose stamp is within ``tolerance`` seconds of the pose's is that scan. Any other scan was
    taken elsewhere: at 1 rad/s a scan 0.1 s off is rotated 0.1 rad, 0.4 m at 4 m range.

    Args:
        size: how many scans to keep.
        tolerance: largest accepted |scan stamp - pose stamp| (s).
    """

    def __init__(self, size, tolerance):
        """Keep up to ``size`` scans."""
        self._size = int(size)
        self._tolerance = float(tolerance)
        self._stamps = []
        self._scans = []

    def add(self, stamp, scan):
        """Remember ``scan`` taken at ``stamp`` (s). A stamp earlier than the newest one (a
        clock jump back) forgets every older scan first."""
        if self._stamps and stamp < self._stamps[-1]:
            self.clear()
        self._stamps.append(float(stamp))
        self._scans.append(scan)
        if len(self._stamps) > self._size:
            del self._stamps[0]
            del self._scans[0]

    def clear(self):
        """Forget every scan."""
        self._stamps, self._scans = [], []

    def match(self, stamp):
        """The scan nearest in time to ``stamp`` within ``tolerance``, or None."""
        if not self._stamps:
            return None
        gaps = [abs(s - stamp) for s in self._stamps]
        best = int(np.argmin(gaps))
        return self._scans[best] if gaps[best] <= self._tolerance else None

    def may_still_come(self, stamp):
        """True when scans arrive but none as new as ``stamp`` yet: its scan may be on its
        way. False before the first scan (the laser may not be connected at all)."""
        return bool(self._stamps) and self._stamps[-1] < stamp - self._tolerance


#: Scans :class:`ScanChecker` keeps to pair with amcl's poses: 2 s of a Kinect through
#: depthimage_to_laserscan (30 Hz), 6 s of the simulator's laser (10 Hz), for an amcl that
#: publishes a pose late on a busy computer.
SCAN_BUFFER = 60


class ScanChecker:
    """The scan feature of each pose: a map, the recent scans and the rules to pair them.

    Shared by the lost_detector node and the benchmarks so that both compute it identically.

    Args:
        hit_tolerance, max_beams, min_beams, short_weight, min_range, open_beams: as
            :func:`miss_fraction`; unmapped_ends: as :func:`miss_counts`.
        stamp_tolerance: as :class:`ScanBuffer`'s ``tolerance``.
        buffer_size: scans kept for pairing.

    Attributes:
        distance_map: the :class:`DistanceMap`, or None until a map arrives.
        reason: why the last :meth:`feature` call returned None ('' after a value).
        waiting: True when the last :meth:`feature` call found no scan for the pose yet but
            no newer scan either: the pose's scan may still arrive (the pose and the scan
            come on different connections), so a caller may hold the pose until then.
    """

    def __init__(self, hit_tolerance, max_beams, min_beams, stamp_tolerance,
                 buffer_size=SCAN_BUFFER,
                 short_weight=1.0, min_range=0.0, open_beams=False, unmapped_ends=False):
        """Start with no map and no scans.

        Raises:
            ValueError: a ``short_weight`` outside [0, 1] or a ``min_range`` that is not a
                finite number >= 0.
        """
        check_short_weight(short_weight)
        check_min_range(min_range)
        self.hit_tolerance = float(hit_tolerance)
        self.max_beams = int(max_beams)
        self.min_beams = int(min_beams)
        self.short_weight = float(short_weight)
        self.min_range = float(min_range)
        self.open_beams = bool(open_beams)
        self.unmapped_ends = bool(unmapped_ends)
        self.distance_map = None
        self.reason = ''
        self.waiting = False
        self._buffer = ScanBuffer(buffer_size, stamp_tolerance)

    @classmethod
    def from_config(cls, config):
        """A checker with the ``scan_check`` numbers of a LostDetectorConfig."""
        return cls(config.hit_tolerance, config.max_beams, config.min_beams,
                   config.stamp_tolerance, short_weight=config.short_weight,
                   min_range=config.min_range, open_beams=config.open_beams,
                   unmapped_ends=config.unmapped_ends)

    def add_scan(self, stamp, scan, mount):
        """Remember a :class:`Scan` taken at ``stamp`` (s) by a laser at ``mount``."""
        self._buffer.add(stamp, (scan, mount))

    def clear_scans(self):
        """Forget the scans (e.g. after a clock jump)."""
        self._buffer.clear()

    def returns_at(self, stamp):
        """The returns of the scan stamped like ``stamp`` in the robot's base frame: an
        ``(n, 2)`` array (m) of the end points of its beams with a return, at most
        ``max_beams`` of them, evenly spread (:func:`end_points`, without ``min_range``), or
        None when no scan is stamped within ``stamp_tolerance`` of it or its geometry is not
        finite."""
        paired = self._buffer.match(stamp)
        if paired is None:
            return None
        scan, mount = paired
        if not _finite_geometry((0.0, 0.0, 0.0), mount, scan):
            return None
        xs, ys = end_points((0.0, 0.0, 0.0), mount, scan, self.max_beams)
        return np.column_stack([xs, ys])

    def measure(self, stamp, pose, min_range=None, open_beams=None):
        """The through and short miss fractions of the scan taken at ``stamp`` seen from
        ``pose`` (see :func:`miss_counts`), or None.

        ``min_range`` (m) and ``open_beams`` replace the checker's own for this call (the
        benchmarks record the fractions with several, for the calibration to choose from).

        None (with :attr:`reason` saying why, and :attr:`waiting`) when there is no map yet,
        no scan stamped within ``stamp_tolerance`` of ``stamp``, or too few usable beams.
        """
        kinds = self._kinds(stamp, pose, min_range, open_beams, points=False)
        return None if kinds is None else _fractions(kinds)

    def measure_with_span(self, stamp, pose, open_beams=None):
        """:meth:`measure` with the checker's own numbers (``open_beams`` replacing its own
        for this call, as :meth:`measure`) and the :func:`through_span` of the same beams,
        from one pass over them: ``(through, short, span)``, or None (as :meth:`measure`)."""
        kinds = self._kinds(stamp, pose, None, open_beams)
        return None if kinds is None else _fractions(kinds) + (_span(kinds),)

    def _kinds(self, stamp, pose, min_range, open_beams, points=True):
        """:func:`_beam_kinds` of the scan stamped like ``stamp``, or None, setting
        :attr:`reason` and :attr:`waiting` (see :meth:`measure`)."""
        self.waiting = False
        if self.distance_map is None:
            self.reason = 'no map yet'
            return None
        paired = self._buffer.match(stamp)
        if paired is None:
            self.waiting = self._buffer.may_still_come(stamp)
            self.reason = 'no scan stamped like the pose (%.3f)' % stamp
            return None
        scan, mount = paired
        if not _finite_geometry(pose, mount, scan):
            self.reason = 'a pose or scan geometry that is not finite'
            return None
        if min_range is None:
            min_range = self.min_range
        else:
            check_min_range(min_range)
        if open_beams is None:
            open_beams = self.open_beams
        kinds = _beam_kinds(self.distance_map, pose, mount, scan, self.hit_tolerance,
                            self.max_beams, self.min_beams, min_range, open_beams, points,
                            self.unmapped_ends)
        if kinds is None:
            self.reason = 'fewer than %d usable beams' % self.min_beams
            if min_range > scan.range_min:
                self.reason += ' beyond %.2f m' % min_range
            return None
        self.reason = ''
        return kinds

    def feature(self, stamp, pose):
        """The miss fraction (weighted by ``short_weight``) of :meth:`measure`, or None."""
        fractions = self.measure(stamp, pose)
        if fractions is None:
            return None
        return weighted_miss(fractions[0], fractions[1], self.short_weight)
