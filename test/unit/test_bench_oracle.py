"""The recovery suite's oracle: the camera model it uses, and its lower bound on tiny maps."""
import math
import os

import numpy as np
import pytest

from lost_and_found.bench import oracle
from lost_and_found.core import geometry
from lost_and_found.core.config import ConfigError
from lost_and_found.core.fiducial import FiducialMap, facing_yaw_rotation
from lost_and_found.sim.camera import Camera, CameraConfig
from lost_and_found.sim.gridmap import GridMap
from lost_and_found.sim.laser import cast_rays

RES = 0.05
CAMERA = CameraConfig(pixel_noise=0.0, max_view_angle=1.309)
V, W = 0.3, 1.2566370614359172


def box_map(width, height, walls=(), origin=(0.0, 0.0, 0.0)):
    """A walled ``width`` x ``height`` m room (0.1 m border) plus wall boxes [x0, y0, x1, y1]."""
    rows, cols = int(round(height / RES)), int(round(width / RES))
    ys, xs = (np.mgrid[0:rows, 0:cols] + 0.5) * RES
    occupied = (xs < 0.1) | (xs > width - 0.1) | (ys < 0.1) | (ys > height - 0.1)
    for x0, y0, x1, y1 in walls:
        occupied |= (xs >= x0) & (xs <= x1) & (ys >= y0) & (ys <= y1)
    return GridMap.from_occupancy(occupied, RES, origin)


def tag_map(tags):
    """{id: (x, y, z, facing_yaw)} -> FiducialMap."""
    return FiducialMap('map', {i: geometry.make_transform(facing_yaw_rotation(yaw), (x, y, z))
                               for i, (x, y, z, yaw) in tags.items()})


def seen_ids(grid, tags, pose):
    return [d.fiducial_id for d in Camera(CAMERA, tags, grid).detect(pose)]


def build(grid, tags, **kwargs):
    kwargs.setdefault('linear_speed', V)
    kwargs.setdefault('angular_speed', W)
    return oracle.Oracle(grid, tags, CAMERA, **kwargs)


# --- the camera model, vectorised -------------------------------------------------------------

CLUTTER = box_map(8.0, 6.0, walls=[(3.0, 0.0, 3.1, 3.5), (5.0, 2.5, 6.5, 2.6),
                                   (1.5, 4.2, 1.8, 4.5)])
CLUTTER_TAGS = tag_map({1: (3.12, 1.5, 0.3, 0.0), 2: (2.98, 2.5, 0.4, math.pi),
                        3: (5.5, 2.62, 0.3, math.pi / 2), 4: (0.12, 3.0, 0.5, 0.0),
                        5: (7.88, 5.0, 0.3, math.pi), 6: (1.65, 4.18, 0.3, -math.pi / 2)})


@pytest.mark.parametrize('acceptance', [None, oracle.Acceptance(3.0, 1.05, 0.05, 0.5),
                                        oracle.Acceptance(5.0, 1.5, 0.02, 0.5)])
def test_visible_pairs_agrees_with_camera_detect_on_random_poses(acceptance):
    rng = np.random.default_rng(3)
    ids, tags = oracle._tag_arrays(CLUTTER_TAGS)
    poses = np.column_stack([rng.uniform(0.2, 7.8, 600), rng.uniform(0.2, 5.8, 600),
                             rng.uniform(-math.pi, math.pi, 600)])
    poses = poses[~CLUTTER.is_occupied(poses[:, 0], poses[:, 1])]
    n = len(ids)
    ok = oracle.visible_pairs(CLUTTER, CAMERA, tags, np.repeat(poses[:, 0], n),
                              np.repeat(poses[:, 1], n), np.repeat(poses[:, 2], n),
                              np.tile(np.arange(n), len(poses)), acceptance)
    ok = ok.reshape(len(poses), n)
    camera = Camera(CAMERA, CLUTTER_TAGS, CLUTTER)
    seeing = 0
    for pose, row in zip(poses, ok):
        detections = camera.detect(tuple(pose))
        if acceptance is not None:
            # What fiducial_localizer would keep of the noisy camera's detection.
            detections = [d for d in detections if d.distance <= acceptance.max_distance
                          and d.view_angle <= acceptance.max_view_angle
                          and acceptance.pixel_noise * d.distance / (
                              CAMERA.focal_length * CAMERA.tag_size * math.cos(d.view_angle))
                          <= acceptance.max_object_error]
        expected = sorted(d.fiducial_id for d in detections)
        assert sorted(ids[row].tolist()) == expected, pose
        seeing += bool(expected)
    assert seeing > 30 and seeing < len(poses) - 30    # both answers are exercised


