"""The generated maps in maps/: formats, free scenario poses, fiducials on walls, coverage."""
import math
import os

import numpy as np
import pytest
import yaml

from lost_and_found.core.fiducial import load_fiducial_map
from lost_and_found.sim.gridmap import load_map
from tool_loader import load_tool

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
MAPS = os.path.join(ROOT, 'maps')
NAMES = ('lab', 'office')
#: Every scenario pose must be at least this far (m) from any obstacle.
CLEARANCE = 0.3
#: The navigator's inflation (robot radius 0.18 m + 0.05 m margin): poses must be connected
#: through cells at least this far from obstacles.
INFLATION = 0.23
#: The fiducial_localizer's defaults: farthest distance (m) and largest view angle (rad).
MAX_DISTANCE = 3.0
MAX_VIEW_ANGLE = 1.05
#: Expected map sizes (m).
SIZES = {'lab': (10.0, 8.0), 'office': (30.0, 20.0)}


def _load_generator():
    return load_tool('make_maps')


@pytest.fixture(scope='module', params=NAMES)
def world(request):
    name = request.param
    grid = load_map(os.path.join(MAPS, name + '.yaml'))
    fiducials = load_fiducial_map(os.path.join(MAPS, name + '_fiducials.yaml'))
    with open(os.path.join(MAPS, name + '_sim.yaml')) as f:
        sim = yaml.safe_load(f)
    return name, grid, fiducials, sim


def scenario_poses(scenario):
    poses = [('start_pose', scenario['start_pose']), ('dock_pose', scenario['dock_pose']),
             ('goal', scenario['goal']), ('kidnap_pose', scenario['kidnap_pose'])]
    poses += [('goals[%d]' % i, g) for i, g in enumerate(scenario['goals'])]
    return poses


def room_of(scenario, x, y):
    for name, boxes in scenario['rooms'].items():
        for x0, y0, x1, y1 in boxes:
            if x0 <= x <= x1 and y0 <= y <= y1:
                return name
    return None


def visible_tags(grid, fiducials, x, y):
    """Ids of tags a camera at (x, y) sees when turned towards them (2D check)."""
    seen = []
    for fiducial_id, pose in fiducials.poses.items():
        tag, normal = pose[:2, 3], pose[:2, 2]
        to_camera = np.array([x, y]) - tag
        distance = float(np.hypot(*to_camera))
        if not 0.0 < distance <= MAX_DISTANCE:
            continue
        if np.dot(to_camera, normal) / distance < math.cos(MAX_VIEW_ANGLE):
            continue
        # Line of sight: no obstacle on the segment, except the wall the tag hangs on.
        steps = np.arange(0.0, distance - 0.1, 0.02)
        points = np.array([x, y]) - np.outer(steps, to_camera / distance)
        if not grid.is_occupied(points[:, 0], points[:, 1]).any():
            seen.append(fiducial_id)
    return seen


# ------------------------------------------------------------------------------ generator

def test_generator_is_deterministic_and_matches_the_committed_maps(tmp_path):
    _load_generator().write_maps(str(tmp_path))
    written = sorted(os.listdir(tmp_path))
    expected = sorted('%s%s' % (n, s) for n in NAMES
                      for s in ('.yaml', '.pgm', '_fiducials.yaml', '_sim.yaml'))
    assert written == expected
    for name in written:
        with open(os.path.join(MAPS, name), 'rb') as committed, \
                open(os.path.join(tmp_path, name), 'rb') as fresh:
            assert committed.read() == fresh.read(), \
                '%s differs: run tools/make_maps.py' % name


# ------------------------------------------------------------------------------ map files

