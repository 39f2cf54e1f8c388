"""GoalClient: a status that races send_goal reaches the goal being sent (ros/actionlib#206)."""
import threading
from unittest import mock

import pytest

actionlib = pytest.importorskip('actionlib')
from actionlib.action_client import CommState  # noqa: E402
from actionlib_msgs.msg import GoalStatus  # noqa: E402
from move_base_msgs.msg import MoveBaseAction, MoveBaseGoal  # noqa: E402

from lost_and_found.nodes.goal_client import GoalClient  # noqa: E402


class FakeHandle:
    """A goal handle in a given comm state (equality by identity, as actionlib's by machine)."""

    def __init__(self, state=CommState.DONE, status=GoalStatus.ABORTED):
        self.state = state
        self.status = status

    def get_comm_state(self):
        return self.state

    def get_goal_status(self):
        return self.status

    def get_result(self):
        return None


class RacingActionClient:
    """An ActionClient whose server ends every goal while send_goal is still running.

    send_goal starts a thread that delivers the new goal's DONE transition, and returns only
    once that thread has either delivered it or is blocked waiting for the client to let it
    (``waiting``, set by the client's lock below): the worst case of the real race, forced.
    """

    def __init__(self, ns, _spec):
        self.ns = ns
        self.waiting = threading.Event()
        self.thread = None

    def send_goal(self, _goal, transition_cb=None, feedback_cb=None):
        handle = FakeHandle()

        def deliver():
            transition_cb(handle)
            self.waiting.set()          # delivered (or dropped) without waiting

        self.thread = threading.Thread(target=deliver, daemon=True)
        self.thread.start()
        assert self.waiting.wait(10.0), 'the status thread neither delivered nor waited'
        return handle


class SignallingLock:
    """An RLock that tells the fake action client when another thread waits for it."""

    def __init__(self, event):
        self._lock = threading.RLock()
        self._event = event

    def __enter__(self):
        if not self._lock.acquire(blocking=False):
            self._event.set()
            self._lock.acquire()
        return self

    def __exit__(self, *exc):
        self._lock.release()


def join(client):
    client.action_client.thread.join(10.0)
    assert not client.action_client.thread.is_alive(), 'the status thread never finished'


def make_client():
    with mock.patch('actionlib.simple_action_client.ActionClient', RacingActionClient):
        client = GoalClient('move_base', MoveBaseAction)
    client._lock = SignallingLock(client.action_client.waiting)
    return client


def test_a_goal_the_server_ends_at_once_still_calls_done():
    client = make_client()
    done = []
    client.send_goal(MoveBaseGoal(), done_cb=lambda status, result: done.append(status))
    join(client)
    assert done == [GoalStatus.ABORTED]
    assert client.get_state() == GoalStatus.ABORTED


def test_a_replaced_goal_is_ignored_quietly_and_the_current_goal_gets_its_feedback():
    client = make_client()
    done = []
    feedback = []
    client.send_goal(MoveBaseGoal(), done_cb=lambda status, result: done.append('first'))
    join(client)
    old = client.gh
    client.action_client.waiting.clear()
    client.send_goal(MoveBaseGoal(), done_cb=lambda status, result: done.append('second'),
                     feedback_cb=feedback.append)
    join(client)
    with mock.patch('rospy.logerr') as logerr:
        client._handle_transition(old)
        client._handle_feedback(old, 'old')
        client._handle_feedback(client.gh, 'current')
    assert done == ['first', 'second']
    assert feedback == ['current']
    logerr.assert_not_called()
