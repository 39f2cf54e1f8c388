"""sim/planner.py: inflated-grid Dijkstra plans for the sim_navigator."""
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lost_and_found.core.config import ConfigError
from lost_and_found.sim.gridmap import GridMap, load_map
from lost_and_found.sim.planner import Planner, PlannerConfig, path_length

RES = 0.05
MAPS = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared', 'data', 'maps')


def boxed(rows, cols):
    """An occupied mask with a one-cell wall around the border."""
    occupied = np.zeros((rows, cols), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    return occupied


def maze(door=True):
    """A 6 m x 4 m room split by a wall at x = 3 m, with a 1 m door at y in [3, 4) m or not."""
    occupied = boxed(80, 120)
    occupied[:, 60] = True
    if door:
        occupied[60:79, 60] = False      # a door in the upper part only: the path must detour
    return GridMap.from_occupancy(occupied, RES)


def office(resolution=RES):
    """A 30 m x 20 m office: a corridor along y = 10 m and ten 6 m x 9 m rooms with doors."""
    n = int(round(1.0 / resolution))
    occupied = boxed(20 * n, 30 * n)
    occupied[9 * n, :] = occupied[11 * n, :] = True          # corridor walls
    for k in range(1, 5):
        occupied[:9 * n, 6 * k * n] = occupied[11 * n:, 6 * k * n] = True   # room walls
    for k in range(5):
        door = slice(6 * k * n + 2 * n, 6 * k * n + 3 * n)
        occupied[9 * n, door] = occupied[11 * n, door] = False
        occupied[3 * n:4 * n, 6 * k * n + 2 * n:6 * k * n + 4 * n] = True  # a desk per room
    return GridMap.from_occupancy(occupied, resolution)


def assert_clear(grid, path, radius, skip_start=True):
    """Every point of the polyline (sampled every 1 cm) keeps ``radius`` from obstacles."""
    points = np.asarray(path[1:] if skip_start else path)
    for a, b in zip(points[:-1], points[1:]):
        t = np.linspace(0.0, 1.0, max(2, int(np.hypot(*(b - a)) / 0.01) + 1))
        xs, ys = a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])
        assert grid.distance_at(xs, ys).min() >= radius - 1e-9


def test_a_path_through_the_door_detours_and_ends_exactly_at_start_and_goal():
    grid = maze()
    planner = Planner(grid)
    path = planner.plan((1.0, 1.0), (5.0, 1.0))
    assert path is not None
    assert path[0] == (1.0, 1.0) and path[-1] == (5.0, 1.0)
    # The straight line is 4 m; through the door (y > 3 m) it is at least 2 * 2.4 m long.
    assert path_length(path) > 2 * math.hypot(2.0, 2.3)
    assert max(y for _, y in path) > 3.0
    assert_clear(grid, path, planner.config.inflation_radius)


def test_no_door_no_path():
    assert Planner(maze(door=False)).plan((1.0, 1.0), (5.0, 1.0)) is None


def test_a_door_narrower_than_the_robot_is_no_path():
    occupied = boxed(80, 120)
    occupied[:, 60] = True
    occupied[60:68, 60] = False          # 0.4 m: less than 2 * 0.23 m of inflation
    assert Planner(GridMap.from_occupancy(occupied, RES)).plan((1.0, 1.0), (5.0, 1.0)) is None


def test_no_path_runs_along_the_maps_edge():
    """A 1 m wide strip of free space to the grid's edge, open at both long sides: the robot
    cannot leave its map, so a path keeps the inflation radius from the edge as from a wall,
    and a goal nearer the edge than that is not reachable."""
    grid = GridMap.from_occupancy(np.zeros((20, 200), dtype=bool), RES)    # 10 m x 1 m
    planner = Planner(grid, PlannerConfig(wall_cost_weight=0.0))
    path = planner.plan((1.0, 0.5), (9.0, 0.5))
    assert path is not None
    edge = min(min(x, 10.0 - x, y, 1.0 - y) for x, y in path)
    assert edge >= planner.config.inflation_radius - 0.05     # a planning cell's half
    assert not planner.traversable[0, :].any() and not planner.traversable[:, -1].any()


def test_path_keeps_clear_of_walls_and_prefers_the_middle():
    occupied = boxed(40, 200)            # a 2 m wide, 10 m long corridor
    grid = GridMap.from_occupancy(occupied, RES)
    path = Planner(grid).plan((1.0, 0.6), (9.0, 0.6))
    assert_clear(grid, path, 0.23)
    # The wall-cost gradient pulls the path towards the centre line (y = 1 m) on the way.
    middle = [y for x, y in path if 4.0 < x < 6.0]
    assert middle and min(abs(y - 1.0) for y in middle) < 0.15
    # Without the gradient the shortest path hugs y = 0.6 m.
    plain = Planner(grid, PlannerConfig(wall_cost_weight=0.0)).plan((1.0, 0.6), (9.0, 0.6))
    assert path_length(plain) == pytest.approx(8.0, abs=0.05)


