"""Unit tests for core/obstacle_memory.py: laser returns remembered in the odometry frame."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lost_and_found.core.config import ConfigError
from lost_and_found.core.obstacle_memory import ObstacleMemory, ObstacleMemoryConfig, \
    PoseHistory, from_frame, to_frame
from lost_and_found.core.reactive import Scan
from lost_and_found.core.scan_agreement import LaserMount

#: A Kinect-like fake laser: 64 beams over +-0.5 rad, 0.45..5 m.
N = 64
FOV = 0.5
INC = 2 * FOV / (N - 1)


def kinect(ranges):
    """A Kinect-like Scan of ``ranges`` (one value for every beam, or a sequence)."""
    return Scan(np.broadcast_to(np.asarray(ranges, dtype=float), (N,)).copy(), -FOV, INC,
                0.45, 5.0)


def wall_ahead(distance):
    """Ranges of a laser facing a wall ``distance`` m ahead, square to it."""
    angles = -FOV + INC * np.arange(N)
    return distance / np.cos(angles)


def near(points, xy, tol=0.06):
    """Whether any of ``points`` lies within ``tol`` of ``xy``."""
    return bool(len(points)) and bool(np.any(np.hypot(points[:, 0] - xy[0],
                                                      points[:, 1] - xy[1]) <= tol))


def test_frames_round_trip():
    pose = (1.0, -2.0, 0.7)
    points = np.array([[0.5, 0.2], [-1.0, 3.0]])
    assert np.allclose(to_frame(from_frame(points, pose), pose), points)
    assert np.allclose(from_frame(np.array([[1.0, 0.0]]), (0.0, 0.0, math.pi / 2)), [[0.0, 1.0]])


def test_marks_near_returns_only():
    memory = ObstacleMemory(ObstacleMemoryConfig(mark_range=2.0, mark_too_near=0.0))
    ranges = np.full(N, np.nan)
    ranges[N // 2] = 1.0             # straight ahead (beam 32 is at +0.008 rad)
    ranges[0] = 3.0                  # beyond mark_range: not remembered
    ranges[1] = math.inf             # no return
    ranges[2] = -math.inf            # nearer than the sensor measures
    ranges[3] = 0.2                  # below range_min: not a valid return
    memory.add_scan((0.0, 0.0, 0.0), kinect(ranges))
    points = memory.points_around((0.0, 0.0, 0.0))
    assert len(points) == 1
    assert near(points, (1.0, 0.0), tol=0.02)


def test_a_negative_range_min_marks_no_negative_range():
    memory = ObstacleMemory(ObstacleMemoryConfig(mark_range=2.0, mark_too_near=0.0))
    ranges = np.full(N, -1.0)                   # behind the laser if taken as ranges
    ranges[N // 2] = 1.0
    memory.add_scan((0.0, 0.0, 0.0), Scan(ranges, -FOV, INC, -5.0, 5.0))
    points = memory.points_around((0.0, 0.0, 0.0))
    assert len(points) == 1 and near(points, (1.0, 0.0), tol=0.02)


def test_remembered_wall_stays_when_the_laser_can_no_longer_see_it():
    """Driving at a wall: once nearer than range_min the Kinect reads -inf, the wall stays,
    and the -inf beams it explains mark nothing nearer (nothing would ever clear that)."""
    memory = ObstacleMemory()
    memory.add_scan((0.0, 0.0, 0.0), kinect(wall_ahead(1.0)))
    count = len(memory)
    memory.add_scan((0.7, 0.0, 0.0), kinect(-math.inf))
    points = memory.points_around((0.7, 0.0, 0.0))
    assert near(points, (0.3, 0.0)), 'the wall 0.3 m ahead is still known'
    assert len(memory) == count and points[:, 0].min() > 0.25


def test_a_beam_through_a_point_clears_it_and_one_ending_on_it_does_not():
    memory = ObstacleMemory(ObstacleMemoryConfig(clear_margin=0.1))
    memory.add_scan((0.0, 0.0, 0.0), kinect(wall_ahead(1.0)))
    memory.add_scan((0.0, 0.0, 0.0), kinect(wall_ahead(1.05)))   # noise: the wall stays
    assert near(memory.points_around((0.0, 0.0, 0.0)), (1.0, 0.0))
    memory.add_scan((0.0, 0.0, 0.0), kinect(wall_ahead(2.0)))    # it moved away
    points = memory.points_around((0.0, 0.0, 0.0))
    assert not near(points, (1.0, 0.0), tol=0.2)
    assert near(points, (2.0, 0.0))


def test_no_return_clears_up_to_range_max_and_no_information_clears_nothing():
    memory = ObstacleMemory()
    memory.add_scan((0.0, 0.0, 0.0), kinect(wall_ahead(1.0)))
    memory.add_scan((0.0, 0.0, 0.0), kinect(np.nan))
    memory.add_scan((0.0, 0.0, 0.0), kinect(-math.inf))
    assert len(memory) > 0
    memory.add_scan((0.0, 0.0, 0.0), kinect(math.inf))
    assert len(memory) == 0


def test_a_beam_reading_too_near_marks_where_the_obstacle_must_be_until_a_beam_passes():
    """A box 0.3 m ahead, inside a Kinect's 0.45 m blind zone: its beams read -inf."""
    ranges = np.full(N, math.inf)
    ranges[28:36] = -math.inf
    memory = ObstacleMemory(ObstacleMemoryConfig(mark_too_near=0.2))
    memory.add_scan((0.0, 0.0, 0.0), kinect(ranges))
    points = memory.points_around((0.0, 0.0, 0.0))
    distance = np.hypot(points[:, 0], points[:, 1])
    bearing = np.arctan2(points[:, 1], points[:, 0])
    assert near(points, (0.3, 0.0)) and near(points, (0.2, 0.0)) and near(points, (0.45, 0.0))
    assert distance.min() >= 0.2 - 1e-9 and distance.max() <= 0.45 + 1e-9
    assert np.all(np.abs(bearing) <= abs(-FOV + INC * 35) + 1e-9)
    # Turned away, it is still known, now on the left.
    memory.add_scan((0.0, 0.0, -math.pi / 2), kinect(math.inf))
    assert near(memory.points_around((0.0, 0.0, -math.pi / 2)), (0.0, 0.3))
    # The box is gone: a beam passing over the stretch clears it.
    memory.add_scan((0.0, 0.0, 0.0), kinect(wall_ahead(2.0)))
    assert not near(memory.points_around((0.0, 0.0, 0.0)), (0.3, 0.0), tol=0.2)
    # Off (0) or a stretch that is empty (range_min below the start): nothing marked.
    for config in (ObstacleMemoryConfig(mark_too_near=0.0),
                   ObstacleMemoryConfig(mark_too_near=0.5)):
        off = ObstacleMemory(config)
        off.add_scan((0.0, 0.0, 0.0), kinect(ranges))
        assert len(off) == 0


