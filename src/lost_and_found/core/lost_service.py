"""The decisions of lost_service: merge the detector and the kidnap monitor, own the state.

Inputs arrive as plain values with the time passed in; each handler returns an
:class:`Actions` telling the adapter what to do (publish a re-seed on ``/initialpose``, call
amcl's ``global_localization``, reset the lost detector). :meth:`LostService.status` is the
merged :class:`Status` that the adapter publishes whenever it changes.

Rules:
- Picked up (both wheels dropped) -> FLYING from any state on the ground.
- Put down after a kidnap (``kidnapped`` rose during *this* lift: held longer than the monitor's
  ``kidnap_after``) -> LOST, re-seed amcl at the last good pose with inflated covariance, reset
  the detector. Put down after a short lift -> back to the state before the lift (LOST when that
  was LOCALIZING: the fix is stale). ``kidnapped`` arriving within ``kidnap_grace`` after such a
  put-down (the two topics raced) still counts as a kidnap (from NEED_HELP, which cannot
  become LOST, the robot keeps waiting for the person who carried it). So does a lift that
  lasted ``kidnap_after`` or longer from ``picked_up`` rising to falling on this node's own
  clock, when the flag has not come at all (a late or lost message): without it the robot
  would take a kidnap for a bump and drive on from where it was lifted.
- Detector tier 2 (``lost``) while on the ground -> LOST; on that transition call
  ``global_localization`` once per lost episode, and never twice within
  ``global_localization_holdoff`` (amcl's covariance right after it is huge by design, so the
  detector is reset and the service waits for it to settle). After a put-down re-seed, amcl
  gets ``reseed_holdoff`` to make the re-seed work (its inflated covariance reads as lost
  at first, or, while the detector settles, a scan taken before amcl has used the re-seed);
  global localization follows only if the detector still reads lost after it. A call that
  fails (amcl's service missing or failing) is tried again every ``GLOBAL_RETRY`` s while
  the robot is LOST and the detector reads lost. The first reading after the robot was in
  the air, or after it became localized again, counts as a transition whatever the reading
  before it was: a detector still holding tier 2 then makes the robot LOST.
- An ``/initialpose`` from anyone else (a fiducial fix, a person with rviz) while LOST or
  NEED_HELP -> LOCALIZING; the detector is reset. One that arrives within
  ``FIX_RESEND_WINDOW`` of a re-seed of ours (a tag in view at the put-down) is sent again by
  lost_service (``resend_fix``): it and our re-seed reach amcl on two connections, in either
  order, and amcl keeps the last one; our copy comes after our re-seed.
- After every detector reset, statuses other than ``normal`` (and P(lost) readings) are
  ignored until the detector's own ``normal`` (its answer to the reset) or for at most
  ``RESET_ACK_WINDOW``: they were read on amcl's pose from before the reset (say, before a
  fiducial fix), and would otherwise send a robot that is LOCALIZING on a good fix back to
  LOST. Any ``normal`` is taken as the answer: a stale ``normal`` followed by a stale ``lost``
  would still get through (the status carries no reset count).
- LOST or LOCALIZING -> IDLE after ``localized_after`` consecutive amcl poses whose covariance is
  tight (major x-y std dev below ``localized_sigma_xy`` and yaw std dev below
  ``localized_sigma_yaw``) while the detector reads ``normal``. The detector's own ``normal`` is
  not enough: right after a reset it reads ``normal`` until ``queue_min`` readings arrived.
  While LOST, tight poses count only once amcl has shown doubt (a pose that is not tight) since
  the robot got lost: a cloud that stayed tight through a kidnap proves nothing. With
  ``kidnap_needs_fix``, tight poses do not end a LOST that began with a kidnap at all: only a
  pose fix (LOCALIZING) does, since amcl can converge tight at a place that looks like the
  right one. With ``refuted_needs_fix`` (on by default) the same holds for a LOST that a client
  asked for while the robot was localized (the estimate was refuted: amcl's own convergence
  was wrong at least once in this episode), until the robot is localized again. With
  ``localized_max_p_lost`` below 1, a tight pose also needs the detector's latest P(lost)
  (``lost_detector/p_lost``, since its last reset) at most that value, and a higher one
  restarts the count. The detector judges a pose after amcl published it, so the
  P(lost) a pose is checked against is usually that of the pose before.
- With ``refute_confused_after`` above 0, a localization on tight amcl poses alone (LOST ->
  IDLE, no pose fix) stays on probation for ``refute_window`` s: when the detector reads
  confused (or lost) for ``refute_confused_after`` s without a normal reading in between (and
  with no gap of ``DOUBT_GAP`` s without a reading), the estimate is taken as refuted, as when
  a client refutes it (below): LOST, global localization (within its hold-off, none), and
  with ``refuted_needs_fix`` only a pose fix ends that LOST. A pose fix, docking, a reset or
  leaving IDLE/NAVIGATING ends the probation; a short lift only pauses it (back on the
  ground, the count of doubt starts again).
- While LOCALIZING the robot stands still (the search stopped when it left LOST) and amcl only
  publishes after a filter update, so every ``nomotion_update_period`` the service asks amcl for
  one (``request_nomotion_update``) to confirm or refute the fix against the laser.
- LOCALIZING -> LOST when the fix is not confirmed within ``localizing_timeout`` (the search
  resumes instead of the robot standing still for ever).
- Docking or a reset -> IDLE from LOST, LOCALIZING or NEED_HELP.
- Clients (state.py) may request any legal transition except FLYING, which only the wheels set.
  A request may name the states it was decided in (``expected``); when the state has moved on
  to another since, it is refused (a stale IDLE for a finished goal must not end LOST).
  A client asking for LOST while the robot is localized says the estimate is wrong
  (fiducial_localizer's tag check refuted it, or the recovery node doubts it after move_base
  aborted the goal it resumed): global localization is called as for a tier-2 transition,
  since amcl's cloud, tight at the wrong place, would otherwise stay there; with
  ``refuted_needs_fix`` that LOST then ends only through a pose fix.
"""
import dataclasses
import logging
import math

