"""Unit tests of lost_and_found.core.fiducial (pose math, rejections, map parsing)."""
import math
import os

import numpy as np
import pytest
import yaml
from hypothesis import given, settings, strategies as st

from lost_and_found.core import geometry
from lost_and_found.core.config import ConfigError, config_from_params
from lost_and_found.core.fiducial import (
    CoarseTries, FiducialLocalizer, FiducialLocalizerConfig, Observation, PublishGate, Rejection,
    contradicts, facing_yaw, facing_yaw_rotation, initialpose_covariance, load_fiducial_map,
    parse_fiducial_map)
from lost_and_found.state import State

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, '..', '..', 'config', 'fiducials_example.yaml')

#: Camera 0.2 m ahead of the base, 0.3 m up, optical frame (z forward, x right, y down).
T_BASE_CAM = geometry.make_transform((-0.5, 0.5, -0.5, 0.5), (0.2, 0.0, 0.3))
#: A tag 2 m straight ahead of the camera, its face toward the camera, upright: its x axis is
#: the camera's x, its y (up) the camera's -y, its z the camera's -z: half a turn about x.
T_CAM_TAG_AHEAD = geometry.make_transform((1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 2.0))

MAP = {
    'frame_id': 'map',
    'fiducials': [
        {'id': 7, 'position': [3.0, 1.0, 0.3], 'facing_yaw': math.pi},
        {'id': 8, 'position': [2.0, 3.0, 0.3], 'facing_yaw': math.pi / 2},
        {'id': 9, 'position': [-1.0, 0.0, 0.3], 'rpy': [math.pi / 2, 0.0, -math.pi / 2]},
    ],
}


def localizer(**kwargs):
    """A localizer over MAP with the default thresholds, overridden by ``kwargs``."""
    config = FiducialLocalizerConfig(fiducial_map='/x.yaml', **kwargs)
    config.validate()
    return FiducialLocalizer(config, parse_fiducial_map(MAP))


def tilted_tag(theta, distance=2.0):
    """The tag ahead of the camera, turned by ``theta`` about its own y (vertical) axis."""
    rotation = geometry.quaternion_to_matrix((1.0, 0.0, 0.0, 0.0)) @ np.array(
        [[math.cos(theta), 0.0, math.sin(theta)], [0.0, 1.0, 0.0],
         [-math.sin(theta), 0.0, math.cos(theta)]])
    return geometry.make_transform(rotation, (0.0, 0.0, distance))


# --- pose math -----------------------------------------------------------------------------

def test_tag_on_a_wall_two_metres_ahead_gives_the_exact_pose():
    # Tag 8 faces +y from (2, 3): the camera is 2 m north of it looking south, so the base is
    # 0.2 m further north, heading -pi/2.
    best, reasons = localizer().estimate([(8, T_CAM_TAG_AHEAD, 0.01)], T_BASE_CAM)
    assert reasons == [(8, None)]
    assert (best.x, best.y, best.yaw) == pytest.approx((2.0, 5.2, -math.pi / 2), abs=1e-12)
    assert best.fiducial_id == 8
    assert best.distance == pytest.approx(2.0)


def test_tag_facing_minus_x_gives_heading_zero():
    best, _ = localizer().estimate([(7, T_CAM_TAG_AHEAD, 0.0)], T_BASE_CAM)
    assert (best.x, best.y, best.yaw) == pytest.approx((0.8, 1.0, 0.0), abs=1e-12)


def test_tag_right_of_the_optical_axis_shifts_the_robot_left():
    # Seen 0.5 m to the right (camera +x) means the robot stands 0.5 m to the tag's left.
    t_cam_tag = geometry.make_transform((1.0, 0.0, 0.0, 0.0), (0.5, 0.0, 2.0))
    best, _ = localizer().estimate([(7, t_cam_tag, 0.0)], T_BASE_CAM)
    assert (best.x, best.y, best.yaw) == pytest.approx((0.8, 1.5, 0.0), abs=1e-12)


def test_rpy_entry_matches_the_equivalent_facing_yaw():
    # Tag 9 (rpy roll pi/2, yaw -pi/2) faces -x like tag 7: the same view gives a robot 2.2 m
    # in front of it along -x.
    best, _ = localizer().estimate([(9, T_CAM_TAG_AHEAD, 0.0)], T_BASE_CAM)
    assert (best.x, best.y, best.yaw) == pytest.approx((-3.2, 0.0, 0.0), abs=1e-12)


def test_a_tag_seen_obliquely_still_gives_the_exact_pose():
    # Turned 0.5 rad about its vertical axis: the robot stands off the tag's normal, but
    # the estimate must agree with the composition done by hand.
    t_cam_tag = tilted_tag(0.5)
    best, reasons = localizer().estimate([(8, t_cam_tag, 0.0)], T_BASE_CAM)
    assert reasons == [(8, None)]
    t_map_tag = geometry.make_transform(facing_yaw_rotation(math.pi / 2), (2.0, 3.0, 0.3))
    t_map_base = t_map_tag @ np.linalg.inv(t_cam_tag) @ np.linalg.inv(T_BASE_CAM)
    expected = (t_map_base[0, 3], t_map_base[1, 3], geometry.yaw_of(t_map_base))
    assert (best.x, best.y, best.yaw) == pytest.approx(expected, abs=1e-9)
    assert best.yaw == pytest.approx(-math.pi / 2 - 0.5, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.floats(-5, 5), st.floats(-5, 5), st.floats(-math.pi, math.pi),
       st.floats(-0.6, 0.6), st.floats(0.5, 2.8))
