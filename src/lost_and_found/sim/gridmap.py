"""Occupancy grids in map_server format: load, query, save.

A map is a YAML file (``image``, ``resolution``, ``origin: [x, y, yaw]``, ``negate``,
``occupied_thresh``, ``free_thresh``, optional ``mode``) next to a PGM or PNG image, exactly as
map_server reads it. A pixel's occupancy probability is ``p = (255 - v) / 255`` (``v / 255``
with ``negate: 1``; colour pixels are averaged); ``p > occupied_thresh`` is occupied,
``p < free_thresh`` is free, anything between is unknown. ``mode: raw`` reads the value itself
as occupancy in percent (0 free, 255 unknown).

**Origin yaw.** map_server documents ``origin`` as the pose of the lower-left pixel, yaw
counter-clockwise, but notes that many consumers ignore the yaw. This simulator honours it: the
grid is rotated by ``yaw`` about the origin, so cell ``(row, col)`` has its centre at
``origin_xy + R(yaw) @ ((col + 0.5) * res, (row + 0.5) * res)`` in the map frame. Every part of
the simulator (world, localizer, navigator) uses this one class, so they always agree. With
``yaw = 0`` (every map we know of) this is map_server's convention exactly.

Rows are stored bottom-up: row 0 is the image's last line (the lowest y), so ``grid[row, col]``
grows in +y with ``row`` and in +x with ``col``.
"""
import dataclasses
import math
import os

import numpy as np
import yaml


class MapError(ValueError):
    """A map YAML or image that cannot be loaded; the message names the file and the value."""