from lost_and_found.core.clock import ClockWatch
from lost_and_found.core.config import Checker
from lost_and_found.state import LOCALIZED, State, StateMachine, transition_error

_log = logging.getLogger('rosout')

#: Seconds after a failed call of amcl's ``global_localization`` before it is tried again
#: (while still LOST and read lost): amcl may still be starting, or restarting.
GLOBAL_RETRY = 5.0

#: Detector status strings and the tier each stands for.
DETECTOR_TIERS = {'normal': 0, 'confused': 1, 'lost': 2}

#: Seconds after lost_service resets the detector during which a status other than
#: ``normal`` is taken as a reading from before the reset, until the detector's own ``normal``
#: (it publishes one when it resets) arrives: the reset and the status are two topics, and a
#: reading judged on amcl's pose from before a fix can overtake the reset.
RESET_ACK_WINDOW = 1.0

#: Seconds after a re-seed of ours during which a pose fix from another node is sent again by
#: lost_service. The re-seed and the fix reach amcl on two connections, in either order: a tag
#: in view at the put-down gives a fix that can overtake the re-seed and be undone by it (amcl
#: applies the last initialpose it gets). Sent again on our own connection, the fix reaches amcl
#: after our re-seed. One second covers the transport's reordering with a wide margin and is
#: fiducial_localizer's shortest interval between two fixes.
FIX_RESEND_WINDOW = 1.0

#: Seconds without a detector reading that end a run of doubt (``refute_confused_after``): the
#: detector reads once per amcl pose, and amcl publishes only after the robot moved, so a
#: robot standing still keeps its last reading; a refutation needs readings, not a silence.
DOUBT_GAP = 2.0

#: Seconds past ``kidnap_grace`` after a short-lift put-down within which a ``kidnapped`` is
#: logged as that lift's, late: a flag later still belongs to no lift seen here.
LATE_KIDNAP_WINDOW = 5.0
#: Tier constants and names of lost_and_found/LocalizationStatus.
NORMAL, CONFUSED, LOST, NEED_HELP = 0, 1, 2, 3
TIER_NAMES = {
    NORMAL: 'LOCALIZATION_NORMAL',
    CONFUSED: 'LOCALIZATION_CONFUSED',
    LOST: 'LOCALIZATION_LOST',
    NEED_HELP: 'LOCALIZATION_NEED_HELP',
}


