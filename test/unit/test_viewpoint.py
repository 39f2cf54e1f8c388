"""Unit tests of core.viewpoint: the nearest pose from which the estimate expects a tag in view."""
import math

import numpy as np
import pytest

from lost_and_found.core.scan_agreement import DistanceMap
from lost_and_found.core.viewpoint import ViewpointFinder, _grid_dijkstra
from test_tag_check import RES, make_check, wall_tag
from tool_loader import load_tool

#: The TurtleBot2 camera's optical frame (z forward): 0.1 m ahead of the base, 0.3 m up.
T_BASE_CAM = load_tool('tag_check_coverage').T_BASE_CAM
TURN_COST = 0.3


def room_cells():
    """The occupied cells of test_tag_check's 10 m x 6 m room (one-cell walls)."""
    occupied = np.zeros((int(6 / RES), int(10 / RES)), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    return occupied


def finder(occupied=None, free=None, max_path=6.0, tags=None):
    """A ViewpointFinder on the room (tag 1 on the east wall at (9.9, 3) facing west)."""
    occupied = room_cells() if occupied is None else occupied
    check = make_check(tags=tags, distance_map=DistanceMap(occupied, RES, free=free))
    return ViewpointFinder(check, max_path, clearance=0.3, turn_cost=TURN_COST)


def sees(finder_, view):
    """The tags the check expects from the camera of a robot at the viewpoint."""
    from lost_and_found.core.tag_check import camera_pose_2d
    camera = camera_pose_2d((view.x, view.y, view.yaw), T_BASE_CAM)
    return [tag.fiducial_id for tag in finder_.check.expected(*camera)]


def test_a_tag_already_in_view_needs_no_move():
    view = finder().find((7.9, 3.0, 0.0), T_BASE_CAM)
    assert (view.x, view.y, view.yaw, view.path_length, view.turn) == (7.9, 3.0, 0.0, 0.0, 0.0)
    assert view.fiducial_id == 1


def test_facing_away_within_range_turns_in_place():
    f = finder()
    view = f.find((8.0, 3.2, math.pi), T_BASE_CAM)
    assert (view.x, view.y, view.path_length) == (8.0, 3.2, 0.0)
    assert view.turn == pytest.approx(math.pi, abs=0.2)
    assert sees(f, view) == [1]


def test_far_from_the_tag_drives_to_in_front_of_it():
    f = finder()
    view = f.find((3.0, 3.0, 0.0), T_BASE_CAM)
    assert sees(f, view) == [1]
    # The nearest point of the check's range (2.5 m less the margin) is about 4.6 m away
    # along the room's axis; the grid path is that straight line, to a cell's width.
    assert 4.4 < view.path_length < 4.9
    assert view.x == pytest.approx(3.0 + view.path_length, abs=0.1)
    assert view.turn < 0.2


def test_the_path_goes_round_a_wall():
    occupied = room_cells()
    # A wall across the room at x = 5 m with a gap at its north end (y 5-6 m).
    occupied[:int(5.0 / RES), int(5.0 / RES)] = True
    f = finder(occupied, max_path=10.0)
    view = f.find((3.0, 3.0, 0.0), T_BASE_CAM)
    assert sees(f, view) == [1]
    assert finder(occupied).find((3.0, 3.0, 0.0), T_BASE_CAM) is None   # 6 m is not enough
    straight = math.hypot(view.x - 3.0, view.y - 3.0)
    assert view.path_length > straight + 1.0      # up to the gap and back down


def test_unknown_cells_are_not_driven_through():
    free = np.ones_like(room_cells())
    free[:, int(5.0 / RES):int(5.5 / RES)] = False     # an unknown band across the room
    assert finder(free=free).find((3.0, 3.0, 0.0), T_BASE_CAM) is None
    assert finder().find((3.0, 3.0, 0.0), T_BASE_CAM) is not None


def test_nothing_beyond_max_path():
    assert finder(max_path=3.0).find((3.0, 3.0, 0.0), T_BASE_CAM) is None


def test_no_map_no_tags_or_off_the_map_gives_none():
    f = finder()
    f.check.distance_map = None
    assert f.find((3.0, 3.0, 0.0), T_BASE_CAM) is None
    assert finder(tags={}).find((3.0, 3.0, 0.0), T_BASE_CAM) is None
    assert finder().find((-5.0, 3.0, 0.0), T_BASE_CAM) is None


def test_an_estimate_against_a_wall_starts_from_the_nearest_cell_it_fits_in():
    f = finder()
    view = f.find((3.0, 0.1, 0.0), T_BASE_CAM)        # 0.05 m from the south wall's cell
    assert view is not None and sees(f, view) == [1]
    # Boxed in on every side by walls the robot cannot fit past: nothing.
    occupied = room_cells()
    occupied[:int(1.0 / RES), int(2.5 / RES)] = occupied[:int(1.0 / RES), int(3.5 / RES)] = True
    occupied[int(1.0 / RES), int(2.5 / RES):int(3.5 / RES) + 1] = True
    assert finder(occupied).find((3.0, 0.5, 0.0), T_BASE_CAM) is None


def test_the_cheapest_of_two_tags_wins():
    tags = {1: wall_tag(9.9, 3.0, math.pi), 2: wall_tag(0.1, 3.0, 0.0)}
    f = finder(tags=tags)
    assert f.find((3.5, 3.0, 0.0), T_BASE_CAM).fiducial_id == 2     # 0.9 m vs 3.9 m away
    assert f.find((6.5, 3.0, math.pi), T_BASE_CAM).fiducial_id == 1


def test_grid_dijkstra_lengths():
    free = np.ones((5, 5), dtype=bool)
    lengths = _grid_dijkstra(free, (0, 0), 0.5, math.inf)
    assert lengths[0, 4] == pytest.approx(2.0)
    assert lengths[4, 4] == pytest.approx(4 * 0.5 * math.sqrt(2.0))
    assert lengths[4, 0] == pytest.approx(2.0)
    free[:, 2] = False
    lengths = _grid_dijkstra(free, (0, 0), 0.5, math.inf)
    assert np.isinf(lengths[0, 4])
    assert np.isinf(_grid_dijkstra(np.ones((5, 5), dtype=bool), (0, 0), 0.5, 1.0)[0, 4])
    # From the other corner, along the anti-diagonal.
    lengths = _grid_dijkstra(np.ones((5, 5), dtype=bool), (0, 4), 0.5, math.inf)
    assert lengths[4, 0] == pytest.approx(4 * 0.5 * math.sqrt(2.0))
    assert lengths[3, 2] == pytest.approx(2 * 0.5 * math.sqrt(2.0) + 0.5)


def test_distance_map_cells_and_centres_round_trip_on_a_rotated_map():
    dmap = DistanceMap(np.zeros((20, 30), dtype=bool), 0.1, (1.0, 2.0, 0.5))
    rows, cols = np.array([0, 5, 19]), np.array([0, 12, 29])
    xs, ys = dmap.centres(rows, cols)
    back_rows, back_cols, inside = dmap.cells(xs, ys)
    assert inside.all()
    assert back_rows.tolist() == rows.tolist() and back_cols.tolist() == cols.tolist()
    assert not dmap.cells([0.0], [0.0])[2][0]


def test_distance_map_rejects_free_cells_of_another_shape():
    with pytest.raises(ValueError, match='free cells of shape'):
        DistanceMap(np.zeros((3, 4), dtype=bool), 0.1, free=np.ones(4, dtype=bool))


def test_distance_map_from_an_occupancy_grid_knows_unknown_cells():
    data = [0, -1, 100, 30]
    dmap = DistanceMap.from_occupancy_grid(data, 2, 2, 1.0, (0.0, 0.0, 0.0))
    assert dmap.free.tolist() == [[True, False], [False, True]]
    # Unknown space is not an obstacle to the distances: the unknown cell is a diagonal
    # away from the occupied one.
    assert dmap.distance([1.5], [0.5])[0] == pytest.approx(math.sqrt(2.0))


def test_tag_check_lists_its_upright_tags():
    check = make_check(tags={1: wall_tag(9.9, 3.0, math.pi), 2: wall_tag(0.1, 3.0, 0.0)})
    listed = {fid: (centre, normal) for fid, centre, normal in check.upright_tags()}
    assert listed[1][0] == pytest.approx((9.9, 3.0))
    assert listed[1][1] == pytest.approx((-1.0, 0.0))
    assert listed[2][0] == pytest.approx((0.1, 3.0))
    assert sorted(listed) == [1, 2]