@dataclasses.dataclass
class GridMap:
    """A 2D occupancy grid in the map frame.

    Attributes:
        occupied: bool array (rows, cols), True where an obstacle is.
        free: bool array (rows, cols), True where the robot may be; neither = unknown.
        resolution: metres per cell.
        origin: (x, y, yaw) of the lower-left corner of cell (0, 0) in the map frame.
    """

    occupied: np.ndarray
    free: np.ndarray
    resolution: float
    origin: tuple = (0.0, 0.0, 0.0)

    def __post_init__(self):
        """Check shapes and values; precompute the rotation."""
        self.occupied = np.asarray(self.occupied, dtype=bool)
        self.free = np.asarray(self.free, dtype=bool) & ~self.occupied
        if self.occupied.ndim != 2 or self.occupied.shape != self.free.shape:
            raise MapError('occupied and free must be 2D arrays of one shape, got %s and %s'
                           % (self.occupied.shape, self.free.shape))
        if not (math.isfinite(self.resolution) and self.resolution > 0):
            raise MapError('resolution=%r: must be a finite number > 0' % (self.resolution,))
        if len(self.origin) != 3 or not all(math.isfinite(v) for v in self.origin):
            raise MapError('origin=%r: must be [x, y, yaw] of finite numbers' % (self.origin,))
        self.origin = tuple(float(v) for v in self.origin)
        self._cos = math.cos(self.origin[2])
        self._sin = math.sin(self.origin[2])
        self._distance = None
        self._edge_distance = None

    @classmethod
    def from_occupancy(cls, occupied, resolution, origin=(0.0, 0.0, 0.0), free=None):
        """A map from an occupied mask (rows bottom-up); free defaults to not occupied."""
        occupied = np.asarray(occupied, dtype=bool)
        return cls(occupied, ~occupied if free is None else free, resolution, origin)

    @property
    def shape(self):
        """(rows, cols)."""
        return self.occupied.shape

    @property
    def unknown(self):
        """bool array, True where the cell is neither free nor occupied."""
        return ~self.occupied & ~self.free

    def to_grid(self, x, y):
        """Continuous grid coordinates (col, row), in cells, of map-frame points."""
        dx = np.asarray(x, dtype=float) - self.origin[0]
        dy = np.asarray(y, dtype=float) - self.origin[1]
        gx = (self._cos * dx + self._sin * dy) / self.resolution
        gy = (-self._sin * dx + self._cos * dy) / self.resolution
        return gx, gy

    def to_world(self, gx, gy):
        """Map-frame points of continuous grid coordinates (col, row) in cells."""
        gx = np.asarray(gx, dtype=float) * self.resolution
        gy = np.asarray(gy, dtype=float) * self.resolution
        return (self.origin[0] + self._cos * gx - self._sin * gy,
                self.origin[1] + self._sin * gx + self._cos * gy)

    def cell_index(self, x, y):
        """Integer (rows, cols) of the cells containing map-frame points (may be out of bounds)."""
        gx, gy = self.to_grid(x, y)
        return np.floor(gy).astype(int), np.floor(gx).astype(int)

    def cell_center(self, rows, cols):
        """Map-frame (x, y) of cell centres."""
        return self.to_world(np.asarray(cols) + 0.5, np.asarray(rows) + 0.5)

    def in_bounds(self, rows, cols):
        """bool array: the cells lie inside the grid."""
        rows, cols = np.asarray(rows), np.asarray(cols)
        return (rows >= 0) & (rows < self.shape[0]) & (cols >= 0) & (cols < self.shape[1])

    def _lookup(self, grid, x, y, outside):
        rows, cols = self.cell_index(x, y)
        inside = self.in_bounds(rows, cols)
        out = np.full(np.shape(rows), outside, dtype=grid.dtype)
        out[inside] = grid[rows[inside], cols[inside]]
        return out

    def is_free(self, x, y):
        """bool array: map-frame points lie in free cells (outside the grid is not free)."""
        return self._lookup(self.free, x, y, False)

    def is_occupied(self, x, y):
        """bool array: map-frame points lie in occupied cells (outside the grid is not)."""
        return self._lookup(self.occupied, x, y, False)

    def free_cells(self):
        """(rows, cols) index arrays of every free cell."""
        return np.nonzero(self.free)

    def distance_field(self, edge=False):
        """Distance (m) from every cell centre to the nearest occupied cell centre (cached).

        With ``edge`` the map's edge is a wall too, as a ring of occupied cells just outside
        the grid: the field for where the robot fits (the simulated robot cannot leave its map;
        see :func:`edge_distance`). Without it (amcl's likelihood field ignores the edge), a
        map without obstacles gives +inf everywhere.
        """
        if edge:
            if self._edge_distance is None:
                self._edge_distance = edge_distance(self.occupied, self.resolution)
            return self._edge_distance
        if self._distance is None:
            from scipy.ndimage import distance_transform_edt
            if self.occupied.any():
                self._distance = distance_transform_edt(~self.occupied) * self.resolution
            else:
                self._distance = np.full(self.shape, np.inf)
        return self._distance

    def distance_at(self, x, y, outside=0.0):
        """Distance (m) to the nearest obstacle at map-frame points (``outside`` off the grid)."""
        return self._lookup(self.distance_field(), x, y, outside)


def edge_distance(obstacles, resolution):
    """Distance (m) from every cell centre to the nearest obstacle cell's centre or the edge.

    The edge counts as a ring of obstacle cells just outside the grid (centres half a cell
    beyond it), so that whoever subtracts half a cell's diagonal to clear an obstacle's square
    clears the edge the same way. ``obstacles``: a 2D bool array; the result has its shape.
    """
    from scipy.ndimage import distance_transform_edt
    ring = np.ones((obstacles.shape[0] + 2, obstacles.shape[1] + 2), dtype=bool)
    ring[1:-1, 1:-1] = obstacles
    return distance_transform_edt(~ring)[1:-1, 1:-1] * resolution