def test_map_server_yaml_conventions(world):
    name, grid, _, _ = world
    with open(os.path.join(MAPS, name + '.yaml')) as f:
        meta = yaml.safe_load(f)
    assert meta['origin'] == [0.0, 0.0, 0.0]
    assert meta['resolution'] == 0.05
    assert meta['negate'] == 0
    assert grid.resolution == 0.05
    width, height = SIZES[name]
    assert grid.shape == (round(height / 0.05), round(width / 0.05))
    assert not grid.unknown.any()
    # Closed outer walls: the robot cannot leave the map.
    assert grid.occupied[0, :].all() and grid.occupied[-1, :].all()
    assert grid.occupied[:, 0].all() and grid.occupied[:, -1].all()


def test_office_rooms_are_similar_and_each_has_a_door():
    from scipy.ndimage import label
    grid = load_map(os.path.join(MAPS, 'office.yaml'))
    with open(os.path.join(MAPS, 'office_sim.yaml')) as f:
        scenario = yaml.safe_load(f)['scenario']
    rooms = scenario['rooms']
    offices = sorted(r for r in rooms if r[0] in 'SN' and r[1:].isdigit())
    assert offices == ['N1', 'N2', 'N3', 'N4', 'S1', 'S2', 'S3', 'S4']
    # Same furniture at the same place: the occupancy of S1..S3 (5.9 m x 5.85 m) is identical,
    # and the north offices are its mirror image.
    size = (117, 118)

    def pattern(room):
        x0, y0 = rooms[room][0][:2]
        row, col = grid.cell_index(x0 + 0.01, y0 + 0.01)
        return grid.occupied[row:row + size[0], col:col + size[1]]

    for room in ('S2', 'S3'):
        assert np.array_equal(pattern('S1'), pattern(room)), room
    for room in ('N1', 'N2', 'N3'):
        assert np.array_equal(pattern('S1'), pattern(room)[::-1]), room
    # A door: every room is drivable-connected to the start pose.
    labels, _ = label(grid.distance_field() >= INFLATION, structure=np.ones((3, 3)))
    start = labels[grid.cell_index(*scenario['start_pose'][:2])]
    for room, boxes in rooms.items():
        x0, y0, x1, y1 = boxes[0]
        rows, cols = grid.cell_index(np.array([x0, x1]), np.array([y0, y1]))
        assert (labels[rows[0]:rows[1], cols[0]:cols[1]] == start).any(), room


# ------------------------------------------------------------------------------ scenario

def test_scenario_sections_agree(world):
    _, _, _, sim = world
    scenario = sim['scenario']
    assert sim['sim_world']['start_pose'] == scenario['start_pose']
    assert sim['sim_world']['dock_pose'] == scenario['dock_pose']
    assert [sim['sim_localizer']['initial_pose_' + k] for k in 'xya'] == scenario['start_pose']
    for key in ('start_pose', 'goal', 'kidnap_pose'):
        assert sim['demo_scenario'][key] == scenario[key]
    assert len(scenario['goals']) >= 4


def test_every_pose_is_free_with_clearance(world):
    _, grid, _, sim = world
    for label, (x, y, yaw) in scenario_poses(sim['scenario']):
        assert grid.is_free(x, y), label
        assert grid.distance_at(x, y) >= CLEARANCE, (label, float(grid.distance_at(x, y)))
        assert -math.pi <= yaw <= math.pi, label


def test_every_pose_is_reachable_from_the_start(world):
    from scipy.ndimage import label
    _, grid, _, sim = world
    drivable = grid.distance_field() >= INFLATION
    labels, _ = label(drivable, structure=np.ones((3, 3)))
    start = sim['scenario']['start_pose']
    start_label = labels[grid.cell_index(start[0], start[1])]
    assert start_label > 0
    for name, (x, y, _) in scenario_poses(sim['scenario']):
        assert labels[grid.cell_index(x, y)] == start_label, name


def test_dock_pose_faces_a_wall_close_by(world):
    _, grid, _, sim = world
    x, y, yaw = sim['scenario']['dock_pose']
    assert grid.distance_at(x, y) <= 0.5
    ahead = [(x + d * math.cos(yaw), y + d * math.sin(yaw)) for d in (0.3, 0.35, 0.4, 0.45)]
    assert any(grid.is_occupied(px, py) for px, py in ahead)


