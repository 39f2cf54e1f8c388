"""Unmapped clutter: a world that holds more than the map the robot was given.

A real building is never its map: chairs, bins, boxes and people stand where the map says free
space. The laser sees them, amcl's map and the lost detector's map do not. :func:`add_clutter`
puts such objects into a copy of a map: axis-aligned boxes (sides drawn from ``sides``) at
random places of the robot's free space, as many as ``density`` per 100 m^2 of it. sim_world
runs on the cluttered copy (``world_map_file`` of launch/sim.launch), the localizer and the
lost detector on the original; the navigator gets the cluttered copy too, standing in for
move_base's obstacle layer (it marks what the laser sees and plans around it).

A box that would cut the free space apart (close a door or a corridor) is not placed: after
every box the robot's free region (:class:`~lost_and_found.bench.places.FreeSpace`) may lose
only about what the box itself and the clearance around it cover. So every pose the
benchmarks draw from the cluttered world's free space stays reachable.

Pure numpy/scipy: no ROS.
"""
import math
import os

import numpy as np

from lost_and_found.bench.places import CLEARANCE, FreeSpace
from lost_and_found.sim.gridmap import GridMap, save_map

#: Box side lengths (m): a bin or a chair (0.3 m) to a small table or a person with a
#: trolley (0.7 m).
SIDES = (0.3, 0.7)
#: Mixed into the suite's seed for the clutter's own generator, so that the trials drawn from
#: the suite's generator are the same draws with and without clutter.
STREAM = 7919
#: Draws per box before giving up on it (its place kept cutting the free space apart).
TRIES = 20
#: The free region may lose this much more than the box and its clearance ring cover (a box
#: against a wall hides a little more of the space behind it from the clearance rule).
SLACK = 1.5


class ClutterError(ValueError):
    """A bad clutter density or side range; the message names the value."""


def add_clutter(grid, rng, density, sides=SIDES, clearance=CLEARANCE, tries=TRIES):
    """A copy of ``grid`` with random boxes in its free space.

    Args:
        grid: a :class:`~lost_and_found.sim.gridmap.GridMap` (not changed).
        rng: a ``numpy.random.Generator``.
        density: boxes per 100 m^2 of the robot's free region (>= 0).
        sides: (least, largest) box side (m), 0 < least <= largest.
        clearance: the robot's clearance from obstacles (as FreeSpace).
        tries: places tried per box before it is skipped.

    Returns:
        ``(world, boxes)``: the cluttered GridMap and the boxes placed, each
        ``(x_min, y_min, x_max, y_max)`` in the grid's own axes (m from its origin).

    Raises:
        ClutterError: a negative or non-finite density, bad sides.
    """
    if not (isinstance(density, (int, float)) and math.isfinite(density) and density >= 0):
        raise ClutterError('clutter density=%r: must be a finite number >= 0 (boxes per '
                           '100 m^2)' % (density,))
    low, high = (float(v) for v in sides)
    if not (0 < low <= high and math.isfinite(high)):
        raise ClutterError('clutter sides=%r: must be 0 < least <= largest' % (sides,))
    occupied = grid.occupied.copy()
    free = grid.free.copy()
    region = FreeSpace(grid, clearance)
    count = int(round(density * region.area / 100.0))
    area = region.area
    res = grid.resolution
    boxes = []
    for _ in range(count):
        for _ in range(tries):
            x, y, _yaw = region.sample(rng)
            w, h = rng.uniform(low, high, size=2)
            gx, gy = (float(v) for v in grid.to_grid(x, y))
            c0, c1 = int(round(gx - 0.5 * w / res)), int(round(gx + 0.5 * w / res))
            r0, r1 = int(round(gy - 0.5 * h / res)), int(round(gy + 0.5 * h / res))
            c0, r0 = max(c0, 0), max(r0, 0)
            trial_occupied = occupied.copy()
            trial_occupied[r0:r1, c0:c1] = True
            world = GridMap(trial_occupied, free, res, grid.origin)
            try:
                after = FreeSpace(world, clearance)
            except ValueError:
                continue
            ring = (w + 2 * clearance + 2 * res) * (h + 2 * clearance + 2 * res)
            if area - after.area <= SLACK * ring:
                occupied, region, area = trial_occupied, after, after.area
                boxes.append((c0 * res, r0 * res, c1 * res, r1 * res))
                break
    return GridMap(occupied, free, res, grid.origin), boxes


def world_for(ctx, grid):
    """The world a suite's simulator runs in: ``grid`` itself, or with ``ctx.args.clutter``
    a cluttered copy written next to the suite's logs.

    Returns:
        ``(world grid, world map YAML path, boxes)``.
    """
    density = getattr(ctx.args, 'clutter', 0.0) or 0.0
    if not density:
        return grid, ctx.args.map, []
    world, boxes = add_clutter(grid, np.random.default_rng([ctx.args.seed, STREAM]), density)
    path = os.path.join(ctx.log_dir, 'world.yaml')
    save_map(world, path)
    ctx.progress('clutter: %d boxes (%g per 100 m^2 of free space) in %s' % (
        len(boxes), density, path))
    return world, path, boxes
