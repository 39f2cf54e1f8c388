"""Shared pieces of the end-to-end rostests: watch the simulated robot and the package.

Every check is against sim time (the simulator's /clock); waits have wall-clock deadlines so a
stuck graph fails the test instead of hanging it.
"""
import math
import threading

import rospy
import tf2_ros
from geometry_msgs.msg import PoseStamped
from std_msgs.msg import String

from lost_and_found.core.geometry import wrap_angle
from lost_and_found.msg import LocalizationStatus
from lost_and_found.nodes.conversions import yaw_from_quaternion as yaw_of
from ros_wait import wait_for

#: DESIGN.md §5: recovered = estimate within these of the truth, continuously for HOLD seconds.
RECOVERED_XY = 0.45
RECOVERED_YAW = 0.35
RECOVERED_HOLD = 10.0


class Monitor:
    """Records the robot's truth, the package's belief and state, with sim-time stamps."""

    def __init__(self, map_frame='map', base_frame='base_footprint'):
        """Subscribe to ground truth and the package's outputs; start a tf listener."""
        self.lock = threading.Lock()
        self.map_frame, self.base_frame = map_frame, base_frame
        self.truth = None
        self.states = []          # (sim time, state name)
        self.statuses = []        # (sim time, LocalizationStatus)
        self.detector = []        # (sim time, 'normal' | 'confused' | 'lost')
        self.saved_goal = None
        self.tf_buffer = tf2_ros.Buffer(rospy.Duration(30.0))
        self.tf_listener = tf2_ros.TransformListener(self.tf_buffer)
        rospy.Subscriber('/sim_world/ground_truth', PoseStamped, self._on_truth, queue_size=5)
        rospy.Subscriber('/lost_service/state', String, self._on_state, queue_size=50)
        rospy.Subscriber('/lost_service/status', LocalizationStatus, self._on_status,
                         queue_size=50)
        rospy.Subscriber('/lost_detector/status', String, self._on_detector, queue_size=200)
        rospy.Subscriber('/lost_and_found/saved_goal', PoseStamped, self._on_saved_goal,
                         queue_size=5)

    def _on_truth(self, msg):
        p = msg.pose
        with self.lock:
            self.truth = (p.position.x, p.position.y, yaw_of(p.orientation))

    def _on_state(self, msg):
        with self.lock:
            self.states.append((rospy.get_time(), msg.data))

    def _on_status(self, msg):
        with self.lock:
            self.statuses.append((rospy.get_time(), msg))

    def _on_detector(self, msg):
        with self.lock:
            self.detector.append((rospy.get_time(), msg.data))

    def _on_saved_goal(self, msg):
        with self.lock:
            self.saved_goal = msg if msg.header.frame_id else None

    def state(self):
        """The latest state name, or None."""
        with self.lock:
            return self.states[-1][1] if self.states else None

    def last_status(self):
        """The latest LocalizationStatus, or None."""
        with self.lock:
            return self.statuses[-1][1] if self.statuses else None

    def entered_state_stamp(self, state, after=0.0):
        """Header stamp (sim s) of the first LocalizationStatus that changed the state to
        ``state``, among those stamped at or after ``after``; None if none yet.

        lost_service publishes a status on any change of it (state, tier, detector, kidnapped)
        and stamps it with its own clock as it publishes, right after handling the event that
        changed it: unlike the time this test receives it, the stamp does not grow with the
        delivery to this test.
        """
        previous = None
        with self.lock:
            for _, status in self.statuses:
                stamp = status.header.stamp.to_sec()
                if status.state == state and previous != state and stamp >= after:
                    return stamp
                previous = status.state
        return None

    def estimate(self):
        """The package's belief: (x, y, yaw) of the base in the map frame from tf, or None."""
        try:
            t = self.tf_buffer.lookup_transform(self.map_frame, self.base_frame, rospy.Time(0),
                                                rospy.Duration(0.2))
        except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                tf2_ros.ExtrapolationException):
            return None
        tr = t.transform
        return tr.translation.x, tr.translation.y, yaw_of(tr.rotation)

    def error(self):
        """(xy error m, |yaw error| rad) of the estimate against the truth, or None."""
        with self.lock:
            truth = self.truth
        estimate = self.estimate()
        if truth is None or estimate is None:
            return None
        return (math.hypot(estimate[0] - truth[0], estimate[1] - truth[1]),
                abs(wrap_angle(estimate[2] - truth[2])))

    def is_close(self):
        """The estimate is within the recovered tolerances of the truth now."""
        error = self.error()
        return error is not None and error[0] <= RECOVERED_XY and error[1] <= RECOVERED_YAW

    def wait_recovered(self, timeout, hold=RECOVERED_HOLD):
        """Wait until the estimate stays close to the truth for ``hold`` sim seconds.

        Returns:
            The sim time at which the recovered stretch began.
        """
        since = [None]

        def recovered():
            if not self.is_close():
                since[0] = None
                return False
            now = rospy.get_time()
            if since[0] is None:
                since[0] = now
            return now - since[0] >= hold
        wait_for(recovered, timeout, 'the estimate to stay within %.2f m / %.2f rad of the '
                 'truth for %.0f s' % (RECOVERED_XY, RECOVERED_YAW, hold), period=0.1)
        return since[0]

    def truth_distance(self, x, y):
        """The ground truth's distance from (x, y) (m), or None before any truth."""
        with self.lock:
            truth = self.truth
        return None if truth is None else math.hypot(truth[0] - x, truth[1] - y)

    def max_tier(self, after=0.0):
        """Highest LocalizationStatus tier seen at or after sim time ``after``."""
        with self.lock:
            return max([s.tier for t, s in self.statuses if t >= after], default=None)
