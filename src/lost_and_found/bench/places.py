"""Where a benchmark may put the robot: the free space of any map_server map.

The robot's reachable free space is the largest 8-connected region of free cells whose
centres are at least ``clearance`` from every cell that is not free (occupied or unknown: the
navigator, like move_base, inflates unknown space as an obstacle) and from the map's edge (the
simulated robot cannot leave its map); every pose a benchmark
starts from, drives to or kidnaps to is drawn from it, so that the navigator can plan
between any two of them. Nothing here needs a scenario file: a map it has never seen is fine.
"""
import math

import numpy as np
from scipy import ndimage

from lost_and_found.sim.gridmap import edge_distance

#: Default least distance (m) from any obstacle: robot radius 0.18 m + the navigator's
#: footprint margin and some room to turn.
CLEARANCE = 0.35


class PlacesError(ValueError):
    """The map has no usable free space (the message says what was looked for)."""


class FreeSpace:
    """The largest connected free region of a map, with clearance.

    Args:
        grid: a :class:`lost_and_found.sim.gridmap.GridMap`.
        clearance: least distance (m) from any occupied or unknown cell.

    Raises:
        PlacesError: when no cell has that clearance.
    """

    def __init__(self, grid, clearance=CLEARANCE):
        """Label the free cells and keep the largest region."""
        self.grid = grid
        self.clearance = float(clearance)
        # Distance from every non-free cell and from the map's edge (a wall to the simulated
        # robot), between cell centres: half a cell more keeps the boundary clear.
        distance = edge_distance(~grid.free, grid.resolution)
        ok = grid.free & (distance >= clearance + 0.5 * grid.resolution)
        labels, count = ndimage.label(ok, structure=np.ones((3, 3), dtype=bool))
        if count == 0:
            raise PlacesError('no free cell is %.2f m from every obstacle and unknown cell'
                              % clearance)
        sizes = np.bincount(labels.ravel())
        sizes[0] = 0
        self.mask = labels == int(np.argmax(sizes))
        rows, cols = np.nonzero(self.mask)
        self.xs, self.ys = grid.cell_center(rows, cols)

    @property
    def area(self):
        """Area of the region (m^2)."""
        return float(self.xs.size) * self.grid.resolution ** 2

    def contains(self, x, y):
        """True when ``(x, y)`` lies in the region."""
        rows, cols = self.grid.cell_index(np.array([x]), np.array([y]))
        if not self.grid.in_bounds(rows, cols)[0]:
            return False
        return bool(self.mask[rows[0], cols[0]])

    def sample(self, rng, near=None, min_distance=0.0, max_distance=math.inf):
        """A random pose of the region, uniform over its cells, with a uniform yaw.

        Args:
            rng: a ``numpy.random.Generator``.
            near: ``(x, y)``; the pose's distance to it must lie in
                ``[min_distance, max_distance]``.

        Returns:
            ``(x, y, yaw)``.

        Raises:
            PlacesError: when no cell is within the distance band.
        """
        xs, ys = self.xs, self.ys
        if near is not None:
            d = np.hypot(xs - near[0], ys - near[1])
            keep = (d >= min_distance) & (d <= max_distance)
            xs, ys = xs[keep], ys[keep]
        if xs.size == 0:
            raise PlacesError('no free cell %.1f-%.1f m from (%.2f, %.2f)'
                              % (min_distance, max_distance, near[0], near[1]))
        n = int(rng.integers(xs.size))
        return float(xs[n]), float(ys[n]), float(rng.uniform(-math.pi, math.pi))

    def farthest(self, near):
        """The largest distance (m) from ``(x, y)`` to a cell of the region."""
        return float(np.max(np.hypot(self.xs - near[0], self.ys - near[1])))

    def band(self, near, min_distance, max_distance):
        """``(min_distance, max_distance)``, with the minimum lowered to half the farthest
        distance when no cell of the region is that far from ``near`` (a small map: the
        nearest the band can get to what was asked while still drawing from a range)."""
        far = self.farthest(near)
        return (min_distance if far >= min_distance else 0.5 * far), max_distance

    def sample_at_distance(self, rng, near, distance, tolerance=0.25):
        """A random pose whose distance to ``near`` is ``distance`` +- ``tolerance`` (m).

        When the region has no cell in that ring (a small map), the ring widens step by step
        towards the nearest distances that exist rather than failing.
        """
        widen = tolerance
        while True:
            try:
                return self.sample(rng, near, max(0.0, distance - widen), distance + widen)
            except PlacesError:
                widen *= 2.0
                if widen > 1e4:
                    raise
