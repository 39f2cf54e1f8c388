"""Conversions between ROS messages and the plain values of the cores, shared by the adapters."""
import math

import numpy as np

from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped, Quaternion

from lost_and_found.core import geometry
from lost_and_found.core.scan_agreement import DistanceMap, LaserMount, Scan


def yaw_from_quaternion(q):
    """Yaw (rad) of a geometry_msgs/Quaternion, of any length (a hand-typed one is rarely a
    unit quaternion; all zeros gives 0)."""
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y),
                      q.w * q.w + q.x * q.x - q.y * q.y - q.z * q.z)


def quaternion_from_yaw(yaw):
    """A geometry_msgs/Quaternion rotating by ``yaw`` about z."""
    return Quaternion(x=0.0, y=0.0, z=math.sin(yaw / 2.0), w=math.cos(yaw / 2.0))


def planar_pose(transform):
    """``(x, y, yaw)`` of a geometry_msgs/Transform, projected to the plane."""
    t = transform.translation
    return t.x, t.y, yaw_from_quaternion(transform.rotation)


def transform_to_matrix(transform):
    """4x4 matrix of a geometry_msgs/Transform; all NaN when its quaternion is invalid.

    A NaN matrix lets the core reject (and count) the observation like any other bad one.
    """
    t, q = transform.translation, transform.rotation
    try:
        return geometry.make_transform((q.x, q.y, q.z, q.w), (t.x, t.y, t.z))
    except ValueError:
        return np.full((4, 4), np.nan)


def pose_stamped(x, y, yaw, frame_id, stamp):
    """A geometry_msgs/PoseStamped of a planar pose."""
    msg = PoseStamped()
    msg.header.frame_id = frame_id
    msg.header.stamp = stamp
    msg.pose.position.x = x
    msg.pose.position.y = y
    msg.pose.orientation = quaternion_from_yaw(yaw)
    return msg


def pose_with_covariance(x, y, yaw, covariance, frame_id, stamp):
    """A geometry_msgs/PoseWithCovarianceStamped of a planar pose and a 36-value covariance."""
    msg = PoseWithCovarianceStamped()
    msg.header.frame_id = frame_id
    msg.header.stamp = stamp
    msg.pose.pose.position.x = x
    msg.pose.pose.position.y = y
    msg.pose.pose.orientation = quaternion_from_yaw(yaw)
    msg.pose.covariance = [float(v) for v in covariance]
    return msg


def scan_from_msg(msg):
    """The :class:`Scan` of a sensor_msgs/LaserScan."""
    return Scan(tuple(msg.ranges), msg.angle_min, msg.angle_increment, msg.range_min,
                msg.range_max)


def lookup_waiting(tf_buffer, target, source, stamp, timeout):
    """``tf_buffer.lookup_transform(target, source, stamp)`` waiting up to ``timeout`` s.

    tf2_ros waits with ``rospy.sleep``, which raises when the clock goes back meanwhile (a
    bag loop, a simulator reset); that is raised here as tf2_ros.LookupException, saying so,
    so a caller handles it as any transform tf cannot give (rospy would otherwise print the
    traceback of the callback it escaped from). A leading '/' of either frame is dropped.
    """
    import rospy
    import tf2_ros
    # tf2 refuses a frame with a leading '/' (tf1's style, still sent by some older drivers)
    target, source = target.lstrip('/'), source.lstrip('/')
    try:
        return tf_buffer.lookup_transform(target, source, stamp, rospy.Duration(timeout))
    except rospy.ROSTimeMovedBackwardsException as error:
        raise tf2_ros.LookupException('the clock went back while waiting for %s <- %s (%s)'
                                      % (target, source, error)) from None


def lookup_matrix(tf_buffer, target, source, stamp, timeout, throttle):
    """4x4 transform ``target`` <- ``source`` at ``stamp`` (rospy.Time) from a tf2 buffer,
    waiting up to ``timeout`` s (:func:`lookup_waiting`); None, with a warning at most every
    ``throttle`` s, when tf cannot give it."""
    import rospy
    import tf2_ros
    try:
        stamped = lookup_waiting(tf_buffer, target, source, stamp, timeout)
    except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
            tf2_ros.ExtrapolationException, tf2_ros.InvalidArgumentException) as error:
        rospy.logwarn_throttle(throttle, '%s: no transform %s <- %s: %s' % (
            rospy.get_name(), target, source, error))
        return None
    return transform_to_matrix(stamped.transform)


def distance_map_from_msg(msg):
    """The :class:`DistanceMap` of a nav_msgs/OccupancyGrid.

    Raises:
        ValueError: a grid whose size, resolution or origin is unusable (the message says).
    """
    info, origin = msg.info, msg.info.origin
    return DistanceMap.from_occupancy_grid(
        msg.data, info.width, info.height, info.resolution,
        (origin.position.x, origin.position.y, yaw_from_quaternion(origin.orientation)))


def laser_mount_from_transform(transform):
    """The :class:`LaserMount` of the geometry_msgs/Transform base -> laser.

    Raises:
        ValueError: an invalid rotation or a non-finite translation.
    """
    t, q = transform.translation, transform.rotation
    matrix = geometry.make_transform((q.x, q.y, q.z, q.w), (t.x, t.y, t.z))
    if not all(math.isfinite(v) for v in (t.x, t.y)):
        raise ValueError('non-finite laser position (%r, %r)' % (t.x, t.y))
    upside_down = matrix[2, 2] < 0.0
    # The planar heading of the laser's x axis (for an upside-down laser too: x is still
    # forward, only the sense of its angles flips).
    yaw = math.atan2(matrix[1, 0], matrix[0, 0])
    return LaserMount(float(t.x), float(t.y), yaw, bool(upside_down))