def test_line_of_sight_matches_cast_rays():
    rng = np.random.default_rng(4)
    origins = np.column_stack([rng.uniform(0.0, 8.0, 300), rng.uniform(0.0, 6.0, 300)])
    targets = np.column_stack([rng.uniform(0.0, 8.0, 300), rng.uniform(0.0, 6.0, 300)])
    got = oracle.line_of_sight(CLUTTER, origins, targets, 0.1)
    for (ox, oy), (tx, ty), value in zip(origins, targets, got):
        planar = math.hypot(tx - ox, ty - oy)
        rng_ = cast_rays(CLUTTER, ox, oy, [math.atan2(ty - oy, tx - ox)], planar + 0.1)[0]
        assert value == (rng_ >= planar - 0.1)
    assert got.any() and not got.all()


def test_visibility_sees_exactly_what_the_camera_sees_at_every_lattice_pose():
    grid = box_map(4.0, 3.0, walls=[(2.0, 0.0, 2.1, 1.8)])
    tags = tag_map({1: (2.12, 1.0, 0.3, 0.0), 2: (0.12, 2.0, 0.4, 0.0)})
    vis = oracle.Visibility(grid, tags, CAMERA, ~grid.occupied & (grid.distance_field() > 0.3),
                            resolution=0.2, headings=12)
    camera = Camera(CAMERA, tags, grid)
    for n in range(len(vis.lattice)):
        for k, yaw in enumerate(vis.headings):
            pose = (vis.lattice.xs[n], vis.lattice.ys[n], yaw)
            assert vis.sees[n, k] == bool(camera.detect(pose)), pose
    assert vis.tag_visible.all()
    assert 0.0 < vis.coverage() < 1.0


def test_a_tag_no_free_pose_sees_is_reported():
    grid = box_map(4.0, 3.0)
    tags = tag_map({1: (0.12, 1.5, 0.3, 0.0), 2: (0.12, 1.5, 0.3, math.pi)})  # faces the wall
    vis = oracle.Visibility(grid, tags, CAMERA, ~grid.occupied, resolution=0.2, headings=8)
    assert vis.tag_visible.tolist() == [True, False]


# --- the lattice --------------------------------------------------------------------------------

def test_lattice_paths_are_within_the_stretch_of_straight_lines_in_open_space():
    grid = box_map(6.0, 6.0)
    lattice = oracle.Lattice(grid, grid.distance_field() > 0.3, 0.1)
    rng = np.random.default_rng(5)
    for _ in range(20):
        a, b = rng.integers(len(lattice), size=2)
        path = lattice.distances(a)[b]
        straight = math.hypot(lattice.centre_xs[a] - lattice.centre_xs[b],
                              lattice.centre_ys[a] - lattice.centre_ys[b])
        assert straight - 1e-9 <= path <= oracle.STRETCH * straight + 1e-9


def test_the_lattice_goes_around_a_wall():
    grid = box_map(6.0, 4.0, walls=[(3.0, 0.0, 3.1, 3.0)])
    lattice = oracle.Lattice(grid, ~grid.occupied & (grid.distance_field() > 0.2), 0.1)
    a, _ = lattice.nearest(1.5, 1.0)
    b, _ = lattice.nearest(4.5, 1.0)
    # Up to the gap above the wall (y >= 3.2) and back down: far more than the 3 m across.
    assert lattice.distances(a)[b] > 2 * math.hypot(1.5, 2.2)


def test_a_bad_resolution_is_rejected():
    with pytest.raises(oracle.OracleError, match='resolution'):
        oracle.Lattice(box_map(2.0, 2.0), np.ones((40, 40), dtype=bool), 0.0)


# --- the bound ----------------------------------------------------------------------------------

