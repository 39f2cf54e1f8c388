#!/usr/bin/env python3
"""rostest: lost_and_found.launch alone starts cleanly and waits for the robot; every node that
reads the robot state reads it from the lost_service of its own namespace (``~ns``: where the
.test file includes the launch, '' for the root)."""
import threading
import unittest

import rosgraph
import rospy
import rostest
from rosgraph_msgs.msg import Log
from std_msgs.msg import Bool, String
from ros_wait import wait_for

NAMES = ['kidnap_monitor', 'lost_detector', 'lost_service', 'lost_and_found',
         'fiducial_localizer', 'panorama_localizer']
#: The nodes that follow lost_service's state (through state.py's StateClient).
STATE_READERS = ['kidnap_monitor', 'lost_and_found', 'fiducial_localizer', 'panorama_localizer']


class TestLaunchSmoke(unittest.TestCase):

    def setUp(self):
        self.ns = rospy.get_param('~ns', '').rstrip('/')
        self.latest = {}
        self.logs = []
        self.lock = threading.Lock()
        for topic, cls in [('lost_service/state', String), ('lost_detector/status', String),
                           ('kidnap_monitor/picked_up', Bool)]:
            rospy.Subscriber(self.name(topic), cls, self.keep, topic)
        rospy.Subscriber('/rosout', Log, self.log, queue_size=1000)

    def keep(self, msg, topic):
        self.latest[topic] = msg.data

    def log(self, msg):
        with self.lock:
            self.logs.append(msg)

    def name(self, relative):
        """``relative`` in the namespace the launch was included in."""
        return '%s/%s' % (self.ns, relative)

    def running_nodes(self):
        master = rosgraph.Master('/test_launch_smoke')
        publishers, subscribers, services = master.getSystemState()
        names = set()
        for _, nodes in publishers + subscribers + services:
            names.update(nodes)
        return names

    def state_readers(self):
        """The nodes subscribed to this namespace's lost_service/state."""
        _, subscribers, _ = rosgraph.Master('/test_launch_smoke').getSystemState()
        return {node for topic, nodes in subscribers
                if topic == self.name('lost_service/state') for node in nodes}

    def test_starts_cleanly_and_waits(self):
        nodes = {self.name(n) for n in NAMES}
        wait_for(lambda: nodes <= self.running_nodes(), 30, 'all six nodes')
        wait_for(lambda: self.latest.get('lost_service/state') == 'IDLE', 10, 'state IDLE')
        wait_for(lambda: self.latest.get('lost_detector/status') == 'normal', 10,
                 'detector normal')
        wait_for(lambda: self.latest.get('kidnap_monitor/picked_up') is False, 10,
                 'picked_up false')
        readers = {self.name(n) for n in STATE_READERS}
        wait_for(lambda: readers <= self.state_readers(), 10,
                 'every state reader on %s' % self.name('lost_service/state'))

        def warned_about_move_base():
            with self.lock:
                return any(m.name == self.name('lost_and_found') and m.level == Log.WARN and
                           'move_base' in m.msg for m in self.logs)
        wait_for(warned_about_move_base, 30, 'a warning that move_base is missing')
        self.assertTrue(nodes <= self.running_nodes(), 'a node died while waiting')
        with self.lock:
            bad = [(m.name, m.msg) for m in self.logs if m.level >= Log.ERROR]
        self.assertEqual(bad, [], 'errors or fatals logged at start-up')


if __name__ == '__main__':
    rospy.init_node('test_launch_smoke')
    rostest.rosrun('lost_and_found', 'launch_smoke', TestLaunchSmoke)
