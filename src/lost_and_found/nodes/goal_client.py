"""actionlib's SimpleActionClient without its send_goal race.

``SimpleActionClient.send_goal`` (actionlib 1.13, Noetic) publishes the goal and only then
stores the new goal's handle. A status message that arrives in between (likely in sim time,
where the navigator answers within one clock tick) reaches ``_handle_transition`` with a
handle the client does not know yet: actionlib logs "Got a transition callback on a goal
handle that we're not tracking" as an ERROR and drops the transition (upstream
ros/actionlib#206). Dropping an ACTIVE is harmless; dropping the DONE of a goal the server
ended at once would leave the client waiting, its ``done_cb`` never called. The late status of
a goal the client has already replaced takes the same path and is harmless.

:class:`GoalClient` makes a transition wait until ``send_goal`` has stored the handle, then
drops quietly (a debug line) the transitions and feedback of goals it no longer tracks.
"""
import threading

import actionlib
import rospy


class GoalClient(actionlib.SimpleActionClient):
    """A SimpleActionClient whose callbacks never see a half-sent goal."""

    def __init__(self, ns, action_spec):
        """Connect to the action server ``ns`` (see SimpleActionClient)."""
        # Held while a goal is being sent; callbacks wait for it. Only send_goal takes it
        # for longer than an instant, and send_goal takes no actionlib goal mutex, so a
        # callback that holds one (actionlib calls them so) cannot deadlock with it.
        self._sending = threading.RLock()
        super().__init__(ns, action_spec)

    def send_goal(self, goal, done_cb=None, active_cb=None, feedback_cb=None):
        """Send ``goal`` as SimpleActionClient does, storing its handle before any callback."""
        with self._sending:
            super().send_goal(goal, done_cb, active_cb, feedback_cb)

    def _tracking(self, gh, what):
        """Wait out a send in progress; whether ``gh`` is the goal this client tracks."""
        with self._sending:
            tracked = self.gh is not None and gh == self.gh
        if not tracked:
            rospy.logdebug('%s: %s of a goal no longer tracked (replaced or cancelled): '
                           'ignored', rospy.resolve_name(self.action_client.ns), what)
        return tracked

    def _handle_transition(self, gh):
        if self._tracking(gh, 'transition'):
            super()._handle_transition(gh)

    def _handle_feedback(self, gh, feedback):
        if self._tracking(gh, 'feedback'):
            super()._handle_feedback(gh, feedback)
