"""A world that differs from the map the robot was given: unmapped clutter, and mapped
obstacles that are gone.

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

A map also goes stale the other way: a door that was shut when the building was mapped stands
open, a cabinet or a stack of boxes drawn on the map has been moved away. The laser then sees
*through* a mapped obstacle at the right pose, the one thing clutter never does (the lost
detector's through share, ``scan_check/through_lost``, reads exactly that as a wrong pose).
:func:`remove_obstacles` cuts such openings into a copy of a map: squares (sides drawn from
``widths``) centred on random cells of the mapped obstacles' faces toward the robot's free
region, as many as ``density`` per 100 m^2 of that region; their occupied cells become free. A
thin wall opens right through (a door), a thick one loses a bite. Nothing the robot could reach
becomes unreachable, so the poses the benchmarks draw stay where they were. The navigator
plans on the map with the openings shut (``nav_map_file`` of launch/sim.launch): move_base's
static layer holds the mapped walls, and its obstacle layer does not clear them.

Pure numpy/scipy: no ROS.
"""
import math
import numbers
import os

import numpy as np
from scipy import ndimage

from lost_and_found.bench.places import CLEARANCE, FreeSpace
from lost_and_found.sim.gridmap import GridMap, save_map

#: Box side lengths (m): a bin or a chair (0.3 m) to a small table or a person with a
#: trolley (0.7 m).
SIDES = (0.3, 0.7)
#: Mixed into the suite's seed for the clutter's own generator, so that the trials drawn from
#: the suite's generator are the same draws with and without clutter.
STREAM = 7919
#: The same for the openings of a stale map.
STALE_STREAM = 104729
#: Opening widths (m): a narrow door (0.6 m) to a double door or a cabinet (1.2 m).
WIDTHS = (0.6, 1.2)
#: Draws per box before giving up on it (its place kept cutting the free space apart).
TRIES = 20
#: The free region may lose this much more than the box and its clearance ring cover (a box
#: against a wall hides a little more of the space behind it from the clearance rule).
SLACK = 1.5


class ClutterError(ValueError):
    """A bad clutter or opening density or size range; the message names the value."""


def _check_density(what, density, sizes, size_name):
    """Raise ClutterError unless density is a finite number >= 0 and sizes two numbers with
    0 < sizes[0] <= sizes[1]; return the sizes as floats."""
    if not (isinstance(density, numbers.Real) and not isinstance(density, bool) and
            math.isfinite(density) and density >= 0):
        raise ClutterError('%s density=%r: must be a finite number >= 0 (per 100 m^2)'
                           % (what, density))
    try:
        low, high = (float(v) for v in sizes)
    except (TypeError, ValueError):
        low = high = math.nan
    if not (0 < low <= high and math.isfinite(high)):
        raise ClutterError('%s %s=%r: must be two numbers, 0 < least <= largest'
                           % (what, size_name, sizes))
    return low, high


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
    low, high = _check_density('clutter', density, sides, 'sides')
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


def remove_obstacles(grid, rng, density, widths=WIDTHS, clearance=CLEARANCE):
    """A copy of ``grid`` with openings cut into the mapped obstacles the robot can see.

    Args:
        grid: a :class:`~lost_and_found.sim.gridmap.GridMap` (not changed).
        rng: a ``numpy.random.Generator``.
        density: openings per 100 m^2 of the robot's free region (>= 0).
        widths: (least, largest) side of an opening's square (m), 0 < least <= largest.
        clearance: the robot's clearance from obstacles (as FreeSpace).

    Returns:
        ``(world, openings)``: the GridMap without the cut cells (they are free in it) and the
        openings, each ``(x_min, y_min, x_max, y_max, cells)``: the square in the grid's own axes
        (m from its origin) and how many occupied cells it removed (>= 1).

    Raises:
        ClutterError: a negative or non-finite density, bad widths.
    """
    low, high = _check_density('stale-map', density, widths, 'widths')
    region = FreeSpace(grid, clearance)
    count = int(round(density * region.area / 100.0))
    occupied, free = grid.occupied.copy(), grid.free.copy()
    if not count:
        return GridMap(occupied, free, grid.resolution, grid.origin), []
    # The free cells the robot can reach (its region's components, without the clearance) and
    # the obstacle cells that face them: what its laser can see of the map.
    # (The region's cells are free cells, so their labels are the components' own, never 0.)
    labels, _ = ndimage.label(grid.free, structure=np.ones((3, 3), dtype=bool))
    reached = np.isin(labels, np.unique(labels[region.mask]))
    faces = grid.occupied & ndimage.binary_dilation(reached, structure=np.ones((3, 3), bool))
    rows, cols = np.nonzero(faces)
    if not rows.size:
        return GridMap(occupied, free, grid.resolution, grid.origin), []
    res = grid.resolution
    openings = []
    for _ in range(count):
        pick = int(rng.integers(rows.size))
        side = max(1, int(round(rng.uniform(low, high) / res)))        # cells
        r0, c0 = rows[pick] - side // 2, cols[pick] - side // 2
        r0, r1 = max(r0, 0), min(r0 + side, grid.shape[0])
        c0, c1 = max(c0, 0), min(c0 + side, grid.shape[1])
        cut = occupied[r0:r1, c0:c1]
        cells = int(cut.sum())
        if not cells:       # an earlier opening already took this one's cells
            continue
        free[r0:r1, c0:c1] |= cut
        cut[...] = False
        openings.append((float(c0 * res), float(r0 * res), float(c1 * res), float(r1 * res),
                         cells))
    return GridMap(occupied, free, res, grid.origin), openings


