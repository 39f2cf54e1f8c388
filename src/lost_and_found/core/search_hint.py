"""Which way the localizer's hypotheses say a mapped tag is: a hint for the search.

While the robot is lost, amcl's particle cloud holds its hypotheses of where the robot is.
Each hypothesis, read against the map and the mapped tags, says which way the robot should
drive to get a tag in view: the first stretch of the shortest path from that pose to a place
from which the camera would see a tag. That way, relative to the hypothesis's own heading, is
a bearing in the robot's frame, and a bearing in the robot's frame means the same thing
whichever hypothesis is right. When most of the cloud agrees on it (the cloud is in a few
places that look alike, and from each of them a tag is the same way), driving that way
finds a tag, or shows the hypotheses that pointed there wrong; when the cloud is spread
over the map, or its parts disagree, there is no hint.

:class:`TagViewField` does the map part once per map: the cells from which a tag is in
reach of the camera (distance, the tag's view angle, no mapped wall between; the robot
turns to face it), and from every other cell the path length to the nearest such cell and
the next cell on that path (a multi-source Dijkstra over the cells the robot fits in).
:meth:`TagViewField.hint` reads a cloud against it.

Pure numpy/scipy: no ROS.
"""
import dataclasses
import math

import numpy as np

from lost_and_found.core import geometry
from lost_and_found.core.tag_check import CLEARANCE, upright_tag_arrays
from lost_and_found.core.viewpoint import grid_graph

#: Width (rad) of the bins the bearings are counted in; the hint's bearing is the mean of
#: the bearings within one bin of the fullest run of three.
BIN = math.radians(10.0)
#: Nearest camera-to-tag distance (m) at which a tag counts as in view (nearer, it fills the
#: frame).
MIN_TAG_DISTANCE = 0.5
#: Fewest hypotheses with a path to a tag that a hint needs.
MIN_VOTERS = 10
#: Most cells the robot fits in that a map may have for hints (the path graph takes about
#: 100 bytes per cell): 3 million cells of 5 cm are 7500 m2 of floor.
MAX_CELLS = 3000000


@dataclasses.dataclass(frozen=True)
class SearchHint:
    """Where most of the cloud says a tag is.

    Attributes:
        bearing: the way to drive, in the robot's frame (rad, counter-clockwise, 0 ahead).
        share: the fraction of the hypotheses that have a path to a tag and are not at a
            place that sees one already, whose way lies within a bin and a half of
            ``bearing``.
        voters: how many hypotheses had a way (the share's denominator).
        distance: median path (m) to a tag in view of the hypotheses that agree.
    """

    bearing: float
    share: float
    voters: int
    distance: float


