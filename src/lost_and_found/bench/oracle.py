"""The recovery suite's oracle bound: the least time from a pose to any pose that sees a tag.

An omniscient robot put down at ``(x, y, yaw)`` knows where it is and where every mapped
fiducial is; the least time it needs before its camera sees one is a floor under every search
strategy. :class:`Oracle` computes a **lower bound** on that time for any map:

1. **Visibility** (once per map, :class:`Visibility`): the free region is covered by a lattice
   of nodes (one per ``resolution`` x ``resolution`` block, e.g. 0.1 m) and each node is
   tried at ``headings`` evenly spaced yaws (e.g. 36). A (node, heading) *sees* when the
   simulator's own camera model (:class:`lost_and_found.sim.camera.Camera`, pixel noise 0)
   would report at least one mapped tag from that pose. :func:`visible_pairs` is that model
   vectorised over many (pose, tag) pairs: the same field-of-view, range and facing tests and
   the same exact grid traversal as ``cast_rays`` for the line of sight, so it gives the same
   answer as ``Camera.detect`` (a unit test compares them on random poses).
2. **Time** (per trial, :meth:`Oracle.time`): 0 when the camera sees a tag from the start pose
   itself. Otherwise the least, over every seeing (node, heading), of
   ``max(distance / v_max, rotation / w_max)``, and over turning in place at the start.

Why each term is a lower bound:

* *max, not sum*: a differential drive can turn while it drives, so only the slower of the
  two motions is certainly needed.
* *distance*: the shortest path on a 16-connected lattice (moves (1,0), (1,1), (2,1)) is at
  most :data:`STRETCH` (2.7 %) longer than a straight line, so the lattice length is divided by
  it; the start snaps to its lattice node and the seeing pose may lie anywhere in its node's
  block, so the snap distance and half a block diagonal are subtracted. The lattice is built
  on the region the robot's body fits in (clearance = its radius, sim_world's
  ``robot/radius``), not on the benchmark's safer put-down region, so every path the robot
  could take is on it; a block joins the lattice when *any* of its cells is in the region,
  which can only add shortcuts.
* *rotation*: whatever the path, the robot must end facing a heading from which the goal node
  sees, so it must turn at least the angle from its start yaw to the nearest such heading,
  less one heading step (the seeing headings are sampled; the set they sample may extend up
  to one step beyond them). At the start position itself the headings are swept finely
  (``start_headings``, default 0.5 degree) for a tight rotation-only bound.

The bound is exact up to the lattice: a seeing pose that lies between lattice poses none of
which sees (a tag glimpsed through a gap narrower than a block) is not found, so keep
``resolution`` at or below the map's narrowest useful gap (0.1 m is safe for office maps).

**Seeing vs being found.** By default a pose counts when the camera *reports* a tag (what
the issue asks). fiducial_localizer then drops far, grazing and noisy detections
(``config/fiducial_localizer.yaml``: 3 m, 60 degrees, object error 0.05, stricter than the
camera's 4 m and 75 degrees); ``acceptance=localizer_acceptance()`` counts only those it keeps,
a tighter bound on being *found* by a tag. Both are lower bounds.

**Speed limits.** ``linear_speed`` and ``angular_speed`` are arguments. The default
(:func:`speed_limits` ``'package'``) is the fastest the package itself ever moves the robot:
the navigator's ``max_linear`` (0.3 m/s, ``config/sim_navigator.yaml``; the reactive wander is
slower) and the larger of the navigator's ``max_angular`` (1.0 rad/s) and the recovery node's
``spin_speed`` (1.2566 rad/s, ``config/lost_and_found.yaml``): with the navigator's 1.0 rad/s
alone the recovery spin could beat the "bound". ``'robot'`` takes the base's physical limits
(``config/sim_world.yaml`` ``robot/max_*``: 0.5 m/s, 2.0 rad/s), a bound on any controller;
``'navigator'`` the navigator's pair.
"""
import dataclasses
import math
import os

import numpy as np
import yaml
from scipy import sparse
from scipy.sparse import csgraph
from scipy.spatial import cKDTree

from lost_and_found.core import geometry
from lost_and_found.core.config import ConfigError, config_from_params
from lost_and_found.core.fiducial import FiducialLocalizerConfig
from lost_and_found.sim.camera import Camera, CameraConfig
from lost_and_found.bench.places import FreeSpace

