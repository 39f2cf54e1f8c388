"""Conversions between geometry_msgs orientations and planar yaw, shared by the adapters."""
import math

from geometry_msgs.msg import PoseWithCovarianceStamped, Quaternion


def yaw_from_quaternion(q):
    """Yaw (rad) of a geometry_msgs/Quaternion."""
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


def quaternion_from_yaw(yaw):
    """A geometry_msgs/Quaternion rotating by ``yaw`` about z."""
    return Quaternion(x=0.0, y=0.0, z=math.sin(yaw / 2.0), w=math.cos(yaw / 2.0))


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