def test_kidnap_is_far_from_where_the_robot_is_lifted(world):
    name, _, _, sim = world
    scenario = sim['scenario']
    start, goal, kidnap = (np.array(scenario[k][:2]) for k in ('start_pose', 'goal',
                                                               'kidnap_pose'))
    # The demo lifts the robot half way: about the middle of start -> goal.
    lift = (start + goal) / 2.0
    assert np.hypot(*(kidnap - lift)) >= 5.0
    assert room_of(scenario, *kidnap) != room_of(scenario, *lift)
    assert room_of(scenario, *kidnap) is not None


# ------------------------------------------------------------------------------ fiducials

def test_fiducials_hang_upright_on_walls_facing_free_space(world):
    name, grid, fiducials, _ = world
    count = len(fiducials)
    assert (4 <= count <= 6) if name == 'lab' else count >= 8 + 8
    for fiducial_id, pose in fiducials.poses.items():
        x, y, z = pose[:3, 3]
        normal = pose[:3, 2]
        assert 0.3 <= z <= 0.5, fiducial_id
        # Upright: y axis up, face horizontal.
        assert np.allclose(pose[:3, 1], [0.0, 0.0, 1.0], atol=1e-6), fiducial_id
        assert abs(normal[2]) < 1e-6, fiducial_id
        # On a wall: 5 cm behind the tag is an occupied cell ...
        assert grid.is_occupied(x - 0.05 * normal[0], y - 0.05 * normal[1]), fiducial_id
        # ... and in front of it free space a robot can stand in.
        for d in (0.05, 0.3, 0.6):
            assert grid.is_free(x + d * normal[0], y + d * normal[1]), (fiducial_id, d)


def test_every_room_has_a_tag_and_the_corridors_a_few(world):
    _, _, fiducials, sim = world
    scenario = sim['scenario']
    per_room = {room: 0 for room in scenario['rooms']}
    for pose in fiducials.poses.values():
        # The room a tag belongs to is the one it faces.
        front = pose[:2, 3] + 0.2 * pose[:2, 2]
        room = room_of(scenario, *front)
        assert room is not None
        per_room[room] += 1
    assert all(n >= 1 for n in per_room.values()), per_room
    corridors = [n for room, n in per_room.items() if room.startswith('corridor')]
    assert sum(corridors) >= (3 if corridors else 0)


def test_a_spinning_robot_sees_a_tag_from_most_of_every_room(world):
    name, grid, fiducials, sim = world
    scenario = sim['scenario']
    for room, boxes in scenario['rooms'].items():
        seen = total = 0
        for x0, y0, x1, y1 in boxes:
            for x in np.arange(x0 + 0.25, x1, 0.5):
                for y in np.arange(y0 + 0.25, y1, 0.5):
                    if grid.distance_at(x, y) < CLEARANCE:
                        continue
                    total += 1
                    seen += bool(visible_tags(grid, fiducials, x, y))
        # Offices and meeting rooms: most places; the long lobby and corridors: half.
        least = 0.45 if room in ('lobby',) or room.startswith('corridor') else 0.65
        assert total > 0 and seen / total >= least, (name, room, seen, total)


def test_the_kidnap_put_down_can_see_a_tag_only_by_turning(world):
    _, grid, fiducials, sim = world
    x, y, yaw = sim['scenario']['kidnap_pose']
    seen = visible_tags(grid, fiducials, x, y)
    assert seen
    # None of them is in the camera's 1 rad field of view at put-down: the search must spin.
    for fiducial_id in seen:
        tag = fiducials.poses[fiducial_id][:2, 3]
        bearing = math.atan2(tag[1] - y, tag[0] - x) - yaw
        assert abs(math.atan2(math.sin(bearing), math.cos(bearing))) > 0.5, fiducial_id
