"""lost_service's message conversions, without a ROS master."""
import math

import pytest
from geometry_msgs.msg import Quaternion

from lost_and_found.core.lost_service import Pose2D, Reseed, Status
from lost_and_found.nodes.lost_service import pose_message, status_message, yaw_from_quaternion


@pytest.mark.parametrize('scale', [1.0, 2.0, 0.98])
@pytest.mark.parametrize('yaw', [0.0, 0.5, math.pi / 2, -2.0, math.pi - 1e-9])
def test_yaw_from_quaternion_of_any_length(yaw, scale):
    q = Quaternion(x=0.0, y=0.0, z=scale * math.sin(yaw / 2), w=scale * math.cos(yaw / 2))
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


class _Recorder:
    """Stands in for a rospy.Publisher."""

    def __init__(self, *_args, **_kwargs):
        """Nothing sent yet."""
        self.sent = []

    def publish(self, msg):
        """Keep ``msg``."""
        self.sent.append(msg)


class _Worker:
    """Stands in for the ServiceWorker: keeps the calls."""

    def __init__(self, *_args, **kwargs):
        """No call yet; ``on_failure`` kept, as the real one keeps it."""
        self.calls = []
        self.on_failure = kwargs.get('on_failure')

    def call(self, name, announce=False):
        """Keep ``name``."""
        self.calls.append(name)


@pytest.fixture
def no_master(monkeypatch):
    """rospy's publishers, services, timers and clock stood in for; ``(timers, clock)``."""
    import rospy
    from lost_and_found.nodes import lost_service as node_module
    clock = {'t': 100.0}
    timers = []
    monkeypatch.setattr(rospy, 'Publisher', _Recorder)
    monkeypatch.setattr(rospy, 'Service', lambda *_a, **_k: None)
    monkeypatch.setattr(rospy, 'Timer', lambda *a, **k: timers.append((a, k)))
    monkeypatch.setattr(rospy, 'get_time', lambda: clock['t'])
    monkeypatch.setattr(rospy.Time, 'now', staticmethod(lambda: rospy.Time(0)))
    monkeypatch.setattr(node_module, 'ServiceWorker', _Worker)
    return timers, clock


def test_a_latched_lost_at_start_is_acted_on_and_the_timer_survives_a_clock_jump(
        no_master, monkeypatch):
    import rospy
    from std_msgs.msg import String
    from lost_and_found.core.lost_service import LostService, LostServiceConfig
    from lost_and_found.nodes.lost_service import LostServiceNode
    from lost_and_found.state import State
    timers, _clock = no_master
    errors = []

    def subscriber(topic, _cls, callback, callback_args=None, **_kwargs):
        # A latched topic delivers its last message as soon as it is subscribed to.
        if topic == 'lost_detector/status':
            try:
                callback(String(data='lost'))
            except Exception as error:  # noqa: B902 - rospy would log a bad callback
                errors.append(error)
    monkeypatch.setattr(rospy, 'Subscriber', subscriber)
    config = LostServiceConfig()
    node = LostServiceNode(LostService(config), config)
    node.start()
    assert errors == [] and node.core.state == State.LOST
    assert node._worker.calls == ['global_localization']
    assert len(timers) == 1 and timers[0][1].get('reset') is True


def fix_message(x, callerid='/fiducial_localizer'):
    """An initialpose as another node publishes it."""
    from geometry_msgs.msg import PoseWithCovarianceStamped
    msg = PoseWithCovarianceStamped()
    msg.header.frame_id = 'map'
    msg.pose.pose.position.x = x
    msg.pose.pose.orientation.w = 1.0
    msg._connection_header = {'callerid': callerid}
    return msg


