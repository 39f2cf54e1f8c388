"""The ray-cast laser: exact ranges in a square room, rays off the map, unknown cells, REP 117."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from box_room import distance_to_walls

from lost_and_found.core.config import ConfigError, config_from_params
from lost_and_found.sim.gridmap import GridMap
from lost_and_found.sim.laser import LaserConfig, LaserModel, cast_rays, distance_to_edge

RES = 0.05
ROWS, COLS = 60, 80          # a 4 m x 3 m room, walls one cell thick on every side


def room(origin=(0.0, 0.0, 0.0)):
    """The room; its free inside spans [RES, (COLS-1)*RES] x [RES, (ROWS-1)*RES] in grid axes."""
    occupied = np.zeros((ROWS, COLS), dtype=bool)
    occupied[[0, -1], :] = True
    occupied[:, [0, -1]] = True
    return GridMap.from_occupancy(occupied, RES, origin)


def to_room_wall(x, y, angle):
    """Analytic distance from (x, y) inside the room to its inner wall faces along ``angle``."""
    return distance_to_walls(x, y, angle, RES, (COLS - 1) * RES, RES, (ROWS - 1) * RES)


inside_x = st.floats(RES + 0.01, (COLS - 1) * RES - 0.01)
inside_y = st.floats(RES + 0.01, (ROWS - 1) * RES - 0.01)


@settings(max_examples=60, deadline=None)
@given(inside_x, inside_y, st.floats(-math.pi, math.pi))
def test_ranges_in_a_room_are_exact(x, y, heading):
    angles = heading + np.linspace(-math.pi, math.pi, 90, endpoint=False)
    ranges = cast_rays(room(), x, y, angles, 10.0)
    expected = [to_room_wall(x, y, a) for a in angles]
    # The walls are made of cells, so the traversal is exact up to float rounding.
    np.testing.assert_allclose(ranges, expected, atol=1e-6)


def test_axis_aligned_and_diagonal_beams():
    ranges = cast_rays(room(), 1.0, 1.0, [0.0, math.pi / 2, math.pi, -math.pi / 2,
                                          math.pi / 4], 10.0)
    # Inner faces: x = 0.05 and 3.95, y = 0.05 and 2.95; the diagonal meets y = 2.95 first.
    np.testing.assert_allclose(ranges, [2.95, 1.95, 0.95, 0.95, 1.95 * math.sqrt(2)],
                               atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(inside_x, inside_y, st.floats(-math.pi, math.pi),
       st.floats(-5.0, 5.0), st.floats(-5.0, 5.0), st.floats(-math.pi, math.pi))
def test_a_moved_and_rotated_map_gives_the_same_ranges(gx, gy, heading, ox, oy, oyaw):
    # The same room placed with origin (ox, oy, oyaw): cast from the same grid-relative point.
    grid = room((ox, oy, oyaw))
    c, s = math.cos(oyaw), math.sin(oyaw)
    x, y = ox + c * gx - s * gy, oy + s * gx + c * gy
    angles = heading + np.linspace(-math.pi, math.pi, 36, endpoint=False)
    ranges = cast_rays(grid, x, y, angles + oyaw, 10.0)
    expected = [to_room_wall(gx, gy, a) for a in angles]
    np.testing.assert_allclose(ranges, expected, atol=1e-6)


def test_max_range_cuts_returns():
    ranges = cast_rays(room(), 1.0, 1.0, [0.0], 2.9)     # the wall is 2.95 m away
    assert ranges[0] == math.inf
    assert cast_rays(room(), 1.0, 1.0, [0.0], 2.96)[0] == pytest.approx(2.95)


def test_rays_leaving_the_map_return_nothing():
    open_map = GridMap.from_occupancy(np.zeros((20, 20), dtype=bool), RES)
    assert np.all(np.isinf(cast_rays(open_map, 0.5, 0.5, np.linspace(-3, 3, 50), 10.0)))
    # A single wall cell: rays away from it leave the map, the one toward it hits.
    occupied = np.zeros((20, 20), dtype=bool)
    occupied[10, 15] = True
    grid = GridMap.from_occupancy(occupied, RES)
    ranges = cast_rays(grid, 0.525, 0.525, [0.0, math.pi], 10.0)
    assert ranges[0] == pytest.approx(0.75 - 0.525) and ranges[1] == math.inf


@settings(max_examples=60, deadline=None)
@given(st.floats(0.01, 0.99), st.floats(0.01, 0.99), st.floats(-math.pi, math.pi),
       st.floats(-math.pi, math.pi))
def test_distance_to_edge_of_a_rotated_map(fx, fy, heading, oyaw):
    # A 1 m x 0.75 m map whose origin is moved and turned: the distance along each direction
    # is that to the map's rectangle, measured in the grid's own axes.
    grid = GridMap.from_occupancy(np.zeros((15, 20), dtype=bool), RES, (2.0, -1.0, oyaw))
    gx, gy = fx * 1.0, fy * 0.75
    c, s = math.cos(oyaw), math.sin(oyaw)
    x, y = 2.0 + c * gx - s * gy, -1.0 + s * gx + c * gy
    got = distance_to_edge(grid, x, y, [heading + oyaw])[0]
    expected = distance_to_walls(gx, gy, heading, 0.0, 1.0, 0.0, 0.75)
    assert got == pytest.approx(expected, abs=1e-9)


def test_distance_to_edge_off_the_map_is_zero():
    grid = GridMap.from_occupancy(np.zeros((20, 20), dtype=bool), RES)
    assert np.all(distance_to_edge(grid, -0.5, 0.5, [0.0, 1.0]) == 0.0)


def test_the_laser_reads_the_map_edge_as_a_wall():
    # An open map: cast_rays sees nothing, but the robot cannot leave the map, so its laser
    # reads the edge (as a real wall would read), and nothing beyond range_max.
    open_map = GridMap.from_occupancy(np.zeros((40, 200), dtype=bool), RES)   # 10 m x 2 m
    laser = LaserModel(LaserConfig(noise=0.0, x=0.0, beams=3, angle_min=-0.2, angle_max=0.2),
                       open_map)
    toward_edge = laser.scan((8.0, 1.0, 0.0))            # 2 m to the edge at x = 10 m
    assert toward_edge[1] == pytest.approx(2.0)
    assert toward_edge[0] == pytest.approx(2.0 / math.cos(0.2))
    assert np.all(np.isinf(laser.scan((2.0, 1.0, 0.0))))     # 8 m away: beyond range_max
    assert laser.scan((9.7, 1.0, 0.0))[1] == -math.inf       # 0.3 m: nearer than range_min


def test_a_wall_before_the_edge_reads_as_the_wall():
    occupied = np.zeros((40, 200), dtype=bool)
    occupied[:, 180] = True                                  # a wall at x = 9.0 m
    grid = GridMap.from_occupancy(occupied, RES)
    laser = LaserModel(LaserConfig(noise=0.0, x=0.0, beams=3, angle_min=-0.2, angle_max=0.2),
                       grid)
    assert laser.scan((8.0, 1.0, 0.0))[1] == pytest.approx(1.0)
    assert laser.scan((8.0, 1.0, math.pi))[1] == math.inf   # 8 m of floor behind: nothing


def test_an_edge_beyond_range_max_stays_out_of_range_with_noise():
    # Like a wall there, an edge 5.03 m away never reads as a return, whatever the noise.
    open_map = GridMap.from_occupancy(np.zeros((40, 200), dtype=bool), RES)
    laser = LaserModel(LaserConfig(noise=0.05, x=0.0, beams=50, angle_min=-0.01,
                                   angle_max=0.01), open_map, np.random.default_rng(3))
    for _ in range(20):
        assert np.all(np.isinf(laser.scan((10.0 - 5.03, 1.0, 0.0))))


def test_a_ray_from_outside_the_map_hits_what_it_enters():
    ranges = cast_rays(room(), -1.0, 1.0, [0.0, math.pi], 10.0)
    assert ranges[0] == pytest.approx(1.0) and ranges[1] == math.inf


def test_origin_inside_an_obstacle_reads_zero():
    assert np.all(cast_rays(room(), 0.02, 1.0, [0.0, 1.0], 10.0) == 0.0)


def test_unknown_cells_are_free_unless_configured():
    occupied = np.zeros((ROWS, COLS), dtype=bool)
    occupied[:, -1] = True
    free = ~occupied
    free[:, 40:45] = False                       # an unknown band from x = 2.0 to 2.25 m
    grid = GridMap(occupied, free, RES)
    assert cast_rays(grid, 1.0, 1.0, [0.0], 10.0)[0] == pytest.approx(2.95)
    assert cast_rays(grid, 1.0, 1.0, [0.0], 10.0, unknown_is_occupied=True)[0] == \
        pytest.approx(1.0)


def test_non_finite_input_is_refused():
    with pytest.raises(ValueError):
        cast_rays(room(), math.nan, 1.0, [0.0], 5.0)
    with pytest.raises(ValueError):
        cast_rays(room(), 1.0, 1.0, [math.inf], 5.0)
    with pytest.raises(ValueError):
        cast_rays(room(), 1.0, 1.0, [0.0], math.inf)


def exact_laser(**overrides):
    return LaserModel(LaserConfig(**dict({'noise': 0.0}, **overrides)), room())


def test_default_laser_is_the_turtlebot2_kinect_fake_laser():
    config = LaserConfig()
    assert (config.beams, config.angle_min, config.angle_max) == (640, -0.5, 0.5)
    assert (config.range_min, config.range_max) == (0.45, 5.0)
    laser = LaserModel(config, room())
    assert laser.angles.size == 640
    assert laser.angles[0] == -0.5 and laser.angles[-1] == 0.5
    assert laser.angle_increment == pytest.approx(1.0 / 639)


def test_mounting_offset_shifts_the_origin():
    # Base at (1, 1) facing +x; the laser 0.1 m ahead reads the wall at 3.95 m 0.1 m nearer.
    laser = exact_laser(x=0.1, beams=3, angle_min=-0.1, angle_max=0.1)
    ranges = laser.scan((1.0, 1.0, 0.0))
    assert ranges[1] == pytest.approx(2.85)
    rotated = exact_laser(x=0.0, yaw=math.pi / 2, beams=3, angle_min=-0.1, angle_max=0.1)
    assert rotated.scan((1.0, 1.0, 0.0))[1] == pytest.approx(1.95)


def test_rep117_out_of_range_readings():
    laser = exact_laser(x=0.0, beams=2, angle_min=0.0, angle_max=math.pi, range_max=2.0)
    # Facing +x the wall is 2.95 m away (beyond range_max): +inf. Facing -x it is 0.3 m
    # away (nearer than range_min 0.45): -inf.
    ranges = laser.scan((0.35, 1.0, 0.0))
    assert ranges[0] == math.inf and ranges[1] == -math.inf
    # As depthimage_to_laserscan reports them: NaN for both; returns in range unchanged.
    nan = exact_laser(x=0.0, beams=3, angle_min=0.0, angle_max=math.pi, range_max=2.0,
                      no_return='nan').scan((0.35, 1.0, 0.0))
    assert math.isnan(nan[0]) and math.isnan(nan[2]) and nan[1] == pytest.approx(1.95)
    with pytest.raises(ConfigError, match='no_return'):
        LaserConfig(no_return='zero').validate()


def test_noise_is_gaussian_and_seeded():
    config = LaserConfig(noise=0.02, x=0.0, beams=400, angle_min=-0.01, angle_max=0.01)
    first = LaserModel(config, room(), np.random.default_rng(5)).scan((1.0, 1.0, 0.0))
    again = LaserModel(config, room(), np.random.default_rng(5)).scan((1.0, 1.0, 0.0))
    np.testing.assert_array_equal(first, again)
    errors = first - 2.95 / np.cos(np.linspace(-0.01, 0.01, 400))
    assert abs(errors.mean()) < 0.005 and 0.015 < errors.std() < 0.025


def test_config_problems_name_each_key():
    with pytest.raises(ConfigError) as error:
        config_from_params(LaserConfig, {'beams': 1, 'range_min': 6.0, 'noise': -1.0,
                                         'angle_min': 0.5, 'angle_max': 0.2})
    text = str(error.value)
    for key in ('beams=1', 'range_max=5.0', 'noise=-1.0', 'angle_max=0.2'):
        assert key in text
