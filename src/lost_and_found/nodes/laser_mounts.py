"""Where each laser sits on the robot, from tf, for the adapters that place scans."""
import rospy
import tf2_ros

from lost_and_found.nodes.conversions import laser_mount_from_transform

#: Seconds between two warnings about the same missing transform.
WARN_PERIOD = 5.0


class LaserMounts:
    """The LaserMount of each laser frame: tf ``base_frame`` <- frame, looked up once (static).

    Args:
        base_frame: the robot's base frame (e.g. base_footprint).
        tf_buffer: a tf2_ros.Buffer fed by a TransformListener (None until the node starts).
        purpose: what the mount is for, in the warning when tf lacks it.

    Attributes:
        known: laser frame -> LaserMount found so far.
        tf_buffer: the tf2_ros.Buffer it looks in.
    """

    def __init__(self, base_frame, tf_buffer, purpose):
        """Nothing known yet."""
        self.base_frame = base_frame
        self.known = {}
        self.tf_buffer = tf_buffer
        self._purpose = purpose

    def get(self, frame):
        """The LaserMount of ``frame``; None (warned, throttled) while tf lacks a usable one,
        and None without a tf buffer."""
        mount = self.known.get(frame)
        if mount is not None or self.tf_buffer is None:
            return mount
        try:
            # tf2 refuses a leading '/' (tf1's style, still sent by some older laser drivers)
            stamped = self.tf_buffer.lookup_transform(self.base_frame.lstrip('/'),
                                                      frame.lstrip('/'), rospy.Time(0))
            mount = laser_mount_from_transform(stamped.transform)
        except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                tf2_ros.ExtrapolationException, tf2_ros.InvalidArgumentException,
                ValueError) as error:
            rospy.logwarn_throttle(WARN_PERIOD, '%s: no usable transform %s <- %r %s: %s' % (
                rospy.get_name(), self.base_frame, frame, self._purpose, error))
            return None
        self.known[frame] = mount
        rospy.loginfo('%s: laser %s at (%.3f, %.3f, %.3f rad%s) in %s', rospy.get_name(),
                      frame, mount.x, mount.y, mount.yaw,
                      ', upside down' if mount.upside_down else '', self.base_frame)
        return mount
