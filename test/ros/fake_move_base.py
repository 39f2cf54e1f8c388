#!/usr/bin/env python3
"""A fake move_base for rostests: a MoveBaseAction server that never moves anything.

Run it with the node name ``move_base`` so that the action lives at ``move_base``. Like the real
move_base, a ``move_base_simple/goal`` is forwarded to its own action goal topic (under its own
caller id, through the package's SimpleGoalRelay, as sim_navigator does), and a new goal preempts
the one in progress.

Every goal and cancel seen on the wire, and every goal outcome, is published as one JSON object
on ``~events`` (std_msgs/String) so a test can check what the server got:

- ``{"event": "goal", "id", "callerid", "frame", "x", "y", "yaw", "stamp"}`` (stamp of the pose)
- ``{"event": "cancel", "id", "callerid", "stamp"}``
- ``{"event": "succeeded" | "aborted" | "preempted", "id"}``

Parameters:
    ~mode (str, 'succeed'): 'succeed' or 'abort' each goal after ``~delay``, or 'hang' (never
        finish a goal until it is cancelled or preempted).
    ~delay (float, 0.5): seconds before a goal succeeds or aborts.
    ~hang_callers (list of str, []): goals from these caller ids hang whatever the mode (a
        goal from ``move_base_simple/goal`` comes from this node, ``/move_base``).
"""
import json
import math
import threading

import actionlib
import rospy
from actionlib_msgs.msg import GoalID
from move_base_msgs.msg import MoveBaseAction, MoveBaseActionGoal
from std_msgs.msg import String

from lost_and_found.nodes.simple_goal import SimpleGoalRelay

MODES = ('succeed', 'abort', 'hang')


def _yaw(q):
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


class FakeMoveBase:
    """The fake server; see the module docstring for its ROS API."""

    def __init__(self, mode, delay, hang_callers=()):
        """Serve ``move_base`` in ``mode``; goals finish after ``delay`` seconds, except those
        from ``hang_callers``."""
        self._mode = mode
        self._delay = delay
        self._hang_callers = set(hang_callers)
        self._callers = {}      # goal id -> caller id
        self._lock = threading.Lock()
        # Latched: an event published while a listener's connection is still being set up
        # (its side may count it a moment before ours does) reaches it once it is.
        self._events = rospy.Publisher('~events', String, queue_size=100, latch=True)
        relay = SimpleGoalRelay('move_base')
        rospy.Subscriber('move_base/goal', MoveBaseActionGoal, self._on_goal, queue_size=50)
        rospy.Subscriber('move_base/cancel', GoalID, self._on_cancel, queue_size=50)
        self._server = actionlib.SimpleActionServer(
            'move_base', MoveBaseAction, execute_cb=self._execute, auto_start=False)
        self._server.start()
        relay.start()

    def _emit(self, **event):
        with self._lock:
            self._events.publish(String(data=json.dumps(event, sort_keys=True)))

    def _on_goal(self, msg):
        pose = msg.goal.target_pose
        with self._lock:
            self._callers[msg.goal_id.id] = msg._connection_header.get('callerid', '')
        self._emit(event='goal', id=msg.goal_id.id,
                   callerid=msg._connection_header.get('callerid', ''),
                   frame=pose.header.frame_id, x=pose.pose.position.x, y=pose.pose.position.y,
                   yaw=_yaw(pose.pose.orientation), stamp=pose.header.stamp.to_sec())

    def _on_cancel(self, msg):
        self._emit(event='cancel', id=msg.id, stamp=msg.stamp.to_sec(),
                   callerid=msg._connection_header.get('callerid', ''))

    def _execute(self, _goal):
        goal_id = self._server.current_goal.get_goal_id().id
        deadline = rospy.get_time() + self._delay
        with self._lock:
            hang = self._mode == 'hang' or self._callers.get(goal_id) in self._hang_callers
        rate = rospy.Rate(50)
        while not rospy.is_shutdown():
            if self._server.is_preempt_requested():
                self._server.set_preempted()
                self._emit(event='preempted', id=goal_id)
                return
            if not hang and rospy.get_time() >= deadline:
                if self._mode == 'succeed':
                    self._server.set_succeeded()
                    self._emit(event='succeeded', id=goal_id)
                else:
                    self._server.set_aborted()
                    self._emit(event='aborted', id=goal_id)
                return
            try:
                rate.sleep()
            except rospy.ROSInterruptException:
                return


def main():
    """Run the fake move_base."""
    rospy.init_node('move_base')
    mode = rospy.get_param('~mode', 'succeed')
    delay = rospy.get_param('~delay', 0.5)
    hang_callers = rospy.get_param('~hang_callers', [])
    if mode not in MODES or not isinstance(delay, (int, float)) or not delay >= 0 or \
            not isinstance(hang_callers, list):
        rospy.logfatal('fake_move_base: bad ~mode=%r, ~delay=%r or ~hang_callers=%r (mode one '
                       'of %s, delay >= 0, a list of caller ids)', mode, delay, hang_callers,
                       ', '.join(MODES))
        raise SystemExit(1)
    FakeMoveBase(mode, float(delay), hang_callers)
    rospy.spin()


if __name__ == '__main__':
    main()
