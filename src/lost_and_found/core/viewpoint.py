"""Where to go and look: the nearest pose at which the estimate puts a mapped tag in clear view.

After lost_service ends ``LOST`` on the localizer's poses alone, fiducial_localizer's tag check
(core/tag_check.py) can refute a wrong estimate only while the estimate puts a mapped tag
squarely in front of the camera, and from most poses of a real building it puts none (a spin
sees one inside the check's geometry from 10-16 % of the free poses of the benchmark maps).
:class:`ViewpointFinder` says where the robot should go, by the estimate, for the check to
speak: the pose, reachable over the map's known-free cells, from which the camera would see a
tag inside the check's geometry, with the least path plus turn.

If the estimate is right, the camera then sees the tag and the localization is confirmed; if
it is wrong, the robot stands somewhere else, the tag stays undetected and the check refutes
the estimate.

Pure numpy/scipy: no ROS.
"""
import dataclasses
import math

import numpy as np

from lost_and_found.core import geometry
from lost_and_found.core.tag_check import camera_pose_2d

#: Margins (m, rad) kept inside the tag check's distance range and view angle when candidate
#: viewpoints are laid out, so that a small error in reaching one keeps the tag checkable.
DISTANCE_MARGIN = 0.2
ANGLE_MARGIN = 0.15

#: How far (m) from the estimate the search looks for a cell the robot fits in when the
#: estimate's own cell is too near an obstacle (the robot may stand closer to a wall than
#: the clearance: the clearance is for driving).
START_SNAP = 0.5


@dataclasses.dataclass(frozen=True)
class Viewpoint:
    """A base pose in the map from which the estimate expects a mapped tag in clear view.

    Attributes:
        x, y, yaw: the base pose (m, m, rad).
        fiducial_id: the tag expected in view.
        path_length: metres to drive from the estimate over free cells (0: turn in place).
        turn: radians between the estimate's heading and ``yaw``.
    """

    x: float
    y: float
    yaw: float
    fiducial_id: int
    path_length: float
    turn: float


class ViewpointFinder:
    """Finds the cheapest :class:`Viewpoint` near an estimate.

    Args:
        check: a :class:`~lost_and_found.core.tag_check.TagCheck` whose ``distance_map`` (a
            scan_agreement.DistanceMap, with the known-free cells) is set: its geometry says
            when a tag counts as in clear view.
        max_path: the longest path (m) worth driving to a viewpoint.
        clearance: the robot drives only through cells at least this far (m) from an
            obstacle (its radius plus a margin).
        turn_cost: metres of path one radian of turning costs (the robot's linear over its
            angular speed).
    """

    def __init__(self, check, max_path, clearance, turn_cost):
        """Keep the check and the search's bounds."""
        self.check = check
        self.max_path = float(max_path)
        self.clearance = float(clearance)
        self.turn_cost = float(turn_cost)
        self._traversable = None
        self._traversable_of = None     # the distance map _traversable was made for

    def find(self, estimate, t_base_cam):
        """The cheapest viewpoint from ``estimate`` = ``(x, y, yaw)``, or None.

        Args:
            estimate: the base pose in the map, by the localizer.
            t_base_cam: 4x4 pose of the camera's optical frame (z forward) on the base.

        Returns:
            The estimate itself (no path, no turn) when the camera already has a tag in
            clear view; else the reachable pose within ``max_path`` that has one with the
            least ``path_length + turn_cost * turn``; None when there is no map or none
            within reach.
        """
        distance_map = self.check.distance_map
        if distance_map is None or not len(self.check):
            return None
        x, y, yaw = (float(v) for v in estimate)
        here = self.check.expected(*camera_pose_2d((x, y, yaw), t_base_cam))
        if here:
            return Viewpoint(x, y, yaw, min(here, key=lambda tag: tag.distance).fiducial_id,
                             0.0, 0.0)
        paths = self._paths(distance_map, x, y)
        if paths is None:
            return None
        best, best_cost = None, math.inf
        for fiducial_id, centre, bx, by, path in self._candidates(distance_map, paths, x, y):
            for base_yaw in _facing_yaws(bx, by, centre, t_base_cam):
                turn = abs(float(geometry.wrap_angle(base_yaw - yaw)))
                cost = path + self.turn_cost * turn
                if cost >= best_cost:
                    continue
                seen = self.check.expected(*camera_pose_2d((bx, by, base_yaw), t_base_cam))
                if any(tag.fiducial_id == fiducial_id for tag in seen):
                    best, best_cost = Viewpoint(bx, by, base_yaw, fiducial_id, path,
                                                turn), cost
        return best

    # ----------------------------------------------------------------------- internals

    def _traversable_cells(self, distance_map):
        """Known-free cells at least ``clearance`` from an obstacle (cached per map)."""
        if self._traversable_of is not distance_map:
            self._traversable = distance_map.free & (distance_map.field >= self.clearance)
            self._traversable_of = distance_map
        return self._traversable

    def _paths(self, distance_map, x, y):
        """:class:`_Paths` from the estimate's cell (or the nearest one the robot fits in,
        within START_SNAP), or None when there is none."""
        traversable = self._traversable_cells(distance_map)
        res = distance_map.resolution
        rows, cols, inside = distance_map.cells([x], [y])
        if not inside[0]:
            return None
        row, col = int(rows[0]), int(cols[0])
        reach = int(math.ceil((self.max_path + START_SNAP) / res))
        r0, c0 = max(0, row - reach), max(0, col - reach)
        window = traversable[r0:row + reach + 1, c0:col + reach + 1]
        here = (row - r0, col - c0)
        if window[here]:
            start, offset = here, 0.0
        else:
            rr, cc = np.nonzero(window)
            gaps = np.hypot(rr - here[0], cc - here[1]) * res
            if not gaps.size or gaps.min() > START_SNAP:
                return None
            nearest = int(np.argmin(gaps))
            start, offset = (int(rr[nearest]), int(cc[nearest])), float(gaps[nearest])
        lengths = _grid_dijkstra(window, start, res, max(0.0, self.max_path - offset))
        return _Paths(lengths + offset, r0, c0)

    def _candidates(self, distance_map, paths, x, y):
        """``(fiducial_id, tag centre, x, y, path length)`` of the places a tag could be
        checked from:
        for every tag near enough, points in front of it across the check's distance range
        and view angle that the search reached, and the estimate itself (turning in place)."""
        check = self.check
        near = check.min_distance + DISTANCE_MARGIN
        far = max(near, check.max_distance - DISTANCE_MARGIN)
        spread = max(0.0, math.acos(max(-1.0, min(1.0, check.cos_view))) - ANGLE_MARGIN)
        distances = np.linspace(near, far, 4)
        angles = np.linspace(-spread, spread, 5)
        reach = self.max_path + check.max_distance
        for fiducial_id, centre, normal in check.upright_tags():
            if math.hypot(centre[0] - x, centre[1] - y) > reach:
                continue
            yield fiducial_id, centre, x, y, 0.0
            facing = math.atan2(normal[1], normal[0])
            bearings = facing + angles[None, :]
            xs = (centre[0] + distances[:, None] * np.cos(bearings)).ravel()
            ys = (centre[1] + distances[:, None] * np.sin(bearings)).ravel()
            rows, cols, inside = distance_map.cells(xs, ys)
            lengths = paths.at(rows, cols, inside)
            for i in np.flatnonzero(np.isfinite(lengths)):
                # The cell's centre: the point itself may sit in the cell's unreached corner.
                cx, cy = distance_map.centres(rows[i], cols[i])
                yield fiducial_id, centre, float(cx), float(cy), float(lengths[i])


