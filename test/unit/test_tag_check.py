"""Unit tests of core.tag_check: which mapped tags an estimate puts in clear view, and when
their absence refutes it."""
import dataclasses
import math

import numpy as np
import pytest

from lost_and_found.core import geometry
from lost_and_found.core.config import ConfigError
from lost_and_found.core.fiducial import FiducialLocalizerConfig, facing_yaw_rotation
from lost_and_found.core.scan_agreement import DistanceMap
from lost_and_found.core.tag_check import Refutation, TagCheck, UnansweredRefutation, \
    camera_pose_2d, opens
from lost_and_found.state import State

RES = 0.05


def room(inner_wall=False):
    """A 10 m x 6 m room with one-cell walls; optionally a wall across x = 9 m, y 2.5-3.5 m."""
    occupied = np.zeros((int(6 / RES), int(10 / RES)), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    if inner_wall:
        occupied[int(2.5 / RES):int(3.5 / RES), int(9.0 / RES)] = True
    return DistanceMap(occupied, RES)


def wall_tag(x, y, facing_yaw):
    """T_map_fid of an upright tag at (x, y, 0.3) whose face points at ``facing_yaw``."""
    return geometry.make_transform(facing_yaw_rotation(facing_yaw), (x, y, 0.3))


def make_check(tags=None, distance_map=None, window=30.0, missing_time=1.5):
    """A TagCheck with the shipped geometry; tag 1 on the east wall at (9.9, 3) facing west."""
    if tags is None:
        tags = {1: wall_tag(9.9, 3.0, math.pi)}
    check = TagCheck(tags, window=window, min_distance=0.6, max_distance=2.5, half_fov=0.4,
                     half_vfov=0.3, view_angle=0.7, missing_time=missing_time)
    check.distance_map = room() if distance_map is None else distance_map
    return check


def ids(expected):
    """The fiducial ids of a list of ExpectedTag."""
    return [tag.fiducial_id for tag in expected]


def test_a_near_tag_straight_ahead_is_expected():
    expected = make_check().expected(8.0, 3.0, 0.0)
    assert ids(expected) == [1]
    assert expected[0].distance == pytest.approx(1.9)
    assert expected[0].bearing == pytest.approx(0.0)


@pytest.mark.parametrize('camera, why', [
    ((8.0, 3.0, math.pi), 'behind the camera'),
    ((8.0, 3.0, 0.6), 'outside the cone'),
    ((6.0, 3.0, 0.0), 'too far'),
    ((9.5, 3.0, 0.0), 'too near'),
    ((9.0, 1.0, math.atan2(2.0, 0.9)), 'seen at a grazing angle (65 deg)'),
])
def test_a_tag_is_not_expected(camera, why):
    assert make_check().expected(*camera) == [], why


def test_a_tag_behind_a_mapped_wall_is_not_expected():
    check = make_check(distance_map=room(inner_wall=True))
    assert check.expected(8.0, 3.0, 0.0) == []
    # The same wall does not hide it from the side it does not cover.
    assert ids(check.expected(8.0, 4.5, math.atan2(-1.5, 1.9))) == [1]


def test_the_wall_a_tag_hangs_on_does_not_hide_it():
    # The tag's centre inside its wall's cell (x 9.95-10 m): the sight line stops short of it.
    check = make_check(tags={1: wall_tag(9.97, 3.0, math.pi)})
    assert ids(check.expected(8.0, 3.0, 0.0)) == [1]


def test_nothing_is_expected_without_a_map_or_off_the_map():
    # Tag 2 on the west wall's outer face, 1.1 m ahead of a camera off the map.
    check = make_check(tags={1: wall_tag(9.9, 3.0, math.pi), 2: wall_tag(0.1, 3.0, math.pi)})
    assert ids(check.expected(-1.0, 3.0, 0.0)) == []
    assert ids(check.expected(8.0, 3.0, 0.0)) == [1]
    check.distance_map = None
    assert check.expected(8.0, 3.0, 0.0) == []


def test_a_tag_outside_the_vertical_field_of_view_is_not_expected():
    # Tag at 0.3 m, 1.9 m ahead: 0.16 rad below a camera at 0.6 m, 0.31 above one at -0.3 m.
    check = make_check()
    assert ids(check.expected(8.0, 3.0, 0.0, 0.6)) == [1]
    assert check.expected(8.0, 3.0, 0.0, -0.3) == []
    assert ids(check.expected(8.0, 3.0, 0.0)) == [1]        # height unknown: not checked


def test_only_upright_tags_are_checked():
    ceiling = geometry.make_transform(geometry.rpy_to_matrix(math.pi, 0.0, 0.0),
                                      (8.0, 3.0, 2.5))
    check = make_check(tags={1: wall_tag(9.9, 3.0, math.pi), 2: ceiling})
    assert len(check) == 1


def test_a_tag_missing_for_the_missing_time_refutes_the_estimate():
    check = make_check()
    check.open(0.0)
    camera = (8.0, 3.0, 0.0)
    for t in (0.0, 0.5, 1.0, 1.4):
        assert check.frame(t, camera, []) is None
    refutation = check.frame(1.5, camera, [])
    assert refutation is not None
    assert refutation.fiducial_id == 1
    assert refutation.missing_for == pytest.approx(1.5)
    assert refutation.distance == pytest.approx(1.9)


def test_two_frames_are_not_enough_however_far_apart():
    check = make_check()
    check.open(0.0)
    camera = (8.0, 3.0, 0.0)
    assert check.frame(0.0, camera, []) is None
    assert check.frame(2.0, camera, []) is None            # 2 frames, 2 s
    assert check.frame(2.1, camera, []) is not None        # the third


def test_seeing_the_tag_or_losing_it_from_view_restarts_the_count():
    check = make_check()
    check.open(0.0)
    camera = (8.0, 3.0, 0.0)
    assert check.frame(0.0, camera, []) is None
    assert check.frame(1.0, camera, [1]) is None           # seen
    assert check.frame(1.2, camera, [5]) is None           # another tag does not count
    assert check.frame(2.6, camera, []) is None            # 1.4 s since 1.2
    assert check.frame(2.7, (8.0, 3.0, math.pi), []) is None   # turned away
    assert check.frame(3.0, camera, []) is None
    assert check.frame(4.4, camera, []) is None
    assert check.frame(4.5, camera, []) is not None


def test_an_unknown_camera_pose_restarts_the_count():
    check = make_check()
    check.open(0.0)
    camera = (8.0, 3.0, 0.0)
    assert check.frame(0.0, camera, []) is None
    assert check.frame(1.0, None, []) is None
    assert check.frame(2.0, camera, []) is None
    assert check.frame(3.0, camera, []) is None
    assert check.frame(3.5, camera, []) is not None


def test_the_check_runs_only_inside_its_window():
    check = make_check(window=10.0)
    camera = (8.0, 3.0, 0.0)
    assert not check.is_open(0.0)
    assert check.frame(0.0, camera, []) is None and check.frame(5.0, camera, []) is None
    check.open(100.0)
    assert check.is_open(110.0)
    assert check.frame(109.0, camera, []) is None
    assert not check.is_open(110.5)
    assert check.frame(110.6, camera, []) is None
    # Once over, a clock that jumps back does not bring it back.
    assert check.frame(100.0, camera, []) is None
    assert not check.is_open(100.0)
    check.open(200.0)
    check.close()
    assert not check.is_open(200.0)


def test_a_clock_that_jumps_back_restarts_the_window_and_the_count():
    check = make_check(window=10.0)
    camera = (8.0, 3.0, 0.0)
    check.open(50.0)
    assert check.frame(50.0, camera, []) is None
    assert check.frame(51.0, camera, []) is None
    assert check.frame(3.0, camera, []) is None        # jumped back: counts from 3.0 again
    assert check.frame(4.0, camera, []) is None
    assert check.frame(4.5, camera, []) is not None
    assert check.is_open(12.9) and not check.is_open(13.1)


def test_camera_pose_of_an_optical_frame_on_the_base():
    # Optical frame (z forward, x right, y down) 0.2 m ahead of a REP 103 base.
    t_base_cam = geometry.make_transform((-0.5, 0.5, -0.5, 0.5), (0.2, 0.0, 0.3))
    x, y, yaw, z = camera_pose_2d((1.0, 2.0, math.pi / 2), t_base_cam)
    assert (x, y, z) == pytest.approx((1.0, 2.2, 0.3))
    assert yaw == pytest.approx(math.pi / 2)


@pytest.mark.parametrize('before, after, result', [
    (State.LOST, State.IDLE, True),
    (State.LOCALIZING, State.IDLE, False),      # a pose fix confirmed it
    (None, State.IDLE, False),                  # the first state heard
    (State.IDLE, State.NAVIGATING, False),
    (State.NAVIGATING, State.LOST, False),
])
def test_the_check_opens_only_when_lost_ends_without_a_fix(before, after, result):
    assert opens(before, after) is result


def test_config_defaults_leave_the_check_off_and_validate():
    config = FiducialLocalizerConfig(fiducial_map='x.yaml')
    config.validate()
    assert config.verify_window == 0.0


@pytest.mark.parametrize('change, name', [
    ({'verify_window': -1.0}, 'verify_window'),
    ({'verify_min_distance': 3.0}, 'verify_max_distance'),
    ({'verify_min_distance': 0.2}, 'verify_min_distance'),
    ({'verify_half_vfov': -0.1}, 'verify_half_vfov'),
    ({'verify_max_distance': float('nan')}, 'verify_max_distance'),
    ({'verify_half_fov': 2.0}, 'verify_half_fov'),
    ({'verify_view_angle': 0.0}, 'verify_view_angle'),
    ({'verify_missing_time': 0.0}, 'verify_missing_time'),
])
def test_config_names_a_bad_verify_value(change, name):
    config = dataclasses.replace(FiducialLocalizerConfig(fiducial_map='x.yaml'), **change)
    with pytest.raises(ConfigError) as error:
        config.validate()
    assert any(problem.startswith(name + '=') for problem in error.value.problems), \
        error.value.problems


def _refutation(fiducial_id=8):
    return Refutation(fiducial_id, 2.0, 0.1, 1.6)


def test_an_unanswered_refutation_is_due_again_later_and_later():
    retry = UnansweredRefutation(period=1.0, max_period=4.0)
    refutation = _refutation()
    assert retry.due(0.0) is None
    assert retry.asked(refutation, retry.generation, answered=False, now=10.0)
    assert retry.due(10.9) is None
    assert retry.due(11.0) == (refutation, 0)
    # unanswered again: 2 s, then 4 s, then at most 4 s apart
    for asked_at, next_due in ((11.0, 13.0), (13.0, 17.0), (17.0, 21.0)):
        assert retry.asked(refutation, 0, answered=False, now=asked_at)
        assert retry.due(next_due - 0.01) is None
        assert retry.due(next_due) == (refutation, 0)
    # answered (accepted or refused): nothing left to ask
    assert not retry.asked(refutation, 0, answered=True, now=21.0)
    assert retry.pending is None and retry.due(100.0) is None


def test_leaving_the_localized_states_drops_an_unanswered_refutation():
    retry = UnansweredRefutation()
    assert not retry.left_localized()           # nothing to drop
    refutation = _refutation()
    assert retry.asked(refutation, retry.generation, answered=False, now=0.0)
    assert retry.left_localized()
    assert retry.due(100.0) is None


def test_an_answer_after_the_robot_left_keeps_nothing():
    """A request in flight while the robot went LOST (and was localized again): its refutation
    was of the earlier localization and is not asked again for the new one."""
    retry = UnansweredRefutation()
    generation = retry.generation
    retry.left_localized()
    assert not retry.asked(_refutation(), generation, answered=False, now=0.0)
    assert retry.due(100.0) is None
    # a refutation of the new localization starts over at the first period
    newer = _refutation(9)
    assert retry.asked(newer, retry.generation, answered=False, now=0.0)
    assert retry.due(1.0) == (newer, retry.generation)


@pytest.mark.parametrize('period, max_period', [(0.0, 1.0), (2.0, 1.0), (-1.0, 1.0)])
def test_retry_periods_must_be_positive_and_ordered(period, max_period):
    with pytest.raises(ValueError):
        UnansweredRefutation(period, max_period)