def test_a_tag_in_view_from_the_start_is_zero():
    grid = box_map(6.0, 4.0)
    tags = tag_map({7: (5.88, 2.0, 0.3, math.pi)})
    seconds, detail = build(grid, tags).time((3.0, 2.0, 0.0))
    assert seconds == 0.0
    assert detail['tags'] == [7] and 'start' in detail['reason']


def test_turning_in_place_costs_the_angle_over_the_turn_rate():
    grid = box_map(5.0, 4.0)
    tags = tag_map({3: (0.12, 2.0, 0.3, 0.0)})        # on the west wall, behind the robot
    start = (2.025, 2.025, 0.0)                       # a cell centre: the lattice has it
    # The exact least turn, by the simulator's camera at 0.05 degree steps (either way round).
    turns = np.radians(np.arange(0.0, 180.0, 0.05))
    need = min(t for t in turns if seen_ids(grid, tags, start[:2] + (t,)))
    assert need == pytest.approx(math.pi - 0.5, abs=0.1)      # about half the view off pi
    # Crawling makes driving anywhere useless: the bound is the turn alone, less at most one
    # heading bin (5 degrees), as the bins are samples of the headings that see.
    bound = build(grid, tags, linear_speed=1e-3, resolution=RES, headings=72)
    seconds, detail = bound.time(start)
    assert (need - math.radians(5.0)) / W - 1e-9 <= seconds <= need / W + 1e-9
    assert detail['limited_by'] == 'rotation' and detail['tags'] == [3]
    # At full speed the bound may only get smaller, never exceed the turn.
    assert build(grid, tags).time(start)[0] <= need / W + 1e-9


def test_a_tag_behind_a_wall_is_reached_around_it_and_no_slower_than_a_real_route():
    # A wall from the floor to y = 4.5 at x = 5; the tag hangs on its east face.
    grid = box_map(10.0, 6.0, walls=[(5.0, 0.0, 5.1, 4.5)])
    tags = tag_map({9: (5.12, 1.0, 0.3, 0.0)})
    start = (2.0, 1.0, 0.0)
    seconds, detail = build(grid, tags).time(start)
    assert seconds is not None and detail['tags'] == [9]
    # Every route passes the wall's end, (5.05, 4.5 + the robot's radius).
    through_gap = math.hypot(5.05 - 2.0, 4.68 - 1.0)
    assert seconds * V >= through_gap - 0.2
    assert detail['goal'][0] > 5.1                    # it looks from the east side
    # A real route: up the west side, over the wall's end, down the east side; turn in place
    # at each corner, then face the tag. Its end pose sees the tag, so it bounds from above.
    route = [(2.0, 1.0), (4.6, 5.0), (5.6, 5.0), (6.5, 2.0)]
    end_yaw = math.atan2(1.0 - 2.0, 5.12 - 6.5)
    assert seen_ids(grid, tags, (6.5, 2.0, end_yaw)) == [9]
    headings = [start[2]] + [math.atan2(b[1] - a[1], b[0] - a[0])
                             for a, b in zip(route, route[1:])] + [end_yaw]
    feasible = (sum(math.hypot(b[0] - a[0], b[1] - a[1]) for a, b in zip(route, route[1:])) / V
                + sum(abs(geometry.wrap_angle(b - a)) for a, b in zip(headings, headings[1:]))
                / W)
    assert seconds <= feasible
    # ... and well above the 3 m straight through the wall.
    assert seconds > 3.5 / V


def test_a_tag_in_a_room_the_robot_cannot_reach_gives_no_bound():
    # A closed wall at x = 6: the tag hangs in the east room, which is not connected.
    grid = box_map(10.0, 4.0, walls=[(6.0, 0.0, 6.1, 4.0)])
    tags = tag_map({4: (9.88, 2.0, 0.3, math.pi)})
    seconds, detail = build(grid, tags).time((2.0, 2.0, 0.0))
    assert seconds is None
    assert detail['reason'] and detail['goal'] is None


def test_no_tags_at_all_gives_no_bound():
    seconds, detail = build(box_map(4.0, 4.0), FiducialMap('map', {})).time((2.0, 2.0, 0.0))
    assert seconds is None and detail['reason']


