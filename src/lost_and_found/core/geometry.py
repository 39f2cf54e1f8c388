"""Rotations and rigid transforms in plain numpy (no tf library).

Conventions follow ROS (REP 103): quaternions are ``(x, y, z, w)``; roll, pitch and yaw are
rotations about the fixed x, y and z axes applied in that order, so
``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``; a homogeneous transform ``T_a_b`` is a 4x4 matrix that
maps points expressed in frame ``b`` into frame ``a``, hence ``T_a_c = T_a_b @ T_b_c``.
"""
import math

import numpy as np

#: Below this norm a quaternion carries no orientation and cannot be normalised.
_MIN_QUATERNION_NORM = 1e-9


def wrap_angle(angle):
    """Wrap angles (rad; a number or a numpy array) into ``[-pi, pi)``; NaN stays NaN."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def turn_rate(error, gain, min_rate, max_rate):
    """Yaw rate (rad/s) that turns in place toward a heading ``error`` (rad) away:
    ``gain * |error|`` clamped to ``[min_rate, max_rate]``, with the error's sign; 0 for no
    error."""
    if error == 0.0:
        return 0.0
    return math.copysign(min(max_rate, max(min_rate, gain * abs(error))), error)


def turn_time(error, gain, min_rate, max_rate, tolerance):
    """Seconds :func:`turn_rate` takes to turn in place from ``error`` (rad) away to within
    ``tolerance``, if the base turned exactly as told: at ``max_rate`` while ``gain * error``
    exceeds it, then slowing as the error shrinks, at ``min_rate`` at the last; 0 when
    ``error`` is within ``tolerance`` already, ``math.inf`` when the profile never gets there
    (no ``min_rate`` and no ``tolerance``).

    Raises:
        ValueError: if ``error`` or ``tolerance`` is not finite, or ``gain`` or ``max_rate``
            is not positive.
    """
    if not (math.isfinite(error) and math.isfinite(tolerance)):
        raise ValueError('error and tolerance must be finite, got %r, %r' % (error, tolerance))
    if not (gain > 0.0 and max_rate > 0.0):
        raise ValueError('gain and max_rate must be positive, got %r, %r' % (gain, max_rate))
    error, tolerance = abs(float(error)), max(0.0, float(tolerance))
    if error <= tolerance:
        return 0.0
    fast, slow = max_rate / gain, max(0.0, min_rate) / gain   # where each clamp lets go
    end = max(slow, tolerance)
    if end <= 0.0:
        return math.inf
    seconds = 0.0
    if error > fast:                                # at max_rate down to ``fast``
        seconds += (error - max(fast, tolerance)) / max_rate
        error = max(fast, tolerance)
    if error > end:                                 # d(error)/dt = -gain * error
        seconds += math.log(error / end) / gain
        error = end
    if error > tolerance:                           # at min_rate (> 0 here) the rest
        seconds += (error - tolerance) / min_rate
    return seconds


def interpolate_pose(pose0, pose1, fraction):
    """The pose ``fraction`` (0..1) of the way from ``pose0`` to ``pose1`` (each
    ``(x, y, yaw)``): linear in x and y, along the shorter arc in yaw (wrapped)."""
    (x0, y0, a0), (x1, y1, a1) = pose0[:3], pose1[:3]
    return (x0 + fraction * (x1 - x0), y0 + fraction * (y1 - y0),
            float(wrap_angle(a0 + fraction * float(wrap_angle(a1 - a0)))))


def normalize_angle(angle):
    """Wrap ``angle`` (rad) into ``[-pi, pi)``.

    Raises:
        ValueError: if ``angle`` is not finite.
    """
    angle = float(angle)
    if not math.isfinite(angle):
        raise ValueError('angle must be finite, got %r' % angle)
    wrapped = math.fmod(angle + math.pi, 2.0 * math.pi)
    if wrapped < 0.0:
        wrapped += 2.0 * math.pi
    return wrapped - math.pi


def quaternion_to_matrix(quaternion):
    """Return the 3x3 rotation matrix of quaternion ``(x, y, z, w)``.

    The quaternion is normalised first, so slightly denormalised input (as parsed from a
    message) is accepted.

    Raises:
        ValueError: if it does not have 4 finite components or its norm is (nearly) zero.
    """
    q = np.asarray(quaternion, dtype=float)
    if q.shape != (4,) or not np.all(np.isfinite(q)):
        raise ValueError('a quaternion needs 4 finite components, got %r' % (quaternion,))
    norm = np.linalg.norm(q)
    if norm < _MIN_QUATERNION_NORM:
        raise ValueError('a quaternion of norm %g has no orientation' % norm)
    x, y, z, w = q / norm
    return np.array([
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w)],
        [2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w)],
        [2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y)],
    ])


def matrix_to_quaternion(rotation):
    """Return the quaternion ``(x, y, z, w)`` of a 3x3 rotation matrix, with ``w >= 0``.

    ``q`` and ``-q`` are the same rotation; fixing the sign of ``w`` makes the result unique
    (except for half turns, where ``w == 0``).

    Raises:
        ValueError: if ``rotation`` is not a finite 3x3 matrix.
    """
    r = np.asarray(rotation, dtype=float)
    if r.shape != (3, 3) or not np.all(np.isfinite(r)):
        raise ValueError('a rotation must be a finite 3x3 matrix')
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    # Branch on the largest diagonal term so that the square root is taken of a value that
    # is far from zero: this keeps the result accurate near half turns.
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = [(r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s,
             0.25 * s]
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
        q = [0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s,
             (r[2, 1] - r[1, 2]) / s]
    elif r[1, 1] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
        q = [(r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s,
             (r[0, 2] - r[2, 0]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
        q = [(r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s,
             (r[1, 0] - r[0, 1]) / s]
    q = np.array(q)
    q /= np.linalg.norm(q)
    if q[3] < 0.0:
        q = -q
    return tuple(float(v) for v in q)


def rpy_to_matrix(roll, pitch, yaw):
    """Return the 3x3 rotation ``Rz(yaw) @ Ry(pitch) @ Rx(roll)`` (angles in rad)."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def make_transform(rotation=None, translation=(0.0, 0.0, 0.0)):
    """Build a 4x4 homogeneous transform.

    Args:
        rotation: a 3x3 rotation matrix, a quaternion ``(x, y, z, w)``, or None (identity).
        translation: ``(x, y, z)`` in metres.

    Raises:
        ValueError: on wrong sizes or an invalid quaternion.
    """
    if rotation is None:
        r = np.eye(3)
    else:
        r = np.asarray(rotation, dtype=float)
        if r.shape == (4,):
            r = quaternion_to_matrix(r)
        elif r.shape != (3, 3):
            raise ValueError('rotation must be 3x3 or a quaternion, got shape %s' % (r.shape,))
    t = np.asarray(translation, dtype=float)
    if t.shape != (3,):
        raise ValueError('translation must have 3 components, got shape %s' % (t.shape,))
    transform = np.eye(4)
    transform[:3, :3] = r
    transform[:3, 3] = t
    return transform