def test_recovers_any_robot_pose_that_sees_the_tag(x, y, yaw, bearing, distance):
    # Put the robot where it sees tag 8 at ``bearing`` (rad from the tag normal) and
    # ``distance``, then check the estimate returns exactly that pose.
    loc = localizer()
    t_map_base = geometry.make_transform(geometry.rpy_to_matrix(0.0, 0.0, yaw), (x, y, 0.0))
    camera = geometry.compose(t_map_base, T_BASE_CAM)
    # Straight ahead of the camera, its face turned ``bearing`` away from facing the robot.
    t_map_tag = geometry.make_transform(
        facing_yaw_rotation(yaw + math.pi + bearing),
        camera[:3, 3] + distance * np.array([math.cos(yaw), math.sin(yaw), 0.0]))
    loc._map.poses[8] = t_map_tag
    t_cam_tag = geometry.compose(geometry.invert_transform(camera), t_map_tag)
    best, reasons = loc.estimate([Observation(8, t_cam_tag, 0.0)], T_BASE_CAM)
    assert reasons == [(8, None)]
    assert (best.x, best.y) == pytest.approx((x, y), abs=1e-9)
    assert math.sin(best.yaw - yaw) == pytest.approx(0.0, abs=1e-9)
    assert math.cos(best.yaw - yaw) > 0.0
    assert -math.pi <= best.yaw < math.pi


# --- rejections ----------------------------------------------------------------------------

def test_unknown_id_is_ignored_and_counted():
    loc = localizer()
    best, reasons = loc.estimate([(99, T_CAM_TAG_AHEAD, 0.0)], T_BASE_CAM)
    assert best is None
    assert reasons == [(99, Rejection.UNKNOWN_ID)]
    assert loc.rejected[Rejection.UNKNOWN_ID] == 1


@pytest.mark.parametrize('error', [0.051, 1.0])
def test_high_object_error_is_rejected(error):
    best, reasons = localizer().estimate([(8, T_CAM_TAG_AHEAD, error)], T_BASE_CAM)
    assert best is None and reasons == [(8, Rejection.OBJECT_ERROR)]


@pytest.mark.parametrize('error', [float('nan'), float('inf'), float('-inf'), 'bad', None,
                                   pytest.param(10 ** 400, id='10**400'), -0.01, -1e-12])
def test_object_error_that_is_not_a_finite_number_at_least_0_is_rejected_as_such(error):
    # Not OBJECT_ERROR (too high), which a closer view cures: this detection has no error
    # estimate at all. -inf and negative errors used to pass the "<= max_object_error" test
    # and be accepted.
    loc = localizer()
    best, reasons = loc.estimate([(8, T_CAM_TAG_AHEAD, error)], T_BASE_CAM)
    assert best is None and reasons == [(8, Rejection.BAD_OBJECT_ERROR)]
    assert loc.rejected[Rejection.BAD_OBJECT_ERROR] == 1


@pytest.mark.parametrize('error', [0.05, 0.0, -0.0])
def test_object_error_at_the_limits_is_accepted(error):
    best, _ = localizer().estimate([(8, T_CAM_TAG_AHEAD, error)], T_BASE_CAM)
    assert best is not None


def test_far_tag_is_rejected():
    far = geometry.make_transform((1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 3.01))
    best, reasons = localizer().estimate([(8, far, 0.0)], T_BASE_CAM)
    assert best is None and reasons == [(8, Rejection.TOO_FAR)]
    best, _ = localizer(max_distance=3.5).estimate([(8, far, 0.0)], T_BASE_CAM)
    assert best is not None


def test_grazing_view_is_rejected():
    loc = localizer()
    best, reasons = loc.estimate([(8, tilted_tag(1.1), 0.0)], T_BASE_CAM)
    assert best is None and reasons == [(8, Rejection.GRAZING)]
    best, reasons = loc.estimate([(8, tilted_tag(-1.1), 0.0)], T_BASE_CAM)
    assert reasons == [(8, Rejection.GRAZING)]
    best, reasons = loc.estimate([(8, tilted_tag(1.0), 0.0)], T_BASE_CAM)
    assert best is not None and reasons == [(8, None)]


def test_tag_seen_from_behind_is_rejected():
    behind = geometry.make_transform(None, (0.0, 0.0, 2.0))   # tag z points away
    best, reasons = localizer().estimate([(8, behind, 0.0)], T_BASE_CAM)
    assert best is None and reasons == [(8, Rejection.GRAZING)]


def _scaled():
    t = T_CAM_TAG_AHEAD.copy()
    t[:3, :3] *= 1.1
    return t


@pytest.mark.parametrize('t_cam_tag,t_base_cam', [
    (np.full((4, 4), np.nan), T_BASE_CAM),
    (geometry.make_transform(None, (0.0, float('inf'), 2.0)), T_BASE_CAM),
    (_scaled(), T_BASE_CAM),
    (np.eye(3), T_BASE_CAM),
    ('not a matrix', T_BASE_CAM),
    (T_CAM_TAG_AHEAD, np.full((4, 4), np.nan)),
])
def test_bad_transforms_are_rejected(t_cam_tag, t_base_cam):
    loc = localizer()
    best, reasons = loc.estimate([(8, t_cam_tag, 0.0)], t_base_cam)
    assert best is None and reasons == [(8, Rejection.BAD_TRANSFORM)]
    assert loc.rejected[Rejection.BAD_TRANSFORM] == 1


