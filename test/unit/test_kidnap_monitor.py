"""kidnap_monitor's flag publication, without a ROS master (publishers are recorded)."""
import pytest
import rospy
from kobuki_msgs.msg import WheelDropEvent

from lost_and_found.core.kidnap import KidnapConfig, KidnapTracker
from lost_and_found.core.lost_service import LostService, LostServiceConfig, Pose2D
from lost_and_found.nodes.kidnap_monitor import KidnapTrackerNode
from lost_and_found.state import State


class RecordingPublisher:
    """Stands for a rospy.Publisher: appends (name, data) to a shared list."""

    def __init__(self, name, sent):
        """Record under ``name`` into ``sent``."""
        self._name = name
        self._sent = sent

    def publish(self, msg):
        """Record the Bool's value."""
        self._sent.append((self._name, msg.data))


class Clock:
    """rospy.get_time's stand-in: the tests set ``now``."""

    def __init__(self):
        """Start at 0 s."""
        self.now = 0.0

    def __call__(self):
        """Return the current test time."""
        return self.now


@pytest.fixture
def clock(monkeypatch):
    """Replace rospy.get_time by a clock the test sets."""
    fake = Clock()
    monkeypatch.setattr(rospy, 'get_time', fake)
    return fake


def make_node(sent):
    """A node with recording publishers, its initial flags already published (and cleared)."""
    config = KidnapConfig()
    config.validate()
    node = KidnapTrackerNode(KidnapTracker(config), config)
    node._pubs = {name: RecordingPublisher(name, sent)
                  for name in ('picked_up', 'kidnapped', 'on_dock')}
    node._publish_changes(force=True)
    del sent[:]
    return node


def wheels(node, clock, t, state):
    """Both WheelDropEvents (state DROPPED or RAISED) at time ``t``."""
    clock.now = t
    for wheel in (WheelDropEvent.LEFT, WheelDropEvent.RIGHT):
        node._on_wheel_drop(WheelDropEvent(wheel=wheel, state=state))


def carry(node, clock, t0, held, step=0.05):
    """Lift at ``t0``, run the timer every ``step`` and put down at ``t0 + held``."""
    wheels(node, clock, t0, WheelDropEvent.DROPPED)
    n = int(round(held / step))
    for i in range(1, n):
        clock.now = t0 + i * step
        node._on_timer(None)
    wheels(node, clock, t0 + held, WheelDropEvent.RAISED)


def test_a_garbled_wheel_drop_state_is_skipped_and_the_lift_stays_a_kidnap(clock, monkeypatch):
    warnings = []
    monkeypatch.setattr(rospy, 'logwarn_throttle', lambda _period, text: warnings.append(text))
    sent = []
    node = make_node(sent)
    wheels(node, clock, 0.0, WheelDropEvent.DROPPED)
    wheels(node, clock, 1.0, 7)                 # neither RAISED nor DROPPED: skipped
    for k in range(1, 60):
        clock.now = 1.0 + 0.05 * k
        node._on_timer(None)
    wheels(node, clock, 4.0, WheelDropEvent.RAISED)
    assert sent == [('picked_up', True), ('kidnapped', True), ('picked_up', False)]
    assert len(warnings) == 2 and 'state 7 is neither' in warnings[0]


def test_second_kidnap_publishes_kidnapped_true_again(clock):
    sent = []
    node = make_node(sent)
    carry(node, clock, 0.0, 3.0)
    assert sent == [('picked_up', True), ('kidnapped', True), ('picked_up', False)]
    del sent[:]
    # Not localized since: the flag is still True, and the second carry is a kidnap too.
    carry(node, clock, 10.0, 3.0)
    assert sent == [('picked_up', True), ('kidnapped', True), ('picked_up', False)]


def test_second_kidnap_and_put_down_in_one_call_publish_kidnapped_first(clock):
    sent = []
    node = make_node(sent)
    carry(node, clock, 0.0, 3.0)
    del sent[:]
    # No timer between the lift and the put-down: the kidnap and the put-down come out of the
    # same call, and kidnapped must still go out before picked_up.
    wheels(node, clock, 10.0, WheelDropEvent.DROPPED)
    wheels(node, clock, 12.5, WheelDropEvent.RAISED)
    assert sent == [('picked_up', True), ('kidnapped', True), ('picked_up', False)]


def test_pick_up_goes_out_before_a_kidnap_of_the_same_call(clock):
    sent = []
    node = make_node(sent)
    # The timer stalled for the whole lift: the first wheel raised reports the pick-up and the
    # kidnap at once (lost_service forgets the kidnap of a lift at its pick-up), the second the
    # put-down.
    wheels(node, clock, 0.0, WheelDropEvent.DROPPED)
    wheels(node, clock, 2.5, WheelDropEvent.RAISED)
    assert sent == [('picked_up', True), ('kidnapped', True), ('picked_up', False)]


def test_short_lift_after_a_kidnap_does_not_repeat_kidnapped(clock):
    sent = []
    node = make_node(sent)
    carry(node, clock, 0.0, 3.0)
    del sent[:]
    carry(node, clock, 10.0, 1.0)
    assert sent == [('picked_up', True), ('picked_up', False)]


def test_second_kidnap_reaches_lost_service_as_a_kidnap(clock):
    service = LostService(LostServiceConfig())
    service.on_detector_status('normal', 0.0)
    service.on_pose(Pose2D(2.0, -1.0, 0.5), (0.05, 0.03), 0.0)
    actions = []

    class Bridge:
        """What lost_service's subscribers do with the published flags."""

        def __init__(self, handler):
            """Forward the flag to ``handler``, a LostService.on_* method."""
            self._handler = handler

        def publish(self, msg):
            """Hand the flag to lost_service at the current test time."""
            actions.append(self._handler(msg.data, clock.now))

    config = KidnapConfig()
    config.validate()
    node = KidnapTrackerNode(KidnapTracker(config), config)
    node._pubs = {'picked_up': Bridge(service.on_picked_up),
                  'kidnapped': Bridge(service.on_kidnapped), 'on_dock': Bridge(service.on_dock)}
    node._publish_changes(force=True)
    carry(node, clock, 10.0, 3.0)
    assert service.state == State.LOST and actions[-1].reset_detector
    # A fix arrives: LOCALIZING is not localized, so the monitor keeps the kidnap flag.
    service.on_initialpose(20.0)
    assert service.state == State.LOCALIZING
    carry(node, clock, 30.0, 3.0)
    assert service.state == State.LOST
    assert actions[-1].reset_detector, 'second kidnap handled as a short lift'
