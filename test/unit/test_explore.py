"""core/explore.py: which way the wander heads after a look-around spin."""
import math

import numpy as np
import pytest

from lost_and_found.core.explore import HEADINGS, free_distances, heading_toward, pick_heading

HALF = 0.23         # the wander's half width: robot radius 0.18 m + side margin 0.05 m
REACH = 2.5


def wall(x0, x1, y, step=0.05):
    """Obstacle points (N, 2) along y = ``y`` from x0 to x1 (robot frame)."""
    xs = np.arange(x0, x1 + step / 2, step)
    return np.column_stack([xs, np.full(xs.shape, y)])


def test_free_distance_stops_the_footprint_a_half_width_before_a_point_in_its_strip():
    points = np.array([[1.5, 0.0], [-1.0, 0.5]])
    angles, free = free_distances(points, HALF, REACH)
    assert len(angles) == HEADINGS and angles[0] == 0.0
    assert free[0] == pytest.approx(1.5 - HALF)                 # straight at the point
    assert free[HEADINGS // 2] == REACH                         # behind: (-1, 0.5) is aside
    assert free[HEADINGS // 4] == REACH                         # left: nothing
    # 10 deg to the left the point ahead is 0.26 m aside: out of the strip.
    assert free[2] == REACH
    assert free_distances(np.empty((0, 2)), HALF, REACH)[1].tolist() == [REACH] * HEADINGS


def test_a_corridor_driven_from_behind_is_followed_on_not_back():
    """In a corridor along x, 1 m wide, the robot came from x = -3: ahead is new ground."""
    points = np.vstack([wall(-3.0, 3.0, 0.5), wall(-3.0, 3.0, -0.5)])
    path = np.column_stack([np.linspace(-3.0, 0.0, 13), np.zeros(13)])
    heading = pick_heading((0.0, 0.0, 0.0), points, path, HALF, REACH, 1.0)
    assert heading == pytest.approx(0.0)
    # The same corridor seen from a robot facing back the way it came (odometry yaw pi):
    # on along the corridor in the odometry frame (within the corridor's 10 deg of slack).
    turned = points * [-1.0, -1.0]
    assert abs(pick_heading((0.0, 0.0, math.pi), turned, path, HALF, REACH, 1.0)) < 0.2


def test_at_a_dead_end_it_turns_back_and_with_no_way_out_it_has_no_heading():
    dead_end = np.vstack([wall(-3.0, 0.8, 0.5), wall(-3.0, 0.8, -0.5),
                          np.column_stack([np.full(21, 0.8), np.linspace(-0.5, 0.5, 21)])])
    path = np.column_stack([np.linspace(-3.0, 0.0, 13), np.zeros(13)])
    heading = pick_heading((0.0, 0.0, 0.0), dead_end, path, HALF, REACH, 1.0)
    assert abs(abs(heading) - math.pi) < 0.2
    boxed = np.vstack([dead_end, np.column_stack([np.full(21, -0.8),
                                                  np.linspace(-0.5, 0.5, 21)])])
    assert pick_heading((0.0, 0.0, 0.0), boxed, path, HALF, REACH, 1.0) is None


def test_at_a_junction_the_side_branch_beats_the_way_back_and_ties_take_the_smaller_turn():
    """A T: the corridor from -x ends at a crossing corridor along y."""
    points = np.vstack([wall(-3.0, -0.5, 0.5), wall(-3.0, -0.5, -0.5),
                        np.column_stack([np.full(81, 0.5), np.linspace(-2.0, 2.0, 81)])])
    path = np.column_stack([np.linspace(-3.0, 0.0, 13), np.zeros(13)])
    # Facing +x (the wall): left and right are equally new, the turn is the same: either.
    heading = pick_heading((0.0, 0.0, 0.0), points, path, HALF, REACH, 1.0)
    assert abs(abs(heading) - math.pi / 2) < 0.2
    # Facing a little to the left: the left branch is the smaller turn.
    tilted = pick_heading((0.0, 0.0, 0.3), rotate(points, -0.3), path, HALF, REACH, 1.0)
    assert tilted == pytest.approx(math.pi / 2, abs=0.2)
    # With the left branch already driven, the right one.
    path = np.vstack([path, [[0.0, 1.0], [0.0, 2.0]]])
    heading = pick_heading((0.0, 0.0, 0.0), points, path, HALF, REACH, 1.0)
    assert heading == pytest.approx(-math.pi / 2, abs=0.2)


def rotate(points, angle):
    """``points`` rotated by ``angle`` (rad) about the origin."""
    c, s = math.cos(angle), math.sin(angle)
    return points @ np.array([[c, s], [-s, c]])


def test_without_a_path_the_open_heading_of_the_smallest_turn_wins():
    """Facing a wall 1 m ahead, nothing driven yet: the end points are as far from the path
    (the robot alone) as the way is free, so of the headings free to the reach the one of
    the smallest turn wins."""
    points = np.column_stack([np.full(81, 1.0), np.linspace(-2.0, 2.0, 81)])
    heading = pick_heading((0.0, 0.0, 0.0), points, np.empty((0, 2)), HALF, REACH, 1.0)
    angles, free = free_distances(points, HALF, REACH)
    assert free[0] < 1.0
    smallest = min(abs(a if a <= math.pi else a - 2.0 * math.pi)
                   for a, f in zip(angles, free) if f >= REACH - 0.25)
    assert abs(heading) == pytest.approx(smallest)
    assert 1.0 < abs(heading) <= math.pi / 2


def test_the_way_back_is_the_open_heading_nearest_the_bearing_to_the_target():
    pose = (2.0, 1.0, math.pi / 2)                      # facing +y in odometry
    # Nothing in the way: straight at the target, (2, -3) is behind.
    heading = heading_toward(pose, np.empty((0, 2)), (2.0, -3.0), HALF, REACH, 1.0)
    assert abs(math.remainder(heading + math.pi / 2, 2 * math.pi)) < 1e-9
    # A wall 0.5 m behind the robot (robot frame: x < 0) closes that way: the nearest open
    # heading is off to one side of it, not the way the robot faces.
    behind = np.column_stack([np.full(41, -0.5), np.linspace(-1.0, 1.0, 41)])
    heading = heading_toward(pose, behind, (2.0, -3.0), HALF, REACH, 1.0)
    off = abs(math.remainder(heading + math.pi / 2, 2 * math.pi))
    assert math.radians(20.0) < off < math.radians(100.0)
    # Boxed in: None.
    ring = np.array([[0.4 * math.cos(a), 0.4 * math.sin(a)]
                     for a in np.linspace(0.0, 2 * math.pi, 180, endpoint=False)])
    assert heading_toward(pose, ring, (2.0, -3.0), HALF, REACH, 1.0) is None