def test_closest_accepted_observation_wins():
    near = geometry.make_transform((1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 1.5))
    nearest_but_bad = geometry.make_transform((1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.5))
    observations = [(7, T_CAM_TAG_AHEAD, 0.0), (99, nearest_but_bad, 0.0),
                    (8, near, 0.0), (9, nearest_but_bad, 0.2)]
    best, reasons = localizer().estimate(observations, T_BASE_CAM)
    assert reasons == [(7, None), (99, Rejection.UNKNOWN_ID), (8, None),
                       (9, Rejection.OBJECT_ERROR)]
    assert best.fiducial_id == 8
    assert best.distance == pytest.approx(1.5)
    assert (best.x, best.y) == pytest.approx((2.0, 4.7))


def test_no_observations():
    assert localizer().estimate([], T_BASE_CAM) == (None, [])


# --- coarse fixes --------------------------------------------------------------------------

def coarse(observations, skip=(), **kwargs):
    """The coarse estimate of ``observations`` with the default limits, overridden by
    ``kwargs``, and the fix's rejections."""
    loc = localizer(**kwargs)
    best, reasons = loc.estimate(observations, T_BASE_CAM)
    assert best is None
    return loc.coarse_estimate(observations, reasons, T_BASE_CAM, skip), reasons


def test_a_tag_too_far_for_a_fix_gives_a_coarse_one_at_its_exact_pose():
    # Tag 8 faces +y from (2, 3): seen 4 m straight ahead, the base is 4.2 m north of it.
    far = geometry.make_transform((1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 4.0))
    estimate, reasons = coarse([(8, far, 0.01)])
    assert reasons == [(8, Rejection.TOO_FAR)]
    assert (estimate.x, estimate.y, estimate.yaw) == pytest.approx((2.0, 7.2, -math.pi / 2))
    assert estimate.fiducial_id == 8 and estimate.distance == pytest.approx(4.0)


def test_grazing_and_noisy_tags_give_coarse_fixes_within_the_coarse_limits():
    assert coarse([(8, tilted_tag(1.2), 0.0)])[0].fiducial_id == 8
    assert coarse([(8, T_CAM_TAG_AHEAD, 0.1)])[0].fiducial_id == 8
    assert coarse([(8, tilted_tag(1.4), 0.0)])[0] is None
    assert coarse([(8, T_CAM_TAG_AHEAD, 0.2)])[0] is None
    far = geometry.make_transform((1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 4.6))
    assert coarse([(8, far, 0.0)])[0] is None
    assert coarse([(8, far, 0.0)], coarse_max_distance=5.0)[0] is not None


def test_no_coarse_fix_from_unknown_ids_broken_detections_or_spent_tags():
    far = geometry.make_transform((1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 4.0))
    assert coarse([(99, far, 0.0)])[0] is None
    assert coarse([(8, far, float('nan'))])[0] is None
    assert coarse([(8, _scaled(), 0.0)])[0] is None
    assert coarse([(8, far, 0.0)], skip={8})[0] is None


def test_the_nearest_usable_tag_gives_the_coarse_fix():
    far = geometry.make_transform((1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 4.0))
    farther = geometry.make_transform((1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 4.4))
    estimate, _ = coarse([(7, farther, 0.0), (8, far, 0.0), (9, tilted_tag(1.5, 3.5), 0.0)])
    assert estimate.fiducial_id == 8
    assert coarse([(7, farther, 0.0), (8, far, 0.0)], skip={8})[0].fiducial_id == 7


def test_coarse_tries_are_per_tag_and_end_with_the_lost_episode():
    tries = CoarseTries(2)
    tries.use(8)
    assert tries.spent() == frozenset()
    tries.use(8)
    tries.use(7)
    assert tries.spent() == {8}
    for state in (State.LOST, State.LOCALIZING, State.NEED_HELP):
        tries.on_state(state)
        assert tries.spent() == {8}
    tries.on_state(State.IDLE)
    assert tries.spent() == frozenset()
    tries.use(8)
    tries.use(8)
    tries.on_state(State.FLYING)
    assert tries.spent() == frozenset()


@pytest.mark.parametrize('key,value', [
    ('coarse_fixes', 'yes'), ('coarse_max_distance', 0.0), ('coarse_max_view_angle', 2.0),
    ('coarse_max_object_error', -0.1), ('coarse_sigma_xy', 0.0), ('coarse_sigma_yaw', -1.0),
    ('coarse_tries', 0), ('coarse_tries', 1.5)])
def test_bad_coarse_settings_are_named(key, value):
    with pytest.raises(ConfigError, match=key):
        FiducialLocalizerConfig(fiducial_map='/x.yaml', **{key: value}).validate()


# --- map parsing ---------------------------------------------------------------------------

def test_example_map_loads_and_its_two_conventions_agree():
    fmap = load_fiducial_map(EXAMPLE)
    assert fmap.frame_id == 'map'
    assert sorted(fmap.poses) == [7, 8]
    # Tag 7 is written with rpy; it must equal an upright tag facing -x.
    np.testing.assert_allclose(fmap.poses[7][:3, :3], facing_yaw_rotation(math.pi), atol=1e-12)
    np.testing.assert_allclose(fmap.poses[7][:3, 3], [3.0, 1.0, 0.3])