def invert_transform(transform):
    """Return the inverse of rigid transform ``transform`` (R^T, -R^T t; no matrix inverse)."""
    t = np.asarray(transform, dtype=float)
    if t.shape != (4, 4):
        raise ValueError('a transform must be 4x4, got shape %s' % (t.shape,))
    r_t = t[:3, :3].T
    inverse = np.eye(4)
    inverse[:3, :3] = r_t
    inverse[:3, 3] = -r_t @ t[:3, 3]
    return inverse


def compose(*transforms):
    """Return the product of 4x4 transforms, left to right (``compose(a, b) == a @ b``)."""
    result = np.eye(4)
    for transform in transforms:
        t = np.asarray(transform, dtype=float)
        if t.shape != (4, 4):
            raise ValueError('a transform must be 4x4, got shape %s' % (t.shape,))
        result = result @ t
    return result


def yaw_of(matrix):
    """Return the yaw (rad) of the x axis of a 3x3 rotation or 4x4 transform.

    This is the heading of the frame's x axis projected on the parent's x-y plane, which is
    what a 2D pose of a (possibly slightly tilted) robot base means.
    """
    m = np.asarray(matrix, dtype=float)
    return math.atan2(m[1, 0], m[0, 0])


def pose2d_from_matrix(matrix):
    """``(x, y, yaw)`` of a 4x4 transform: its translation in the plane and :func:`yaw_of`."""
    m = np.asarray(matrix, dtype=float)
    return float(m[0, 3]), float(m[1, 3]), yaw_of(m)


def is_rigid(transform, tolerance=1e-6):
    """True when ``transform`` is a finite 4x4 rigid transform (orthonormal, det +1)."""
    t = np.asarray(transform, dtype=float)
    if t.shape != (4, 4) or not np.all(np.isfinite(t)):
        return False
    r = t[:3, :3]
    return (np.allclose(r.T @ r, np.eye(3), atol=tolerance)
            and abs(np.linalg.det(r) - 1.0) < tolerance
            and np.allclose(t[3], [0.0, 0.0, 0.0, 1.0], atol=tolerance))