@dataclasses.dataclass(frozen=True)
class LostServiceConfig:
    """Parameters of lost_service (SI units).

    Attributes:
        reseed_sigma_xy: std dev (m) of x and y in the put-down re-seed of amcl.
        reseed_sigma_yaw: std dev (rad) of yaw in the put-down re-seed.
        global_localization_holdoff: minimum time (s) between two global_localization calls.
        use_global_localization: call amcl's global_localization on a tier-2 transition, and
            when the estimate is refuted (a client asks for LOST while the robot is localized,
            or ``refute_confused_after``).
        localized_after: consecutive tight amcl poses (with the detector reading ``normal``,
            and its P(lost) at most ``localized_max_p_lost``) that end LOST / LOCALIZING.
        localized_sigma_xy: a pose is tight when its major x-y std dev (m) is below this...
        localized_sigma_yaw: ...and its yaw std dev (rad) below this.
        map_frame: amcl's global frame: of the re-seed pose, and the only frame (besides none)
            a pose fix on initialpose is taken in (the node's rule; amcl ignores the others).
        dock_pose: optional (x, y, yaw) of the dock in ``map_frame``; when set, docking also
            re-seeds amcl there with the re-seed covariance.
        kidnap_namespace: where kidnap_monitor publishes picked_up, kidnapped and on_dock.
        nomotion_update_period: while LOCALIZING, seconds between two requests for an amcl
            update without motion; 0 disables them.
        reseed_holdoff: after a put-down re-seed, seconds before a tier-2 reading may call
            global localization.
        localizing_timeout: seconds in LOCALIZING without confirmation before going back to
            LOST; 0 waits for ever.
        kidnap_grace: a ``kidnapped`` that arrives this many seconds after a short-lift
            put-down still makes it a kidnap.
        kidnap_after: a lift (``picked_up`` true) that lasted this many seconds or longer on
            this node's clock is a kidnap even without the monitor's ``kidnapped``; 0: only
            the flag decides. Unset, the node reads the monitor's own ``kidnap_after``. The
            monitor counts from both wheels dropping, before its debounce, so a lift in the
            air throughout that lasts this long here was long enough there too; but it
            restarts its count when one wheel touches down, while ``picked_up`` (and this
            count) runs on until both are down: such a lift can be a kidnap here and a short
            one there. That errs to the safe side: a re-seed where the robot was lifted.
        kidnap_needs_fix: after a kidnap, leave LOST only through a pose fix (a fiducial, a
            person's initialpose, docking), never on tight amcl poses alone.
        refuted_needs_fix: after a client asked for LOST while the robot was localized (its
            estimate refuted), leave that LOST only through a pose fix, never on tight amcl
            poses alone, until the robot is localized again.
        localized_max_p_lost: a tight pose counts towards ``localized_after`` only while the
            lost detector's latest reading had P(lost) at most this (``lost_detector/p_lost``),
            and a reading above it restarts the count; 1 disables the check.
        refute_confused_after: after LOST ended on tight amcl poses alone (no pose fix), the
            detector reading confused or lost for this many seconds without a normal reading
            refutes the localization (LOST again, as on a client's refutation); 0 disables.
        refute_window: seconds after such a localization during which
            ``refute_confused_after`` applies (a pose fix, docking, a reset or leaving
            IDLE/NAVIGATING other than for a short lift ends it sooner).
    """

    reseed_sigma_xy: float = 0.5
    reseed_sigma_yaw: float = math.radians(20.0)
    global_localization_holdoff: float = 20.0
    use_global_localization: bool = True
    localized_after: int = 8
    localized_sigma_xy: float = 0.3
    localized_sigma_yaw: float = 0.3
    map_frame: str = 'map'
    dock_pose: tuple = ()
    kidnap_namespace: str = 'kidnap_monitor'
    nomotion_update_period: float = 0.5
    reseed_holdoff: float = 10.0
    localizing_timeout: float = 20.0
    kidnap_grace: float = 0.5
    kidnap_after: float = 2.0
    kidnap_needs_fix: bool = False
    refuted_needs_fix: bool = True
    localized_max_p_lost: float = 1.0
    refute_confused_after: float = 4.0
    refute_window: float = 60.0

    def validate(self):
        """Raise ConfigError naming every bad value."""
        check = Checker(self)
        check.sigma_xy('reseed_sigma_xy')
        check.sigma_yaw('reseed_sigma_yaw')
        check.non_negative('global_localization_holdoff')
        check.positive_int('localized_after')
        check.positive('localized_sigma_xy')
        check.positive('localized_sigma_yaw')
        check.frame('map_frame')
        check.non_empty('kidnap_namespace')
        check.non_negative('nomotion_update_period')
        check.non_negative('reseed_holdoff')
        check.non_negative('localizing_timeout')
        check.non_negative('kidnap_grace')
        check.non_negative('kidnap_after')
        check.in_range('localized_max_p_lost', 0.0, 1.0)
        check.non_negative('refute_confused_after')
        check.positive('refute_window')
        after, window = self.refute_confused_after, self.refute_window
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               for v in (after, window)) and after > 0 and window > 0:
            # The probation ends after its window: doubt could never last long enough.
            check.require(after < window,
                          'refute_confused_after', 'be 0 (off) or shorter than refute_window '
                          '(%r)' % self.refute_window)
        check.require(len(self.dock_pose) in (0, 3) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in self.dock_pose),
            'dock_pose', 'be empty or [x, y, yaw] of finite numbers')
        check.done()


@dataclasses.dataclass(frozen=True)
class Pose2D:
    """A planar pose in the map frame."""

    x: float
    y: float
    yaw: float


@dataclasses.dataclass(frozen=True)
class Reseed:
    """An /initialpose to publish: a pose and its standard deviations."""

    pose: Pose2D
    sigma_xy: float
    sigma_yaw: float

    def covariance(self):
        """The row-major 6x6 covariance of geometry_msgs/PoseWithCovariance."""
        cov = [0.0] * 36
        cov[0] = cov[7] = self.sigma_xy ** 2
        cov[35] = self.sigma_yaw ** 2
        return cov


@dataclasses.dataclass
class Actions:
    """What the adapter must do after a handler ran."""

    reseed: Reseed = None
    global_localization: bool = False
    reset_detector: bool = False
    nomotion_update: bool = False
    resend_fix: bool = False