def test_facing_yaw_rotation_axes():
    r = facing_yaw_rotation(0.0)
    # Face (z) toward +x, y up, x (right as seen by a viewer facing the tag) toward +y.
    np.testing.assert_allclose(r, [[0, 0, 1], [1, 0, 0], [0, 1, 0]], atol=1e-12)
    assert geometry.is_rigid(geometry.make_transform(facing_yaw_rotation(1.234)))


@pytest.mark.parametrize('yaw', [0.0, 1.234, -2.9, math.pi])
def test_facing_yaw_inverts_facing_yaw_rotation(yaw):
    pose = geometry.make_transform(facing_yaw_rotation(yaw), (1.0, 2.0, 0.4))
    assert math.cos(facing_yaw(pose) - yaw) == pytest.approx(1.0)
    assert math.sin(facing_yaw(pose) - yaw) == pytest.approx(0.0, abs=1e-12)
    assert facing_yaw(pose[:3, :3]) == facing_yaw(pose)


def test_a_tag_tilted_past_flat_has_no_facing_yaw():
    # Tilted back about its x axis until its face points up 80 and 70 degrees.
    for tilt, expected in ((math.radians(80.0), None), (math.radians(70.0), 0.0)):
        c, s = math.cos(tilt), math.sin(tilt)
        tilted = facing_yaw_rotation(0.0) @ np.array([[1, 0, 0], [0, c, s], [0, -s, c]])
        assert tilted[2, 2] == pytest.approx(s)         # the face's upward part
        got = facing_yaw(tilted)
        assert got == expected if expected is None else got == pytest.approx(expected)
    assert facing_yaw(np.eye(3)) is None            # face straight up
    assert facing_yaw(np.full((3, 3), np.nan)) is None


def test_frame_id_defaults_to_map():
    assert parse_fiducial_map({'fiducials': MAP['fiducials']}).frame_id == 'map'


def _entries(*entries):
    return {'frame_id': 'map', 'fiducials': list(entries)}


@pytest.mark.parametrize('data,expected', [
    (_entries({'id': 1, 'position': [0, 0, 0], 'rpy': [0, 0, 0]},
              {'id': 1, 'position': [1, 0, 0], 'rpy': [0, 0, 0]}),
     'fiducials[1] (id 1): duplicate id'),
    (_entries({'id': 2, 'rpy': [0, 0, 0]}), 'fiducials[0] (id 2): missing position'),
    (_entries({'id': 3, 'position': [0, float('nan'), 0], 'rpy': [0, 0, 0]}),
     'fiducials[0] (id 3): position=[0, nan, 0]'),
    (_entries({'id': 4, 'position': [0, 0], 'rpy': [0, 0, 0]}), 'fiducials[0] (id 4): position'),
    (_entries({'id': 5, 'position': [0, 0, 0], 'rpy': [0, 0, 0], 'facing_yaw': 1.0}),
     'fiducials[0] (id 5): needs exactly one of rpy or facing_yaw (has both)'),
    (_entries({'id': 6, 'position': [0, 0, 0]}),
     'fiducials[0] (id 6): needs exactly one of rpy or facing_yaw (has neither)'),
    (_entries({'id': 7.5, 'position': [0, 0, 0], 'rpy': [0, 0, 0]}),
     'fiducials[0] (id 7.5): id must be an integer'),
    (_entries({'id': '7', 'position': [0, 0, 0], 'rpy': [0, 0, 0]}),
     "fiducials[0] (id '7'): id must be an integer"),
    (_entries({'id': True, 'position': [0, 0, 0], 'rpy': [0, 0, 0]}),
     'fiducials[0] (id True): id must be an integer'),
    (_entries({'position': [0, 0, 0], 'rpy': [0, 0, 0]}), 'fiducials[0] (id None): missing id'),
    (_entries({'id': 8, 'position': [0, 0, 0], 'facing_yaw': float('inf')}),
     'fiducials[0] (id 8): facing_yaw=inf'),
    # Integers too big for a float: no finite number, not an OverflowError.
    (_entries({'id': 11, 'position': [10 ** 400, 0, 0], 'facing_yaw': 0.0}),
     'fiducials[0] (id 11): position=[1000'),
    (_entries({'id': 12, 'position': [0, 0, 0], 'rpy': [0, -10 ** 400, 0]}),
     'fiducials[0] (id 12): rpy=[0, -1000'),
    (_entries({'id': 13, 'position': [0, 0, 0], 'facing_yaw': 10 ** 400}),
     'fiducials[0] (id 13): facing_yaw=1000'),
    (_entries({'id': 9, 'position': [0, 0, 0], 'rpy': [0, 0, 'x']}), 'fiducials[0] (id 9): rpy'),
    (_entries({'id': 10, 'position': [0, 0, 0], 'yaw': 1.0}), 'unknown keys yaw'),
    (_entries('7'), "fiducials[0]='7'"),
    (_entries(), 'fiducials=[]: must be a non-empty list'),
    ({'frame_id': '', 'fiducials': MAP['fiducials']}, "frame_id='': must be a non-empty"),
    ({'frame_id': '/map', 'fiducials': MAP['fiducials']}, "frame_id='/map': must be a frame"),
    ({'fiducial': MAP['fiducials']}, 'unknown keys fiducial'),
    (['not', 'a', 'mapping'], 'must be a mapping'),
])
def test_bad_map_entries_are_named(data, expected):
    with pytest.raises(ConfigError) as error:
        parse_fiducial_map(data, source='test.yaml')
    assert expected in str(error.value)
    assert str(error.value).startswith('test.yaml: ')


