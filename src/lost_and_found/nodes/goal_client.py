"""actionlib's SimpleActionClient without its send_goal race.

``SimpleActionClient.send_goal`` (actionlib 1.14 in Debian 12) publishes the goal and only
then stores the new goal's handle. A status message that comes back before that assignment
runs (the sending thread was descheduled; more likely on a busy machine) reaches
``_handle_transition`` with a handle the client does not know yet: actionlib logs "Got a
transition callback on a goal handle that we're not tracking" as an ERROR and drops the
transition (upstream ros/actionlib#206). Dropping an ACTIVE is harmless; dropping the DONE of
a goal the server ended at once would leave the client waiting, its ``done_cb`` never called.
The late status of a goal the client has already replaced takes the same path and is
harmless.

:class:`GoalClient` serialises ``send_goal`` and the callbacks on one lock: a transition waits
until ``send_goal`` has stored the handle, a ``send_goal`` from another thread waits until a
callback has finished with the goal it replaces, and the transitions and feedback of goals
no longer tracked are dropped quietly (a debug line). ``done_cb``, ``active_cb`` and
``feedback_cb`` run holding that lock: they must not wait for another thread that sends or
cancels a goal on this client (calling ``send_goal`` from a callback is fine: the lock is
re-entrant).
"""
import threading

import actionlib
import rospy


class GoalClient(actionlib.SimpleActionClient):
    """A SimpleActionClient whose callbacks never see a half-sent goal."""

    def __init__(self, ns, action_spec):
        """Connect to the action server ``ns`` (see SimpleActionClient)."""
        # Held while a goal is being sent and while a callback runs. actionlib calls the
        # callbacks holding the goal's own mutex and then takes this one; send_goal takes
        # this one and then no goal mutex (only the client's list mutex, which no callback
        # holds), so the two orders never cross.
        self._lock = threading.RLock()
        super().__init__(ns, action_spec)

    def send_goal(self, goal, done_cb=None, active_cb=None, feedback_cb=None):
        """Send ``goal`` as SimpleActionClient does, storing its handle before any callback."""
        with self._lock:
            super().send_goal(goal, done_cb, active_cb, feedback_cb)

    def _tracking(self, gh, what):
        """Whether ``gh`` is the goal this client tracks (call holding ``_lock``)."""
        if self.gh is not None and gh == self.gh:
            return True
        rospy.logdebug('%s: %s of a goal no longer tracked (replaced or cancelled): ignored',
                       rospy.resolve_name(self.action_client.ns), what)
        return False

    def _handle_transition(self, gh):
        with self._lock:
            if self._tracking(gh, 'transition'):
                super()._handle_transition(gh)

    def _handle_feedback(self, gh, feedback):
        with self._lock:
            if self._tracking(gh, 'feedback'):
                super()._handle_feedback(gh, feedback)
