"""The sim_navigator's global planner: shortest safe paths on an inflated occupancy grid.

:class:`Planner` turns a :class:`~lost_and_found.sim.gridmap.GridMap` into a graph once:

1. *Inflate.* Every cell closer than ``inflation_radius`` (robot radius + margin) to an obstacle
   or to the map's edge is not traversable, read from the Euclidean distance field. Unknown
   cells are obstacles too unless ``unknown_is_free`` (like move_base with
   ``track_unknown_space``, a robot should not plan through space nobody has seen).
2. *Downsample* to ``planning_resolution`` (0.1 m by default): a coarse cell keeps the smallest
   clearance of the fine cells it covers, so it is never more optimistic than the map.
3. *Cost.* Each traversable cell costs ``1 + wall_cost_weight * f`` per metre, where ``f`` falls
   linearly from 1 at the inflation edge to 0 at ``wall_cost_distance`` beyond it: like the
   gradient of move_base's inflation layer, paths keep to the middle of corridors and doors
   when that costs little extra length.
4. *Graph.* 8-connected, no corner cutting (a diagonal step needs both side cells traversable).

:meth:`Planner.plan` runs scipy's Dijkstra (C code) from the *goal* over the whole graph and
caches the predecessor tree per goal cell, so re-planning towards the same goal from a new start
(move_base's periodic re-plan) is only a walk down the tree. The graph is symmetric, so a tree
rooted at the goal gives shortest paths from every start.

Pure numpy/scipy: no ROS, no clock.
"""
import dataclasses
import logging
import math

import numpy as np

from lost_and_found.core.config import Checker
from lost_and_found.sim.gridmap import edge_distance

_log = logging.getLogger('rosout')

#: The 8 neighbour offsets (drow, dcol).
_OFFSETS = ((0, 1), (1, 0), (0, -1), (-1, 0), (1, 1), (1, -1), (-1, 1), (-1, -1))


@dataclasses.dataclass(frozen=True)
class PlannerConfig:
    """Parameters of the global planner (SI units).

    Attributes:
        inflation_radius: cells closer than this (m) to an obstacle are not traversable: the
            TurtleBot2's radius 0.18 m plus a 0.05 m margin for pose error and control slack.
        planning_resolution: cell size (m) of the planning grid; 0 plans at the map's own
            resolution. Values below the map resolution mean the map resolution.
        unknown_is_free: plan through unknown cells (and do not inflate them).
        wall_cost_weight: extra cost per metre next to the inflation edge (0 = shortest path).
        wall_cost_distance: distance (m) beyond the inflation edge over which the extra cost
            falls to zero.
        start_search_radius: a start inside the inflation plans from the nearest traversable
            cell with a path to the goal within this distance (m); farther away there is no
            path (unless the start is in unknown space: ``unknown_escape``).
        unknown_escape: a start in unknown space (``unknown_is_free`` false) with no such
            cell within ``start_search_radius`` leaves by the shortest way through unknown
            cells clear of walls (the inflation from occupied cells and the map's edge only)
            to the nearest such cell, if that way is at most this long (m);
            0: no way out. move_base's global planners plan through unknown space by default
            (navfn's and global_planner's ``allow_unknown``), so a robot that a wrong estimate
            or the wander took into unmapped space is not stuck there.
    """

    inflation_radius: float = 0.23
    planning_resolution: float = 0.1
    unknown_is_free: bool = False
    wall_cost_weight: float = 2.0
    wall_cost_distance: float = 0.5
    start_search_radius: float = 0.5
    unknown_escape: float = 10.0

    def validate(self):
        """Raise ConfigError naming every bad value."""
        check = Checker(self)
        check.non_negative('inflation_radius')
        check.non_negative('planning_resolution')
        check.require(isinstance(self.unknown_is_free, bool), 'unknown_is_free',
                      'be true or false')
        check.non_negative('wall_cost_weight')
        check.positive('wall_cost_distance')
        check.non_negative('start_search_radius')
        check.non_negative('unknown_escape')
        check.done()


