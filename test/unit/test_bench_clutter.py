"""Unmapped clutter for the benchmarks' simulated world (bench/clutter.py)."""
import math

import numpy as np
import pytest

from lost_and_found.bench import clutter
from lost_and_found.bench.clutter import ClutterError, add_clutter
from lost_and_found.bench.places import FreeSpace
from lost_and_found.sim.gridmap import GridMap

RES = 0.05


def two_rooms():
    """Two 5 x 5 m rooms joined by a 1 m door in the middle of their shared wall."""
    rows, cols = int(5.0 / RES) + 2, int(10.0 / RES) + 3
    occupied = np.zeros((rows, cols), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    wall = cols // 2
    occupied[:, wall] = True
    door = slice(rows // 2 - int(0.5 / RES), rows // 2 + int(0.5 / RES))
    occupied[door, wall] = False
    return GridMap.from_occupancy(occupied, RES)


def test_boxes_land_in_free_space_at_the_asked_density_and_the_map_stays_as_it_was():
    grid = two_rooms()
    before = grid.occupied.copy()
    region = FreeSpace(grid)
    world, boxes = add_clutter(grid, np.random.default_rng(4), 8.0)
    assert np.array_equal(grid.occupied, before)                     # a copy was cluttered
    assert len(boxes) == round(8.0 * region.area / 100.0)
    added = world.occupied & ~grid.occupied
    assert added.any() and not (added & ~grid.free).any()             # only on free cells
    for x0, y0, x1, y1 in boxes:
        assert 0.3 - 2 * RES <= x1 - x0 <= 0.7 + 2 * RES
        assert 0.3 - 2 * RES <= y1 - y0 <= 0.7 + 2 * RES
        assert world.occupied[int(round(0.5 * (y0 + y1) / RES)),
                              int(round(0.5 * (x0 + x1) / RES))]


def reaches_both_rooms(world):
    region = FreeSpace(world)
    return bool(np.any(region.xs < 4.5) and np.any(region.xs > 5.6))


def test_no_box_closes_the_door_between_the_rooms(monkeypatch):
    grid = two_rooms()
    seeds = range(12)
    assert all(reaches_both_rooms(add_clutter(grid, np.random.default_rng(s), 30.0)[0])
               for s in seeds)
    # Without the rule some of the same draws do close it: the check above means something.
    monkeypatch.setattr(clutter, 'SLACK', math.inf)
    assert not all(reaches_both_rooms(add_clutter(grid, np.random.default_rng(s), 30.0)[0])
                   for s in seeds)


def test_same_seed_same_clutter_and_zero_density_adds_nothing():
    grid = two_rooms()
    a, boxes_a = add_clutter(grid, np.random.default_rng(9), 6.0)
    b, boxes_b = add_clutter(grid, np.random.default_rng(9), 6.0)
    assert boxes_a == boxes_b and np.array_equal(a.occupied, b.occupied)
    none, boxes = add_clutter(grid, np.random.default_rng(9), 0.0)
    assert boxes == [] and np.array_equal(none.occupied, grid.occupied)


@pytest.mark.parametrize('density, sides, match', [
    (-1.0, (0.3, 0.7), 'density=-1.0'), (math.nan, (0.3, 0.7), 'density=nan'),
    (2.0, (0.0, 0.7), 'sides='), (2.0, (0.8, 0.7), 'sides=')])
def test_bad_clutter_is_refused_naming_the_value(density, sides, match):
    with pytest.raises(ClutterError, match=match):
        add_clutter(two_rooms(), np.random.default_rng(0), density, sides)
