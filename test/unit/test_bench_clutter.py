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


def test_openings_cut_only_mapped_obstacles_the_robot_faces_and_the_map_stays_as_it_was():
    grid = two_rooms()
    before = grid.occupied.copy()
    region = FreeSpace(grid)
    world, openings = clutter.remove_obstacles(grid, np.random.default_rng(3), 6.0)
    assert np.array_equal(grid.occupied, before)                     # a copy was cut
    assert 0 < len(openings) <= round(6.0 * region.area / 100.0)
    removed = grid.occupied & ~world.occupied
    assert removed.any() and not (world.occupied & ~grid.occupied).any()
    assert world.free[removed].all()                                  # cut cells are free
    assert sum(o[4] for o in openings) == removed.sum()
    for x0, y0, x1, y1, cells in openings:
        assert cells >= 1
        # A square of 0.6-1.2 m to the cell (clipped only at the grid's edges).
        for low, high, size in ((x0, x1, grid.shape[1] * RES), (y0, y1, grid.shape[0] * RES)):
            assert 0.0 <= low < high <= size + 1e-9
            assert high - low <= 1.2 + 1e-9
            assert high - low >= 0.6 - 1e-9 or low == 0.0 or high >= size - 1e-9
    # Whatever the robot could reach it still can.
    assert not (region.mask & ~FreeSpace(world).mask).any()


def test_only_obstacles_facing_the_robot_s_region_are_cut():
    # A room, a block 3.65 m thick with a free pocket inside, and a smaller room beyond it:
    # the robot's region is the larger room. An opening is at most 24 cells (1.2 m) centred
    # on a cell of a face the robot can see, so it reaches 12 cells into the block, never the
    # pocket's walls nor the far room's.
    rows, cols = 80, 240
    occupied = np.zeros((rows, cols), dtype=bool)
    occupied[:3, :] = occupied[-3:, :] = occupied[:, :3] = occupied[:, -3:] = True
    occupied[:, 97:170] = True
    occupied[30:50, 120:135] = False                  # the pocket
    grid = GridMap.from_occupancy(occupied, RES)
    world, openings = clutter.remove_obstacles(grid, np.random.default_rng(1), 60.0)
    removed = grid.occupied & ~world.occupied
    assert len(openings) >= 5 and removed[:, 97:109].any()
    assert not removed[:, 109:].any()