def test_the_bound_grows_with_the_distance_to_the_tag():
    grid = box_map(14.0, 3.0)
    tags = tag_map({1: (13.88, 1.5, 0.3, math.pi)})   # seen from x >= about 9.8
    bound = build(grid, tags)
    near, _ = bound.time((8.0, 1.5, 0.0))
    far, _ = bound.time((3.0, 1.5, 0.0))
    assert 0.0 < near < far
    assert far - near == pytest.approx(5.0 / V, rel=0.05)


def test_counting_only_what_the_localizer_accepts_raises_the_bound():
    grid = box_map(10.0, 3.0)
    tags = tag_map({1: (9.88, 1.5, 0.3, math.pi)})
    start = (6.275, 1.525, 0.0)                       # the tag 3.5 m ahead of the camera
    assert build(grid, tags).time(start)[0] == 0.0    # the camera reports it (4 m range)
    strict = build(grid, tags, acceptance=oracle.Acceptance(max_distance=3.0))
    seconds, detail = strict.time(start)
    # 0.5 m closer, less the lattice slack (snap + half a block diagonal, over the stretch).
    assert (0.5 / oracle.STRETCH - 0.15) / V <= seconds <= 0.5 / V
    assert detail['tags'] == [1] and detail['limited_by'] == 'translation'


def test_bad_speeds_and_poses_are_rejected_by_name():
    grid = box_map(4.0, 4.0)
    tags = tag_map({1: (0.12, 2.0, 0.3, 0.0)})
    with pytest.raises(oracle.OracleError, match='linear_speed'):
        oracle.Oracle(grid, tags, CAMERA, linear_speed=-1.0, angular_speed=1.0)
    with pytest.raises(oracle.OracleError, match='angular_speed'):
        oracle.Oracle(grid, tags, CAMERA, linear_speed=0.3, angular_speed=float('nan'))
    bound = build(grid, tags, resolution=0.2, headings=8)
    with pytest.raises(oracle.OracleError, match='pose'):
        bound.time((1.0, float('nan'), 0.0))
    with pytest.raises(oracle.OracleError, match='pose'):
        bound.time((1.0, 2.0))


# --- configuration --------------------------------------------------------------------------------

def test_the_camera_comes_from_sim_world_yaml_with_noise_off():
    config = oracle.load_camera_config()
    assert config.pixel_noise == 0.0
    assert config.max_range == 4.0 and config.max_view_angle == pytest.approx(1.309)


def test_missing_camera_keys_take_the_defaults_and_bad_ones_are_named(tmp_path):
    path = tmp_path / 'world.yaml'
    path.write_text('camera:\n  max_range: 2.5\n')
    config = oracle.load_camera_config(str(path))
    assert config.max_range == 2.5 and config.hfov == CameraConfig().hfov
    path.write_text('camera:\n  max_range: -1\n')
    with pytest.raises(ConfigError, match='max_range'):
        oracle.load_camera_config(str(path))


def test_the_localizer_acceptance_comes_from_the_shipped_configs():
    acceptance = oracle.localizer_acceptance()
    assert acceptance == oracle.Acceptance(3.0, 1.05, 0.05, 0.5)


def test_speed_limits_come_from_the_configs():
    linear, angular = oracle.speed_limits('package')
    assert linear == 0.3 and angular == pytest.approx(1.2566, abs=1e-4)
    assert oracle.speed_limits('navigator') == (0.3, 1.0)
    assert oracle.speed_limits('robot') == (0.5, 2.0)
    assert oracle.robot_radius() == 0.18
    with pytest.raises(oracle.OracleError, match='warp'):
        oracle.speed_limits('warp')


def test_a_bad_speed_in_a_config_is_named(tmp_path):
    for name in ('sim_navigator.yaml', 'lost_and_found.yaml'):
        with open(os.path.join(oracle.package_dir(), 'config', name)) as source:
            (tmp_path / name).write_text(source.read())
    (tmp_path / 'sim_navigator.yaml').write_text('max_linear: 0\nmax_angular: 1.0\n')
    with pytest.raises(ConfigError, match='max_linear'):
        oracle.speed_limits('package', str(tmp_path))