def test_every_bad_entry_is_reported_at_once():
    data = _entries({'id': 1, 'rpy': [0, 0, 0]}, {'id': 2.5, 'position': [0, 0, 0]})
    with pytest.raises(ConfigError) as error:
        parse_fiducial_map(data)
    assert len(error.value.problems) == 3


def test_missing_and_unparsable_files_name_the_path(tmp_path):
    missing = str(tmp_path / 'nope.yaml')
    with pytest.raises(ConfigError, match='nope.yaml.*cannot read'):
        load_fiducial_map(missing)
    broken = tmp_path / 'broken.yaml'
    broken.write_text('fiducials: [ {id: 1\n')
    with pytest.raises(ConfigError, match='broken.yaml.*not valid YAML'):
        load_fiducial_map(str(broken))
    bad = tmp_path / 'bad.yaml'
    bad.write_text('fiducials:\n  - {id: 1, position: [0, 0, .nan], facing_yaw: 0}\n')
    with pytest.raises(ConfigError, match=r"bad.yaml.*fiducials\[0\] \(id 1\): position"):
        load_fiducial_map(str(bad))


@pytest.mark.parametrize('text, key', [
    ('fiducials:\n  - {id: 7, position: [1, 0, 0.3], facing_yaw: 0}\n'
     'fiducials:\n  - {id: 9, position: [2, 0, 0.3], facing_yaw: 0}\n', 'fiducials'),
    ('fiducials:\n  - {id: 7, position: [1, 0, 0.3], facing_yaw: 0, facing_yaw: 1.5}\n',
     'facing_yaw'),
])
def test_a_key_given_twice_is_refused_by_name(tmp_path, text, key):
    # YAML's last-one-wins would drop the first block's tags, or a heading, without a word
    twice = tmp_path / 'twice.yaml'
    twice.write_text(text)
    with pytest.raises(ConfigError, match="(?s)twice.yaml.*'%s' a second time" % key):
        load_fiducial_map(str(twice))


def test_a_map_file_that_is_not_utf8_names_the_path(tmp_path):
    latin1 = tmp_path / 'latin1.yaml'
    # A Latin-1 degree sign in a comment, as an editor in another locale may write it.
    latin1.write_bytes(b'# tag 8: 2\xb0 off\nframe_id: map\nfiducials:\n'
                       b'  - {id: 8, position: [2.0, 3.0, 0.3], facing_yaw: 1.57}\n')
    with pytest.raises(ConfigError) as error:
        load_fiducial_map(str(latin1))
    assert str(error.value).startswith('fiducial_map %r: not UTF-8 text' % str(latin1))
    # The same map in UTF-8 loads.
    utf8 = tmp_path / 'utf8.yaml'
    utf8.write_bytes(latin1.read_bytes().decode('latin-1').encode('utf-8'))
    assert sorted(load_fiducial_map(str(utf8)).poses) == [8]


@pytest.mark.parametrize('digits, expected', [
    (400, r'fiducials\[0\] \(id 8\): position=\[9999'),    # too big for a float
    (5000, 'cannot parse'),                                  # too long for int() itself
])
def test_a_huge_integer_in_a_map_file_names_the_path(tmp_path, digits, expected):
    huge = tmp_path / 'huge.yaml'
    huge.write_text('fiducials:\n  - {id: 8, position: [%s, 0, 0.3], facing_yaw: 0}\n'
                    % ('9' * digits))
    with pytest.raises(ConfigError, match=r'huge.yaml.*' + expected):
        load_fiducial_map(str(huge))


# --- config, covariance, gate --------------------------------------------------------------

def test_config_defaults_need_a_map_path():
    with pytest.raises(ConfigError, match="fiducial_map='': must be a non-empty string"):
        config_from_params(FiducialLocalizerConfig, {})
    config = config_from_params(FiducialLocalizerConfig, {'fiducial_map': '/m.yaml'})
    assert config.publish_in_states == ('LOST', 'LOCALIZING')
    assert (config.max_object_error, config.max_distance, config.max_view_angle) == (
        0.05, 3.0, 1.05)


@pytest.mark.parametrize('params,name', [
    ({'publish_in_states': ['LOST', 'LOSTT']}, 'publish_in_states'),
    ({'publish_in_states': []}, 'publish_in_states=()'),
    ({'max_view_angle': 2.0}, 'max_view_angle=2.0'),
    ({'max_distance': 0.0}, 'max_distance=0.0'),
    ({'sigma_xy': -0.1}, 'sigma_xy=-0.1'),
    ({'sigma_yaw': float('nan')}, 'sigma_yaw=nan'),
    ({'sigma_xy': 11.0}, 'sigma_xy=11.0'),
    ({'coarse_sigma_yaw': 3.5}, 'coarse_sigma_yaw=3.5'),
    ({'min_interval': -1.0}, 'min_interval=-1.0'),
    ({'base_frame': ''}, "base_frame=''"),
    ({'tf_timeout': 0}, 'tf_timeout=0.0'),
    ({'correct_in_states': ['IDLE', 'HOME']}, 'correct_in_states'),
    ({'correct_xy': 0.0}, 'correct_xy=0.0'),
    ({'correct_yaw': 4.0}, 'correct_yaw=4.0'),
    ({'base_frame': '/base_footprint'}, "base_frame='/base_footprint'"),
    ({'map_frame': '/map'}, "map_frame='/map'"),
    # A window shorter than the missing time never lets a tag be missing long enough.
    ({'verify_window': 1.0, 'verify_missing_time': 1.5}, 'verify_window=1.0'),
])
def test_bad_config_values_are_named(params, name):
    params = dict(params, fiducial_map='/m.yaml')
    with pytest.raises(ConfigError) as error:
        config_from_params(FiducialLocalizerConfig, params)
    assert name in str(error.value)


