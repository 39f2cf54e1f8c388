"""The fiducial camera: exact transforms, field of view, range, occlusion, facing, noise."""
import math

import numpy as np
import pytest

from lost_and_found.core import geometry
from lost_and_found.core.config import ConfigError, config_from_params
from lost_and_found.core.fiducial import (FiducialLocalizer, FiducialLocalizerConfig,
                                          FiducialMap, facing_yaw_rotation)
from lost_and_found.sim.camera import Camera, CameraConfig, rotation_from_vector
from lost_and_found.sim.gridmap import GridMap

RES = 0.05
EXACT = CameraConfig(pixel_noise=0.0)      # camera at (0.1, 0, 0.3) in base, looking forward


def open_grid(occupied=None):
    """A 12 m x 12 m map with its origin at (-6, -6); optionally some occupied cells."""
    occupied = np.zeros((240, 240), dtype=bool) if occupied is None else occupied
    return GridMap.from_occupancy(occupied, RES, (-6.0, -6.0, 0.0))


def tag(position, facing_yaw):
    return geometry.make_transform(facing_yaw_rotation(facing_yaw), position)


def seen(tags, pose=(0.0, 0.0, 0.0), config=EXACT, grid=None):
    camera = Camera(config, FiducialMap('map', tags), grid or open_grid(),
                    np.random.default_rng(0))
    return camera.detect(pose)


def test_optical_frame_looks_forward():
    t = EXACT.base_to_camera()
    np.testing.assert_allclose(t[:3, 3], (0.1, 0.0, 0.3))
    # optical z = base x, optical x = -base y (right), optical y = -base z (down)
    np.testing.assert_allclose(t[:3, 2], (1, 0, 0), atol=1e-12)
    np.testing.assert_allclose(t[:3, 0], (0, -1, 0), atol=1e-12)
    np.testing.assert_allclose(t[:3, 1], (0, 0, -1), atol=1e-12)


def test_a_tag_straight_ahead_is_seen_exactly():
    # Tag 2 m in front of the camera at its height, facing back at it.
    detections = seen({3: tag((2.1, 0.0, 0.3), math.pi)})
    assert [d.fiducial_id for d in detections] == [3]
    d = detections[0]
    # Seen face-on an OpenCV tag frame is the optical frame turned half a turn about x.
    expected = geometry.make_transform(np.diag([1.0, -1.0, -1.0]), (0.0, 0.0, 2.0))
    np.testing.assert_allclose(d.T_camera_fiducial, expected, atol=1e-12)
    assert d.distance == pytest.approx(2.0) and d.view_angle == pytest.approx(0.0, abs=1e-6)
    assert d.object_error == 0.0


def test_a_turned_robot_sees_the_tag_where_it_is():
    # Robot at (1, 2) facing +y, tag 3 m ahead of the camera and 0.5 m to its right.
    pose = (1.0, 2.0, math.pi / 2)
    detections = seen({5: tag((1.5, 2.0 + 0.1 + 3.0, 0.3), -math.pi / 2)}, pose)
    assert len(detections) == 1
    np.testing.assert_allclose(detections[0].T_camera_fiducial[:3, 3], (0.5, 0.0, 3.0),
                               atol=1e-12)


def test_the_localizer_recovers_the_robot_pose_from_a_detection():
    pose = (0.7, -1.2, 0.4)
    tags = {9: tag((3.0, 0.0, 0.4), math.pi - 0.2)}
    detection = seen(tags, pose)[0]
    localizer = FiducialLocalizer(FiducialLocalizerConfig(fiducial_map='x'),
                                  FiducialMap('map', tags))
    x, y, yaw = localizer.pose_from(9, detection.T_camera_fiducial, EXACT.base_to_camera())
    assert (x, y, yaw) == pytest.approx(pose, abs=1e-9)


@pytest.mark.parametrize('name, position, facing', [
    ('behind', (-2.0, 0.0, 0.3), 0.0),
    ('out of range', (4.2, 0.0, 0.3), math.pi),              # 4.1 m > max_range 4 m
    ('seen edge-on', (2.1, 0.0, 0.3), math.pi / 2),
    ('facing away', (2.1, 0.0, 0.3), 0.0),
    ('outside the horizontal field of view', (2.1, 1.3, 0.3), math.pi),   # 0.58 rad
    ('outside the vertical field of view', (2.1, 0.0, 1.2), math.pi),     # 0.42 rad up
])
def test_not_seen(name, position, facing):
    assert seen({1: tag(position, facing)}) == [], name