class TagViewField:
    """The map read for tags in view (see the module docstring).

    Args:
        distance_map: a scan_agreement.DistanceMap with its known-free cells (``free``).
        tag_poses: fiducial id -> 4x4 ``T_map_fid`` (tag z axis out of its face).
        min_distance, max_distance: camera-to-tag distances (m) at which a tag gives a fix.
        view_angle: largest angle (rad) between a tag's face normal and the way to the
            camera at which it gives one.
        clearance: the robot drives only through known-free cells at least this far (m) from
            a mapped obstacle.
        lookahead: how far along its path (m) a hypothesis's way is read.

    Raises:
        ValueError: a map with more than :data:`MAX_CELLS` cells the robot fits in.
    """

    def __init__(self, distance_map, tag_poses, min_distance, max_distance, view_angle,
                 clearance, lookahead):
        """Find the cells that see a tag, and every cell's path to the nearest of them."""
        from scipy.sparse.csgraph import dijkstra
        self.distance_map = distance_map
        self.lookahead = float(lookahead)
        free = distance_map.free if distance_map.free is not None else \
            distance_map.field > 0.0
        self.traversable = free & (distance_map.field >= float(clearance))
        self._width = self.traversable.shape[1]
        cells = int(self.traversable.sum())
        if cells > MAX_CELLS:
            raise ValueError('the map has %d cells the robot fits in, more than the %d search '
                             'hints are made for' % (cells, MAX_CELLS))
        self.sees = self._seeing_cells(tag_poses, float(min_distance), float(max_distance),
                                       math.cos(float(view_angle)))
        sources = np.flatnonzero(self.sees.ravel())
        self.lengths = np.full(self.traversable.size, np.inf)
        self.next = np.full(self.traversable.size, -1, dtype=np.int64)
        if sources.size:
            graph = grid_graph(self.traversable, distance_map.resolution)
            lengths, predecessors, _ = dijkstra(graph, directed=False, indices=sources,
                                                return_predecessors=True, min_only=True)
            self.lengths = lengths
            self.next = np.where(predecessors >= 0, predecessors, -1).astype(np.int64)

    def __len__(self):
        """How many cells see a tag."""
        return int(self.sees.sum())

    def _seeing_cells(self, tag_poses, near, far, cos_view):
        """Bool grid: traversable cells within [near, far] of an upright tag, inside its view
        angle, with no mapped wall between."""
        dmap = self.distance_map
        sees = np.zeros(self.traversable.shape, dtype=bool)
        _, centres, _, normals = upright_tag_arrays(tag_poses)
        res = dmap.resolution
        for centre, normal in zip(centres, normals):
            # Every cell whose centre may lie within `far` of the tag.
            offsets = np.arange(-far, far + res, res)
            gx, gy = np.meshgrid(centre[0] + offsets, centre[1] + offsets)
            xs, ys = gx.ravel(), gy.ravel()
            rows, cols, inside = dmap.cells(xs, ys)
            cells = np.unique(rows[inside].astype(np.int64) * self._width +
                              cols[inside].astype(np.int64))
            rows, cols = np.divmod(cells, self._width)
            keep = self.traversable[rows, cols]
            rows, cols = rows[keep], cols[keep]
            cx, cy = dmap.centres(rows, cols)
            dx, dy = cx - centre[0], cy - centre[1]
            distance = np.hypot(dx, dy)
            with np.errstate(invalid='ignore', divide='ignore'):
                facing = (dx * normal[0] + dy * normal[1]) / distance
            keep = (distance >= near) & (distance <= far) & (facing >= cos_view)
            rows, cols, cx, cy = rows[keep], cols[keep], cx[keep], cy[keep]
            if not rows.size:
                continue
            # The sight line starts just in front of the tag: the wall it hangs on is behind.
            ox, oy = centre[0] + CLEARANCE * normal[0], centre[1] + CLEARANCE * normal[1]
            clear = ~dmap.crosses_obstacle(ox, oy, cx, cy)
            sees[rows[clear], cols[clear]] = True
        return sees

    def hint(self, poses, min_share):
        """The :class:`SearchHint` of a cloud, or None when it has none.

        Args:
            poses: ``(n, 3)`` hypotheses ``(x, y, yaw)`` in the map frame (amcl's particles;
                their density is their weight, as amcl resamples).
            min_share: the least share of agreeing hypotheses for a hint, in (0, 1].

        Hypotheses off the cells the robot fits in, without a path to a tag, or at a place
        that sees one already (the search spins where it stops, so such a place's tag would
        have been seen) have no vote. None when fewer than :data:`MIN_VOTERS` voted or no
        bearing has ``min_share`` of the votes.
        """
        poses = np.asarray(poses, dtype=float).reshape(-1, 3)
        poses = poses[np.all(np.isfinite(poses), axis=1)]
        if not poses.size:
            return None
        rows, cols, inside = self.distance_map.cells(poses[:, 0], poses[:, 1])
        rows, cols = rows[inside].astype(np.int64), cols[inside].astype(np.int64)
        yaws = poses[inside, 2]
        start = rows * self._width + cols
        length = self.lengths[start]
        vote = np.isfinite(length) & (length > 0.0)
        start, yaws, length = start[vote], yaws[vote], length[vote]
        if start.size < MIN_VOTERS:
            return None
        end = self._along(start)
        er, ec = np.divmod(end, self._width)
        sr, sc = np.divmod(start, self._width)
        ex, ey = self.distance_map.centres(er, ec)
        sx, sy = self.distance_map.centres(sr, sc)
        bearings = geometry.wrap_angle(np.arctan2(ey - sy, ex - sx) - yaws)
        bins = int(round(2.0 * math.pi / BIN))
        index = np.floor((bearings + math.pi) / BIN).astype(int) % bins
        counts = np.bincount(index, minlength=bins)
        runs = counts + np.roll(counts, 1) + np.roll(counts, -1)
        best = int(np.argmax(runs))
        share = float(runs[best]) / start.size
        if share < min_share:
            return None
        agree = np.isin(index, [(best - 1) % bins, best, (best + 1) % bins])
        bearing = math.atan2(float(np.sin(bearings[agree]).sum()),
                             float(np.cos(bearings[agree]).sum()))
        return SearchHint(bearing, share, int(start.size), float(np.median(length[agree])))

    def _along(self, nodes):
        """The cells ``lookahead`` m along each node's path (or its path's end, nearer)."""
        nodes = nodes.copy()
        travelled = np.zeros(nodes.size)
        res = self.distance_map.resolution
        for _ in range(int(math.ceil(self.lookahead / res)) + 1):
            nxt = self.next[nodes]
            going = (nxt >= 0) & (travelled < self.lookahead)
            if not going.any():
                break
            r0, c0 = np.divmod(nodes[going], self._width)
            r1, c1 = np.divmod(nxt[going], self._width)
            travelled[going] += np.hypot(r1 - r0, c1 - c0) * res
            nodes[going] = nxt[going]
        return nodes