def shipped_fiducial_params():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, '..', '..', 'config', 'fiducial_localizer.yaml')) as stream:
        return dict(yaml.safe_load(stream), fiducial_map='/m.yaml')


def test_the_shipped_and_default_settings_have_no_caveats():
    assert config_from_params(FiducialLocalizerConfig, shipped_fiducial_params()).caveats() == []
    assert FiducialLocalizerConfig(fiducial_map='/m.yaml').caveats() == []
    # State names are read without regard to case, as the publishing gate reads them.
    lower = dict(shipped_fiducial_params(), publish_in_states=['lost', 'localizing'])
    assert config_from_params(FiducialLocalizerConfig, lower).caveats() == []
    off = dict(shipped_fiducial_params(), coarse_fixes=False, coarse_max_distance=1.0,
               publish_in_states=['LOCALIZING'])
    assert config_from_params(FiducialLocalizerConfig, off).caveats() == []


@pytest.mark.parametrize('params,fragments', [
    ({'publish_in_states': ['LOCALIZING']}, ['LOST is not in publish_in_states']),
    ({'coarse_max_distance': 3.0}, ['coarse_max_distance (3) is not above max_distance (3)']),
    ({'coarse_max_view_angle': 0.9}, ['coarse_max_view_angle (0.9) is not above max_view_angle']),
    ({'coarse_max_object_error': 0.05, 'max_object_error': 0.08},
     ['coarse_max_object_error (0.05) is not above max_object_error (0.08)']),
    ({'coarse_max_distance': 2.0, 'coarse_max_view_angle': 1.0,
      'coarse_max_object_error': 0.01}, ['coarse_max_distance', 'coarse_max_view_angle',
                                         'coarse_max_object_error', 'never fire']),
])
def test_settings_that_silence_coarse_fixes_are_named(params, fragments):
    config = config_from_params(FiducialLocalizerConfig, dict(shipped_fiducial_params(), **params))
    caveats = config.caveats()
    assert len(caveats) == len(fragments)
    for caveat, fragment in zip(caveats, fragments):
        assert fragment in caveat, caveats


def test_covariance_is_tight_on_x_y_yaw_only():
    cov = initialpose_covariance(0.1, 0.2)
    assert len(cov) == 36
    assert cov[0] == pytest.approx(0.01) and cov[7] == pytest.approx(0.01)
    assert cov[35] == pytest.approx(0.04)
    assert all(v == 0.0 for i, v in enumerate(cov) if i not in (0, 7, 35))


def test_publish_gate_states_and_interval():
    gate = PublishGate(('LOST', 'LOCALIZING'), 1.0)
    assert not gate.is_open(None, 0.0)
    assert not gate.is_open(State.IDLE, 0.0)
    assert not gate.is_open(State.NAVIGATING, 0.0)
    assert gate.is_open(State.LOST, 0.0)
    gate.published(10.0)
    assert not gate.is_open(State.LOST, 10.5)
    assert not gate.is_open(State.LOCALIZING, 10.99)
    assert gate.is_open(State.LOCALIZING, 11.0)
    # The clock jumped back: the old publication time must not block for ages.
    assert gate.is_open(State.LOST, 2.0)


def test_publish_gate_checks_in_the_localized_states():
    gate = PublishGate(('LOST', 'LOCALIZING'), 1.0, ('IDLE', 'NAVIGATING'))
    assert gate.kind(State.LOST, 0.0) == 'fix' and gate.kind(State.NAVIGATING, 0.0) == 'check'
    assert gate.kind(State.FLYING, 0.0) is None and gate.kind(None, 0.0) is None
    assert not gate.is_open(State.IDLE, 0.0)         # every fix: only in the first states
    gate.published(5.0)
    assert gate.kind(State.IDLE, 5.5) is None         # one rate limit for both kinds
    assert gate.kind(State.IDLE, 6.0) == 'check'
    # A state in both lists publishes every fix.
    assert PublishGate(('LOST',), 1.0, ('LOST', 'IDLE')).kind(State.LOST, 0.0) == 'fix'


@pytest.mark.parametrize('fix, estimate, expected', [
    ((2.0, 1.0, 0.1), (2.3, 1.2, 0.2), False),        # within 1 m and 0.5 rad: agrees
    ((2.0, 1.0, 0.1), (3.1, 1.0, 0.1), True),         # 1.1 m away
    ((2.0, 1.0, 3.1), (2.0, 1.0, -3.1), False),       # 0.08 rad apart across +-pi
    ((2.0, 1.0, 0.0), (2.0, 1.0, 0.6), True),         # 0.6 rad apart
])
def test_contradicts_is_a_gross_disagreement_only(fix, estimate, expected):
    assert contradicts(fix, estimate, 1.0, 0.5) is expected


