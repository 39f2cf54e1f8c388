"""LaserMounts (nodes/laser_mounts.py): the laser's place on the robot from tf, looked up once."""
import pytest
import rospy
import tf2_ros
from geometry_msgs.msg import TransformStamped

from lost_and_found.nodes.laser_mounts import LaserMounts


class FakeBuffer:
    """A tf buffer that knows base <- laser (0.1 m ahead) once ``ready``."""

    def __init__(self):
        """Not ready; counts lookups."""
        self.ready = False
        self.lookups = 0

    def lookup_transform(self, target, source, _when):
        """base <- laser when ready, else tf's LookupException."""
        self.lookups += 1
        if not self.ready or (target, source) != ('base', 'laser'):
            raise tf2_ros.LookupException('%s <- %s unknown' % (target, source))
        stamped = TransformStamped()
        stamped.transform.translation.x = 0.1
        stamped.transform.rotation.w = 1.0
        return stamped


@pytest.fixture
def logs(monkeypatch):
    """rospy's log calls recorded (no node: rospy's throttle would need its clock)."""
    lines = []
    monkeypatch.setattr(rospy, 'logwarn_throttle', lambda _period, text: lines.append(text))
    monkeypatch.setattr(rospy, 'loginfo', lambda text, *args: lines.append(text % args))
    return lines


def test_missing_transform_is_warned_then_found_once_and_kept(logs):
    buffer = FakeBuffer()
    mounts = LaserMounts('base', buffer, 'for the test')
    assert mounts.get('laser') is None
    assert 'for the test' in logs[-1]
    buffer.ready = True
    mount = mounts.get('laser')
    assert (mount.x, mount.y, mount.yaw, mount.upside_down) == (0.1, 0.0, 0.0, False)
    assert mounts.get('laser') is mount and buffer.lookups == 2
    assert mounts.known == {'laser': mount}


def test_without_a_buffer_nothing_is_looked_up(logs):
    mounts = LaserMounts('base', None, 'for the test')
    assert mounts.get('laser') is None and logs == []


def test_a_laser_frame_with_tf1s_leading_slash_is_found(logs):
    buffer = FakeBuffer()
    buffer.ready = True
    mount = LaserMounts('base', buffer, 'for the test').get('/laser')
    assert mount is not None and mount.x == 0.1
