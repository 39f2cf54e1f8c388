"""Unit tests of lost_and_found.core.geometry (known values and round-trips)."""
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from lost_and_found.core import geometry

angles = st.floats(-math.pi, math.pi, allow_nan=False)
coords = st.floats(-100.0, 100.0, allow_nan=False)
quaternions = st.tuples(*[st.floats(-1.0, 1.0, allow_nan=False)] * 4)

#: Optical frame (z forward, x right, y down) in a REP 103 body frame (x forward, z up).
OPTICAL_IN_BODY = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


@pytest.mark.parametrize('angle,expected', [
    (0.0, 0.0), (math.pi / 2, math.pi / 2), (3 * math.pi / 2, -math.pi / 2),
    (-3 * math.pi / 2, math.pi / 2), (7.0, 7.0 - 2 * math.pi), (-7.0, -7.0 + 2 * math.pi),
    (math.pi, -math.pi), (-math.pi, -math.pi), (100 * math.pi + 0.5, 0.5),
])
def test_normalize_angle_known_values(angle, expected):
    assert geometry.normalize_angle(angle) == pytest.approx(expected, abs=1e-9)


@given(st.floats(-1e4, 1e4, allow_nan=False))
def test_normalize_angle_range_and_equivalence(angle):
    wrapped = geometry.normalize_angle(angle)
    assert -math.pi <= wrapped < math.pi
    assert math.cos(wrapped) == pytest.approx(math.cos(angle), abs=1e-6)
    assert math.sin(wrapped) == pytest.approx(math.sin(angle), abs=1e-6)


@pytest.mark.parametrize('bad', [float('nan'), float('inf')])
def test_normalize_angle_rejects_non_finite(bad):
    with pytest.raises(ValueError):
        geometry.normalize_angle(bad)


