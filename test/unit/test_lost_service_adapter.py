"""lost_service's message conversions, without a ROS master."""
import math

import pytest
from geometry_msgs.msg import Quaternion

from lost_and_found.core.lost_service import Pose2D, Reseed, Status
from lost_and_found.nodes.lost_service import pose_message, status_message, yaw_from_quaternion


@pytest.mark.parametrize('yaw', [0.0, 0.5, -2.0, math.pi - 1e-9])
def test_yaw_from_quaternion(yaw):
    q = Quaternion(x=0.0, y=0.0, z=math.sin(yaw / 2), w=math.cos(yaw / 2))
    assert yaw_from_quaternion(q) == pytest.approx(yaw)


def test_pose_message_carries_pose_and_covariance():
    import rospy
    msg = pose_message(Reseed(Pose2D(1.0, -2.0, 0.7), 0.5, 0.2), 'map', rospy.Time(3))
    assert msg.header.frame_id == 'map' and msg.header.stamp == rospy.Time(3)
    assert (msg.pose.pose.position.x, msg.pose.pose.position.y) == (1.0, -2.0)
    assert yaw_from_quaternion(msg.pose.pose.orientation) == pytest.approx(0.7)
    cov = list(msg.pose.covariance)
    assert cov[0] == pytest.approx(0.25) and cov[7] == pytest.approx(0.25)
    assert cov[35] == pytest.approx(0.04)
    assert sum(abs(c) for c in cov) == pytest.approx(0.54)


def test_status_message_fields():
    import rospy
    status = Status(tier=2, status='LOCALIZATION_LOST', lost_detector_status='lost',
                    is_lost=True, kidnapped=True, state='LOST')
    msg = status_message(status, rospy.Time(1))
    assert (msg.tier, msg.status, msg.lost_detector_status, msg.is_lost, msg.kidnapped,
            msg.state) == (2, 'LOCALIZATION_LOST', 'lost', True, True, 'LOST')
    assert msg.LOST == 2