def test_adapter_conversions_with_message_classes():
    nodes = pytest.importorskip('lost_and_found.nodes.fiducial_localizer')
    from fiducial_msgs.msg import FiducialTransform, FiducialTransformArray
    import rospy
    msg = FiducialTransformArray()
    good = FiducialTransform(fiducial_id=8, object_error=0.01)
    good.transform.translation.z = 2.0
    good.transform.rotation.x = 1.0
    zero_quaternion = FiducialTransform(fiducial_id=7)
    msg.transforms = [good, zero_quaternion]
    observations = nodes.observations_from_msg(msg)
    np.testing.assert_allclose(observations[0][1], T_CAM_TAG_AHEAD)
    assert observations[0][0] == 8 and observations[0][2] == 0.01
    assert np.all(np.isnan(observations[1][1]))
    best, reasons = localizer().estimate(observations, T_BASE_CAM)
    assert reasons[1] == (7, Rejection.BAD_TRANSFORM)
    pose = nodes.pose_msg(best, 'map', rospy.Time(5), initialpose_covariance(0.1, 0.1))
    assert pose.header.frame_id == 'map' and pose.header.stamp.secs == 5
    assert (pose.pose.pose.position.x, pose.pose.pose.position.y) == pytest.approx((2.0, 5.2))
    q = pose.pose.pose.orientation
    assert (q.x, q.y) == (0.0, 0.0)
    assert 2.0 * math.atan2(q.z, q.w) == pytest.approx(-math.pi / 2)
    assert pose.pose.covariance[35] == pytest.approx(0.01)


class _Recorder:
    """A stand-in publisher that keeps what is published."""

    def __init__(self):
        self.msgs = []

    def publish(self, msg):
        """Keep ``msg``."""
        self.msgs.append(msg)


class _FixedTf:
    """A stand-in tf buffer whose every lookup gives the camera mount T_BASE_CAM."""

    def lookup_transform(self, target, source, when, timeout):
        """T_BASE_CAM as a TransformStamped, whatever the frames."""
        from geometry_msgs.msg import TransformStamped
        stamped = TransformStamped()
        t = stamped.transform.translation
        t.x, t.y, t.z = T_BASE_CAM[:3, 3]
        r = stamped.transform.rotation
        r.x, r.y, r.z, r.w = geometry.matrix_to_quaternion(T_BASE_CAM[:3, :3])
        return stamped


@pytest.mark.parametrize('error, distant', [
    (0.2, True),                                        # too noisy: a closer view may cure it
    (float('nan'), False), (float('inf'), False),       # no error estimate: not a goal
    (-0.5, False),                                      # a broken message: not a goal either
])
def test_only_a_detection_with_a_finite_object_error_is_a_distant_tag(monkeypatch, error,
                                                                      distant):
    nodes = pytest.importorskip('lost_and_found.nodes.fiducial_localizer')
    from fiducial_msgs.msg import FiducialTransform, FiducialTransformArray
    import rospy
    monkeypatch.setattr(rospy, 'get_time', lambda: 5.0)
    warnings = []
    monkeypatch.setattr(rospy, 'logwarn_throttle', lambda period, text: warnings.append(text))
    loc = localizer()
    node = nodes.FiducialLocalizerNode(loc, loc._config, 'map')
    node._pub, node._distant_pub = _Recorder(), _Recorder()
    node._tf_buffer = _FixedTf()
    node._state_client = type('Client', (), {'state': State.LOST})()
    seen = FiducialTransform(fiducial_id=8, object_error=error)
    seen.transform.translation.z = 2.0
    seen.transform.rotation.x = 1.0                     # T_CAM_TAG_AHEAD
    msg = FiducialTransformArray(transforms=[seen])
    msg.header.frame_id = 'camera_optical'
    node._on_fiducials(msg)
    assert node._pub.msgs == []
    assert len(node._distant_pub.msgs) == (1 if distant else 0)
    reason = Rejection.OBJECT_ERROR if distant else Rejection.BAD_OBJECT_ERROR
    assert any('8: %s' % reason.value in text for text in warnings)


def test_a_refutation_reaches_lost_service_even_when_the_same_frames_estimate_fails(
        monkeypatch):
    nodes = pytest.importorskip('lost_and_found.nodes.fiducial_localizer')
    from fiducial_msgs.msg import FiducialTransform, FiducialTransformArray
    import rospy
    monkeypatch.setattr(rospy, 'get_time', lambda: 5.0)
    monkeypatch.setattr(rospy, 'logwarn', lambda *_a: None)
    loc = localizer()
    node = nodes.FiducialLocalizerNode(loc, loc._config, 'map')
    refutation = object()
    refuted = []
    node._tag_check = type('Check', (), {'is_open': lambda _self, _t: True})()
    monkeypatch.setattr(node, '_verify', lambda _msg: refutation)
    monkeypatch.setattr(node, '_refute',
                        lambda found, _generation, again=False: refuted.append(found))

    def interrupted(_msg):
        raise rospy.ROSInterruptException('tf lookup interrupted')
    monkeypatch.setattr(node, '_estimate_and_publish', interrupted)
    seen = FiducialTransform(fiducial_id=8, object_error=0.01)
    msg = FiducialTransformArray(transforms=[seen])
    msg.header.frame_id = 'camera_optical'
    with pytest.raises(rospy.ROSInterruptException):
        node._handle(msg)
    assert refuted == [refutation]