#: Default lattice spacing (m): below a door's usable width, and a 30 m x 20 m office map
#: precomputes in a few seconds.
RESOLUTION = 0.1
#: Default number of heading bins (10 degrees each; the camera's field of view is 57 degrees).
HEADINGS = 36
#: Default number of headings swept at the start position (0.5 degree each).
START_HEADINGS = 720
#: Worst ratio of a 16-connected lattice path to the straight segment it approximates: the
#: move directions are at most atan(1/2) = 26.6 degrees apart, so 1 / cos(13.3 degrees).
STRETCH = 1.0 / math.cos(0.5 * math.atan(0.5))
#: A start pose farther than this (m) from every lattice node is off the region.
MAX_SNAP = 1.0
#: Elements per array in one chunk of ray traversal (bounds memory to a few tens of MB).
_CHUNK_ELEMENTS = 1 << 20
#: 16-connected lattice moves (half of them; the graph is undirected), each with the two
#: blocks a knight move passes between (None for the 8 plain moves).
_MOVES = (((0, 1), None), ((1, 0), None), ((1, 1), None), ((1, -1), None),
          ((1, 2), ((0, 1), (1, 1))), ((2, 1), ((1, 0), (1, 1))),
          ((2, -1), ((1, 0), (1, -1))), ((1, -2), ((0, -1), (1, -1))))


class OracleError(ValueError):
    """Bad oracle input (a speed, a resolution, a pose); the message names the value."""