def test_start_next_to_a_wall_plans_from_the_nearest_free_cell():
    grid = maze()
    planner = Planner(grid)
    start = (1.0, 0.12)                  # 0.07 m from the wall at y = 0.05 m
    assert not planner.is_traversable(*start)
    path = planner.plan(start, (2.0, 2.0))
    assert path is not None and path[0] == start
    assert planner.is_traversable(*path[1])
    assert math.hypot(path[1][0] - start[0], path[1][1] - start[1]) <= 0.5
    assert_clear(grid, path, 0.23)


def test_a_start_beside_a_pocket_cut_off_by_the_inflation_plans_from_the_connected_side():
    # An unmapped ring (0.2 m thick) around a free 0.6 m square, as clutter maps on a real map:
    # the square's middle is a traversable pocket the inflation cuts off. A start on the ring
    # has that pocket as its nearest traversable cell; the plan starts from the nearest cell
    # with a path to the goal instead, outside the ring.
    occupied = boxed(80, 120)
    free = ~occupied
    free[30:50, 40:60] = False            # x in [2.0, 3.0) m, y in [1.5, 2.5) m: unknown ...
    free[34:46, 44:56] = True             # ... but for the free square inside
    grid = GridMap(occupied, free, RES)
    planner = Planner(grid)
    start, goal = (2.5, 1.68), (1.0, 1.0)
    pocket = planner.nearest_traversable(*start, 0.5)
    assert pocket is not None
    assert math.dist(planner.cell_center(*pocket), (2.5, 2.0)) < 0.15      # inside the ring
    path = planner.plan(start, goal)
    assert path is not None and path[0] == start and path[-1] == goal
    assert path[1][1] < 1.5                                                # outside the ring
    assert math.dist(start, path[1]) <= 0.5
    # The pocket itself has no path out. Without a connected cell within start_search_radius
    # the start leaves the unknown ring by the escape, to a connected cell too (not the pocket).
    assert planner.plan(planner.cell_center(*pocket), goal) is None
    near = Planner(grid, PlannerConfig(start_search_radius=0.3))
    escaped = near.plan(start, goal)
    assert escaped is not None and all(y < 1.7 for _x, y in escaped)
    assert Planner(grid, PlannerConfig(start_search_radius=0.3, unknown_escape=0.0)).plan(
        start, goal) is None


def test_start_deep_inside_an_obstacle_has_no_path():
    occupied = boxed(80, 120)
    occupied[20:60, 20:60] = True        # a 2 m block; its centre is 1 m from free space
    planner = Planner(GridMap.from_occupancy(occupied, RES))
    assert planner.plan((2.0, 2.0), (5.0, 3.0)) is None


@pytest.mark.parametrize('goal', [(3.0, 1.0), (3.0, 0.15), (1.0, 3.92), (-1.0, 1.0),
                                  (float('nan'), 1.0), (7.0, 1.0)])
def test_goal_in_an_obstacle_its_inflation_or_off_the_map_has_no_path(goal):
    assert Planner(maze()).plan((1.0, 1.0), goal) is None


def test_unknown_space_is_not_traversable_by_default():
    occupied = boxed(80, 120)
    free = ~occupied
    free[:, 70:90] = False               # an unknown band from wall to wall
    grid = GridMap(occupied, free, RES)
    assert Planner(grid).plan((1.0, 1.0), (5.5, 1.0)) is None
    assert Planner(grid).plan((1.0, 1.0), (4.0, 1.0)) is None        # a goal in unknown space
    open_path = Planner(grid, PlannerConfig(unknown_is_free=True)).plan((1.0, 1.0), (5.5, 1.0))
    assert open_path is not None and path_length(open_path) == pytest.approx(4.5, abs=0.1)


def unmapped_room():
    """A 6 m x 4 m room whose east part x > 3.5 m nobody mapped: unknown, no wall between, and
    a pillar in it at x in [4.5, 4.7] m, y in [1.8, 2.2] m."""
    occupied = boxed(80, 120)
    free = ~occupied
    free[:, 70:119] = False
    occupied[36:44, 90:94] = True
    free[36:44, 90:94] = False
    return GridMap(occupied, free, RES)


def test_a_start_deep_in_unknown_space_leaves_it_by_the_shortest_way():
    grid = unmapped_room()
    planner = Planner(grid)
    # 1.5 m into the unknown part, behind the pillar: out west, around it, then as usual.
    path = planner.plan((5.0, 2.0), (1.0, 2.0))
    assert path is not None and path[0] == (5.0, 2.0) and path[-1] == (1.0, 2.0)
    assert_clear(grid, path, 0.23)
    assert path_length(path) < 4.0 + 2 * 0.6
    # The steps are planning cells (but the last, to the exact goal), the first one next to
    # the start's own cell.
    steps = np.hypot(*np.diff(np.asarray(path[1:-1]), axis=0).T)
    assert steps.max() <= math.sqrt(2) * planner.resolution + 1e-9
    assert math.dist(path[0], path[1]) <= 1.5 * math.sqrt(2) * planner.resolution


