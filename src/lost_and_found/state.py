"""The robot state shared by every lost_and_found node.

One node owns the state: ``lost_service``. It publishes it latched on ``lost_service/state``
(std_msgs/String) and serves ``lost_service/change_state`` (lost_and_found/ChangeState), in the
robot's namespace (``/lost_service/...`` at the root).
Every other node reads it and asks for changes through :class:`StateClient`; an illegal request
is refused with a reason and changes nothing.

States::

    IDLE        localized, no goal
    NAVIGATING  localized, driving to a goal
    FLYING      both wheels dropped: picked up
    LOST        does not know where it is (kidnapped and put down, or tier-2 lost)
    LOCALIZING  a pose fix (fiducial or manual /initialpose) arrived; waiting for amcl to agree
    NEED_HELP   the search budget is spent: a person must help
"""
import enum


class State(enum.Enum):
    """The robot state; the value is the name published on ``lost_service/state``."""

    IDLE = 'IDLE'
    NAVIGATING = 'NAVIGATING'
    FLYING = 'FLYING'
    LOST = 'LOST'
    LOCALIZING = 'LOCALIZING'
    NEED_HELP = 'NEED_HELP'


#: Legal transitions: state -> the states it may change to. Picking the robot up is legal from
#: every state on the ground; putting it down returns it to where it was (a short lift) or LOST.
TRANSITIONS = {
    State.IDLE: frozenset({State.NAVIGATING, State.FLYING, State.LOST}),
    State.NAVIGATING: frozenset({State.IDLE, State.FLYING, State.LOST}),
    State.FLYING: frozenset({State.IDLE, State.NAVIGATING, State.LOST, State.NEED_HELP}),
    State.LOST: frozenset({State.IDLE, State.FLYING, State.LOCALIZING, State.NEED_HELP}),
    State.LOCALIZING: frozenset({State.IDLE, State.FLYING, State.LOST}),
    State.NEED_HELP: frozenset({State.IDLE, State.FLYING, State.LOCALIZING}),
}

#: States in which the robot knows where it is.
LOCALIZED = frozenset({State.IDLE, State.NAVIGATING})


def parse_state(name):
    """Return the State named ``name`` (case-insensitive), or None when there is none."""
    try:
        return State(str(name).strip().upper())
    except ValueError:
        return None


def parse_states(text):
    """The States named in ``text`` (separated by spaces or commas).

    Returns:
        (states, bad): ``states`` a frozenset (empty for an empty text), ``bad`` the first name
        that is no State, or None.
    """
    states = set()
    for name in str(text).replace(',', ' ').split():
        state = parse_state(name)
        if state is None:
            return frozenset(), name
        states.add(state)
    return frozenset(states), None


def states_text(states):
    """The names of ``states`` (a State or an iterable of them, or None) for ``parse_states``."""
    if states is None:
        return ''
    if isinstance(states, State):
        states = (states,)
    return ' '.join(sorted(s.value for s in states))


def transition_error(current, target):
    """Why ``current -> target`` is illegal, or None when it is legal.

    Staying in the same state is legal (and a no-op).
    """
    if target == current:
        return None
    if target not in TRANSITIONS[current]:
        allowed = ', '.join(sorted(s.value for s in TRANSITIONS[current]))
        return '%s -> %s is not a legal transition (from %s: %s)' % (
            current.value, target.value, current.value, allowed)
    return None


class StateMachine:
    """The owner's copy of the state: applies legal changes, refuses illegal ones."""

    def __init__(self, initial=State.IDLE):
        """Start in ``initial``."""
        self.state = initial
        self.previous = initial

    def request(self, target):
        """Change to ``target`` if legal.

        Returns:
            (accepted, reason): reason is '' when accepted, else why not.
        """
        error = transition_error(self.state, target)
        if error:
            return False, error
        if target != self.state:
            self.previous, self.state = self.state, target
        return True, ''


class StateClient:
    """Reads the latched state and asks ``lost_service`` for changes (rospy nodes only).

    Args:
        namespace: where lost_service publishes ``state`` and serves ``change_state``.
        on_change: optional callable(State) run on every new state (in a rospy thread).
    """

    def __init__(self, namespace='lost_service', on_change=None):
        """Subscribe to the latched state; the service proxy is made on first request."""
        import rospy
        from std_msgs.msg import String
        self._rospy = rospy
        self._ns = namespace.rstrip('/')
        self._on_change = on_change
        self.state = None
        self._proxy = None
        self._sub = rospy.Subscriber(self._ns + '/state', String, self._on_state, queue_size=10)

    def _on_state(self, msg):
        state = parse_state(msg.data)
        if state is None:
            self._rospy.logwarn_throttle(10.0, 'unknown state %r on %s/state' % (
                msg.data, self._ns))
            return
        changed = state != self.state
        self.state = state
        if changed and self._on_change is not None:
            self._on_change(state)

    def request(self, target, reason, timeout=2.0, expected=None):
        """Ask for ``target``; never raises: :meth:`ask` without whether lost_service
        answered.

        Returns:
            (accepted, message): message says why a request was refused or failed.
        """
        return self.ask(target, reason, timeout, expected)[1:]

    def ask(self, target, reason, timeout=2.0, expected=None):
        """Ask for ``target``; never raises.

        Waits at most ``timeout`` seconds for the service to appear. The call itself has no
        timeout (rospy's service calls have none): it waits for lost_service's answer, which
        its handler gives at once (it queues amcl's service calls for its own worker thread);
        a lost_service that dies mid-call ends the call with the error returned here.

        With ``expected`` (a State, or several: what the caller saw when it decided),
        lost_service refuses the request when the state is none of them any more.

        Returns:
            (answered, accepted, message): answered is False when lost_service could not be
            reached or failed to answer (its decision is unknown: worth asking again), and
            message then says why; otherwise message says why a refused request was refused.
        """
        from lost_and_found.srv import ChangeState
        name = self._ns + '/change_state'
        try:
            if self._proxy is None:
                self._rospy.wait_for_service(name, timeout=timeout)
                self._proxy = self._rospy.ServiceProxy(name, ChangeState)
            reply = self._proxy(state=target.value, reason=reason,
                                expected=states_text(expected))
        except (self._rospy.ROSException, self._rospy.ServiceException) as error:
            self._proxy = None
            return False, False, '%s unavailable: %s' % (name, error)
        # self.state follows the latched topic only: taking the reply's state here could make
        # the topic's message of that same change look like no change, and on_change would
        # never hear of it.
        return True, bool(reply.accepted), reply.message