def test_just_inside_the_limits_is_seen():
    tags = {1: tag((2.1, 0.9, 0.3), math.pi),                # 0.42 rad left, hfov/2 = 0.5
            2: tag((3.9, 0.0, 0.3), math.pi),                # 3.8 m
            3: tag((2.1, -1.0, 0.3), math.pi - 1.2)}         # oblique, but < 75 deg
    assert sorted(d.fiducial_id for d in seen(tags)) == [1, 2, 3]


def test_a_wall_hides_a_tag_but_a_tag_on_a_wall_is_seen():
    occupied = np.zeros((240, 240), dtype=bool)
    occupied[:, 160] = True            # wall cells spanning x = 2.0 .. 2.05
    grid = open_grid(occupied)
    behind = {4: tag((3.0, 0.0, 0.3), math.pi)}
    on_wall = {4: tag((2.0, 0.0, 0.3), math.pi)}
    assert seen(behind, grid=grid) == []
    assert [d.fiducial_id for d in seen(on_wall, grid=grid)] == [4]


def test_nearest_first():
    tags = {1: tag((3.1, 0.0, 0.3), math.pi), 2: tag((1.1, 0.2, 0.3), math.pi)}
    assert [d.fiducial_id for d in seen(tags)] == [2, 1]


def test_no_tags_no_detections():
    assert seen({}) == []


def test_noise_is_seeded_and_grows_with_distance():
    config = CameraConfig(pixel_noise=0.5)

    def errors(distance, seed):
        camera = Camera(config, FiducialMap('map', {1: tag((0.1 + distance, 0.0, 0.3),
                                                           math.pi)}),
                        open_grid(), np.random.default_rng(seed))
        out = []
        for _ in range(300):
            t = camera.detect((0.0, 0.0, 0.0))[0].T_camera_fiducial
            assert geometry.is_rigid(t)
            angle = math.acos(max(-1.0, min(1.0, -t[2, 2])))   # tilt of the tag's z axis
            out.append((t[2, 3] - distance, t[0, 3], angle))
        return np.array(out)

    np.testing.assert_array_equal(errors(1.0, 3), errors(1.0, 3))
    near, far = errors(1.0, 4).std(axis=0), errors(3.0, 4).std(axis=0)
    # depth ~ d^2 (x9), lateral and rotation ~ d (x3): allow generous sampling error.
    assert 6.0 < far[0] / near[0] < 13.0
    assert 2.0 < far[1] / near[1] < 4.5
    assert far[2] > 2.0 * near[2]
    # 0.5 px at 525 px on a 0.14 m tag, 3 m away: depth sigma about 6 cm.
    assert far[0] == pytest.approx(0.5 * 9.0 / (525.0 * 0.14), rel=0.2)


def test_object_error_grows_with_distance_and_obliqueness():
    config = CameraConfig(pixel_noise=0.5)
    near = seen({1: tag((1.1, 0.0, 0.3), math.pi)}, config=config)[0]
    far = seen({1: tag((3.1, 0.0, 0.3), math.pi)}, config=config)[0]
    oblique = seen({1: tag((3.1, 0.0, 0.3), math.pi - 1.0)}, config=config)[0]
    assert 0 < near.object_error < far.object_error < oblique.object_error
    assert far.fiducial_area > oblique.fiducial_area


def test_rotation_from_vector():
    np.testing.assert_allclose(rotation_from_vector((0, 0, math.pi / 2)),
                               geometry.rpy_to_matrix(0, 0, math.pi / 2), atol=1e-12)
    np.testing.assert_array_equal(rotation_from_vector((0, 0, 0)), np.eye(3))


def test_config_problems_name_each_key():
    with pytest.raises(ConfigError) as error:
        config_from_params(CameraConfig, {'hfov': 4.0, 'max_range': 0.0,
                                          'max_view_angle': 2.0, 'pixel_noise': -1.0})
    text = str(error.value)
    for key in ('hfov=4.0', 'max_range=0.0', 'max_view_angle=2.0', 'pixel_noise=-1.0'):
        assert key in text