def test_a_pose_fix_that_is_not_finite_is_ignored(no_master, monkeypatch):
    import rospy
    from lost_and_found.core.lost_service import LostService, LostServiceConfig
    from lost_and_found.nodes.lost_service import LostServiceNode
    from lost_and_found.state import State
    monkeypatch.setattr(rospy, 'Subscriber', lambda *_a, **_k: None)
    monkeypatch.setattr(rospy, 'get_name', lambda: '/lost_service')
    warnings = []
    monkeypatch.setattr(rospy, 'logwarn_throttle', lambda _p, text: warnings.append(text))
    config = LostServiceConfig()
    node = LostServiceNode(LostService(config), config)
    node.start()
    node._handle(node.core.on_detector_status, 'lost', 100.0)
    assert node.core.state == State.LOST
    node._on_initialpose(fix_message(float('nan')))
    assert node.core.state == State.LOST and len(warnings) == 1
    assert 'not finite' in warnings[0] and '/fiducial_localizer' in warnings[0]
    bad_covariance = fix_message(1.0)
    bad_covariance.pose.covariance = [float('inf')] + [0.0] * 35
    node._on_initialpose(bad_covariance)
    assert node.core.state == State.LOST
    elsewhere = fix_message(1.0)
    elsewhere.header.frame_id = 'odom'          # amcl would ignore it
    node._on_initialpose(elsewhere)
    assert node.core.state == State.LOST and "frame 'odom'" in warnings[-1]
    node._on_initialpose(fix_message(1.0))
    assert node.core.state == State.LOCALIZING


@pytest.mark.parametrize('frame', ['', '/map'])
def test_a_pose_fix_in_amcls_frame_or_none_is_a_fix(no_master, monkeypatch, frame):
    import rospy
    from lost_and_found.core.lost_service import LostService, LostServiceConfig
    from lost_and_found.nodes.lost_service import LostServiceNode
    from lost_and_found.state import State
    monkeypatch.setattr(rospy, 'Subscriber', lambda *_a, **_k: None)
    monkeypatch.setattr(rospy, 'get_name', lambda: '/lost_service')
    config = LostServiceConfig()
    node = LostServiceNode(LostService(config), config)
    node.start()
    node._handle(node.core.on_detector_status, 'lost', 100.0)
    fix = fix_message(1.0)
    fix.header.frame_id = frame                 # amcl takes both (an empty one with a warning)
    node._on_initialpose(fix)
    assert node.core.state == State.LOCALIZING


def test_the_worker_reports_a_failed_call_and_keeps_running(monkeypatch):
    import threading
    import rospy
    from lost_and_found.nodes.lost_service import ServiceWorker
    failed = []
    done = threading.Event()

    def wait_for_service(name, timeout=None):
        if name.endswith('request_nomotion_update'):
            raise TypeError('something no proxy should raise')    # not a ROS exception
        raise rospy.ROSException('timeout exceeded while waiting for service')

    def on_failure(name):
        failed.append(name)
        if len(failed) == 1:
            raise RuntimeError('a bug in the handler')
        done.set()
    monkeypatch.setattr(rospy, 'wait_for_service', wait_for_service)
    monkeypatch.setattr(rospy, 'logwarn_throttle', lambda *_a: None)
    monkeypatch.setattr(rospy, 'logerr_throttle', lambda *_a: None)
    worker = ServiceWorker(timeout=0.01, on_failure=on_failure)
    worker.call('global_localization')
    worker.call('request_nomotion_update')
    assert done.wait(5.0)       # a wait for the worker thread, not a timing assumption
    assert failed == ['global_localization', 'request_nomotion_update']


def test_a_failed_global_localization_reaches_the_core(no_master, monkeypatch):
    import rospy
    from lost_and_found.core.lost_service import GLOBAL_RETRY, LostService, LostServiceConfig
    from lost_and_found.nodes.lost_service import LostServiceNode
    _timers, clock = no_master
    monkeypatch.setattr(rospy, 'Subscriber', lambda *_a, **_k: None)
    config = LostServiceConfig()
    node = LostServiceNode(LostService(config), config)
    node.start()
    node._handle(node.core.on_detector_status, 'lost', 100.0)
    assert node._worker.calls == ['global_localization']
    node._worker.on_failure('request_nomotion_update')          # not this one: nothing
    node._worker.on_failure('global_localization')
    clock['t'] = 100.0 + GLOBAL_RETRY
    node._on_timer(None)
    assert node._worker.calls == ['global_localization'] * 2