@dataclasses.dataclass(frozen=True)
class Status:
    """The merged localization status (the fields of LocalizationStatus)."""

    tier: int
    status: str
    lost_detector_status: str
    is_lost: bool
    kidnapped: bool
    state: str


class LostService:
    """Merges the lost detector and the kidnap monitor and owns the robot state."""

    def __init__(self, config):
        """Start IDLE, localized, with no pose yet."""
        self.config = config
        self.machine = StateMachine(State.IDLE)
        self.detector_status = 'normal'
        self.detector_p_lost = None     # P(lost) of the detector's latest reading (None: none yet)
        self.picked_up = False
        self.kidnapped = False
        self.docked = False
        self.last_good_pose = None
        self._tight_streak = 0
        self._seen_doubt = False
        self.last_pose = None
        self._global_armed = True
        self._last_global_call = None
        self._last_nomotion = None
        self._lift_kidnapped = False    # kidnapped rose during the current / last lift
        self._kidnap_episode = False    # the robot has not been localized since a kidnap
        self._refuted_episode = False   # ... since a client refuted its estimate
        self._short_put_down = None     # time of the last put-down after a short lift
        self._lifted_at = None          # time picked_up last rose
        self._reseed_at = None          # time of the last put-down re-seed
        self._reseed_sent = None        # time of the last re-seed of any kind
        self._detector_reset_at = None  # time of a detector reset not yet answered by 'normal'
        self._reset_unheard = False     # no status accepted since the last detector reset
        # The next status read on the ground is news whatever the last one was: the last was
        # read in the air (where none is acted on), or the robot has been localized since.
        self._status_news = False
        self._global_retry_at = None    # when a failed global localization is tried again
        self._localizing_since = None
        self._probation_from = None     # a localization on amcl's poses alone, not yet confirmed
        self._probation_lifted = None   # ... the one a short lift paused
        self._confused_since = None     # first reading of the current run of doubt
        self._doubt_last = None         # latest reading of that run
        self._now = None
        self._clock = ClockWatch()      # the clock read at the ticks

    @property
    def state(self):
        """The current State."""
        return self.machine.state

    def _change(self, target, reason):
        before = self.machine.state
        accepted, why = self.machine.request(target)
        if not accepted:
            _log.warning('state change refused (%s): %s', reason, why)
        elif before != target:
            _log.info('state %s -> %s: %s', before.value, target.value, reason)
            if target in LOCALIZED:
                self._global_armed = True
                self._kidnap_episode = False
                self._refuted_episode = False
                self._global_retry_at = None
                # A 'lost' the detector still holds (say, after a person asked for IDLE out
                # of NEED_HELP) must make the robot LOST again, not pass as no change.
                if before not in LOCALIZED and before != State.FLYING:
                    self._status_news = True
            if target == State.LOST and before in LOCALIZED:
                self._seen_doubt = False
            if target == State.LOCALIZING:
                self._localizing_since = self._now
            if target not in LOCALIZED or before not in LOCALIZED:
                if target == State.FLYING and before in LOCALIZED:
                    self._probation_lifted = self._probation_from   # a short lift: paused
                self._probation_from = None     # on_pose sets it when it is earned
            self._tight_streak = 0
        return accepted

    def _mark_refuted(self, reason):
        """The estimate was refuted in this episode (see ``refuted_needs_fix``)."""
        if self._refuted_episode:
            return
        self._refuted_episode = True
        if self.config.refuted_needs_fix:
            _log.info('the estimate was refuted (%s): only a pose fix ends this LOST '
                      '(refuted_needs_fix)', reason)

    def _end_probation(self):
        """A fix, docking, a reset or a kidnap: the probation is over, paused or not."""
        self._probation_from = self._probation_lifted = None

    def _start_probation(self, start):
        self._probation_from = start
        self._confused_since = self._doubt_last = None

    def _on_probation_reading(self, status, t, actions):
        """Track the current run of readings other than normal, and refute a localization
        on probation that it has doubted for ``refute_confused_after`` s."""
        if status == 'normal':
            self._confused_since = None
        else:
            last = self._doubt_last
            if self._confused_since is None or last is None or not 0 <= t - last <= DOUBT_GAP:
                self._confused_since = t    # a new run: none before, a silence, or a clock jump
            self._doubt_last = t
        self._check_probation(t, actions)

    def _check_probation(self, t, actions):
        since, start = self._confused_since, self._probation_from
        if start is None:
            return
        if t < start:
            _log.warning('clock jumped back %.1f s: the probation of the localization restarts',
                         start - t)
            self._start_probation(t)
            return
        fresh = since is not None and self._doubt_last is not None and \
            0 <= t - self._doubt_last <= DOUBT_GAP
        if fresh and t - since >= self.config.refute_confused_after:
            self._probation_from = None
            reason = 'the lost detector read %s for %.1f s, %.1f s after a localization on ' \
                'amcl\'s poses alone: taking the estimate as wrong' % (
                    self.detector_status, t - since, since - start)
            if self._change(State.LOST, reason):
                self._mark_refuted(reason)
                self._maybe_global_localization(t, actions)
        elif t - start >= self.config.refute_window:
            self._probation_from = None

    def _reseed(self, pose, t):
        self._reseed_sent = t
        return Reseed(pose, self.config.reseed_sigma_xy, self.config.reseed_sigma_yaw)

    def _fix_may_precede_reseed(self, t):
        """A fix arriving now may have reached amcl before our latest re-seed."""
        return self._reseed_sent is not None and \
            0 <= t - self._reseed_sent <= FIX_RESEND_WINDOW

    # -- inputs ---------------------------------------------------------------------------

    def on_detector_status(self, status, t):
        """A ``/lost_detector/status`` reading ('normal', 'confused' or 'lost')."""
        actions = Actions()
        if status not in DETECTOR_TIERS:
            raise ValueError('unknown lost detector status %r (expected one of %s)' % (
                status, ', '.join(DETECTOR_TIERS)))
        self._now = t
        if self._from_before_reset(status, t):
            return actions
        previous, self.detector_status = self.detector_status, status
        if self._reset_unheard:     # the detector was reset since: it read normal in between
            previous, self._reset_unheard = 'normal', False
        if status != 'normal':
            self._tight_streak = 0
        state = self.state
        if state == State.FLYING or self.picked_up:
            # Not acted on here: the first reading back on the ground must be, or a 'lost'
            # kept through a short lift would never make the robot LOST again.
            self._status_news = True
            return actions
        if self._status_news:
            previous, self._status_news = 'normal', False
        if state in LOCALIZED:
            self._on_probation_reading(status, t, actions)
            if self.state not in LOCALIZED:
                return actions     # refuted: LOST, global localization asked for
        if status == 'lost' and previous != 'lost' and state != State.NEED_HELP:
            if state != State.LOST:
                self._change(State.LOST, 'the lost detector reached tier 2')
            if self._reseed_at is not None and 0 <= t - self._reseed_at < \
                    self.config.reseed_holdoff:
                _log.info('tier 2 %.1f s after the put-down re-seed: giving it %.0f s before '
                          'global localization', t - self._reseed_at, self.config.reseed_holdoff)
            else:
                self._maybe_global_localization(t, actions)
        return actions

    def _maybe_global_localization(self, t, actions):
        if not self.config.use_global_localization or not self._global_armed:
            return
        last = self._last_global_call
        if last is not None and t < last:
            _log.warning('clock jumped back %.1f s: global localization hold-off restarts',
                         last - t)
            self._last_global_call = last = t - self.config.global_localization_holdoff
        if last is not None and t - last < self.config.global_localization_holdoff:
            _log.info('no global localization %.1f s after the last one: within the hold-off',
                      t - last)
            return
        _log.info('calling global localization: the robot could be anywhere')
        self._last_global_call = t
        self._global_armed = False
        actions.global_localization = True
        actions.reset_detector = self._reset_detector(t)
        self._tight_streak = 0

    def on_global_localization_failed(self, t):
        """The call of amcl's ``global_localization`` failed (no such service, or an error):
        it did not happen, so it is tried again after GLOBAL_RETRY s while the robot is
        still LOST and the detector still reads lost."""
        self._now = t
        self._last_global_call = None
        self._global_armed = True
        self._global_retry_at = t + GLOBAL_RETRY
        return Actions()

    def on_picked_up(self, picked_up, t):
        """The kidnap monitor's ``picked_up`` changed (both wheels dropped / raised)."""
        actions = Actions()
        if picked_up == self.picked_up:
            return actions
        self.picked_up = picked_up
        self._now = t
        if picked_up:
            self._lift_kidnapped = False
            self._short_put_down = None
            self._lifted_at = t
            self._change(State.FLYING, 'picked up')
            return actions
        lifted_at, self._lifted_at = self._lifted_at, None
        if self.state != State.FLYING:
            return actions
        held = t - lifted_at if lifted_at is not None else None
        if not self._lift_kidnapped and self.config.kidnap_after > 0 and held is not None and \
                held >= self.config.kidnap_after:
            _log.warning('put down after a %.1f s lift (kidnap_after %.1f s) without the kidnap '
                         'monitor\'s kidnapped: taken as a kidnap (its message is late or lost)',
                         held, self.config.kidnap_after)
            self._lift_kidnapped = True
        back = self.machine.previous
        if back == State.LOCALIZING:
            back = State.LOST
        if self.docked and (self._lift_kidnapped or back not in LOCALIZED):
            # Set down on the dock where the put-down alone would leave the robot LOST or
            # NEED_HELP. kidnap_monitor publishes the put-down and the dock's signal at once,
            # on two topics; the signal may come first, while FLYING, where it changes no
            # state: what it does after the put-down (found) is done here.
            self._lift_kidnapped = False
            self._probation_lifted = None
            self._change(State.IDLE, 'put down on the dock')
            self._found_on_dock(t, actions)
            return actions
        if self._lift_kidnapped:
            self._kidnap_put_down(t, actions, 'put down after a kidnap')
        else:
            self._change(back, 'put down after a short lift')
            self._short_put_down = t
            if self.state in LOCALIZED and self._probation_lifted is not None:
                self._start_probation(self._probation_lifted)   # its window runs on
            self._probation_lifted = None
        return actions

    def _kidnap_put_down(self, t, actions, reason):
        """LOST, re-seed amcl where the robot was lifted (or global localization)."""
        self._change(State.LOST, reason)
        self._seen_doubt = False
        self._global_armed = True
        self._kidnap_episode = True
        self._end_probation()
        actions.reset_detector = self._reset_detector(t)
        pose = self.last_good_pose or self.last_pose
        if pose is not None:
            if self.last_good_pose is None:
                _log.warning('put down before any confident pose: re-seeding amcl at its '
                             'latest estimate')
            actions.reseed = self._reseed(pose, t)
            self._reseed_at = t
        else:
            _log.warning('put down with no pose at all to re-seed amcl at')
            self._maybe_global_localization(t, actions)

    def on_kidnapped(self, kidnapped, t):
        """The kidnap monitor's ``kidnapped`` changed."""
        actions = Actions()
        self.kidnapped = kidnapped
        self._now = t
        if not kidnapped:
            return actions
        if self.picked_up:
            self._lift_kidnapped = True
        elif self._short_put_down is not None and \
                0 <= t - self._short_put_down <= self.config.kidnap_grace and \
                (self.state in LOCALIZED or self.state == State.LOST):
            # (From NEED_HELP, LOST is no legal move: the robot waits for its person, who
            # carried it.)
            # The put-down overtook the kidnap on its way here: it was a kidnap after all.
            self._lift_kidnapped = True
            self._kidnap_put_down(t, actions, 'put down after a kidnap (reported late)')
        elif self._short_put_down is not None and self.config.kidnap_grace < \
                t - self._short_put_down <= self.config.kidnap_grace + LATE_KIDNAP_WINDOW:
            _log.warning('the kidnap monitor\'s kidnapped came %.2f s after the put-down, later '
                         'than kidnap_grace (%.2f s): the lift stays a short one',
                         t - self._short_put_down, self.config.kidnap_grace)
        elif not self._lift_kidnapped and (
                self._short_put_down is None or
                t - self._short_put_down > self.config.kidnap_grace + LATE_KIDNAP_WINDOW):
            _log.info('the kidnap monitor\'s kidnapped with no lift seen here to give it to '
                      '(latched from before this node started, or a pick-up lost on its way): '
                      'ignored')
        self._short_put_down = None
        return actions

    def on_dock(self, on_dock, t):
        """The kidnap monitor's ``on_dock`` changed: docking means found."""
        actions = Actions()
        rising = on_dock and not self.docked
        self.docked = on_dock
        if not rising:
            return actions
        if self.state in (State.LOST, State.LOCALIZING, State.NEED_HELP):
            self._change(State.IDLE, 'docked')
            self._found_on_dock(t, actions)
        else:
            self.kidnapped = False
            self._end_probation()       # docking is a fix
        return actions

    def _found_on_dock(self, t, actions):
        """Docked (now IDLE): a fix. The detector starts afresh and amcl is re-seeded at
        ``dock_pose`` when one is set."""
        self.kidnapped = False
        self._end_probation()
        actions.reset_detector = self._reset_detector(t)
        if self.config.dock_pose:
            actions.reseed = self._reseed(Pose2D(*self.config.dock_pose), t)
        else:
            _log.warning('docked: amcl is not re-seeded (no dock_pose is set), its estimate '
                         'stays where it was; set dock_pose to the dock\'s [x, y, yaw] in the '
                         'map frame to re-seed it there')

    def on_detector_p_lost(self, p_lost, t):
        """A ``/lost_detector/p_lost`` reading: P(lost) of the detector's latest reading.

        Above ``localized_max_p_lost`` it restarts the count of tight poses: the detector's
        tiers are set for few false alarms (a reading is lost only when P(lost) is very high),
        which is too weak a test for declaring a lost robot found.
        """
        if not 0.0 <= p_lost <= 1.0:
            raise ValueError('P(lost) %r is not a probability' % (p_lost,))
        self._now = t
        if self._awaiting_reset_answer(t):     # read before the reset, as its status
            return Actions()
        self.detector_p_lost = p_lost
        if not self._p_lost_ok():
            self._tight_streak = 0
        return Actions()

    def _p_lost_ok(self):
        """The detector's latest P(lost) allows a tight pose to count (always with the check
        off; with it on, only once a reading since the last detector reset has come in)."""
        if self.config.localized_max_p_lost >= 1.0:
            return True
        return self.detector_p_lost is not None and \
            self.detector_p_lost <= self.config.localized_max_p_lost

    def _reset_detector(self, t):
        """The detector is about to be reset: its last P(lost) no longer speaks for it, and
        its statuses and P(lost) until it answers ``normal`` (within RESET_ACK_WINDOW) are from
        before. A reset detector reads ``normal`` (its answer), so the first ``lost`` after it
        is a new transition even if that answer never arrives."""
        self.detector_p_lost = None
        self._detector_reset_at = t
        self._reset_unheard = True
        return True

    def _awaiting_reset_answer(self, t):
        reset_at = self._detector_reset_at
        return reset_at is not None and 0 <= t - reset_at < RESET_ACK_WINDOW

    def _from_before_reset(self, status, t):
        """The status was read before the detector's latest reset (see RESET_ACK_WINDOW)."""
        if self._detector_reset_at is None:
            return False
        if status == 'normal' or not self._awaiting_reset_answer(t):
            self._detector_reset_at = None
            return False
        _log.info('lost detector %s %.2f s after its reset: read before the reset, ignored',
                  status, t - self._detector_reset_at)
        return True

    def on_pose(self, pose, sigmas, t):
        """An amcl pose estimate with its (major x-y, yaw) standard deviations.

        Remembered as the last good pose while localized; while LOST or LOCALIZING, counts
        towards ``localized_after``. ``sigmas`` is None when the covariance is unusable.
        """
        confident = sigmas is not None and sigmas[0] < self.config.localized_sigma_xy and \
            sigmas[1] < self.config.localized_sigma_yaw and self.detector_status == 'normal'
        tight = confident and self._p_lost_ok()
        if self.picked_up:
            return Actions()
        if self.state in LOCALIZED:
            self.last_pose = pose
            if tight:
                self.last_good_pose = pose
        elif self.state in (State.LOST, State.LOCALIZING):
            # amcl's own doubt or the detector's tier; not P(lost), and not a covariance
            # that cannot be read (a broken message says nothing of amcl's doubt)
            if self.detector_status != 'normal' or (sigmas is not None and not confident):
                self._seen_doubt = True
            counts = tight and (self._seen_doubt or self.state == State.LOCALIZING)
            self._tight_streak = self._tight_streak + 1 if counts else 0
            needs_fix = self._fix_needed_for() if self.state == State.LOST else None
            if self._tight_streak >= self.config.localized_after and not needs_fix:
                alone = self.state == State.LOST
                if self._change(State.IDLE, '%d tight poses in a row with the detector '
                                'normal: localized' % self._tight_streak) and alone and \
                        self.config.refute_confused_after > 0:
                    self._start_probation(t)
            elif self._tight_streak == self.config.localized_after:
                _log.info('%d tight poses in a row, but only a pose fix ends this LOST (%s)',
                          self._tight_streak, needs_fix)
        return Actions()

    def _fix_needed_for(self):
        """Why only a pose fix may end the current LOST (the setting's name and its case), or
        None when tight amcl poses may."""
        if self.config.refuted_needs_fix and self._refuted_episode:
            return 'refuted_needs_fix: the estimate was refuted in this episode'
        if self.config.kidnap_needs_fix and self._kidnap_episode:
            return 'kidnap_needs_fix: the episode began with a kidnap'
        return None

    def on_initialpose(self, t):
        """An /initialpose from someone else: a fiducial fix or a person.

        While LOCALIZING, a further fix (a fiducial seen again) confirms the first one: the
        count of tight poses goes on rather than restarting, or a tag in view that is re-sent
        every second would keep the robot LOCALIZING forever.

        A fix that arrives within FIX_RESEND_WINDOW s of a re-seed of ours is to be sent again
        (``resend_fix``), so that amcl applies it after the re-seed.
        """
        self._now = t
        self._end_probation()           # a fix: no longer amcl's word alone
        resend = self._fix_may_precede_reseed(t)
        if self.state == State.LOCALIZING:
            return Actions(resend_fix=resend)
        actions = Actions(reset_detector=self._reset_detector(t), resend_fix=resend)
        if self.state in (State.LOST, State.NEED_HELP):
            self._change(State.LOCALIZING, 'a pose fix arrived on initialpose')
        self._tight_streak = 0
        return actions

    def request(self, target, reason, t, expected=None):
        """A client's request to change the state (``~change_state``).

        Args:
            target: the State asked for.
            reason: who asks and why (for the log).
            t: time (s).
            expected: the States the client saw when it decided (a collection), or None;
                when given and the state is none of them, the request is refused (it was
                decided on a state that has moved on, e.g. IDLE asked for a finished goal
                while the robot went LOST). A request for the state it is in already is a
                no-op, accepted either way.

        Returns:
            (accepted, message, actions): message says why a request was refused; actions
            (:class:`Actions`) what the adapter must do now.
        """
        actions = Actions()
        if target == State.FLYING:
            return False, 'FLYING is set only by the wheel-drop sensors', actions
        if expected is not None and self.state not in expected and target != self.state:
            message = 'the state is %s, not %s as the request expected: it changed since ' \
                'the request was decided' % (self.state.value,
                                             ' or '.join(sorted(s.value for s in expected)))
            _log.info('refused %s (%s): %s', target.value, reason, message)
            return False, message, actions
        if self.state == State.FLYING:
            return False, 'the robot is in the air: nothing changes until it is put down', \
                actions
        error = transition_error(self.state, target)
        if error:
            _log.warning('refused %s (%s): %s', target.value, reason, error)
            return False, error, actions
        self._now = t
        refuted = target == State.LOST and self.state in LOCALIZED
        # Decided while localized, it arrives after the detector's tier 2 made the state LOST
        # (a wrong estimate trips both): a no-op for the state, a refutation all the same.
        late = target == State.LOST == self.state and bool(expected) and \
            set(expected) <= set(LOCALIZED)
        self._change(target, 'requested: %s' % (reason or 'no reason given'))
        if refuted or late:
            self._mark_refuted(reason or 'no reason given')
        if refuted:
            self._maybe_global_localization(t, actions)
        return True, '', actions

    def reset(self, t):
        """``~reset``: forget being lost or needing help (not being in the air)."""
        actions = Actions(reset_detector=self._reset_detector(t))
        self.kidnapped = False
        self._global_armed = True
        self._last_global_call = None
        self._kidnap_episode = self._refuted_episode = False    # also when in the air
        self._end_probation()
        if self.state in (State.LOST, State.LOCALIZING, State.NEED_HELP):
            self._change(State.IDLE, 'reset')
        return actions

    def _forget_the_old_clock(self, t, last, actions):
        """The clock went back from ``last`` to ``t`` (seen at a tick, which may come after
        a put-down or a re-seed of the new clock): forget the times that lie ahead of it,
        which were of the old clock. A re-seed's hold-off forgotten while LOST with the
        detector reading lost asks for global localization, as its time-out would."""
        def old(value):
            return value is not None and value > t + self._clock.jump
        forgotten = [name for name, value in (('put-down', self._short_put_down),
                                              ('re-seed', self._reseed_sent))
                     if old(value)]
        _log.warning('the clock went back %.1f s%s', last - t,
                     ': the last %s forgotten' % ' and '.join(forgotten) if forgotten else '')
        if old(self._short_put_down):
            self._short_put_down = None
        if old(self._reseed_sent):
            self._reseed_sent = None
        if old(self._reseed_at):
            self._reseed_at = None
            if self.state == State.LOST and self.detector_status == 'lost':
                self._maybe_global_localization(t, actions)

    def tick(self, t):
        """Periodic call: time-outs of the re-seed and of LOCALIZING; no-motion updates. A
        clock gone back more than core.clock.CLOCK_JUMP s since the last tick (a simulator
        reset, a looped bag) forgets the times of put-downs and re-seeds, which were of the old
        clock (a tick at ``t`` 0, a simulated clock not started, is not a reading of it)."""
        self._now = t
        actions = Actions()
        back = self._clock.read(t)
        if back is not None:
            self._forget_the_old_clock(t, t + back, actions)
        if self.state in LOCALIZED:
            self._check_probation(t, actions)
        if self.state == State.LOST and self.detector_status == 'lost' and \
                self._reseed_at is not None and \
                (t < self._reseed_at or t - self._reseed_at >= self.config.reseed_holdoff):
            self._reseed_at = None          # once: the re-seed had its chance
            self._maybe_global_localization(t, actions)
        retry = self._global_retry_at
        if retry is not None and (t >= retry or t < retry - GLOBAL_RETRY):
            self._global_retry_at = None
            if self.state == State.LOST and self.detector_status == 'lost':
                _log.info('global localization failed before: trying it again')
                self._maybe_global_localization(t, actions)
        timeout = self.config.localizing_timeout
        if self.state == State.LOCALIZING and timeout > 0:
            if self._localizing_since is None or t < self._localizing_since:
                self._localizing_since = t
            elif t - self._localizing_since >= timeout:
                self._change(State.LOST, 'the pose fix was not confirmed within %.0f s'
                             % timeout)
                return actions
        period = self.config.nomotion_update_period
        if self.state != State.LOCALIZING or period <= 0:
            self._last_nomotion = None
            return actions
        if self._last_nomotion is None or t < self._last_nomotion or \
                t - self._last_nomotion >= period:
            self._last_nomotion = t
            actions.nomotion_update = True
        return actions

    # -- output ---------------------------------------------------------------------------

    def status(self):
        """The merged Status for LocalizationStatus."""
        state = self.state
        if state == State.NEED_HELP:
            tier = NEED_HELP
        elif state == State.LOST:
            tier = LOST
        elif state == State.FLYING:
            tier = LOST if self._lift_kidnapped else CONFUSED
        elif state == State.LOCALIZING:
            tier = CONFUSED
        else:
            tier = DETECTOR_TIERS[self.detector_status]
        return Status(tier=tier, status=TIER_NAMES[tier],
                      lost_detector_status=self.detector_status, is_lost=tier >= LOST,
                      kidnapped=self.kidnapped, state=state.value)