def test_no_way_out_of_unknown_space_beyond_unknown_escape_or_with_it_off():
    grid = unmapped_room()
    assert Planner(grid, PlannerConfig(unknown_escape=1.0)).plan((5.0, 1.0), (1.0, 2.0)) is None
    assert Planner(grid, PlannerConfig(unknown_escape=0.0)).plan((4.2, 1.0), (1.0, 2.0)) is None
    assert Planner(grid, PlannerConfig(unknown_escape=1.0)).plan((4.2, 1.0), (1.0, 2.0))
    # Inside the pillar's inflation there is no way out either; a goal in unknown space
    # still has no path.
    assert Planner(grid).plan((4.6, 1.7), (1.0, 2.0)) is None
    assert Planner(grid).plan((1.0, 2.0), (5.0, 1.0)) is None


def test_unknown_escape_bounds_the_length_of_the_way_out_not_the_distance():
    grid = unmapped_room()
    # Behind the pillar the nearest free cell is about 1.85 m away as the crow flies, but the
    # way out around the pillar is about 2.15 m long.
    assert Planner(grid, PlannerConfig(unknown_escape=2.0)).plan((5.0, 2.0), (1.0, 2.0)) is None
    assert Planner(grid, PlannerConfig(unknown_escape=2.3)).plan((5.0, 2.0), (1.0, 2.0))


def test_replanning_to_the_same_goal_reuses_the_tree_and_follows_the_new_start():
    planner = Planner(maze())
    first = planner.plan((1.0, 1.0), (5.0, 1.0))
    second = planner.plan((2.0, 3.2), (5.0, 1.0))
    assert second[0] == (2.0, 3.2) and second[-1] == (5.0, 1.0)
    assert path_length(second) < path_length(first)


def test_plans_at_map_resolution_too():
    grid = maze()
    planner = Planner(grid, PlannerConfig(planning_resolution=0.0))
    assert planner.factor == 1 and planner.resolution == RES
    path = planner.plan((1.0, 1.0), (5.0, 1.0))
    assert path is not None
    assert_clear(grid, path, 0.23)


def test_rotated_map_origin_is_honoured():
    grid = GridMap.from_occupancy(maze().occupied, RES, origin=(2.0, -1.0, math.pi / 2))
    planner = Planner(grid)
    # The maze turns by 90 deg about (2, -1): grid point (gx, gy) is map (2 - gy, gx - 1).
    start, goal = (2.0 - 1.0, 1.0 - 1.0), (2.0 - 1.0, 5.0 - 1.0)
    path = planner.plan(start, goal)
    assert path is not None
    assert_clear(grid, path, 0.23)
    assert path_length(path) > 4.5


def test_office_plan_crosses_rooms_and_corridor():
    grid = office()
    planner = Planner(grid)
    path = planner.plan((1.5, 2.0), (28.5, 18.0))
    assert path is not None
    assert_clear(grid, path, 0.23)
    assert path_length(path) > math.hypot(27.0, 16.0)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_any_two_free_points_of_a_connected_map_are_joined_by_a_clear_path(a, b):
    grid = maze()
    planner = Planner(grid)
    rows, cols = np.nonzero(planner.traversable)
    xs, ys = planner.cell_center(rows, cols)
    start = (float(xs[a % xs.size]), float(ys[a % xs.size]))
    goal = (float(xs[b % xs.size]), float(ys[b % xs.size]))
    path = planner.plan(start, goal)
    assert path is not None and path[0] == start and path[-1] == goal
    steps = np.hypot(*np.diff(np.asarray(path), axis=0).T)
    assert steps.max(initial=0.0) <= math.sqrt(2) * planner.resolution + 1e-9
    assert_clear(grid, path, 0.23, skip_start=False)


@pytest.mark.parametrize('field,value', [('inflation_radius', -0.1), ('wall_cost_distance', 0.0),
                                         ('planning_resolution', float('nan')),
                                         ('unknown_is_free', 'no'), ('unknown_escape', -1.0)])
def test_bad_config_is_refused_naming_the_key(field, value):
    with pytest.raises(ConfigError) as caught:
        Planner(maze(), PlannerConfig(**{field: value}))
    assert field in str(caught.value)


@pytest.mark.skipif(not os.path.isdir(os.path.join(MAPS, 'willow_garage')),
                    reason='../shared/data/maps is absent')
def test_real_willow_garage_map():
    grid = load_map(os.path.join(MAPS, 'willow_garage', 'willow-full.yaml'))
    planner = Planner(grid)
    rows, cols = np.nonzero(planner.traversable)
    xs, ys = planner.cell_center(rows, cols)
    # Two far-apart points of the largest free region: a path exists and stays clear.
    rng = np.random.default_rng(3)
    found = 0
    for _ in range(10):
        i, j = rng.integers(0, xs.size, 2)
        path = planner.plan((xs[i], ys[i]), (xs[j], ys[j]))
        if path is not None:
            found += 1
            assert_clear(grid, path, 0.23, skip_start=False)
    assert found >= 1