@dataclasses.dataclass
class _Paths:
    """Path lengths (m) over a window of the map; ``inf`` where the search did not reach."""

    lengths: np.ndarray
    row0: int
    col0: int

    def at(self, rows, cols, inside):
        """Path lengths at map cells ``(rows, cols)`` (``inf`` off the window or the map)."""
        r, c = rows - self.row0, cols - self.col0
        ok = inside & (r >= 0) & (r < self.lengths.shape[0]) & (c >= 0) & \
            (c < self.lengths.shape[1])
        out = np.full(np.shape(rows), np.inf)
        out[ok] = self.lengths[r[ok], c[ok]]
        return out


def _facing_yaws(x, y, tag_centre, t_base_cam):
    """Base headings at ``(x, y)`` that point the camera at the tag (one for a camera on the
    base's axis; the camera's sideways offset is corrected once)."""
    t_base_cam = np.asarray(t_base_cam, dtype=float)
    mount_yaw = math.atan2(t_base_cam[1, 2], t_base_cam[0, 2])
    yaw = math.atan2(tag_centre[1] - y, tag_centre[0] - x) - mount_yaw
    cx, cy, cyaw, _ = camera_pose_2d((x, y, yaw), t_base_cam)
    error = float(geometry.wrap_angle(math.atan2(tag_centre[1] - cy, tag_centre[0] - cx) - cyaw))
    return (float(geometry.wrap_angle(yaw)), float(geometry.wrap_angle(yaw + error)))


def grid_graph(traversable, resolution):
    """The 8-connected graph (scipy CSR, edge lengths in m) over the True cells of the bool
    grid ``traversable``; node ``row * width + col``."""
    from scipy.sparse import coo_matrix
    shape = traversable.shape
    index = np.arange(traversable.size).reshape(shape)
    heads, tails, weights = [], [], []
    for dr, dc, length in ((0, 1, 1.0), (1, 0, 1.0), (1, 1, math.sqrt(2.0)),
                           (1, -1, math.sqrt(2.0))):
        a = traversable[:shape[0] - dr, max(0, -dc):shape[1] - max(0, dc)]
        b = traversable[dr:, max(0, dc):shape[1] + min(0, dc)]
        both = a & b
        heads.append(index[:shape[0] - dr, max(0, -dc):shape[1] - max(0, dc)][both])
        tails.append(index[dr:, max(0, dc):shape[1] + min(0, dc)][both])
        weights.append(np.full(heads[-1].size, length * resolution))
    return coo_matrix((np.concatenate(weights), (np.concatenate(heads),
                                                 np.concatenate(tails))),
                      shape=(traversable.size, traversable.size)).tocsr()


def _grid_dijkstra(traversable, start, resolution, limit):
    """Shortest 8-connected path lengths (m) from ``start`` over the True cells of
    ``traversable``, up to ``limit``; ``inf`` elsewhere."""
    from scipy.sparse.csgraph import dijkstra
    graph = grid_graph(traversable, resolution)
    start_node = int(start[0]) * traversable.shape[1] + int(start[1])
    lengths = dijkstra(graph, directed=False, indices=start_node, limit=limit)
    return lengths.reshape(traversable.shape)
