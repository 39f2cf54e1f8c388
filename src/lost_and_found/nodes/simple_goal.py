"""move_base's relay of ``move_base_simple/goal`` onto its own action, for its stand-ins."""
import time

import rospy
from actionlib.goal_id_generator import GoalIDGenerator
from geometry_msgs.msg import PoseStamped
from move_base_msgs.msg import MoveBaseActionGoal

#: Wall seconds :meth:`SimpleGoalRelay.start` waits for its goal publisher to reach this node.
CONNECT_TIMEOUT = 10.0

#: Seconds between two warnings about a goal that could not be relayed.
_THROTTLE = 5.0


class SimpleGoalRelay:
    """Re-sends each ``move_base_simple/goal`` as a goal of this node's own move_base action.

    move_base does this with rviz's goals, under its own caller id. roscpp hands a node's
    message to the node's own subscribers in-process; rospy sends it over TCP, through a
    connection made asynchronously after both ends register. A goal relayed before that
    connection exists is lost, so :meth:`start` (called after the action server has started)
    subscribes to ``move_base_simple/goal`` only once the goal publisher reaches this very node.

    Subscribed topics:
        move_base_simple/goal (geometry_msgs/PoseStamped): from :meth:`start` on.
    Published topics:
        <action>/goal (move_base_msgs/MoveBaseActionGoal): each of them, stamped now, new id.

    Args:
        action: the name of this node's move_base action (``move_base`` or its remapping).
    """

    def __init__(self, action):
        """Advertise ``<action>/goal``; nothing is subscribed until :meth:`start`."""
        self._ids = GoalIDGenerator()
        self._pub = rospy.Publisher(action + '/goal', MoveBaseActionGoal, queue_size=10)

    def start(self, timeout=CONNECT_TIMEOUT):
        """Subscribe once this node's action server is connected to the goal publisher.

        Start the action server first. After ``timeout`` wall seconds without that connection
        the relay warns and subscribes anyway (a goal relayed into no connection is lost).

        Returns:
            True when the connection was there before subscribing.
        """
        me = rospy.get_name()
        deadline = time.monotonic() + timeout
        # rospy's publisher names each connection by the subscriber's caller id.
        while not self._pub.impl.has_connection(me):
            if rospy.is_shutdown():
                return False
            if time.monotonic() >= deadline:
                rospy.logwarn('%s: %s is not connected to this node\'s action server after '
                              '%g s; relaying move_base_simple/goal anyway', me,
                              self._pub.resolved_name, timeout)
                break
            time.sleep(0.01)
        connected = self._pub.impl.has_connection(me)
        rospy.Subscriber('move_base_simple/goal', PoseStamped, self._on_goal, queue_size=1)
        return connected

    def _on_goal(self, msg):
        try:
            goal = MoveBaseActionGoal()
            goal.header.stamp = rospy.Time.now()
            goal.goal_id = self._ids.generate_ID()
            goal.goal.target_pose = msg
            self._pub.publish(goal)
        except Exception as error:   # noqa: B902 - a callback must never die on bad input
            rospy.logwarn_throttle(_THROTTLE, '%s: skipped a bad move_base_simple/goal: %r'
                                   % (rospy.get_name(), error))