def _block_min(values, factor, fill):
    """Minimum over ``factor`` x ``factor`` blocks, padding the edges with ``fill``."""
    if factor == 1:
        return values.copy()
    rows, cols = values.shape
    padded = np.full((-(-rows // factor) * factor, -(-cols // factor) * factor), fill,
                     dtype=values.dtype)
    padded[:rows, :cols] = values
    r, c = padded.shape
    return padded.reshape(r // factor, factor, c // factor, factor).min(axis=(1, 3))


def _grid_graph(cells, cost, resolution):
    """The 8-connected graph over the True cells of ``cells`` (rows, cols), no corner cutting
    (a diagonal step needs both side cells True too): a sparse matrix over the cells' flat
    indices whose weight is the step's length (m) times the mean ``cost`` of its two cells."""
    from scipy.sparse import csr_matrix
    rows, cols = cells.shape
    ids = np.arange(rows * cols).reshape(rows, cols)
    src, dst, weight = [], [], []
    for dr, dc in _OFFSETS:
        # Slices of the cells that have a neighbour at (dr, dc) and of those neighbours.
        a = (slice(max(0, -dr), rows - max(0, dr)), slice(max(0, -dc), cols - max(0, dc)))
        b = (slice(max(0, dr), rows + min(0, dr)), slice(max(0, dc), cols + min(0, dc)))
        ok = cells[a] & cells[b]
        if dr and dc:   # no corner cutting: both side cells must be True too
            ok &= cells[b[0], a[1]] & cells[a[0], b[1]]
        step = math.hypot(dr, dc) * resolution
        src.append(ids[a][ok])
        dst.append(ids[b][ok])
        weight.append(step * 0.5 * (cost[a][ok] + cost[b][ok]))
    return csr_matrix((np.concatenate(weight), (np.concatenate(src), np.concatenate(dst))),
                      shape=(rows * cols, rows * cols))


class Planner:
    """Shortest safe paths on one static map (see the module docstring).

    Args:
        grid: the map (a GridMap).
        config: a PlannerConfig (validated here).

    Attributes:
        grid: the map.
        config: the config.
        factor: fine map cells per planning cell along each axis.
        resolution: planning cell size (m).
        clearance: (rows, cols) planning-grid distance (m) to the nearest obstacle.
        traversable: (rows, cols) bool, the planning cells the robot centre may occupy.
    """

    def __init__(self, grid, config=PlannerConfig()):
        """Inflate, downsample and build the graph (once: the map is static)."""
        config.validate()
        self.grid = grid
        self.config = config
        self.factor = max(1, int(round(config.planning_resolution / grid.resolution)))
        self.resolution = grid.resolution * self.factor

        obstacles = grid.occupied.copy()
        if not config.unknown_is_free:
            obstacles |= grid.unknown
        # The map's edge is a wall (the robot cannot leave its map): no path runs along it
        # closer than the inflation radius.
        if not obstacles[~grid.occupied].any():
            fine_clearance = grid.distance_field(edge=True)     # cached by the map, shared
        else:
            fine_clearance = edge_distance(obstacles, grid.resolution)
        # A coarse cell is only as good as its worst fine cell; cells padded past the map edge
        # count as obstacles so that the robot never plans off the map.
        self.clearance = _block_min(fine_clearance, self.factor, 0.0)
        clear = _block_min(~obstacles, self.factor, False)
        self.traversable = clear & (self.clearance >= config.inflation_radius)

        # Per-metre cost of every cell: 1 + the wall-proximity gradient.
        beyond = np.nan_to_num(self.clearance - config.inflation_radius, posinf=1e9)
        falloff = np.clip(1.0 - beyond / config.wall_cost_distance, 0.0, 1.0)
        self.cost = 1.0 + config.wall_cost_weight * falloff

        self._graph = _grid_graph(self.traversable, self.cost, self.resolution)
        self._tree_goal = None
        self._tree = None
        self._escape_graph = None   # the graph with unknown counted free, built on first escape

    @property
    def shape(self):
        """(rows, cols) of the planning grid."""
        return self.traversable.shape

    def cell_of(self, x, y):
        """(row, col) of the planning cell containing map point (x, y) (may be out of bounds)."""
        gx, gy = self.grid.to_grid(x, y)
        return int(math.floor(gy / self.factor)), int(math.floor(gx / self.factor))

    def cell_center(self, row, col):
        """Map-frame (x, y) of the centre of planning cell (row, col); vectorised."""
        half = self.factor / 2.0
        x, y = self.grid.to_world(np.asarray(col) * self.factor + half,
                                  np.asarray(row) * self.factor + half)
        return x, y

    def _inside(self, row, col):
        return 0 <= row < self.shape[0] and 0 <= col < self.shape[1]

    def is_traversable(self, x, y):
        """True when the robot centre may be at map point (x, y) (finite, on the map, clear)."""
        if not (math.isfinite(x) and math.isfinite(y)):
            return False
        row, col = self.cell_of(x, y)
        return self._inside(row, col) and bool(self.traversable[row, col])

    def nearest_traversable(self, x, y, radius, among=None):
        """The (row, col) of the traversable cell whose centre is nearest (x, y) within radius;
        with ``among`` (a bool array shaped like :attr:`traversable`), of those cells only.

        Returns None when there is none.
        """
        if not (math.isfinite(x) and math.isfinite(y)):
            return None
        row, col = self.cell_of(x, y)
        reach = int(math.ceil(radius / self.resolution)) + 1
        r0, r1 = max(0, row - reach), min(self.shape[0], row + reach + 1)
        c0, c1 = max(0, col - reach), min(self.shape[1], col + reach + 1)
        if r0 >= r1 or c0 >= c1:
            return None
        cells = self.traversable if among is None else among
        rows, cols = np.nonzero(cells[r0:r1, c0:c1])
        if rows.size == 0:
            return None
        rows, cols = rows + r0, cols + c0
        cx, cy = self.cell_center(rows, cols)
        distance = np.hypot(cx - x, cy - y)
        best = int(np.argmin(distance))
        if distance[best] > radius:
            return None
        return int(rows[best]), int(cols[best])

    def _escape(self, x, y, among):
        """The planning cells from (x, y), in unknown space, to the nearest cell of ``among``
        (traversable cells, a bool array shaped like :attr:`traversable`) by the shortest way
        through cells clear of walls with unknown counted free (see ``unknown_escape``), that
        cell last; None when there is no such way, or it is longer than ``unknown_escape``."""
        from scipy.sparse.csgraph import dijkstra
        reach = self.config.unknown_escape
        if reach <= 0.0 or self.config.unknown_is_free or not self.grid.unknown.any():
            return None
        if self._escape_graph is None:
            fine = self.grid.distance_field(edge=True)      # occupied cells and the edge only
            passable = _block_min(fine, self.factor, 0.0) >= self.config.inflation_radius
            self._escape_graph = (passable, _grid_graph(passable, np.ones(passable.shape),
                                                        self.resolution))
        passable, graph = self._escape_graph
        start = self.cell_of(x, y)
        if not (self._inside(*start) and passable[start]):
            return None
        cols = self.shape[1]
        distance, tree = dijkstra(graph, directed=True, indices=start[0] * cols + start[1],
                                  return_predecessors=True, limit=reach)
        distance = np.where(among.ravel(), distance, np.inf)
        node = int(np.argmin(distance))
        if not np.isfinite(distance[node]):
            return None
        chain = [node]
        while tree[node] >= 0:
            node = int(tree[node])
            chain.append(node)
        return [divmod(n, cols) for n in reversed(chain)]

    def _reaching(self, goal_id):
        """The traversable cells with a path to node ``goal_id`` (bool, shaped like
        :attr:`traversable`)."""
        reaching = self._tree_to(goal_id).reshape(self.shape) >= 0
        reaching.flat[goal_id] = True
        return reaching

    def _tree_to(self, goal_id):
        """Predecessors of the shortest-path tree rooted at node ``goal_id`` (cached)."""
        if self._tree_goal != goal_id:
            from scipy.sparse.csgraph import dijkstra
            _, self._tree = dijkstra(self._graph, directed=True, indices=goal_id,
                                     return_predecessors=True)
            self._tree_goal = goal_id
        return self._tree

    def plan(self, start, goal):
        """A path from ``start`` to ``goal``, both map-frame (x, y).

        A start inside the inflation (next to a wall, or a wrong pose estimate) plans from the
        nearest traversable cell within ``start_search_radius`` that has a path to the goal
        (not from a nearer pocket cut off by the inflation, as inside a ring of clutter,
        where a start at the ring's edge would find no path however it is asked); a start
        deeper in unknown space first leaves it (``unknown_escape``). A goal inside the
        inflation, in unknown space or off the map has no path.

        Returns:
            A list of map-frame (x, y) waypoints beginning at ``start`` and ending at ``goal``,
            roughly one per planning cell, or None when no path exists.
        """
        sx, sy = float(start[0]), float(start[1])
        gx, gy = float(goal[0]), float(goal[1])
        if not all(math.isfinite(v) for v in (sx, sy, gx, gy)):
            _log.warning('planner: non-finite start %r or goal %r', start, goal)
            return None
        if not self.is_traversable(gx, gy):
            return None
        start_cell = self.cell_of(sx, sy)
        moved = not (self._inside(*start_cell) and self.traversable[start_cell])
        cols = self.shape[1]
        goal_row, goal_col = self.cell_of(gx, gy)
        goal_id = goal_row * cols + goal_col
        tree = self._tree_to(goal_id)
        escape = []
        if moved:
            reaching = self._reaching(goal_id)
            start_cell = self.nearest_traversable(sx, sy, self.config.start_search_radius,
                                                  among=reaching)
            if start_cell is None:
                escape = self._escape(sx, sy, reaching)
                if escape is None:
                    return None
                start_cell = escape.pop()
        node = start_cell[0] * cols + start_cell[1]
        chain = [node]
        while node != goal_id:
            node = int(tree[node])
            if node < 0:       # the start is not connected to the goal
                return None
            chain.append(node)
        rows, cols_ = np.divmod(np.asarray(chain), cols)
        if escape:      # the way out of unknown space, from the start's own cell
            rows = np.concatenate([[r for r, _c in escape[1:]], rows])
            cols_ = np.concatenate([[c for _r, c in escape[1:]], cols_])
        xs, ys = self.cell_center(rows, cols_)
        # The exact start and goal replace their cells' centres; a start moved out of the
        # inflation first heads for the centre of the free cell it was moved to.
        centres = list(zip(xs.tolist(), ys.tolist()))[:-1]
        if not moved:
            centres = centres[1:]
        return [(sx, sy)] + centres + [(gx, gy)]


def path_length(path):
    """Length (m) of a polyline given as a sequence of (x, y)."""
    if path is None or len(path) < 2:
        return 0.0
    points = np.asarray(path, dtype=float)
    return float(np.hypot(*np.diff(points, axis=0).T).sum())