def test_quaternion_known_values():
    np.testing.assert_allclose(geometry.quaternion_to_matrix((0, 0, 0, 1)), np.eye(3))
    s = math.sqrt(0.5)
    # 90 deg about z maps x to y.
    np.testing.assert_allclose(geometry.quaternion_to_matrix((0, 0, s, s)),
                               [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-12)
    # 180 deg about x.
    np.testing.assert_allclose(geometry.quaternion_to_matrix((1, 0, 0, 0)),
                               np.diag([1.0, -1.0, -1.0]), atol=1e-12)
    # The standard camera optical-frame quaternion (as in every TurtleBot2 URDF).
    np.testing.assert_allclose(geometry.quaternion_to_matrix((-0.5, 0.5, -0.5, 0.5)),
                               OPTICAL_IN_BODY, atol=1e-12)


def test_quaternion_is_normalised_first():
    np.testing.assert_allclose(geometry.quaternion_to_matrix((0, 0, 2, 2)),
                               geometry.quaternion_to_matrix((0, 0, 1, 1)))


@pytest.mark.parametrize('bad', [(0, 0, 0, 0), (0, 0, 0), (float('nan'), 0, 0, 1),
                                 (0, float('inf'), 0, 1)])
def test_quaternion_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        geometry.quaternion_to_matrix(bad)


def test_matrix_to_quaternion_known_values():
    assert geometry.matrix_to_quaternion(np.eye(3)) == pytest.approx((0, 0, 0, 1))
    assert geometry.matrix_to_quaternion(OPTICAL_IN_BODY) == pytest.approx(
        (-0.5, 0.5, -0.5, 0.5))
    for diag, q in (([1, -1, -1], (1, 0, 0, 0)), ([-1, 1, -1], (0, 1, 0, 0)),
                    ([-1, -1, 1], (0, 0, 1, 0))):
        assert geometry.matrix_to_quaternion(np.diag(diag)) == pytest.approx(q)


def test_matrix_to_quaternion_rejects_bad_input():
    with pytest.raises(ValueError):
        geometry.matrix_to_quaternion(np.eye(4))
    with pytest.raises(ValueError):
        geometry.matrix_to_quaternion(np.full((3, 3), np.nan))


@settings(max_examples=200)
@given(quaternions)
def test_quaternion_round_trip(q):
    norm = np.linalg.norm(q)
    assume(norm > 1e-3)
    r = geometry.quaternion_to_matrix(q)
    assert geometry.is_rigid(geometry.make_transform(r))
    back = np.array(geometry.matrix_to_quaternion(r))
    expected = np.array(q) / norm
    # q and -q are the same rotation.
    assert min(np.linalg.norm(back - expected), np.linalg.norm(back + expected)) < 1e-6
    assert back[3] >= 0.0
    np.testing.assert_allclose(geometry.quaternion_to_matrix(back), r, atol=1e-9)


def test_rpy_known_values():
    np.testing.assert_allclose(geometry.rpy_to_matrix(0, 0, math.pi / 2),
                               [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-12)
    np.testing.assert_allclose(geometry.rpy_to_matrix(math.pi / 2, 0, 0),
                               [[1, 0, 0], [0, 0, -1], [0, 1, 0]], atol=1e-12)
    np.testing.assert_allclose(geometry.rpy_to_matrix(0, math.pi / 2, 0),
                               [[0, 0, 1], [0, 1, 0], [-1, 0, 0]], atol=1e-12)
    # Fixed axes x, y, z: the optical frame is roll -90 deg then yaw -90 deg.
    np.testing.assert_allclose(geometry.rpy_to_matrix(-math.pi / 2, 0, -math.pi / 2),
                               OPTICAL_IN_BODY, atol=1e-12)


@given(angles, st.floats(-1.5, 1.5), angles)
def test_rpy_is_z_y_x_product_and_yaw_recovered(roll, pitch, yaw):
    def rx(a):
        return np.array([[1, 0, 0], [0, math.cos(a), -math.sin(a)],
                         [0, math.sin(a), math.cos(a)]])

    def ry(a):
        return np.array([[math.cos(a), 0, math.sin(a)], [0, 1, 0],
                         [-math.sin(a), 0, math.cos(a)]])

    def rz(a):
        return np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0],
                         [0, 0, 1]])

    r = geometry.rpy_to_matrix(roll, pitch, yaw)
    np.testing.assert_allclose(r, rz(yaw) @ ry(pitch) @ rx(roll), atol=1e-12)
    # Roll does not change the heading of the x axis; pitch below 90 deg keeps it defined.
    diff = geometry.yaw_of(r) - yaw
    assert math.sin(diff) == pytest.approx(0.0, abs=1e-9)
    assert math.cos(diff) == pytest.approx(1.0)


def test_make_invert_compose_known_values():
    t_a_b = geometry.make_transform(geometry.rpy_to_matrix(0, 0, math.pi / 2), (1.0, 2.0, 3.0))
    point_b = np.array([1.0, 0.0, 0.0, 1.0])
    # x of b is y of a, shifted by b's origin.
    np.testing.assert_allclose(t_a_b @ point_b, [1.0, 3.0, 3.0, 1.0], atol=1e-12)
    t_b_a = geometry.invert_transform(t_a_b)
    np.testing.assert_allclose(t_b_a[:3, 3], [-2.0, 1.0, -3.0], atol=1e-12)
    np.testing.assert_allclose(geometry.compose(t_a_b, t_b_a), np.eye(4), atol=1e-12)
    np.testing.assert_allclose(geometry.compose(), np.eye(4))
    np.testing.assert_allclose(geometry.make_transform((0, 0, 0, 1), (1, 2, 3))[:3, 3],
                               [1, 2, 3])


@pytest.mark.parametrize('call', [
    lambda: geometry.make_transform(np.eye(2)),
    lambda: geometry.make_transform(None, (1.0, 2.0)),
    lambda: geometry.invert_transform(np.eye(3)),
    lambda: geometry.compose(np.eye(4), np.eye(3)),
])
def test_wrong_sizes_raise(call):
    with pytest.raises(ValueError):
        call()


@settings(max_examples=100)
@given(quaternions, st.tuples(coords, coords, coords), quaternions,
       st.tuples(coords, coords, coords))