def test_an_opening_in_a_thin_wall_lets_the_laser_through_where_the_map_has_a_wall():
    from lost_and_found.sim.laser import cast_rays
    grid = two_rooms()
    wall_x = (grid.shape[1] // 2 + 0.5) * RES
    world, openings = clutter.remove_obstacles(grid, np.random.default_rng(0), 40.0)
    # Openings in the shared wall away from the door: a beam across it hits the wall on the
    # map and the far room's wall in the world.
    y_door = 0.5 * grid.shape[0] * RES
    cut = [(0.5 * (y0 + y1)) for x0, y0, x1, y1, _ in openings
           if x0 < wall_x < x1 and abs(0.5 * (y0 + y1) - y_door) > 0.9 and
           0.4 < 0.5 * (y0 + y1) < 4.6]
    assert cut
    y = cut[0]
    on_map = cast_rays(grid, 3.0, y, np.array([0.0]), 10.0)[0]
    in_world = cast_rays(world, 3.0, y, np.array([0.0]), 10.0)[0]
    assert on_map == pytest.approx(wall_x - 0.5 * RES - 3.0, abs=2 * RES)
    assert in_world > on_map + 4.0


def test_same_seed_same_openings_and_zero_density_cuts_nothing():
    grid = two_rooms()
    a, openings_a = clutter.remove_obstacles(grid, np.random.default_rng(5), 4.0)
    b, openings_b = clutter.remove_obstacles(grid, np.random.default_rng(5), 4.0)
    assert openings_a == openings_b and np.array_equal(a.occupied, b.occupied)
    none, openings = clutter.remove_obstacles(grid, np.random.default_rng(5), 0.0)
    assert openings == [] and np.array_equal(none.occupied, grid.occupied)


@pytest.mark.parametrize('density, widths, match', [
    (-2.0, (0.6, 1.2), 'stale-map density=-2.0'), (math.inf, (0.6, 1.2), 'density=inf'),
    (True, (0.6, 1.2), 'density=True'), (2.0, (0.0, 1.2), 'widths='),
    (2.0, (1.3, 1.2), 'widths='), (2.0, (0.6,), 'widths='), (2.0, ('a', 1.0), 'widths=')])
def test_bad_openings_are_refused_naming_the_value(density, widths, match):
    with pytest.raises(ClutterError, match=match):
        clutter.remove_obstacles(two_rooms(), np.random.default_rng(0), density, widths)


def test_a_numpy_density_is_a_number():
    world, openings = clutter.remove_obstacles(two_rooms(), np.random.default_rng(0),
                                               np.float64(4.0))
    assert openings


def _ctx(tmp_path, grid, clutter_density=0.0, stale=0.0):
    from types import SimpleNamespace
    from lost_and_found.sim.gridmap import save_map
    path = str(tmp_path / 'map.yaml')
    save_map(grid, path)
    args = SimpleNamespace(map=path, seed=7, clutter=clutter_density, stale=stale)
    return SimpleNamespace(args=args, log_dir=str(tmp_path), progress=lambda _text: None)


def test_world_for_writes_the_changed_world_and_draws_poses_free_in_both(tmp_path):
    from lost_and_found.sim.gridmap import load_map
    grid = two_rooms()
    path, nav, places, changes = clutter.world_for(_ctx(tmp_path, grid), grid)
    assert path == nav == str(tmp_path / 'map.yaml') and places is grid
    assert changes == {'clutter': {'density': 0.0, 'boxes': 0},
                       'stale': {'density': 0.0, 'openings': 0}}
    # Openings only: poses are drawn on the map itself (the world has more free space), and
    # the navigator plans on the map too (its static layer keeps the mapped walls).
    path, nav, places, changes = clutter.world_for(_ctx(tmp_path, grid, stale=5.0), grid)
    world, navigation = load_map(path), load_map(nav)
    assert path == str(tmp_path / 'world.yaml') and changes['stale']['openings'] > 0
    assert (grid.occupied & ~world.occupied).any()
    assert np.array_equal(places.occupied, grid.occupied)
    assert np.array_equal(places.free, grid.free)
    assert np.array_equal(navigation.occupied, grid.occupied)
    # Clutter only: the places are the cluttered world, the same draws as before openings
    # existed (the clutter's own stream of the suite's seed), and the navigator's map.
    path, nav, places, changes = clutter.world_for(_ctx(tmp_path, grid, 8.0), grid)
    world = load_map(path)
    assert nav == path and changes['clutter']['boxes'] > 0
    assert changes['stale']['openings'] == 0
    alone, _ = add_clutter(grid, np.random.default_rng([7, clutter.STREAM]), 8.0)
    assert np.array_equal(places.occupied, alone.occupied)
    assert np.array_equal(places.free, alone.free)
    assert np.array_equal(world.occupied, alone.occupied)
    # Both: boxes stand in the world, the places and the navigator's map; openings only in
    # the world.
    path, nav, places, changes = clutter.world_for(_ctx(tmp_path, grid, 8.0, 5.0), grid)
    world, navigation = load_map(path), load_map(nav)
    assert changes['clutter']['boxes'] > 0 and changes['stale']['openings'] > 0
    boxes = world.occupied & ~grid.occupied
    assert boxes.any() and (grid.occupied & ~world.occupied).any()
    assert places.occupied[boxes].all() and not places.free[boxes].any()
    assert np.array_equal(places.occupied, grid.occupied | world.occupied)
    assert np.array_equal(places.free, grid.free & world.free)
    assert np.array_equal(navigation.occupied, places.occupied)


def test_the_tables_say_how_the_world_differed_and_the_cli_checks_the_densities():
    from lost_and_found.bench import cli
    assert clutter.world_changes({}) == ''
    text = clutter.world_changes({'clutter': {'density': 8.0, 'boxes': 12},
                                  'stale': {'density': 2.0, 'openings': 3}})
    assert text == (', among 12 unmapped boxes (8 per 100 m^2: --clutter), with 3 openings '
                    'in mapped obstacles (2 per 100 m^2: --stale)')
    assert cli.parser().parse_args(['detection', '--stale', '2']).stale == 2.0
    with pytest.raises(SystemExit, match='--stale -1.0'):
        cli.resolve_inputs(cli.parser().parse_args(['detection', '--stale', '-1']))
    assert cli.resolve_inputs(cli.parser().parse_args(['recovery', '--clutter', '8'])).clutter \
        == 8.0
    with pytest.raises(SystemExit, match='--stale is for the detection and recovery suites'):
        cli.resolve_inputs(cli.parser().parse_args(['compute', '--stale', '1']))
    one = clutter.world_changes({'stale': {'density': 0.5, 'openings': 1}})
    assert one == ', with 1 opening in mapped obstacles (0.5 per 100 m^2: --stale)'
    none = clutter.world_changes({'stale': {'density': 0.1, 'openings': 0}})
    assert none == ', with 0 openings in mapped obstacles (0.1 per 100 m^2: --stale)'
