"""SimpleGoalRelay without a ROS master: it subscribes only once its goals can reach this node."""
from io import BytesIO

import rospy
from geometry_msgs.msg import PoseStamped
from move_base_msgs.msg import MoveBaseActionGoal

from lost_and_found.nodes import simple_goal
from lost_and_found.nodes.simple_goal import SimpleGoalRelay


class FakeImpl:
    """A publisher's topic impl whose connection from this node appears after ``polls`` polls."""

    def __init__(self, polls):
        """Connected from the ``polls``-th call of has_connection on (never when None)."""
        self.polls = polls
        self.calls = 0
        self.asked = []

    def has_connection(self, endpoint_id):
        """The subscriber caller id ``endpoint_id`` is connected (once enough polls were made)."""
        self.asked.append(endpoint_id)
        self.calls += 1
        return self.polls is not None and self.calls >= self.polls


class World:
    """Stands in for rospy.Publisher and rospy.Subscriber; records what the relay does."""

    def __init__(self, polls):
        """The goal publisher connects to this node after ``polls`` polls."""
        self.impl = FakeImpl(polls)
        self.published = []
        self.subscribed = []      # (topic, callback, connected at subscription)
        self.warnings = []
        world = self

        class Publisher:
            def __init__(self, topic, data_class, queue_size):
                world.topic, world.data_class = topic, data_class
                self.impl = world.impl
                self.resolved_name = '/' + topic

            def publish(self, msg):
                msg.serialize(BytesIO())      # as rospy does: a bad message raises here
                world.published.append(msg)

        def subscriber(topic, _data_class, callback, queue_size):
            connected = world.impl.polls is not None and world.impl.calls >= world.impl.polls
            world.subscribed.append((topic, callback, connected))

        self.publisher_class = Publisher
        self.subscriber = subscriber


def install(monkeypatch, polls):
    """Patch the relay's rospy calls with a World whose connection comes after ``polls`` polls."""
    world = World(polls)
    # Goal ids and stamps read rospy's clock, which needs init_node or this.
    monkeypatch.setattr(rospy.rostime, '_rostime_initialized', True)
    monkeypatch.setattr(simple_goal.rospy, 'Publisher', world.publisher_class)
    monkeypatch.setattr(simple_goal.rospy, 'Subscriber', world.subscriber)
    monkeypatch.setattr(simple_goal.rospy, 'logwarn', lambda *a: world.warnings.append(a))
    monkeypatch.setattr(simple_goal.rospy, 'logwarn_throttle',
                        lambda _p, msg: world.warnings.append(msg))
    return world


def goal(x, y, frame='map'):
    """A PoseStamped at (x, y) in ``frame``."""
    msg = PoseStamped()
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y = x, y
    msg.pose.orientation.w = 1.0
    return msg


def test_subscribes_only_after_the_goal_publisher_reaches_this_node(monkeypatch):
    world = install(monkeypatch, polls=5)
    relay = SimpleGoalRelay('move_base')
    assert (world.topic, world.data_class) == ('move_base/goal', MoveBaseActionGoal)
    assert world.subscribed == []
    assert relay.start(timeout=10.0) is True
    assert world.impl.calls >= 5
    assert set(world.impl.asked) == {rospy.get_name()}
    assert [(t, c) for t, _, c in world.subscribed] == [('move_base_simple/goal', True)]
    assert world.warnings == []


def test_subscribes_with_a_warning_when_the_connection_never_comes(monkeypatch):
    world = install(monkeypatch, polls=None)
    assert SimpleGoalRelay('robot/move_base').start(timeout=0.05) is False
    assert world.topic == 'robot/move_base/goal'
    assert [(t, c) for t, _, c in world.subscribed] == [('move_base_simple/goal', False)]
    assert len(world.warnings) == 1 and 'relaying move_base_simple/goal anyway' in \
        world.warnings[0][0]


def test_each_goal_is_relayed_with_a_fresh_id(monkeypatch):
    world = install(monkeypatch, polls=1)
    SimpleGoalRelay('move_base').start()
    relay_goal = world.subscribed[0][1]
    relay_goal(goal(1.0, 2.0))
    relay_goal(goal(3.0, -1.0, frame='odom'))
    assert [(g.goal.target_pose.header.frame_id, g.goal.target_pose.pose.position.x)
            for g in world.published] == [('map', 1.0), ('odom', 3.0)]
    ids = [g.goal_id.id for g in world.published]
    assert len(set(ids)) == 2 and all(ids)


def test_a_bad_goal_is_skipped_with_a_warning(monkeypatch):
    world = install(monkeypatch, polls=1)
    SimpleGoalRelay('move_base').start()
    relay_goal = world.subscribed[0][1]
    relay_goal(None)
    relay_goal(goal(1.0, 2.0))
    assert len(world.published) == 1
    assert len(world.warnings) == 1 and 'bad move_base_simple/goal' in world.warnings[0]