def package_dir():
    """The package's root folder (where config/ and maps/ are)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, '..', '..', '..'))


def _read_yaml(path):
    try:
        with open(path) as stream:
            data = yaml.safe_load(stream)
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(['%s: cannot read: %s' % (path, error)]) from None
    if not isinstance(data, dict):
        raise ConfigError(['%s: must be a mapping, got %r' % (path, data)])
    return data


def load_camera_config(path=None, exact=True):
    """The simulator's camera, from the ``camera:`` section of a sim_world YAML.

    Args:
        path: the YAML (default: the package's ``config/sim_world.yaml``); missing keys take
            the :class:`CameraConfig` defaults.
        exact: set ``pixel_noise`` to 0 (visibility does not depend on it; detections then
            carry exact poses).

    Raises:
        ConfigError: naming the file and every bad key.
    """
    path = path or os.path.join(package_dir(), 'config', 'sim_world.yaml')
    section = _read_yaml(path).get('camera') or {}
    if not isinstance(section, dict):
        raise ConfigError(['%s: camera=%r must be a mapping' % (path, section)])
    try:
        config = config_from_params(CameraConfig, section)
    except ConfigError as error:
        raise ConfigError(['%s: camera/%s' % (path, p) for p in error.problems]) from None
    if exact:
        config = CameraConfig(**dict(vars(config), pixel_noise=0.0))
    return config


def speed_limits(source='package', config_dir=None):
    """``(linear m/s, angular rad/s)`` speed limits of the oracle, read from the configs.

    Args:
        source: ``'package'`` (the fastest the package moves the robot: the navigator's
            max_linear, the larger of its max_angular and the recovery spin_speed),
            ``'navigator'`` (sim_navigator max_linear, max_angular) or ``'robot'`` (the base's
            physical limits, sim_world robot/max_linear_speed, robot/max_angular_speed).
        config_dir: folder of the YAML files (default: the package's ``config/``).

    Raises:
        OracleError: on an unknown source. ConfigError: on unreadable or non-positive values.
    """
    if source not in ('package', 'navigator', 'robot'):
        raise OracleError('speed source %r: must be package, navigator or robot' % (source,))
    if source == 'robot':
        return (_config_number(config_dir, 'sim_world.yaml', 'robot', 'max_linear_speed'),
                _config_number(config_dir, 'sim_world.yaml', 'robot', 'max_angular_speed'))
    linear = _config_number(config_dir, 'sim_navigator.yaml', 'max_linear')
    angular = _config_number(config_dir, 'sim_navigator.yaml', 'max_angular')
    if source == 'package':
        angular = max(angular, _config_number(config_dir, 'lost_and_found.yaml', 'spin_speed'))
    return linear, angular


def robot_radius(config_dir=None):
    """The simulated robot's radius (m, ``config/sim_world.yaml`` ``robot/radius``)."""
    return _config_number(config_dir, 'sim_world.yaml', 'robot', 'radius')


def _config_number(config_dir, name, *keys):
    """A number > 0 at ``keys`` in ``config_dir/name`` (default: the package's config/)."""
    path = os.path.join(config_dir or os.path.join(package_dir(), 'config'), name)
    node = _read_yaml(path)
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, bool) or not isinstance(node, (int, float)) or \
            not (math.isfinite(node) and node > 0):
        raise ConfigError(['%s: %s=%r must be a number > 0' % (path, '/'.join(keys), node)])
    return float(node)


def _tag_arrays(fiducial_map):
    """(ids, 4x4 transforms) of the mapped tags, sorted by id as Camera keeps them."""
    ids = np.array(sorted(fiducial_map.poses), dtype=np.int64)
    tags = np.array([fiducial_map.poses[i] for i in ids], dtype=float).reshape(-1, 4, 4)
    return ids, tags


def _first_hits(padded, shape, start, cell, direction, axis, limit):
    """``cast_rays``' traversal for many rays with their own origins and limits.

    The same closed-form crossings as :func:`lost_and_found.sim.laser._first_crossing_hit`,
    with ``start``, ``cell`` and ``limit`` arrays (one per ray) instead of one origin.
    ``padded`` is the flattened blocked mask with a one-cell border that never blocks:
    clipping an index to the border stands for "off the grid" without a bounds mask.
    Returns the ray parameter (cells) of the first crossing into a blocked cell, or inf.
    """
    rows, cols = shape
    d, d_other = direction[axis], direction[1 - axis]
    g, g_other = start[axis], start[1 - axis]
    c0 = cell[axis]
    crossings = int(math.ceil(float(np.max(limit * np.abs(d))))) + 1
    k = np.arange(crossings)
    step = np.sign(d).astype(np.int64)
    with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
        delta = 1.0 / np.abs(d)
        first = np.where(d > 0, (c0 + 1 - g) * delta, (g - c0) * delta)
        t = first[:, None] + k[None, :] * delta[:, None]     # inf or nan when d == 0
        along = c0[:, None] + (k[None, :] + 1) * step[:, None]
        across = np.floor(g_other[:, None] + d_other[:, None] * t).astype(np.int64)
    c, r = (along, across) if axis == 0 else (across, along)
    np.clip(c, -1, cols, out=c)
    np.clip(r, -1, rows, out=r)
    hit = padded[(r + 1) * (cols + 2) + (c + 1)]
    hit &= t <= limit[:, None]                               # nan compares False
    index = np.argmax(hit, axis=1)
    n = np.arange(t.shape[0])
    return np.where(hit[n, index], t[n, index], np.inf)


def line_of_sight(grid, origins, targets, tolerance, unknown_is_occupied=False):
    """bool per ray: no blocking cell begins more than ``tolerance`` before the target.

    The camera's occlusion test (``cast_rays`` from the camera toward the tag, range >= planar
    distance - tolerance), vectorised over rays with different origins.

    Args:
        grid: a :class:`lost_and_found.sim.gridmap.GridMap`.
        origins: (n, 2) map-frame points the rays start from.
        targets: (n, 2) map-frame points they aim at.
        tolerance: a wall this much (m) nearer than the target does not block.
        unknown_is_occupied: unknown cells block (as in ``cast_rays``).
    """
    origins = np.asarray(origins, dtype=float).reshape(-1, 2)
    targets = np.asarray(targets, dtype=float).reshape(-1, 2)
    out = np.ones(len(origins), dtype=bool)
    if not len(origins):
        return out
    blocked = grid.occupied | grid.unknown if unknown_is_occupied else grid.occupied
    flat = blocked.ravel()
    padded = np.pad(blocked, 1).ravel()
    rows, cols = grid.shape
    delta = targets - origins
    planar = np.hypot(delta[:, 0], delta[:, 1])
    gx, gy = grid.to_grid(origins[:, 0], origins[:, 1])
    ix, iy = np.floor(gx).astype(np.int64), np.floor(gy).astype(np.int64)
    inside = (ix >= 0) & (ix < cols) & (iy >= 0) & (iy < rows)
    in_wall = np.zeros(len(origins), dtype=bool)
    in_wall[inside] = flat[iy[inside] * cols + ix[inside]]
    out[in_wall] = 0.0 >= planar[in_wall] - tolerance     # cast_rays reads 0 inside a wall
    phi = np.arctan2(delta[:, 1], delta[:, 0]) - grid.origin[2]
    dx, dy = np.cos(phi), np.sin(phi)
    limit = (planar + tolerance) / grid.resolution
    todo = np.nonzero(~in_wall)[0]
    # Rays of similar length share a chunk, so that no chunk pays for its longest ray's steps.
    todo = todo[np.argsort(limit[todo])]
    # Elements per ray in both traversals (the longest ray of a chunk sets its width).
    need = 2 * np.ceil(limit[todo]).astype(np.int64) + 4
    start = 0
    while start < len(todo):
        end = min(len(todo), start + max(1, _CHUNK_ELEMENTS // int(need[start])))
        while end - start > 1 and (end - start) * int(need[end - 1]) > _CHUNK_ELEMENTS:
            end = start + max(1, _CHUNK_ELEMENTS // int(need[end - 1]))
        chunk = todo[start:end]
        s, c, dirs = (gx[chunk], gy[chunk]), (ix[chunk], iy[chunk]), (dx[chunk], dy[chunk])
        nearest = np.minimum(
            _first_hits(padded, (rows, cols), s, c, dirs, 0, limit[chunk]),
            _first_hits(padded, (rows, cols), s, c, dirs, 1, limit[chunk]))
        out[chunk] = nearest * grid.resolution >= planar[chunk] - tolerance
        start = end
    return out


def visible_pairs(grid, camera_config, tags, xs, ys, yaws, tag_index, acceptance=None):
    """Whether the camera at base pose ``(xs[i], ys[i], yaws[i])`` sees tag ``tag_index[i]``.

    ``Camera.detect``'s tests, vectorised over (pose, tag) pairs: in front of the camera and
    inside both fields of view, within ``max_range``, facing the camera within
    ``max_view_angle``, and in line of sight on ``grid``.

    Args:
        grid: the :class:`~lost_and_found.sim.gridmap.GridMap` whose walls hide tags.
        camera_config: a :class:`CameraConfig`.
        tags: (T, 4, 4) tag poses in the map frame.
        xs: base x of each pair (m). ys: base y (m). yaws: base yaw (rad).
        tag_index: index into ``tags`` of each pair.
        acceptance: an :class:`Acceptance` to also require (None: what the camera reports).

    Returns:
        A bool array, one per pair.
    """
    cfg = camera_config
    xs, ys, yaws = (np.asarray(v, dtype=float).ravel() for v in (xs, ys, yaws))
    tag_index = np.asarray(tag_index, dtype=np.int64).ravel()
    if not xs.size:
        return np.zeros(0, dtype=bool)
    tag_t, tag_z = tags[tag_index, :3, 3], tags[tag_index, :3, 2]
    ok, cam = _geometry(cfg, tag_t, tag_z, xs, ys, yaws, acceptance)
    candidates = np.nonzero(ok)[0]
    if candidates.size:
        ok[candidates] = line_of_sight(grid, cam[candidates], tag_t[candidates, :2],
                                       cfg.occlusion_tolerance, cfg.unknown_is_occupied)
    return ok


def _geometry(cfg, tag_t, tag_z, xs, ys, yaws, acceptance=None):
    """``(ok, camera xy)``: every test of :func:`visible_pairs` but the line of sight.

    ``tag_t`` and ``tag_z`` are the tags' centres and face normals (map frame), one row per
    pose or a single row for all of them.
    """
    t_bc = cfg.base_to_camera()
    cos, sin = np.cos(yaws), np.sin(yaws)
    cam = np.column_stack([xs + cos * t_bc[0, 3] - sin * t_bc[1, 3],
                           ys + sin * t_bc[0, 3] + cos * t_bc[1, 3],
                           np.full(xs.shape, t_bc[2, 3])])
    d = tag_t - cam
    # The tag in the base frame (un-yawed), then in the optical frame: p = R_bc^T Rz^T d.
    w = np.column_stack([cos * d[:, 0] + sin * d[:, 1], -sin * d[:, 0] + cos * d[:, 1],
                         d[:, 2]])
    p = w @ t_bc[:3, :3]
    distance = np.linalg.norm(p, axis=1)
    with np.errstate(divide='ignore', invalid='ignore'):
        # The camera in the tag frame is R_tag^T (cam - tag); its z over the distance is
        # the cosine of the view angle.
        cos_view = np.einsum('ni,ni->n', np.broadcast_to(tag_z, d.shape), -d) / distance
        view = np.arccos(np.clip(cos_view, -1.0, 1.0))
        ok = ((p[:, 2] > 0) & (distance > 0) & (distance <= cfg.max_range)
              & (np.abs(np.arctan2(p[:, 0], p[:, 2])) <= cfg.hfov / 2)
              & (np.abs(np.arctan2(p[:, 1], p[:, 2])) <= cfg.vfov / 2)
              & (view < cfg.max_view_angle))
        if acceptance is not None:
            ok &= acceptance.accepts(cfg, distance, view)
    return ok, cam[:, :2]


@dataclasses.dataclass(frozen=True)
class Acceptance:
    """What fiducial_localizer accepts of a detection (its max_* parameters).

    A detection is used when ``distance <= max_distance``, ``view angle <= max_view_angle``
    and its object error ``pixel_noise d / (f L cos(view))`` (the simulator's camera model)
    is at most ``max_object_error``.

    Attributes:
        max_distance: m. max_view_angle: rad. max_object_error: aruco_detect's object error.
        pixel_noise: the simulated camera's corner noise (px), which sets the object error.
    """

    max_distance: float = math.inf
    max_view_angle: float = math.pi / 2
    max_object_error: float = math.inf
    pixel_noise: float = 0.0

    def accepts(self, camera_config, distance, view):
        """bool array: detections at these distances (m) and view angles (rad) are used."""
        cfg = camera_config
        with np.errstate(divide='ignore', invalid='ignore'):
            error = self.pixel_noise * np.asarray(distance) / (
                cfg.focal_length * cfg.tag_size * np.maximum(np.cos(view), 1e-3))
        return ((np.asarray(distance) <= self.max_distance)
                & (np.asarray(view) <= self.max_view_angle)
                & (error <= self.max_object_error))


def localizer_config(localizer_yaml=None):
    """The :class:`FiducialLocalizerConfig` of fiducial_localizer's parameter file (default
    the shipped ``config/fiducial_localizer.yaml``; its ``fiducial_map`` is not needed).

    Raises:
        ConfigError: naming the file and the bad key.
    """
    localizer_yaml = localizer_yaml or os.path.join(package_dir(), 'config',
                                                    'fiducial_localizer.yaml')
    data = dict(_read_yaml(localizer_yaml), fiducial_map='unused')
    try:
        return config_from_params(FiducialLocalizerConfig, data)
    except ConfigError as error:
        raise ConfigError(['%s: %s' % (localizer_yaml, p) for p in error.problems]) from None


def localizer_acceptance(localizer_yaml=None, sim_world_yaml=None):
    """The :class:`Acceptance` of the shipped fiducial_localizer on the simulated camera.

    Args:
        localizer_yaml: fiducial_localizer parameters (default ``config/fiducial_localizer.yaml``).
        sim_world_yaml: for the camera's pixel noise (default ``config/sim_world.yaml``).

    Raises:
        ConfigError: naming the file and the bad key.
    """
    limits = localizer_config(localizer_yaml)
    noise = load_camera_config(sim_world_yaml, exact=False).pixel_noise
    return Acceptance(limits.max_distance, limits.max_view_angle, limits.max_object_error,
                      noise)


def seen_ids(camera, pose, acceptance=None):
    """Ids of the tags a simulated ``camera`` (:class:`Camera`) reports from base pose
    ``(x, y, yaw)``, nearest first; with ``acceptance`` (an :class:`Acceptance`) only those
    it keeps."""
    return [d.fiducial_id for d in camera.detect(pose) if acceptance is None
            or acceptance.accepts(camera.config, d.distance, d.view_angle)]


def _reach(camera_config):
    """Farthest base-to-tag planar distance (m) at which a tag can be seen."""
    return camera_config.max_range + math.hypot(camera_config.x, camera_config.y)


class Lattice:
    """Nodes of a free region, one per ``spacing`` x ``spacing`` block, and their graph.

    A block is a node when any of its cells is in the region; the node's pose is the region
    cell nearest the block centre (a real free pose), its graph position the block centre.
    Nodes are joined 16-connected (knight moves only between two present blocks), each edge
    weighted by the distance between block centres.

    Args:
        grid: a :class:`~lost_and_found.sim.gridmap.GridMap`.
        mask: bool array of the grid's shape, the region.
        spacing: block side (m); rounded to a whole number of cells (at least one).

    Attributes:
        xs, ys: the nodes' poses (m, map frame). step: the block side (m).
        centre_xs, centre_ys: the block centres (m). graph: sparse (N, N) edge lengths (m).
    """

    def __init__(self, grid, mask, spacing):
        """Pool the region into blocks and join neighbouring blocks."""
        if not (isinstance(spacing, (int, float)) and math.isfinite(spacing) and spacing > 0):
            raise OracleError('resolution=%r: must be a finite number > 0 (m)' % (spacing,))
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != grid.shape:
            raise OracleError('region mask shape %s differs from the map %s'
                              % (mask.shape, grid.shape))
        stride = max(1, int(round(spacing / grid.resolution)))
        self.grid = grid
        self.stride = stride
        self.step = stride * grid.resolution
        rows, cols = grid.shape
        brows, bcols = -(-rows // stride), -(-cols // stride)
        padded = np.zeros((brows * stride, bcols * stride), dtype=bool)
        padded[:rows, :cols] = mask
        blocks = padded.reshape(brows, stride, bcols, stride)
        present = blocks.any(axis=(1, 3))
        br, bc = np.nonzero(present)
        self.index = np.full(present.shape, -1, dtype=np.int64)
        self.index[br, bc] = np.arange(br.size)
        # The region cell nearest each block centre, so every node pose is a region pose.
        local = np.arange(stride) - (stride - 1) / 2.0
        dist2 = local[:, None] ** 2 + local[None, :] ** 2
        cells = blocks[br, :, bc, :]                          # (N, stride, stride)
        score = np.where(cells, dist2[None], np.inf).reshape(len(br), -1)
        best = np.argmin(score, axis=1)
        self.rows = br * stride + best // stride
        self.cols = bc * stride + best % stride
        self.xs, self.ys = grid.cell_center(self.rows, self.cols)
        self.centre_xs, self.centre_ys = grid.to_world((bc + 0.5) * stride,
                                                       (br + 0.5) * stride)
        self.graph = self._edges(br, bc)
        self._tree = cKDTree(np.column_stack([self.centre_xs, self.centre_ys])) \
            if br.size else None

    def __len__(self):
        """The number of nodes."""
        return int(self.xs.size)

    def _edges(self, br, bc):
        index = self.index
        nbr, nbc = index.shape
        sources, targets, weights = [], [], []

        def node_at(dr, dc):
            r, c = br + dr, bc + dc
            ok = (r >= 0) & (r < nbr) & (c >= 0) & (c < nbc)
            out = np.full(br.size, -1, dtype=np.int64)
            out[ok] = index[r[ok], c[ok]]
            return out

        for (dr, dc), between in _MOVES:
            other = node_at(dr, dc)
            ok = other >= 0
            if between is not None:
                for mr, mc in between:
                    ok &= node_at(mr, mc) >= 0
            sources.append(np.nonzero(ok)[0])
            targets.append(other[ok])
            weights.append(np.full(int(ok.sum()), self.step * math.hypot(dr, dc)))
        n = br.size
        half = sparse.csr_matrix((np.concatenate(weights), (np.concatenate(sources),
                                                            np.concatenate(targets))),
                                 shape=(n, n))
        # Both directions stored once, so that each search skips scipy's undirected copy.
        return (half + half.T).tocsr()

    def nearest(self, x, y):
        """``(node, distance m)``: the node whose block centre is nearest ``(x, y)``."""
        distance, node = self._tree.query([x, y])
        return int(node), float(distance)

    def distances(self, node, limit=np.inf):
        """Lattice path length (m) from ``node`` to every node (inf when unreachable)."""
        return csgraph.dijkstra(self.graph, directed=True, indices=int(node), limit=limit)


class Visibility:
    """For every lattice node and heading of a region: does the camera see a mapped tag?

    Args:
        grid: the :class:`~lost_and_found.sim.gridmap.GridMap`.
        fiducial_map: a :class:`lost_and_found.core.fiducial.FiducialMap`.
        camera_config: a :class:`CameraConfig` (see :func:`load_camera_config`).
        mask: bool array of the grid's shape: the region the robot's poses are drawn from.
        resolution: lattice spacing (m).
        headings: number of heading bins (yaws ``2 pi k / headings``).
        acceptance: also require what fiducial_localizer accepts (an :class:`Acceptance`;
            None: every tag the camera reports counts).

    Attributes:
        lattice: the :class:`Lattice` of the region.
        headings: (K,) the yaws tried (rad).
        sees: (N, K) bool, the camera at node n, yaw k sees at least one tag.
        tag_ids: (T,) the mapped ids. tag_visible: (T,) bool, the tag is seen from at least one
            (node, heading).
    """

    def __init__(self, grid, fiducial_map, camera_config, mask, resolution=RESOLUTION,
                 headings=HEADINGS, acceptance=None):
        """Run the camera model over every node and heading (vectorised per tag)."""
        if isinstance(headings, bool) or not isinstance(headings, int) or headings < 1:
            raise OracleError('headings=%r: must be an integer >= 1' % (headings,))
        camera_config.validate()
        self.grid = grid
        self.camera_config = camera_config
        self.acceptance = acceptance
        self.lattice = Lattice(grid, mask, resolution)
        self.headings = geometry.wrap_angle(2.0 * math.pi * np.arange(headings) / headings)
        self.tag_ids, self._tags = _tag_arrays(fiducial_map)
        n, k = len(self.lattice), headings
        self.sees = np.zeros((n, k), dtype=bool)
        self.tag_visible = np.zeros(len(self.tag_ids), dtype=bool)
        if not n or not len(self.tag_ids):
            return
        tree = cKDTree(np.column_stack([self.lattice.xs, self.lattice.ys]))
        reach = _reach(camera_config)
        offset = math.hypot(camera_config.x, camera_config.y)
        for j in range(len(self.tag_ids)):
            self._add_tag(j, tree, reach, offset)

    def _add_tag(self, j, tree, reach, offset):
        """Mark the (node, heading) pairs that see tag ``j``."""
        lattice, tag = self.lattice, self._tags[j]
        nodes = np.array(tree.query_ball_point(tag[:2, 3], reach), dtype=np.int64)
        if not nodes.size:
            return
        # The camera must be in front of the tag's face: a node more than the camera's
        # offset behind the face plane cannot see it from any heading.
        front = (tag[0, 2] * (lattice.xs[nodes] - tag[0, 3])
                 + tag[1, 2] * (lattice.ys[nodes] - tag[1, 3])
                 + tag[2, 2] * (self.camera_config.z - tag[2, 3]))
        nodes = nodes[front > -offset - 1e-9]
        k = len(self.headings)
        node_of = np.repeat(nodes, k)
        heading_of = np.tile(np.arange(k), nodes.size)
        yaws = self.headings[heading_of]
        # Geometry first for every pair (cheap), the line of sight only where it matters:
        # pairs that see nothing yet, and all pairs while the tag is not yet known visible.
        geometric, cam = _geometry(self.camera_config, tag[None, :3, 3], tag[None, :3, 2],
                                   lattice.xs[node_of], lattice.ys[node_of], yaws,
                                   self.acceptance)
        pending = geometric & ~self.sees[node_of, heading_of]
        seen = self._cast(tag, cam[pending])
        self.sees[node_of[pending][seen], heading_of[pending][seen]] = True
        if seen.any():
            self.tag_visible[j] = True
            return
        rest = geometric & ~pending
        if rest.any():
            self.tag_visible[j] = bool(self._cast(tag, cam[rest]).any())

    def _cast(self, tag, cam):
        """Line of sight from camera positions ``cam`` (n, 2) to one tag."""
        cfg = self.camera_config
        targets = np.broadcast_to(tag[:2, 3], cam.shape)
        return line_of_sight(self.grid, cam, targets, cfg.occlusion_tolerance,
                             cfg.unknown_is_occupied)

    def node_sees(self):
        """(N,) bool: some heading of the node sees a tag (a 360 degree spin finds one)."""
        return self.sees.any(axis=1)

    def coverage(self):
        """Fraction of the nodes from which a spin in place (no translation) sees a tag."""
        return float(self.node_sees().mean()) if len(self.lattice) else 0.0


def _angular_distance(a, b):
    """|a - b| wrapped to [0, pi] (rad)."""
    return np.abs(geometry.wrap_angle(np.asarray(a) - np.asarray(b)))


class Oracle:
    """Lower bound on the time from a put-down pose to seeing a mapped fiducial.

    Build it once per map (the visibility precomputation), then call :meth:`time` per trial.

    Args:
        grid: the :class:`~lost_and_found.sim.gridmap.GridMap`.
        fiducial_map: a :class:`lost_and_found.core.fiducial.FiducialMap`.
        camera_config: a :class:`CameraConfig` (default: :func:`load_camera_config`).
        free_space: a :class:`lost_and_found.bench.places.FreeSpace`, the region the robot
            may travel through and look from (default: clearance = the robot's radius from
            :func:`robot_radius`, every place its body fits; a region with more clearance
            gives a bound for a robot kept inside it, not for the robot).
        resolution: lattice spacing (m).
        headings: heading bins per node.
        linear_speed: m/s, and angular_speed: rad/s (default: :func:`speed_limits`
            ``'package'``).
        start_headings: headings swept at the start position for the turn-in-place bound.
        acceptance: count only detections fiducial_localizer would use (an
            :class:`Acceptance`, e.g. :func:`localizer_acceptance`; a tighter bound on being
            *found* by a tag). None (default): every tag the camera reports counts.

    Raises:
        OracleError: on a bad speed, resolution or heading count.
    """

    def __init__(self, grid, fiducial_map, camera_config=None, free_space=None,
                 resolution=RESOLUTION, headings=HEADINGS, linear_speed=None,
                 angular_speed=None, start_headings=START_HEADINGS, acceptance=None):
        """Precompute the lattice, its graph and what each (node, heading) sees."""
        if linear_speed is None or angular_speed is None:
            default_linear, default_angular = speed_limits('package')
            linear_speed = default_linear if linear_speed is None else linear_speed
            angular_speed = default_angular if angular_speed is None else angular_speed
        for name, value in (('linear_speed', linear_speed), ('angular_speed', angular_speed)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not (math.isfinite(value) and value > 0):
                raise OracleError('%s=%r: must be a finite number > 0' % (name, value))
        if isinstance(start_headings, bool) or not isinstance(start_headings, int) or \
                start_headings < 1:
            raise OracleError('start_headings=%r: must be an integer >= 1' % (start_headings,))
        self.grid = grid
        self.fiducial_map = fiducial_map
        self.camera_config = camera_config or load_camera_config()
        self.free_space = free_space or FreeSpace(grid, clearance=robot_radius())
        self.linear_speed = float(linear_speed)
        self.angular_speed = float(angular_speed)
        self.acceptance = acceptance
        self.visibility = Visibility(grid, fiducial_map, self.camera_config,
                                     self.free_space.mask, resolution, headings, acceptance)
        self.lattice = self.visibility.lattice
        self._camera = Camera(self.camera_config, fiducial_map, grid)
        self._tag_ids, self._tags = _tag_arrays(fiducial_map)
        self._start_yaws = geometry.wrap_angle(
            2.0 * math.pi * np.arange(start_headings) / start_headings)
        self._seeing_nodes = np.nonzero(self.visibility.node_sees())[0]

    def _seen_ids(self, pose):
        """Ids the camera reports from ``pose`` (that the acceptance, if any, keeps)."""
        return seen_ids(self._camera, pose, self.acceptance)

    def _turn_in_place(self, x, y, yaw):
        """``(rotation bound rad, seeing yaw)`` of turning in place at ``(x, y)``, or None."""
        if not len(self._tag_ids):
            return None
        near = np.nonzero(np.hypot(self._tags[:, 0, 3] - x, self._tags[:, 1, 3] - y)
                          <= _reach(self.camera_config))[0]
        if not near.size:
            return None
        yaws = np.repeat(self._start_yaws, near.size)
        tags = np.tile(near, self._start_yaws.size)
        ok = visible_pairs(self.grid, self.camera_config, self._tags, np.full(yaws.shape, x),
                           np.full(yaws.shape, y), yaws, tags, self.acceptance)
        seeing = self._start_yaws[ok.reshape(self._start_yaws.size, near.size).any(axis=1)]
        if not seeing.size:
            return None
        turns = _angular_distance(seeing, yaw)
        best = int(np.argmin(turns))
        # The seeing yaws are samples: the set they come from may begin one step earlier.
        step = 2.0 * math.pi / self._start_yaws.size
        return max(0.0, float(turns[best]) - step), float(seeing[best])

    def time(self, pose):
        """Least time (s) from ``pose`` until a mapped tag is in view: a lower bound.

        Args:
            pose: ``(x, y, yaw)`` in the map frame (the true put-down pose).

        Returns:
            ``(seconds, detail)``. ``seconds`` is None when no reachable pose sees a tag.
            ``detail`` holds ``reason`` (text), ``goal`` ([x, y, yaw] of the pose reached, or
            None), ``tags`` (ids the camera sees from it), ``path_m`` (lattice path length),
            ``distance_m`` (the distance bound used), ``rotation_rad`` (the rotation bound)
            and ``limited_by`` (``'translation'``, ``'rotation'`` or ``'none'``).

        Raises:
            OracleError: when the pose is not three finite numbers.
        """
        try:
            x, y, yaw = (float(v) for v in pose)
        except (TypeError, ValueError):
            raise OracleError('pose=%r: must be (x, y, yaw)' % (pose,)) from None
        if not all(math.isfinite(v) for v in (x, y, yaw)):
            raise OracleError('pose=%r: must be finite numbers' % (pose,))
        detail = {'reason': '', 'goal': None, 'tags': [], 'path_m': None, 'distance_m': None,
                  'rotation_rad': None, 'limited_by': 'none'}
        seen = self._seen_ids((x, y, yaw))
        if seen:
            detail.update(reason='a tag is in view from the start pose', goal=[x, y, yaw],
                          tags=seen, path_m=0.0, distance_m=0.0, rotation_rad=0.0)
            return 0.0, detail
        best = None             # (seconds, goal, path, distance, rotation, reason)
        turn = self._turn_in_place(x, y, yaw)
        if turn is not None:
            best = (turn[0] / self.angular_speed, (x, y, turn[1]), 0.0, 0.0, turn[0],
                    'turn in place at the start')
        node, snap = self.lattice.nearest(x, y) if len(self.lattice) else (None, math.inf)
        lattice_reason = ''
        if not self._seeing_nodes.size:
            lattice_reason = 'no pose of the free region sees a mapped tag'
        elif snap > MAX_SNAP:
            lattice_reason = 'the start is %.2f m from the free region' % snap
        else:
            candidate = self._best_node(node, snap, yaw)
            if candidate is None:
                lattice_reason = 'no pose that sees a tag is reachable from the start'
            elif best is None or candidate[0] < best[0]:
                best = candidate
        if best is None:
            detail['reason'] = lattice_reason or 'no tag is in reach'
            return None, detail
        seconds, goal, path, distance, rotation, reason = best
        goal = [float(v) for v in goal]
        detail.update(
            reason=reason, goal=goal, tags=self._seen_ids(goal), path_m=float(path),
            distance_m=float(distance), rotation_rad=float(rotation),
            limited_by='rotation' if rotation / self.angular_speed >=
            distance / self.linear_speed else 'translation')
        return float(seconds), detail

    def _best_node(self, node, snap, yaw):
        """(seconds, goal, path, distance, rotation, reason) of the best seeing node, or None."""
        vis, lattice = self.visibility, self.lattice
        path = lattice.distances(node)[self._seeing_nodes]
        reachable = np.isfinite(path)
        if not reachable.any():
            return None
        nodes, path = self._seeing_nodes[reachable], path[reachable]
        slack = snap + lattice.step / math.sqrt(2.0)
        distance = np.maximum(0.0, path / STRETCH - slack)
        sees = vis.sees[nodes]
        turns = np.where(sees, _angular_distance(vis.headings, yaw)[None, :], np.inf)
        heading = np.argmin(turns, axis=1)
        step = 2.0 * math.pi / len(vis.headings)
        rotation = np.maximum(0.0, turns[np.arange(nodes.size), heading] - step)
        seconds = np.maximum(distance / self.linear_speed, rotation / self.angular_speed)
        i = int(np.argmin(seconds))
        n = nodes[i]
        goal = (float(lattice.xs[n]), float(lattice.ys[n]), float(vis.headings[heading[i]]))
        return (float(seconds[i]), goal, float(path[i]), float(distance[i]),
                float(rotation[i]), 'drive to a lattice pose that sees a tag')