def test_an_unanswered_refutation_is_kept_while_localized_and_dropped_when_not(monkeypatch):
    nodes = pytest.importorskip('lost_and_found.nodes.fiducial_localizer')
    from lost_and_found.core.tag_check import Refutation
    import rospy
    for name in ('logwarn', 'loginfo', 'logwarn_throttle'):
        monkeypatch.setattr(rospy, name, lambda *_a: None)
    loc = localizer()
    node = nodes.FiducialLocalizerNode(loc, loc._config, 'map')
    answers = [(False, False, 'unavailable'), (True, True, '')]
    asked = []

    class Client:
        state = State.IDLE

        def ask(self, target, reason, expected=None, timeout=2.0):
            asked.append((target, timeout))
            return answers.pop(0)
    node._state_client = Client()
    node._state = State.IDLE
    refutation = Refutation(8, 2.0, 0.1, 1.6)
    node._refute(refutation, node._unanswered.generation)
    assert node._unanswered.pending is refutation
    # asked again (with a short wait for the service) once due; answered: nothing kept
    clock = [nodes.time.monotonic() + nodes.REFUTE_RETRY_PERIOD]
    monkeypatch.setattr(nodes.time, 'monotonic', lambda: clock[0])
    node._refute(*node._unanswered.due(clock[0]), again=True)
    assert asked == [(State.LOST, 2.0), (State.LOST, nodes.REFUTE_RETRY_WAIT)]
    assert node._unanswered.pending is None
    # unanswered again, then the robot is LOST by other means: dropped, never asked again
    answers.append((False, False, 'unavailable'))
    node._refute(refutation, node._unanswered.generation)
    node._on_state(State.LOST)
    assert node._unanswered.pending is None and node._unanswered.due(clock[0] + 100) is None


def test_the_log_names_what_is_published_whatever_the_case_of_the_state_names():
    from lost_and_found.nodes.fiducial_localizer import publishing_text
    config = FiducialLocalizerConfig(fiducial_map='/x.yaml',
                                     publish_in_states=('lost', 'Localizing'),
                                     correct_in_states=('idle',))
    config.validate()
    assert publishing_text(State.LOST, config) == 'publishing every pose from fiducials'
    assert publishing_text(State.LOCALIZING, config) == 'publishing every pose from fiducials'
    assert 'contradict' in publishing_text(State.IDLE, config)
    assert publishing_text(State.NAVIGATING, config) == 'not publishing'


def test_a_frame_of_the_clock_before_a_reset_gives_no_fix(monkeypatch):
    # A simulator reset (or a looped bag) sends the clock back while a camera frame of the
    # old clock waits in the queue: a fix from it would put the robot back where it was.
    nodes = pytest.importorskip('lost_and_found.nodes.fiducial_localizer')
    from fiducial_msgs.msg import FiducialTransform, FiducialTransformArray
    import rospy
    clock = [120.0]
    monkeypatch.setattr(rospy, 'get_time', lambda: clock[0])
    warnings = []
    monkeypatch.setattr(rospy, 'logwarn_throttle', lambda period, text: warnings.append(text))
    monkeypatch.setattr(rospy, 'loginfo', lambda *_a: None)
    loc = localizer()
    node = nodes.FiducialLocalizerNode(loc, loc._config, 'map')
    node._pub, node._distant_pub = _Recorder(), _Recorder()
    node._tf_buffer = _FixedTf()
    node._state_client = type('Client', (), {'state': State.LOST})()

    def frame(stamp):
        seen = FiducialTransform(fiducial_id=8, object_error=0.01)
        seen.transform.translation.z = 2.0
        seen.transform.rotation.x = 1.0                 # T_CAM_TAG_AHEAD
        msg = FiducialTransformArray(transforms=[seen])
        msg.header.frame_id = 'camera_optical'
        msg.header.stamp = rospy.Time.from_sec(stamp)
        return msg
    node._on_fiducials(frame(119.9))
    assert len(node._pub.msgs) == 1                     # before the reset: a fix
    clock[0] = 121.0
    node._on_fiducials(frame(124.0))                    # the node's clock lags: still a fix
    assert len(node._pub.msgs) == 2
    clock[0] = 0.3
    node._on_fiducials(frame(124.1))
    assert len(node._pub.msgs) == 2 and any('ahead of the clock' in w for w in warnings)
    clock[0] = 1.5
    node._on_fiducials(frame(1.4))                      # the new clock's frames: fixes again
    assert len(node._pub.msgs) == 3
    clock[0] = 0.0                                      # the clock unknown: nothing to judge by
    before = len(warnings)
    node._on_fiducials(frame(124.2))
    assert len(warnings) == before


def test_a_frame_of_an_older_clock_still_carries_a_due_refutation_retry(monkeypatch):
    nodes = pytest.importorskip('lost_and_found.nodes.fiducial_localizer')
    from fiducial_msgs.msg import FiducialTransformArray
    import rospy
    clock = [120.0]
    monkeypatch.setattr(rospy, 'get_time', lambda: clock[0])
    monkeypatch.setattr(rospy, 'logwarn_throttle', lambda *_a: None)
    loc = localizer()
    node = nodes.FiducialLocalizerNode(loc, loc._config, 'map')
    node._pub, node._distant_pub = _Recorder(), _Recorder()
    retried = []
    monkeypatch.setattr(node._unanswered, 'due', lambda _now: ('refutation', 7))
    monkeypatch.setattr(node, '_refute', lambda *a, again=False: retried.append((a, again)))
    msg = FiducialTransformArray()
    msg.header.frame_id = 'camera_optical'
    msg.header.stamp = rospy.Time.from_sec(119.9)
    node._on_fiducials(msg)
    clock[0] = 0.3
    msg.header.stamp = rospy.Time.from_sec(120.0)
    node._on_fiducials(msg)                             # of the old clock: still the retry
    assert retried == [(('refutation', 7), True)] * 2