def _read_image(path):
    from PIL import Image
    try:
        with Image.open(path) as image:
            if image.mode in ('RGB', 'RGBA', 'LA', 'P'):
                image = image.convert('RGBA' if 'A' in image.mode else 'RGB')
                pixels = np.asarray(image, dtype=float)
                pixels = pixels[..., :3].mean(axis=2) if pixels.ndim == 3 else pixels
            else:
                pixels = np.asarray(image.convert('L') if image.mode not in ('L', 'I', 'I;16')
                                    else image, dtype=float)
    except (OSError, ValueError) as error:
        raise MapError('cannot read map image %s: %s' % (path, error)) from None
    if pixels.ndim != 2 or pixels.size == 0:
        raise MapError('map image %s is not a 2D grey or colour image' % path)
    return pixels


def load_map(yaml_path):
    """Load a map_server map (YAML + PGM/PNG).

    Raises:
        MapError: naming the file and the key or value that is wrong.
    """
    try:
        with open(yaml_path) as f:
            meta = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as error:
        raise MapError('cannot read map YAML %s: %s' % (yaml_path, error)) from None
    if not isinstance(meta, dict):
        raise MapError('%s: a map YAML must be a mapping' % yaml_path)
    for key in ('image', 'resolution', 'origin'):
        if key not in meta:
            raise MapError('%s: missing key %r' % (yaml_path, key))

    def number(key, default, low, high):
        value = meta.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not (low <= value <= high):
            raise MapError('%s: %s=%r must be a number in [%g, %g]' % (
                yaml_path, key, value, low, high))
        return float(value)

    resolution = number('resolution', None, 1e-6, 1e3)
    occupied_thresh = number('occupied_thresh', 0.65, 0.0, 1.0)
    free_thresh = number('free_thresh', 0.196, 0.0, 1.0)
    if free_thresh > occupied_thresh:
        raise MapError('%s: free_thresh=%g must be <= occupied_thresh=%g' % (
            yaml_path, free_thresh, occupied_thresh))
    negate = meta.get('negate', 0)
    if negate not in (0, 1, True, False):
        raise MapError('%s: negate=%r must be 0 or 1' % (yaml_path, negate))
    mode = meta.get('mode', 'trinary')
    if mode not in ('trinary', 'scale', 'raw'):
        raise MapError('%s: mode=%r must be trinary, scale or raw' % (yaml_path, mode))
    origin = meta['origin']
    if not isinstance(origin, (list, tuple)) or len(origin) != 3 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in origin):
        raise MapError('%s: origin=%r must be [x, y, yaw]' % (yaml_path, origin))

    image = str(meta['image'])
    path = image if os.path.isabs(image) else os.path.join(os.path.dirname(yaml_path), image)
    pixels = _read_image(path)[::-1]          # bottom-up rows
    if mode == 'raw':
        occupied = (pixels > occupied_thresh * 100) & (pixels <= 100)
        free = pixels < free_thresh * 100
    else:
        p = pixels / 255.0 if negate else (255.0 - pixels) / 255.0
        occupied = p > occupied_thresh
        free = p < free_thresh
    return GridMap(occupied, free, resolution, tuple(float(v) for v in origin))


def save_map(grid, yaml_path, image_name=None):
    """Write ``grid`` as a trinary PGM (0 occupied, 254 free, 205 unknown) and its YAML."""
    from PIL import Image
    base = os.path.splitext(os.path.basename(yaml_path))[0]
    image_name = image_name or base + '.pgm'
    pixels = np.full(grid.shape, 205, dtype=np.uint8)
    pixels[grid.free] = 254
    pixels[grid.occupied] = 0
    Image.fromarray(pixels[::-1]).save(os.path.join(os.path.dirname(yaml_path) or '.',
                                                    image_name))
    meta = {'image': image_name, 'resolution': float(grid.resolution),
            'origin': [float(v) for v in grid.origin], 'negate': 0,
            'occupied_thresh': 0.65, 'free_thresh': 0.196}
    with open(yaml_path, 'w') as f:
        yaml.safe_dump(meta, f, default_flow_style=None, sort_keys=False)