def test_invert_and_compose_round_trip(q1, t1, q2, t2):
    assume(np.linalg.norm(q1) > 1e-3 and np.linalg.norm(q2) > 1e-3)
    a = geometry.make_transform(q1, t1)
    b = geometry.make_transform(q2, t2)
    np.testing.assert_allclose(geometry.compose(a, geometry.invert_transform(a)), np.eye(4),
                               atol=1e-9)
    np.testing.assert_allclose(geometry.invert_transform(a), np.linalg.inv(a), atol=1e-9)
    np.testing.assert_allclose(geometry.invert_transform(geometry.compose(a, b)),
                               geometry.compose(geometry.invert_transform(b),
                                                geometry.invert_transform(a)), atol=1e-8)
    assert geometry.is_rigid(geometry.compose(a, b))


def test_is_rigid():
    assert geometry.is_rigid(np.eye(4))
    scaled = np.eye(4)
    scaled[0, 0] = 2.0
    assert not geometry.is_rigid(scaled)
    mirrored = np.diag([1.0, 1.0, -1.0, 1.0])
    assert not geometry.is_rigid(mirrored)
    assert not geometry.is_rigid(np.full((4, 4), np.nan))
    assert not geometry.is_rigid(np.eye(3))


def test_interpolate_pose_takes_the_shorter_arc_and_wraps():
    assert geometry.interpolate_pose((0.0, 0.0, 0.0), (2.0, -4.0, 1.0), 0.25) == \
        pytest.approx((0.5, -1.0, 0.25))
    # From 3.0 to -3.0 rad the shorter way is through pi (0.28 rad), not through 0 (6 rad).
    _, _, yaw = geometry.interpolate_pose((0.0, 0.0, 3.0), (0.0, 0.0, -3.0), 0.75)
    assert yaw == pytest.approx(3.0 + 0.75 * (2.0 * math.pi - 6.0) - 2.0 * math.pi)
    assert geometry.interpolate_pose((1.0, 2.0, 0.5), (3.0, 4.0, 0.7), 0.0) == \
        pytest.approx((1.0, 2.0, 0.5))


def test_turn_rate_is_proportional_clamped_and_signed():
    # gain 2, bounds [0.3, 1.0]: a small error turns at the floor, a large one at the cap.
    assert geometry.turn_rate(0.4, 2.0, 0.3, 1.0) == pytest.approx(0.8)
    assert geometry.turn_rate(-0.4, 2.0, 0.3, 1.0) == pytest.approx(-0.8)
    assert geometry.turn_rate(0.05, 2.0, 0.3, 1.0) == pytest.approx(0.3)
    assert geometry.turn_rate(-3.0, 2.0, 0.3, 1.0) == pytest.approx(-1.0)
    assert geometry.turn_rate(0.0, 2.0, 0.3, 1.0) == 0.0


def test_turn_time_follows_the_turn_rate_profile():
    """Integrating turn_rate in small steps takes as long as turn_time says."""
    for error in (3.0, 1.0, 0.3, 0.12):
        left, seconds, dt = error, 0.0, 1e-4
        while left > 0.1:
            left -= geometry.turn_rate(left, 1.5, 0.2, 1.2566) * dt
            seconds += dt
        expected = pytest.approx(seconds, abs=2e-3)
        assert geometry.turn_time(-error, 1.5, 0.2, 1.2566, 0.1) == expected
    assert geometry.turn_time(0.05, 1.5, 0.2, 1.2566, 0.1) == 0.0     # faced already
    assert geometry.turn_time(1.0, 1.5, 0.0, 1.0, 0.0) == math.inf      # it never gets there
    assert geometry.turn_time(1.0, 1.5, 0.0, 1.0, 0.1) < math.inf
    for bad in ((math.nan, 1.5, 0.2, 1.0, 0.1), (1.0, 1.5, 0.2, 1.0, math.nan),
                (1.0, 0.0, 0.2, 1.0, 0.1), (1.0, -1.5, 0.2, 1.0, 0.1), (1.0, 1.5, 0.2, 0.0, 0.1)):
        with pytest.raises(ValueError):
            geometry.turn_time(*bad)
