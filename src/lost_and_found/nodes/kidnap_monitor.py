"""The kidnap_monitor node: Kobuki wheel drops and dock state -> picked_up, kidnapped, on_dock.

All decisions are made by :class:`lost_and_found.core.kidnap.KidnapTracker`; this module only
turns messages and the ROS clock into plain values and publishes the tracker's flags.
"""
import threading

import rospy
from kobuki_msgs.msg import SensorState, WheelDropEvent
from std_msgs.msg import Bool

from lost_and_found.core.kidnap import KidnapConfig, KidnapEvent, KidnapTracker
from lost_and_found.nodes.params import load_config
from lost_and_found.state import LOCALIZED, StateClient

#: How often (s) a repeating problem (bad message, stale stamp) is logged at most.
_THROTTLE = 10.0

_EDGE_TEXT = {
    KidnapEvent.PICKED_UP: 'picked up: both wheels dropped',
    KidnapEvent.KIDNAPPED: 'kidnapped: held up longer than kidnap_after',
    KidnapEvent.PUT_DOWN: 'put down: both wheels on the ground again',
    KidnapEvent.BUMP: 'bump: wheel drop too short or on one wheel only (not a pick-up)',
    KidnapEvent.DOCKED: 'on the dock',
    KidnapEvent.UNDOCKED: 'left the dock',
    KidnapEvent.KIDNAP_CLEARED: 'kidnap cleared: docked or localized again',
}


def stamp_seconds(header):
    """Return a header's stamp in seconds, or None when it is unset (zero)."""
    if header.stamp.is_zero():
        return None
    return header.stamp.to_sec()


def wheel_dropped(msg):
    """Whether a WheelDropEvent says its wheel dropped (True) or was raised (False).

    Raises:
        ValueError: a state that is neither (a garbled event must not read as "raised").
    """
    if msg.state not in (WheelDropEvent.RAISED, WheelDropEvent.DROPPED):
        raise ValueError('wheel %r state %r is neither RAISED (0) nor DROPPED (1)'
                         % (msg.wheel, msg.state))
    return msg.state == WheelDropEvent.DROPPED


class KidnapTrackerNode:
    """ROS adapter of :class:`KidnapTracker`.

    Subscribed topics:
        ``mobile_base/events/wheel_drop`` (kobuki_msgs/WheelDropEvent): one event per wheel
        change. ``mobile_base/sensors/core`` (kobuki_msgs/SensorState): wheel-drop bits and
        charger state at 50 Hz. ``<state_namespace>/state`` (std_msgs/String, via StateClient):
        back in IDLE or NAVIGATING clears the kidnap flag.

    Published topics (std_msgs/Bool, latched, on change; False at start):
        ``~picked_up``, ``~kidnapped``, ``~on_dock``. ``~kidnapped`` True is also published
        again at every kidnap while it is still True from an earlier one.

    Parameters:
        ``~debounce`` (float, 0.2 s), ``~kidnap_after`` (float, 2.0 s), ``~rate`` (float, 20 Hz),
        ``~state_namespace`` (str, 'lost_service').
    """

    def __init__(self, tracker, config):
        """Keep the tracker and config; ROS connections are made by :meth:`start`."""
        self._tracker = tracker
        self._config = config
        # Callbacks run in several rospy threads: one lock keeps the tracker consistent and
        # the time read inside it monotonic.
        self._lock = threading.Lock()
        self._published = {}
        self._pubs = {}
        self._subs = []
        self._timer = None
        self._state_client = None

    def start(self):
        """Advertise the flags (publishing False), subscribe, and start the timer."""
        for name in ('picked_up', 'kidnapped', 'on_dock'):
            # A queue, not just the latest value: rospy publishes asynchronously, and an edge
            # replaced by the next before its writer thread sent it (a busy machine) is lost:
            # a kidnapped that never arrives turns a kidnap into a short lift.
            self._pubs[name] = rospy.Publisher('~' + name, Bool, queue_size=10, latch=True)
        with self._lock:
            self._publish_changes(force=True)
        self._subs = [
            rospy.Subscriber('mobile_base/events/wheel_drop', WheelDropEvent,
                             self._on_wheel_drop, queue_size=20),
            rospy.Subscriber('mobile_base/sensors/core', SensorState, self._on_sensor_state,
                             queue_size=10),
        ]
        self._state_client = StateClient(self._config.state_namespace,
                                         on_change=self._on_state)
        # reset=True: a timer survives a clock that jumps backwards (e.g. a restarted bag).
        self._timer = rospy.Timer(rospy.Duration(1.0 / self._config.rate), self._on_timer,
                                  reset=True)

    def _on_wheel_drop(self, msg):
        self._run(lambda t: self._tracker.on_wheel(msg.wheel, wheel_dropped(msg), t),
                  'WheelDropEvent')

    def _on_sensor_state(self, msg):
        stamp = stamp_seconds(msg.header)
        self._run(lambda t: self._tracker.on_sensor_state(
            msg.wheel_drop, msg.charger, t, stamp=stamp), 'SensorState')

    def _on_timer(self, _event):
        self._run(self._tracker.tick, 'timer')

    def _on_state(self, state):
        if state in LOCALIZED:
            self._run(lambda _t: self._tracker.clear_kidnapped(), 'state %s' % state.value)

    def _run(self, call, what):
        """Call the tracker with the current time, log its edges and publish changes."""
        try:
            with self._lock:
                events = call(rospy.get_time())
                for event in events:
                    rospy.loginfo('%s: %s', rospy.get_name(), _EDGE_TEXT[event])
                self._publish_changes(events=events)
        except ValueError as error:
            rospy.logwarn_throttle(_THROTTLE, '%s: skipping bad %s: %s' % (
                rospy.get_name(), what, error))
        except Exception as error:  # noqa: B902 - a callback must never die on bad input
            rospy.logerr_throttle(_THROTTLE, '%s: error handling %s: %r' % (
                rospy.get_name(), what, error))

    def _publish_changes(self, force=False, events=()):
        """Publish every flag whose value changed since it was last published.

        Args:
            force: publish every flag, changed or not.
            events: the tracker's events of this call; a ``KIDNAPPED`` among them publishes
                ``kidnapped`` True even when it already was.
        """
        # kidnapped before picked_up: when a lift ends just after kidnap_after, both change in
        # one call, and a listener must learn of the kidnap before it learns of the put-down.
        values = {'kidnapped': self._tracker.kidnapped, 'picked_up': self._tracker.picked_up,
                  'on_dock': self._tracker.on_dock}
        if self._tracker.picked_up:
            # But a pick-up goes out before a kidnap of the same call (after a stalled timer):
            # lost_service forgets at each pick-up whether the lift was a kidnap.
            values = {'picked_up': values.pop('picked_up'), **values}
        # A second kidnap before the robot is localized again leaves the flag True: without a
        # new True the listener never hears that this lift was a kidnap and takes it for a
        # short one. (A kidnap cleared again in the same call, by docking, is not repeated.)
        kidnapped_again = KidnapEvent.KIDNAPPED in events and self._tracker.kidnapped
        for name, value in values.items():
            again = name == 'kidnapped' and kidnapped_again
            if force or again or self._published.get(name) != value:
                self._pubs[name].publish(Bool(data=value))
                self._published[name] = value


def main():
    """Run the kidnap_monitor node."""
    rospy.init_node('kidnap_monitor')
    config = load_config(KidnapConfig)
    node = KidnapTrackerNode(KidnapTracker(config), config)
    node.start()
    rospy.spin()