@pytest.mark.parametrize('angle_min, n, inc', [
    (-2.35, 271, 4.7 / 270),                     # a 270 deg lidar
    (0.0, 360, 2.0 * math.pi / 360),             # a full circle from 0 (e.g. an LDS)
    (-math.pi, 360, 2.0 * math.pi / 360),        # a full circle from -pi
    (2.35, 271, -4.7 / 270)])                    # angles running clockwise
def test_wide_scans_clear_and_explain_beams_all_the_way_round(angle_min, n, inc):
    """Every bearing of a wide scan finds its beam, across the +-pi seam too."""
    def scan(ranges):
        return Scan(np.asarray(ranges, dtype=float), angle_min, inc, 0.45, 5.0)
    angles = angle_min + inc * np.arange(n)
    for bearing in (1.5, -1.5, 2.3, math.pi - 0.02):
        beam = int(np.argmin(np.abs(np.mod(angles - bearing + math.pi, 2 * math.pi) - math.pi)))
        if abs(np.mod(angles[beam] - bearing + math.pi, 2 * math.pi) - math.pi) > abs(inc):
            continue                             # outside this scan's view
        wall = np.full(n, math.inf)
        wall[beam] = 1.0
        memory = ObstacleMemory()
        memory.add_scan((0.0, 0.0, 0.0), scan(wall))
        assert len(memory) == 1
        memory.add_scan((0.0, 0.0, 0.0), scan(np.full(n, math.inf)))
        assert len(memory) == 0, 'a beam passing over the point clears it'
        # A wall remembered 0.3 m away on that beam explains its -inf: nothing more marked.
        here = (0.7 * math.cos(bearing), 0.7 * math.sin(bearing), 0.0)
        memory = ObstacleMemory()
        memory.add_scan((0.0, 0.0, 0.0), scan(wall))
        too_near = np.full(n, np.nan)            # no information: nothing cleared
        too_near[beam] = -math.inf
        memory.add_scan(here, scan(too_near))
        assert len(memory) == 1, 'explained: the remembered wall is all there is'
        # Another -inf beam, unexplained, marks its stretch; the explained one still does not.
        other = (beam + n // 4) % n
        too_near[other] = -math.inf
        memory.add_scan(here, scan(too_near))
        points = memory.points_around(here)
        assert len(points) > 1 and near(points, (0.3 * math.cos(angles[other]),
                                                 0.3 * math.sin(angles[other])))
        on_beam = np.abs(np.mod(np.arctan2(points[:, 1], points[:, 0]) - bearing + math.pi,
                                2 * math.pi) - math.pi) < 0.05
        assert np.hypot(points[on_beam, 0], points[on_beam, 1]).tolist() == \
            pytest.approx([0.3], abs=0.01)


def test_points_outside_the_view_are_kept():
    """Turned away, the laser says nothing about the wall now beside the robot."""
    memory = ObstacleMemory()
    memory.add_scan((0.0, 0.0, 0.0), kinect(wall_ahead(1.0)))
    count = len(memory)
    memory.add_scan((0.0, 0.0, math.pi / 2), kinect(math.inf))
    assert len(memory) == count
    points = memory.points_around((0.0, 0.0, math.pi / 2))
    assert near(points, (0.0, -1.0)), 'the wall is now on the right'


def test_rolling_window_forgets_far_points():
    memory = ObstacleMemory(ObstacleMemoryConfig(mark_range=1.5, keep_radius=2.0))
    memory.add_scan((0.0, 0.0, 0.0), kinect(wall_ahead(1.0)))
    memory.add_scan((-1.5, 0.0, math.pi), kinect(np.nan))        # 2.5 m from the wall
    assert len(memory) == 0


def test_one_point_per_cell():
    memory = ObstacleMemory(ObstacleMemoryConfig(cell=0.5))
    memory.add_scan((0.0, 0.0, 0.0), kinect(wall_ahead(1.2)))
    points = memory.points_around((0.0, 0.0, 0.0))
    cells = {tuple(c) for c in np.floor(points / 0.5).astype(int)}
    assert len(cells) == len(points)
    assert len(points) < N


def test_laser_mount_and_upside_down():
    """A laser 0.2 m ahead, mounted upside down: its beam at +0.3 rad points right."""
    ranges = np.full(N, np.nan)
    k = int(round((0.3 + FOV) / INC))
    ranges[k] = 1.0
    angle = -FOV + k * INC
    memory = ObstacleMemory()
    memory.add_scan((0.0, 0.0, 0.0), kinect(ranges), LaserMount(x=0.2, upside_down=True))
    points = memory.points_around((0.0, 0.0, 0.0))
    assert near(points, (0.2 + math.cos(angle), -math.sin(angle)), tol=0.02)


def test_full_circle_scan_wraps():
    """A 360 degree lidar: a point behind (angle pi) falls on the last or first beam."""
    n = 360
    memory = ObstacleMemory()
    ranges = np.full(n, np.nan)
    ranges[0] = 1.0                          # beam 0 at -pi: straight behind
    scan = Scan(ranges, -math.pi, 2 * math.pi / n, 0.1, 5.0)
    memory.add_scan((0.0, 0.0, 0.0), scan)
    assert near(memory.points_around((0.0, 0.0, 0.0)), (-1.0, 0.0), tol=0.02)
    clear = Scan(np.full(n, math.inf), -math.pi, 2 * math.pi / n, 0.1, 5.0)
    memory.add_scan((0.0, 0.0, 0.0), clear)
    assert len(memory) == 0


@pytest.mark.parametrize('pose,scan', [
    ((0.0, math.nan, 0.0), kinect(1.0)),
    ((0.0, 0.0, 0.0), Scan((1.0,) * N, -FOV, 0.0, 0.45, 5.0)),
    ((0.0, 0.0, 0.0), Scan((1.0,) * N, math.nan, INC, 0.45, 5.0)),
    ((0.0, 0.0, 0.0), Scan((1.0,) * N, -FOV, INC, 0.45, math.inf)),
])
def test_bad_input_raises_and_keeps_the_memory(pose, scan):
    memory = ObstacleMemory()
    memory.add_scan((0.0, 0.0, 0.0), kinect(wall_ahead(1.0)))
    before = memory.points_around((0.0, 0.0, 0.0))
    with pytest.raises(ValueError):
        memory.add_scan(pose, scan)
    assert np.array_equal(memory.points_around((0.0, 0.0, 0.0)), before)


def test_clear_forgets_everything():
    memory = ObstacleMemory()
    memory.add_scan((0.0, 0.0, 0.0), kinect(wall_ahead(1.0)))
    memory.clear()
    assert len(memory) == 0
    assert memory.points_around((1.0, 2.0, 3.0)).shape == (0, 2)


def test_config_problems_are_named():
    with pytest.raises(ConfigError) as error:
        ObstacleMemory(ObstacleMemoryConfig(cell=0.0, mark_range=3.0, keep_radius=2.0))
    assert 'cell=0.0' in str(error.value)
    with pytest.raises(ConfigError) as error:
        ObstacleMemory(ObstacleMemoryConfig(mark_range=3.0, keep_radius=2.0))
    assert 'keep_radius=2.0' in str(error.value)
    with pytest.raises(ConfigError, match='mark_too_near=-0.1'):
        ObstacleMemory(ObstacleMemoryConfig(mark_too_near=-0.1))


@settings(max_examples=50, deadline=None)
@given(st.floats(-5, 5), st.floats(-5, 5), st.floats(-math.pi, math.pi),
       st.floats(0.5, 2.0))
def test_a_wall_seen_from_any_pose_is_where_it_is(x, y, yaw, distance):
    """Marked points are the returns' true positions, wherever the robot stands."""
    memory = ObstacleMemory()
    memory.add_scan((x, y, yaw), kinect(wall_ahead(distance)))
    world = from_frame(memory.points_around((x, y, yaw)), (x, y, yaw))
    along = (world[:, 0] - x) * math.cos(yaw) + (world[:, 1] - y) * math.sin(yaw)
    assert np.allclose(along, distance, atol=0.01)


def test_an_odometry_reset_forgets_everything():
    """A jump of the odometry pose between two scans is no drive: the old points are wrong."""
    memory = ObstacleMemory(ObstacleMemoryConfig(jump_distance=1.0))
    memory.add_scan((5.0, 0.0, 0.0), kinect(wall_ahead(1.0)))
    memory.add_scan((5.5, 0.0, 0.0), kinect(np.nan))        # driven: kept
    assert len(memory) > 0
    memory.add_scan((0.0, 0.0, 0.0), kinect(np.nan))        # reset to the identity
    assert len(memory) == 0


# --- PoseHistory: odometry poses by stamp ---------------------------------------------------

def test_pose_history_interpolates_between_stamps_across_the_yaw_wrap():
    history = PoseHistory(span=2.0)
    assert history.at(0.0) is None and history.latest is None
    history.add(1.0, (0.0, 0.0, 3.0))
    history.add(1.2, (1.0, -2.0, -3.1))           # turned 0.18 rad left, across pi
    assert history.at(1.0) == (0.0, 0.0, 3.0)
    x, y, yaw = history.at(1.1)
    assert (x, y) == pytest.approx((0.5, -1.0))
    assert yaw == pytest.approx(3.0 + (2.0 * math.pi - 6.1) / 2.0)   # not through zero
    assert history.at(0.99) is None               # before the oldest pose
    assert history.at(1.21) is None               # not known yet
    assert history.latest == 1.2


def test_pose_history_keeps_its_span_forgets_on_a_clock_jump_and_ignores_bad_values():
    history = PoseHistory(span=1.0)
    for k in range(31):
        history.add(0.1 * k, (0.1 * k, 0.0, 0.0))
    assert history.at(1.9) is None and history.at(2.0) == pytest.approx((2.0, 0.0, 0.0))
    assert len(history) == 11
    history.add(3.0, (math.nan, 0.0, 0.0))
    history.add(math.inf, (0.0, 0.0, 0.0))
    assert history.latest == pytest.approx(3.0)
    history.add(3.0, (5.0, 0.0, 0.0))             # the same stamp again: the newer pose
    assert history.at(3.0) == (5.0, 0.0, 0.0)
    assert history.add(2.6, (6.0, 0.0, 0.0)) is False    # out of order: ignored
    assert history.latest == 3.0 and history.at(2.6) == pytest.approx((2.6, 0.0, 0.0))
    assert history.add(0.5, (7.0, 0.0, 0.0)) is True     # the clock jumped back
    assert len(history) == 1 and history.at(3.0) is None and history.latest == 0.5