def world_for(ctx, grid):
    """The world a suite's simulator runs in: ``grid`` itself, or with ``ctx.args.stale``
    and/or ``ctx.args.clutter`` a copy with openings cut and/or boxes added, written next to
    the suite's logs.

    Returns:
        ``(world map YAML, navigation map YAML, places grid, changes)``. The navigation map
        is what sim_navigator plans on, as move_base's costmap would hold it: the map's
        obstacles (its static layer never clears a mapped wall, so an opening stays shut to
        the planner) and the world's unmapped ones (its obstacle layer marks what the laser
        sees). The places grid is where the suite may draw poses: free in both the map and
        the world (the map itself with openings only, the world with clutter only); it is
        the navigation map's grid. ``changes`` is ``{'clutter': {'density', 'boxes'},
        'stale': {'density', 'openings'}}`` (counts).
    """
    clutter_density = getattr(ctx.args, 'clutter', 0.0) or 0.0
    stale_density = getattr(ctx.args, 'stale', 0.0) or 0.0
    changes = {'clutter': {'density': clutter_density, 'boxes': 0},
               'stale': {'density': stale_density, 'openings': 0}}
    if not (clutter_density or stale_density):
        return ctx.args.map, ctx.args.map, grid, changes
    world = grid
    if stale_density:
        world, openings = remove_obstacles(
            grid, np.random.default_rng([ctx.args.seed, STALE_STREAM]), stale_density)
        changes['stale']['openings'] = len(openings)
        ctx.progress('stale map: %d opening%s (%g per 100 m^2 of free space) cut into the '
                     'mapped obstacles' % (len(openings), '' if len(openings) == 1 else 's',
                                           stale_density))
    if clutter_density:
        world, boxes = add_clutter(world, np.random.default_rng([ctx.args.seed, STREAM]),
                                   clutter_density)
        changes['clutter']['boxes'] = len(boxes)
        ctx.progress('clutter: %d boxes (%g per 100 m^2 of free space)' % (
            len(boxes), clutter_density))
    path = os.path.join(ctx.log_dir, 'world.yaml')
    save_map(world, path)
    ctx.progress('the simulated world: %s' % path)
    places = GridMap(grid.occupied | world.occupied, grid.free & world.free, grid.resolution,
                     grid.origin)
    nav_path = path
    if stale_density:
        nav_path = os.path.join(ctx.log_dir, 'navigation.yaml')
        save_map(places, nav_path)
        ctx.progress('the navigator\'s map (the openings shut): %s' % nav_path)
    return path, nav_path, places, changes


def world_changes(changes):
    """How a run's simulated world differed from its map, for a table's first line: a
    suite's summary, or the ``changes`` of :func:`world_for` (empty when none)."""
    added, cut = changes.get('clutter') or {}, changes.get('stale') or {}
    parts = []
    if added.get('boxes'):
        parts.append('among %d unmapped boxes (%g per 100 m^2: --clutter)'
                     % (added['boxes'], added['density']))
    if cut.get('density'):
        openings = cut.get('openings', 0)
        parts.append('with %d opening%s in mapped obstacles (%g per 100 m^2: --stale)'
                     % (openings, '' if openings == 1 else 's', cut['density']))
    return ''.join(', ' + part for part in parts)
