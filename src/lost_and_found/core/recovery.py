"""The decisions of the recovery node ``lost_and_found``: save the goal, spin, search, resume.

:class:`RecoveryCore` is fed events as plain values with the time passed in (the robot state,
the user's goals, move_base results, pose estimates, laser scans, whether move_base is up) and,
once per control period, :meth:`RecoveryCore.step` returns a :class:`Command` saying what the
adapter must do now: publish a twist, send a spiral leg, cancel goals, re-send the saved goal,
ask lost_service for a state.

An episode starts when the state becomes LOST::

    cancel the user's goal (it stays saved) -> spin 360 deg -> search
        spiral:   leg 1 -> spin -> leg 2 -> spin -> ...   (each leg ends when move_base finishes
                                                           it or after its timeout: goal_timeout
                                                           plus goal_timeout_per_metre per metre
                                                           of the leg)
        reactive: the wander steered by the laser, one twist per step (with the returns of
                  this episode's scans remembered in the odometry frame: what the laser
                  saw during the spin and the search covers what it cannot see now)
        none:     no spin, no search: stand still and wait for the localizer (amcl, fiducials)
    -> state leaves LOST: zero twist once, cancel the leg
    -> with ``look_before_resume``, when the localizer alone ended LOST (LOST -> IDLE, no tag
       fix), the robot is not docked and move_base is up: ask fiducial_localizer for a
       viewpoint (a pose from which the estimate puts a mapped tag in clear view), drive there
       and stand ``look_dwell`` s, so that its tag check confirms or refutes the estimate (a
       refutation makes the robot LOST again: a new episode, the goal still saved); at most
       ``look_timeout`` s
    -> state localized (IDLE or NAVIGATING): re-send the saved goal, request NAVIGATING
       (while move_base is down, once it is up; if move_base aborts the re-sent goal, or
       loses it, it is sent again ``resume_retries`` times, at the earliest
       ``resume_retry_delay`` s after each, an abort first followed by a step of up to
       ``resume_step_distance`` steered by the laser, out of a place move_base may have no
       plan from (among clutter, inside its inflation);
       after that it stays saved for the user to re-send, and IDLE is requested, since
       nothing drives it any more. When the localizer alone ended LOST (LOST -> IDLE: no
       tag fix, no person's pose, not docked, and no pose fix since), an abort is taken as a
       sign that the estimate is wrong: the node asks for LOST again (lost_service then
       calls global localization and, with its ``refuted_needs_fix``, ends that LOST only on
       a pose fix) and a new episode searches, the goal still saved; at most
       ``max_doubts`` times per saved goal). The same doubt, sooner, when the resumed goal
       after such a localization has not moved the robot ``resume_stall_distance`` in
       ``resume_stall_time`` s (move_base turning in place on a wrong estimate takes a
       minute or more to abort)
    -> a pose fix on ``initialpose`` far from the estimate (``clear_costmaps_jump``): clear
       move_base's costmaps, whose obstacles were placed on the old estimate
    -> or ``max_search_time`` (or ``max_search_distance``, when set) spent while still LOST:
       request NEED_HELP and stop

Every state request names the state(s) it holds in (ChangeState's ``expected``), so that
lost_service refuses one that arrives after the state moved on: an IDLE asked for a finished
goal must not end a LOST the robot went to meanwhile. The state follows the goal: NAVIGATING
while a saved goal is driven, IDLE when it is reached, cancelled or aborted for good (also
when that happens before NAVIGATING is granted or while the robot is in the air, and
NAVIGATING again for a user goal that arrives while IDLE is being asked for).

The spiral is laid out in the odometry frame around where the robot is when its first leg is
sent, after the first spin (``spiral_anchor: odom``, the default), so a jump of the pose
estimate (global localization, a re-seed) does not move the legs away from the robot; or in
``map_frame`` around the last good pose (``spiral_anchor: map``). It falls back to
``reactive`` for the rest of an episode when move_base is unavailable when a leg is due, when
``max_aborts`` legs in a row fail (aborted, rejected, lost or timed out), or when there is
nothing to anchor it to (no odometry, no pose). With ``hops_before_spiral``, a first spin that
fixed nothing is followed by up to that many short hops of the wander, each ending in a spin,
before the first leg.

Pure Python: no ROS, no clock reads. Move_base goal statuses are the integers of
actionlib_msgs/GoalStatus, mirrored below.
"""
import collections
import dataclasses
import enum
import logging
import math

import numpy as np

from lost_and_found.core.approach import (ARRIVED, Approach, ApproachLimits, approach_point,
                                          region_points, ways_seen)
from lost_and_found.core.config import Checker, ConfigError
from lost_and_found.core.explore import heading_toward, pick_heading
from lost_and_found.core.geometry import turn_rate, turn_time, wrap_angle
from lost_and_found.core.obstacle_memory import ObstacleMemory, PoseHistory, to_frame
from lost_and_found.core.reactive import ReactiveConfig, ReactiveWander
from lost_and_found.core.scan_agreement import LaserMount
from lost_and_found.core.spiral import SpiralSearch
from lost_and_found.state import LOCALIZED, State

_log = logging.getLogger('rosout')

#: Terminal goal statuses, with the values of actionlib_msgs/GoalStatus.
PREEMPTED = 2
SUCCEEDED = 3
ABORTED = 4
REJECTED = 5
RECALLED = 8
GOAL_LOST = 9
#: move_base's checks of a goal's orientation: the least squared length of its quaternion, and
#: the most of it (squared, normalised) in x and y: its z axis within about 2.6 deg of vertical.
QUATERNION_MIN_SQUARED = 1e-6
QUATERNION_MAX_TILT = 5e-4

#: Leg outcomes that count towards ``max_aborts`` (with a timeout): move_base could not drive
#: the leg. Their names are for the logs.
_FAILED = {ABORTED: 'aborted', REJECTED: 'rejected', GOAL_LOST: 'lost'}

#: Names of the terminal statuses, for the logs.
_STATUS_NAMES = {**_FAILED, PREEMPTED: 'preempted', SUCCEEDED: 'succeeded',
                 RECALLED: 'recalled'}

#: Seconds between repeated NEED_HELP requests while lost_service has not granted it (the
#: service may be restarting; asking every step would flood it).
NEED_HELP_RETRY = 5.0

#: Seconds between two warnings about the same repeating problem.
WARN_PERIOD = 10.0
#: A gap (s) between two events larger than this is the clock jumping forward (a bag's gap,
#: a clock stepped by NTP), not time the robot lived through: the control step alone comes
#: every 1 / rate s, so the node would have to stall this long for a real one.
FORWARD_JUMP = 30.0

#: Odometry older than this (s) when a spiral is anchored on it gets a warning: a TurtleBot's
#: base publishes it at 20-50 Hz, so the base driver has probably stopped.
ODOM_STALE = 2.0
#: A failed spiral leg that leaves the robot nearer than this (m) to where its last spin ended
#: is followed by the next leg without another spin: the camera has already looked around there.
RESPIN_DISTANCE = 0.5
#: Seconds of odometry poses kept to place each scan at the pose of its own stamp.
ODOM_HISTORY = 2.0
#: Scans stamped after the newest odometry wait for it; at most this many (the oldest go).
PENDING_SCANS = 5
#: The episode's path (``explore``) keeps a position each time the odometry moved this far (m).
PATH_STEP = 0.25
#: A heading ``explore`` may turn to must be free this far (m): room for the wander to start.
EXPLORE_MIN_OPEN = 1.0
#: The turn to that heading may take half as long again as turning there as told would, plus
#: this margin (s) for the base's acceleration; then the wander starts wherever it faces.
EXPLORE_TURN_MARGIN = 1.0
EXPLORE_TURN_SLACK = 1.5
#: A search hint's way is followed to the open heading nearest a point this far (m) along it.
HINT_REACH = 3.0
#: ...unless the nearest open heading is more than this (rad) off it: then it is not followed.
HINT_MAX_OFF = math.radians(45.0)
#: ``seek_walls`` turns back only toward a place with a wall near at least this far (m) away.
SEEK_WALLS_MIN_WAY = 1.0
#: A hop before the spiral (``hops_before_spiral``) that has not driven ``hop_distance`` after
#: twice the time it takes at the wander's top speed plus this margin (s) ends where it is.
HOP_MARGIN = 5.0
#: An abort of the resumed goal this many seconds or less after the pose estimate was seen
#: stale (``stale_estimate_age``) is put down to the localizer lagging, not doubted: move_base
#: stops and, after its patience, aborts a goal it cannot place the robot for.
STALE_WINDOW = 10.0

#: The search strategies (RecoveryConfig.strategy).
STRATEGIES = ('spiral', 'reactive', 'none')

#: Where the spiral is laid out (RecoveryConfig.spiral_anchor).
ANCHORS = ('odom', 'map')

#: The ReactiveConfig fields exposed as ``reactive/<name>`` parameters.
REACTIVE_FIELDS = tuple(f.name for f in dataclasses.fields(ReactiveConfig))


def _reactive(name):
    """A RecoveryConfig field mirroring ReactiveConfig.<name>, as parameter ``reactive/<name>``."""
    return dataclasses.field(default=getattr(ReactiveConfig, name),
                             metadata={'param': 'reactive/' + name, 'reactive': name})


@dataclasses.dataclass(frozen=True)
class RecoveryConfig:
    """Parameters of the recovery node (SI units).

    Attributes:
        strategy: search after the first spin: ``'spiral'`` (move_base legs) or ``'reactive'``
            (wander steered by the laser alone); ``'none'`` neither spins nor searches: the
            robot stands still until the localizer alone finds it (or a tag in view; only a
            tag after a refuted localization, see lost_service's ``refuted_needs_fix``; the
            goal is still kept,
            resumed, and help asked for after ``max_search_time`` or
            ``max_search_distance``), the baseline the
            benchmarks compare with.
        spin_speed: angular speed (rad/s) of every 360 deg spin; 1.2566 = 72 deg/s.
        spiral_step: growth (m) of the spiral every two legs.
        spiral_anchor: ``'odom'`` lays the spiral out in the frame of the ``odom`` messages
            around the odometry position when the first leg is sent; ``'map'`` in ``map_frame``
            around the last good pose.
        goal_timeout: a spiral leg is cancelled after this long (s) plus
            ``goal_timeout_per_metre`` per metre of the leg: from the robot's odometry position
            to the leg's goal (``spiral_anchor: odom``), or from the previous leg's goal (or
            the centre) with ``spiral_anchor: map``, where the estimate may have jumped.
        goal_timeout_per_metre: the leg timeout's allowance per metre (s/m); 0 gives every leg
            the same ``goal_timeout``.
        leg_stall_time: a spiral leg during which the odometry has not moved
            ``leg_stall_distance`` for this long (s) is cancelled as failed ('stalled'), as a
            timed-out one is; 0: never (only the timeout ends a leg that goes nowhere). After a
            kidnap move_base plans on the wrong estimate and often has no path, and then turns
            in place until it aborts or the leg times out.
        leg_stall_distance: the odometry movement (m) that counts as progress of a leg.
        max_search_time: budget (s) of one LOST episode before asking for help; a fix that
            is not confirmed (LOCALIZING -> LOST) does not restart it, unless a person gave
            it after NEED_HELP.
        max_search_distance: budget (m of odometry) of one LOST episode before asking for
            help, whichever of the two budgets is spent first, counted over the episode as
            ``max_search_time`` is, in steps of at least PATH_STEP (odometry jitter in place
            adds nothing; resets, jumps over the obstacle memory's ``jump_distance`` of 1 m,
            are not counted); 0: no distance budget.
        rate: control rate (Hz); the node stops within one period of leaving LOST.
        map_frame: frame of the spiral goals with ``spiral_anchor: map``.
        base_frame: the robot's base frame; the laser's place on the robot (tf base_frame <-
            the scan's frame) places the returns the wander remembers.
        move_base_timeout: wait (s) for the move_base action server at start (in the background).
        move_base_retry: interval (s) between connection attempts while move_base is missing.
        hops_before_spiral: with the spiral, this many hops of the laser-steered wander
            (``hop_distance`` each, then a 360 deg spin) before the first leg, when the spin
            before it fixed nothing; 0 (the default): the first leg follows the first spin. A
            hop needs no map and no move_base: from a put-down that sees no tag, a step into
            the widest open direction often shows one sooner than a leg to a grid point.
        hop_distance: the odometry distance (m) of each such hop; one that cannot get this far
            ends after twice the time it takes at ``reactive/max_speed`` plus HOP_MARGIN.
        max_aborts: this many failed legs in a row (aborted, rejected, stalled or timed out)
            switch the episode to ``reactive``. A failed leg that leaves the robot within
            RESPIN_DISTANCE of where its last spin ended is followed by the next leg at once,
            without another spin: the camera has seen all around that place.
        resume_retries: times the saved goal is sent again when move_base aborts (or loses) it
            after a recovery (a re-localized robot may have been put down against an
            obstacle).
        resume_retry_delay: seconds between that abort and the next attempt.
        resume_step_distance: after such an abort, before the goal is sent again, the robot
            steps this far (odometry, m) steered as the wander steers (the laser, and the
            returns remembered while the resumed goal drove and the step goes; a Kinect sees
            nothing nearer than 0.45 m), out of a place the planner may have
            no path from: a search can end among clutter, inside move_base's inflated
            obstacles, where every plan fails however often it is asked for. The goal goes out
            once the step is over and ``resume_retry_delay`` has passed; a step that cannot
            get this far ends after twice its time at ``reactive/max_speed`` plus HOP_MARGIN.
            No step without a fresh scan and odometry, on the dock, before NAVIGATING is
            granted, or after an abort taken as a wrong estimate (``max_doubts``). 0: no step
            (the robot waits where it is).
        max_doubts: times per saved goal that move_base aborting the resumed goal, after the
            localizer alone ended LOST (no tag fix, no pose from a person, not docked, and no
            pose fix on ``initialpose`` since), makes the node ask for LOST instead of sending
            the goal again: a plan that fails right after such a localization most often means
            the estimate is at a wrong place; lost_service answers a LOST request while
            localized with global localization (and, with its ``refuted_needs_fix``, ends
            that LOST only on a pose fix: without tags, NEED_HELP after the search), and a
            new episode searches. 0: never (every abort is retried as ``resume_retries``
            says).
        resume_stall_time: after such a localization, the resumed goal during which the
            odometry has not moved ``resume_stall_distance`` for this long (s) is doubted as
            an abort is (it counts towards ``max_doubts``), without waiting for move_base to
            abort it; 0: only aborts are doubted.
        resume_stall_distance: the odometry movement (m) that counts as the resumed goal's
            progress, > 0.
        stale_estimate_age: the pose estimate (the ``map_frame`` -> ``base_frame`` transform,
            :meth:`RecoveryCore.on_estimate_age`) older than this (s) is stale: the localizer
            lags (a loaded CPU) and move_base cannot place the robot. An abort within
            ``STALE_WINDOW`` s of a stale estimate, or a stall during which it was stale, is
            then no doubt (the abort is retried as ``resume_retries`` says); 0: never
            checked.
        state_namespace: where lost_service publishes ``state`` and serves ``change_state``.
        scan_timeout: a scan older than this (s) is stale; the wander stops until a fresh one.
            Odometry older than this is not used (the wander's stall check is then off).
        clear_costmaps: at the start of every LOST episode ask move_base to clear its costmaps
            (``Command.clear_costmaps``): after a kidnap its local costmap, kept in the
            odometry frame, holds the obstacles of the place the robot was carried from, all
            around the put-down point.
        clear_costmaps_jump: with ``clear_costmaps``, also clear them when a pose fix on
            ``initialpose`` (a tag's correction, a person's pose) lands this far (m) or
            farther from the latest estimate: the obstacles move_base marked in the map frame
            were placed by the estimate the fix replaced; 0: never.
        look_around_every: while wandering, spin 360 deg once the odometry has moved this far
            (m) since the last spin; 0 never. The wander heads down the widest gap, i.e. along
            corridors, where the camera sees the tags on the side walls edge-on; a spin shows
            them face-on.
        explore: after every spin that the wander follows (the first spin of a reactive
            search, every look-around), turn to the open heading whose end point lies farthest
            from the path driven in this episode (core/explore.py), so that the wander heads
            for ground the camera has not looked at instead of on in the direction the robot
            happened to face.
        seek_walls: after a spin the wander follows (before ``explore``'s choice), with
            nothing the laser showed within this (m) of the robot, turn first to the open
            heading nearest where the last spin with something that near was: tags hang on
            walls, and in open space (a hall, unmapped space) the widest gap leads farther
            from them; 0: never.
        follow_search_hints: after a spin the wander or the spiral's next leg would follow,
            turn first to the open heading nearest the way fiducial_localizer's latest search
            hint says a tag is (its ``~search_hint``: the way most of amcl's particles agree
            on, core/search_hint.py), and wander from there; the hint must be at most
            ``search_hint_max_age`` old and is used once. Without one the search goes on as
            before (``seek_walls``, ``explore``, the spiral).
        search_hint_max_age: the oldest search hint (s, by its stamp) a spin's end follows,
            in (0, 2] (the odometry kept to turn its bearing into a heading).
        look_before_resume: after the localizer alone ended a LOST episode (no tag fix, not
            docked, move_base up), drive to the viewpoint fiducial_localizer names and stand
            there, so that its tag check can refute a wrong estimate; then resume the saved
            goal, if any (the look runs without one too: it tests the localization).
            fiducial_localizer's ``verify_window`` must be on and outlast the look.
        look_timeout: the longest look (s): asking, driving and standing; then the goal is
            resumed.
        check_arrival: when move_base reaches the resumed goal while the localization that
            ended the last episode rests on the localizer's word alone (no tag's fix since),
            turn once in place there before forgetting the goal: the turn gives the localizer
            and the lost detector new views (lost_service's probation can refute the estimate)
            and the camera a look around (fiducial_localizer corrects an estimate a tag
            contradicts). LOST during the turn resumes the goal after the new search; a pose
            fix during it sends the goal again at once. Without it a goal "reached" at a
            look-alike place was forgotten there, and the robot stood still, where nothing
            reads a wrong estimate.
        look_dwell: seconds to stand at the viewpoint (more than fiducial_localizer's
            ``verify_missing_time``, for its camera frames).
        viewpoint_service: fiducial_localizer's GetViewpoint service.
        kidnap_namespace: where kidnap_monitor publishes ``on_dock`` (a docked robot does not
            go to look).
        approach_tags: while searching (spiral or reactive), when the camera sees a mapped tag
            that fiducial_localizer cannot localize from (too far, too oblique or too noisy:
            its ``distant_tags``), leave the search, drive to the nearest place from which
            the tag is within ``approach_max_distance`` and ``approach_max_view_angle`` of its
            face (but no nearer than ``approach_standoff``) and face it (core/approach.py),
            then spin and search on.
        approach_standoff: the nearest to the tag the approach drives (m), and where it drives
            head-on in front of the tag when the robot is already within the other two
            limits: more than ``reactive_stop_distance`` + ARRIVED (0.25 m), or a head-on
            approach stops for the wall before it arrives, and well within
            fiducial_localizer's ``max_distance``.
        approach_max_distance: the farthest from the tag the approach drives to (m), at least
            ``approach_standoff``; inside fiducial_localizer's ``max_distance`` (3 m) with a
            margin for where the approach stops and for the tag's measured place.
        approach_max_view_angle: the largest angle off the tag's face the approach drives to
            (rad, in [0, pi/2)); inside fiducial_localizer's ``max_view_angle`` (1.05) with a
            margin. 0 with ``approach_max_distance`` = ``approach_standoff``: always the point
            ``approach_standoff`` in front of the tag (before `892da58`).
        approach_timeout: the longest approach (s).
        approach_tries: approaches of one tag per LOST episode (integer >= 1).
        approach_dwell: seconds to stand facing the tag at the end of an approach, for the
            camera's frames, before the search goes on.
        approach_at_once: leave a spin (the first after the put-down, a look-around, the one
            after an approach) for the approach as soon as a distant tag is reported, instead
            of finishing the turn first. A tag refused for its distance or its angle stays
            refused for the rest of the turn (the robot turns in place: neither changes), so
            the rest of the turn can only show another tag; one refused for a noisy frame
            can be kept in the next, which the approach, facing it, still gives. See
            bench/RESULTS.md, "Leaving the turn for a distant tag".
        approach_clear_way: unless the laser shows the straight way to the nearest such place
            clear (an obstacle on it, among the returns of the scan and those remembered in
            this episode, or the way out of the laser's view), go instead to the nearest
            place of the same region whose way it shows clear (in its view, no return within
            the wander's ``half_width`` of it: core/approach.py ``way_seen``); with none, to
            the nearest place as before. A tag seen at a grazing angle down a corridor has
            its nearest such place behind the corridor's far wall as often as not, and out of
            the view of a laser that faces the tag.
        reactive_*: the ReactiveConfig fields, as parameters ``reactive/<name>``.
    """

    strategy: str = 'spiral'
    spin_speed: float = math.radians(72.0)
    spiral_step: float = 1.0
    spiral_anchor: str = 'odom'
    goal_timeout: float = 5.0
    goal_timeout_per_metre: float = 5.0
    leg_stall_time: float = 5.0
    leg_stall_distance: float = 0.2
    max_search_time: float = 165.0
    max_search_distance: float = 0.0
    rate: float = 10.0
    map_frame: str = 'map'
    base_frame: str = 'base_footprint'
    move_base_timeout: float = 5.0
    move_base_retry: float = 10.0
    hops_before_spiral: int = 0
    hop_distance: float = 1.0
    max_aborts: int = 3
    resume_retries: int = 2
    resume_retry_delay: float = 5.0
    resume_step_distance: float = 1.0
    max_doubts: int = 2
    resume_stall_time: float = 15.0
    resume_stall_distance: float = 0.3
    stale_estimate_age: float = 1.0
    state_namespace: str = 'lost_service'
    scan_timeout: float = 0.5
    clear_costmaps: bool = True
    clear_costmaps_jump: float = 1.0
    look_around_every: float = 3.0
    explore: bool = False
    seek_walls: float = 2.5
    follow_search_hints: bool = False
    search_hint_max_age: float = 1.5
    look_before_resume: bool = False
    check_arrival: bool = True
    look_timeout: float = 45.0
    look_dwell: float = 3.0
    viewpoint_service: str = 'fiducial_localizer/viewpoint'
    kidnap_namespace: str = 'kidnap_monitor'
    approach_tags: bool = True
    approach_standoff: float = 1.2
    approach_max_distance: float = 2.2
    approach_max_view_angle: float = 0.75
    approach_timeout: float = 30.0
    approach_tries: int = 2
    approach_dwell: float = 1.0
    approach_at_once: bool = True
    approach_clear_way: bool = False
    reactive_clear_distance: float = _reactive('clear_distance')
    reactive_discontinuity: float = _reactive('discontinuity')
    reactive_gap_horizon: float = _reactive('gap_horizon')
    reactive_robot_radius: float = _reactive('robot_radius')
    reactive_side_margin: float = _reactive('side_margin')
    reactive_max_speed: float = _reactive('max_speed')
    reactive_turn_speed: float = _reactive('turn_speed')
    reactive_turn_gain: float = _reactive('turn_gain')
    reactive_max_turn_speed: float = _reactive('max_turn_speed')
    reactive_min_turn_speed: float = _reactive('min_turn_speed')
    reactive_steer_gain: float = _reactive('steer_gain')
    reactive_max_steer: float = _reactive('max_steer')
    reactive_heading_tolerance: float = _reactive('heading_tolerance')
    reactive_front_half_angle: float = _reactive('front_half_angle')
    reactive_stop_distance: float = _reactive('stop_distance')
    reactive_slow_distance: float = _reactive('slow_distance')
    reactive_too_close: float = _reactive('too_close')
    reactive_behind_angle: float = _reactive('behind_angle')
    reactive_backup_speed: float = _reactive('backup_speed')
    reactive_backup_time: float = _reactive('backup_time')
    reactive_oscillation_flips: int = _reactive('oscillation_flips')
    reactive_oscillation_window: float = _reactive('oscillation_window')
    reactive_warn_period: float = _reactive('warn_period')
    reactive_stall_time: float = _reactive('stall_time')
    reactive_stall_distance: float = _reactive('stall_distance')
    reactive_stall_turn: float = _reactive('stall_turn')
    reactive_open_after_turn: float = _reactive('open_after_turn')

    @property
    def spin_duration(self):
        """Seconds of one open-loop 360 deg spin at ``spin_speed``."""
        return 2.0 * math.pi / self.spin_speed

    def reactive_config(self):
        """The ReactiveConfig made of the ``reactive/`` parameters."""
        return ReactiveConfig(**{
            f.metadata['reactive']: getattr(self, f.name)
            for f in dataclasses.fields(self) if 'reactive' in f.metadata})

    def validate(self):
        """Raise ConfigError naming every bad value (the reactive ones as ``reactive/<name>``)."""
        check = Checker(self)
        check.one_of('strategy', STRATEGIES)
        check.one_of('spiral_anchor', ANCHORS)
        for name in ('spin_speed', 'spiral_step', 'goal_timeout', 'max_search_time',
                     'move_base_retry', 'scan_timeout'):
            check.positive(name)
        # Above 1 kHz the loop would only burn the two shared cores; below 0.1 Hz it cannot stop
        # the robot in time.
        check.in_range('rate', 0.1, 1000.0)
        check.non_negative('move_base_timeout')
        check.non_negative('goal_timeout_per_metre')
        check.non_negative('max_search_distance')
        check.non_negative('leg_stall_time')
        check.positive('leg_stall_distance')
        check.non_negative_int('hops_before_spiral')
        check.positive('hop_distance')
        check.positive_int('max_aborts')
        check.non_negative_int('resume_retries')
        check.non_negative('resume_retry_delay')
        check.non_negative('resume_step_distance')
        check.non_negative_int('max_doubts')
        check.non_negative('resume_stall_time')
        check.positive('resume_stall_distance')
        check.non_negative('stale_estimate_age')
        check.non_negative('clear_costmaps_jump')
        check.non_negative('look_around_every')
        check.non_negative('seek_walls')
        check.require(isinstance(self.explore, bool), 'explore', 'be true or false')
        check.require(isinstance(self.follow_search_hints, bool), 'follow_search_hints',
                      'be true or false')
        check.in_range('search_hint_max_age', 0.0, ODOM_HISTORY, low_open=True)
        check.require(isinstance(self.clear_costmaps, bool), 'clear_costmaps',
                      'be true or false')
        check.require(isinstance(self.look_before_resume, bool), 'look_before_resume',
                      'be true or false')
        check.require(isinstance(self.check_arrival, bool), 'check_arrival',
                      'be true or false')
        check.positive('look_timeout')
        check.non_negative('look_dwell')
        if _finite(self.look_timeout, self.look_dwell) and \
                self.look_dwell >= self.look_timeout:
            check.problem('look_dwell=%r: must be less than look_timeout=%r, or every look '
                          'times out before it has stood at its viewpoint'
                          % (self.look_dwell, self.look_timeout))
        check.require(isinstance(self.approach_tags, bool), 'approach_tags', 'be true or false')
        check.non_negative('approach_standoff')
        if _finite(self.approach_standoff, self.reactive_stop_distance) and \
                self.approach_standoff <= self.reactive_stop_distance + ARRIVED:
            check.problem('approach_standoff=%r: must be more than reactive/stop_distance=%r '
                          'plus %.2f m, or a head-on approach stops for the wall before it '
                          'arrives and always ends blocked'
                          % (self.approach_standoff, self.reactive_stop_distance, ARRIVED))
        check.in_range('approach_max_view_angle', 0.0, math.pi / 2, high_open=True)
        check.non_negative('approach_max_distance')
        if _finite(self.approach_standoff, self.approach_max_distance) and \
                self.approach_max_distance < self.approach_standoff:
            check.problem('approach_max_distance=%r: must be at least approach_standoff=%r'
                          % (self.approach_max_distance, self.approach_standoff))
        check.positive('approach_timeout')
        check.positive_int('approach_tries')
        check.non_negative('approach_dwell')
        check.require(isinstance(self.approach_clear_way, bool), 'approach_clear_way',
                      'be true or false')
        check.require(isinstance(self.approach_at_once, bool), 'approach_at_once',
                      'be true or false')
        check.non_empty('viewpoint_service')
        check.non_empty('kidnap_namespace')
        check.frame('map_frame')
        check.frame('base_frame')
        check.non_empty('state_namespace')
        spin_ok = isinstance(self.spin_speed, (int, float)) and math.isfinite(self.spin_speed) \
            and self.spin_speed > 0
        budget_ok = isinstance(self.max_search_time, (int, float)) \
            and math.isfinite(self.max_search_time)
        if spin_ok and budget_ok and self.max_search_time <= self.spin_duration:
            check.problem('max_search_time=%r: must exceed one 360 deg spin (2*pi/spin_speed = '
                          '%.3g s with spin_speed=%r), or the search never starts' % (
                              self.max_search_time, self.spin_duration, self.spin_speed))
        try:
            self.reactive_config().validate()
        except ConfigError as error:
            check.problems.extend('reactive/' + problem for problem in error.problems)
        except (TypeError, ValueError) as error:
            check.problem('reactive/*: %s' % error)
        else:
            self._check_hops_fit(check, spin_ok and budget_ok)
        check.done()

    def drive_time(self, distance):
        """How long (s) a hop or step of ``distance`` (m) steered by the laser may take: twice
        its time at ``reactive/max_speed``, plus HOP_MARGIN for turns and detours."""
        return 2.0 * distance / self.reactive_max_speed + HOP_MARGIN

    def _check_hops_fit(self, check, budget_ok):
        """A problem when the hops before the spiral, each at its deadline, and their spins
        could spend the whole search budget after the first spin: the spiral would never run."""
        hops = self.hops_before_spiral
        if not budget_ok or isinstance(hops, bool) or not isinstance(hops, int) or hops <= 0 \
                or not isinstance(self.hop_distance, (int, float)) \
                or not math.isfinite(self.hop_distance) or self.hop_distance <= 0:
            return      # each value's own check names it
        one = self.drive_time(self.hop_distance) + self.spin_duration
        if self.spin_duration + hops * one >= self.max_search_time:
            check.problem('hops_before_spiral=%r, hop_distance=%r: the hops could take %.0f s '
                          '(%.1f s each at the latest, with their spins, after the first spin), '
                          'not less than max_search_time=%r: the spiral would never run' % (
                              hops, self.hop_distance, hops * one, one, self.max_search_time))
        distance = self.max_search_distance
        if isinstance(distance, (int, float)) and math.isfinite(distance) and \
                0.0 < distance <= hops * self.hop_distance:
            check.problem('hops_before_spiral=%r, hop_distance=%r: the hops drive %.1f m, not '
                          'less than max_search_distance=%r: the spiral would never run' % (
                              hops, self.hop_distance, hops * self.hop_distance, distance))


@dataclasses.dataclass(frozen=True)
class UserGoal:
    """A user's navigation goal as plain values.

    Attributes:
        frame_id: frame of the pose.
        x, y, z: position (m).
        qx, qy, qz, qw: orientation quaternion.
        goal_id: the actionlib goal id when it came on ``move_base/goal``, '' when unknown
            (``move_base_simple/goal``).
    """

    frame_id: str
    x: float
    y: float
    z: float = 0.0
    qx: float = 0.0
    qy: float = 0.0
    qz: float = 0.0
    qw: float = 1.0
    goal_id: str = ''

    def problem(self):
        """Why this goal is unusable, or None when it is fine.

        The orientation is judged as move_base judges it: a quaternion of any length but
        about 0 is normalised (a hand-typed one rarely has length 1), and one that does not
        turn about the vertical axis is refused.
        """
        values = (self.x, self.y, self.z, self.qx, self.qy, self.qz, self.qw)
        if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
            return 'non-finite pose %r' % (values,)
        if not isinstance(self.frame_id, str) or not self.frame_id.strip():
            return 'empty frame_id'
        squared = self.qx ** 2 + self.qy ** 2 + self.qz ** 2 + self.qw ** 2
        if squared < QUATERNION_MIN_SQUARED:
            return 'quaternion of length %.3g: no orientation' % math.sqrt(squared)
        if (self.qx ** 2 + self.qy ** 2) / squared > QUATERNION_MAX_TILT:
            return 'quaternion (%g, %g, %g, %g) does not turn about the vertical axis' % (
                self.qx, self.qy, self.qz, self.qw)
        return None


@dataclasses.dataclass(frozen=True)
class Command:
    """What the adapter must do after one control step; the default does nothing.

    Attributes:
        twist: ``(v, w)`` (m/s, rad/s) to publish on ``cmd_vel``, or None to publish nothing
            (move_base or a person drives).
        send_goal: ``(x, y, yaw)`` of a spiral leg or of the look's viewpoint, to send to
            move_base in ``goal_frame``.
        goal_frame: the frame of ``send_goal``.
        cancel: cancel the goal this node has in flight at move_base (a leg, the way to the
            viewpoint or the re-sent goal), before sending any new goal.
        cancel_user: cancel someone else's goal at move_base: its goal id, or '' when the id is
            unknown (then cancel every goal stamped up to now); None: nothing to cancel.
        resend_saved_goal: send :attr:`RecoveryCore.saved_goal` to move_base with a fresh stamp.
        goal_tag: names the goal of ``send_goal`` or ``resend_saved_goal``; pass it back as
            ``goal_id`` to :meth:`RecoveryCore.on_goal_done` with ``ours=True``, so that a late
            result of an older goal is not taken for this one.
        request_state: a State to ask lost_service for, or None.
        reason: why, for the state request.
        expected_states: the States the request was decided in (a frozenset; lost_service
            refuses it when the state is none of them any more), or None: whatever it is.
        clear_costmaps: ask move_base to clear its costmaps (a new LOST episode began, or a
            pose fix moved the estimate far).
        find_viewpoint: ask fiducial_localizer for a viewpoint and pass the answer to
            :meth:`RecoveryCore.on_viewpoint`.
    """

    twist: tuple = None
    send_goal: tuple = None
    goal_frame: str = ''
    cancel: bool = False
    cancel_user: str = None
    resend_saved_goal: bool = False
    goal_tag: str = ''
    request_state: State = None
    reason: str = ''
    expected_states: frozenset = None
    clear_costmaps: bool = False
    find_viewpoint: bool = False


class Phase(enum.Enum):
    """What the recovery is doing."""

    IDLE = 'IDLE'          # not searching: the state is not LOST (or not known yet)
    SPIN = 'SPIN'          # open-loop 360 deg spin in place
    LEG = 'LEG'            # a spiral leg is in flight at move_base
    WANDER = 'WANDER'      # the reactive wander
    WAIT = 'WAIT'          # strategy none: standing still, waiting for the localizer
    GAVE_UP = 'GAVE_UP'    # search budget spent, NEED_HELP requested, stopped
    LOOK = 'LOOK'          # localized: going to look at a tag before resuming the goal
    APPROACH = 'APPROACH'  # searching: going closer to a tag seen too far away to localize from
    CHECK = 'CHECK'        # at a goal reached on an unconfirmed estimate: one turn in place
    STEP = 'STEP'          # localized, the resumed goal aborted: a short step before re-sending


#: The phases in which this node drives a search (and remembers the laser's returns).
_SEARCHING = (Phase.SPIN, Phase.LEG, Phase.WANDER, Phase.APPROACH)
#: The phases in which the laser's returns are remembered (in the odometry frame): the search,
#: and the step out of a place move_base had no plan from, which drives by them (so are the
#: returns seen while move_base drives the resumed goal, before such a step).
_REMEMBERING = _SEARCHING + (Phase.STEP,)


#: Before move_base's echo of an id-less saved goal came, seconds by which a result's goal stamp
#: must precede the time the goal came for the result to be taken for an older goal's:
#: move_base stamps the saved goal itself when it accepts it, which may be a little before
#: this node's callback ran (the echo's stamp, on move_base's clock, needs no slack).
OLDER_GOAL_SLACK = 2.0


def _finite(*values):
    """True when every value is a finite real number."""
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               for v in values)


class RecoveryCore:
    """The recovery decisions: one LOST episode at a time, the user's goal kept throughout.

    Call the ``on_*`` methods as events arrive and :meth:`step` once per control period; every
    time is in seconds on one clock. Not thread-safe: the adapter serialises calls.

    Attributes:
        config: the validated RecoveryConfig.
        state: the latest robot State (None until the first one arrives).
        phase: the current :class:`Phase`.
        saved_goal: the user's goal (:class:`UserGoal`) or None.
        strategy: the strategy of the current episode (``'reactive'`` after a fallback).
        fallback_reason: why this episode fell back to ``reactive``, or None.
        move_base_available: the latest move_base availability reported by the adapter.
        legs_sent: spiral legs sent in the current episode.
    """

    def __init__(self, config, wander=None, spiral_factory=SpiralSearch):
        """Build from a validated config.

        Args:
            config: a RecoveryConfig (validated).
            wander: the reactive wanderer (``step(scan, t, odom, remembered) -> (v, w)``,
                ``reset()``); default a ReactiveWander built from ``config.reactive_config()``.
            spiral_factory: ``(x0, y0, step) -> object with next_goal()``; default SpiralSearch.
        """
        self.config = config
        self.wander = wander if wander is not None else ReactiveWander(config.reactive_config())
        self._spiral_factory = spiral_factory
        self.state = None
        self.phase = Phase.IDLE
        self.saved_goal = None
        self._saved_at = None           # the saved goal's stamp, else when it came (cancels)
        self._saved_stamped = False     # _saved_at is a stamp (the goal's, or move_base's echo)
        self._user_at_move_base = False  # the user's own goal (not our re-send) is at move_base
        self.strategy = config.strategy
        self.fallback_reason = None
        self.move_base_available = False
        self.legs_sent = 0
        self._spiral = None
        self._spiral_frame = None       # the frame of the episode's spiral
        self._center = None             # last good pose (else latest pose) at the episode start
        self._leg_start = None          # (x, y) the leg in flight is measured from
        self._leg_timeout = None        # seconds the leg in flight was given
        self._leg_progress = None       # ((x, y) odometry, t) of the leg's last progress
        self._spun_at = None            # odometry (x, y) where the latest full spin ended
        self._episode_start = None
        self._episode_driven = 0.0      # odometry (m) driven in the episode (max_search_distance)
        self._driven_from = None        # the odometry (x, y) the distance was last counted at
        self._help_why = ''             # which search budget was spent, for the NEED_HELP request
        self._phase_end = None          # end of the spin, or the deadline of the leg
        self._aborts = 0                # failed legs in a row (see max_aborts)
        self._resume = False            # an episode happened: re-send the goal when localized
        self._resent = False            # our re-send of the saved goal is at move_base
        self._resume_when_up = False    # localized while move_base was down: resume once up
        self._retries_left = 0          # re-sends left after move_base aborts the resumed goal
        self._retry_at = None           # when the next of those is due
        self._unconfirmed = False       # the localizer alone ended the last episode
        self._checking = False          # the saved goal was reached; its turn is not over
        self._doubts = 0                # LOST requests for the saved goal's aborts (max_doubts)
        self._resume_progress = None    # ((x, y) odometry, t) of the re-sent goal's last progress
        self._stale_at = None           # when the pose estimate was last seen stale
        self._abandoned = False         # move_base aborted the saved goal for good: kept, undriven
        self._nav_asked = False         # NAVIGATING requested and not seen since
        self._idle_sent = False         # an IDLE request has left since the last state change
        self._tags = 0                  # goals this node has sent
        self._tag = None                # the tag of our goal in flight
        self._cancelled_ids = set()     # user goal ids this node cancelled (their PREEMPTED)
        self._good_pose = None          # last (x, y, yaw) while localized
        self._pose = None               # last (x, y, yaw) of any kind
        self._pose_before = None        # the one before it
        self._scan = None
        self._scan_t = None
        self._odom = self._odom_t = None
        self._odom_yaw = None           # heading of the odometry pose, when it came with one
        self._odom_frame = 'odom'       # frame_id of the odometry messages
        self._memory = ObstacleMemory()  # this episode's laser returns, in the odometry frame
        self._odom_history = PoseHistory(ODOM_HISTORY)  # odometry poses by stamp
        # (stamp, scan, mount) of scans newer than the newest odometry, to remember once it comes
        self._pending_scans = collections.deque(maxlen=PENDING_SCANS)
        self._wandered = 0.0            # odometry metres the wander drove since the last spin
        self._wander_from = None        # the odometry position that distance was counted to
        self._path = []                 # with explore: the episode's odometry, PATH_STEP apart
        self._walled_at = None          # with seek_walls: where the last spin saw a wall near
        self._heading_goal = None       # (odometry yaw, deadline): turn there, then wander
        self._hint = None               # (bearing, stamp) of the latest search hint, or None
        self._first_after_lift = False  # the episode's first spin after a put-down is on
        self._hops_left = 0             # hops before the spiral still to make this episode
        self._hop_end = None            # the deadline of the hop under way, or None
        self._last_t = None
        self._last_help = None          # time of the last NEED_HELP request
        self._docked = False            # the base reports it is on its dock
        self._look = None               # during LOOK: 'ask', 'go' (to the viewpoint), 'stand'
        self._look_end = None           # the look's deadline (look_timeout)
        self._stand_end = None          # the end of standing at the viewpoint
        self._approach = None           # during APPROACH: the core Approach
        self._approach_next = None      # (fiducial id, tag xy, facing, goal xy) to approach next
        self._approached = {}           # fiducial id -> approaches in this episode
        self._dwell_end = None          # during APPROACH: the end of facing the tag
        self._warned = {}               # warning key -> time of the last warning
        self._out = {}                  # pending Command fields, flushed by step()

    # ----------------------------------------------------------------------- events

    def on_state(self, state, t):
        """The robot state changed (or was first read) at time ``t``."""
        t = self._time(t)
        if t is None:
            return
        if not isinstance(state, State):
            self._warn('state', 'ignoring unknown state %r' % (state,))
            return
        previous, self.state = self.state, state
        if state == previous:
            return
        nav_asked = self._nav_asked
        self._nav_asked = self._idle_sent = False
        if previous == State.NEED_HELP:
            # A person's fix (or a reset, or docking) ends the episode whose budget was spent:
            # should that fix not be confirmed, the search starts again from the spin, near
            # where the person put the estimate, instead of asking for help at once.
            self._episode_start = None
        if state == State.LOST:
            # A fix that was not confirmed (LOCALIZING -> LOST) does not end the episode: its
            # budget runs on, or fixes that never confirm would keep the robot from asking
            # for help.
            start = self._episode_start if previous == State.LOCALIZING else None
            driven = self._episode_driven, self._driven_from
            self._start_episode(t)
            self._first_after_lift = previous == State.FLYING
            if start is not None and 0.0 <= t - start:
                self._episode_start = start
                self._episode_driven, self._driven_from = driven
            return
        if self.phase == Phase.CHECK and state in LOCALIZED:
            pass    # IDLE <-> NAVIGATING: the turn goes on
        elif self.phase != Phase.IDLE:
            self._stop('state is now %s' % state.value)
        if self._checking and self.phase == Phase.IDLE and state in LOCALIZED and \
                previous == State.FLYING:
            if self._docked:
                _log.info('recovery: put down on the dock after a short lift, the goal reached: '
                          'forgetting it')
                self._forget()
                return
            _log.info('recovery: put down after a short lift, the saved goal reached: one turn '
                      'in place at it')
            self._start_check(t)
            return
        if state in LOCALIZED and previous in (State.LOST, State.LOCALIZING, State.NEED_HELP):
            # From LOCALIZING (a tag's fix), NEED_HELP (a person's reset) or docked: confirmed;
            # LOST -> localized on the localizer's word alone: not. (A short lift changes
            # nothing.)
            self._unconfirmed = previous == State.LOST and not self._docked
        if state in LOCALIZED and self._resume:
            if self.config.look_before_resume and previous == State.LOST and \
                    not self._docked and self.move_base_available:
                self._start_look(t)
            else:
                self._resume_goal()
        elif state == State.NAVIGATING and (nav_asked or previous == State.FLYING) and \
                self.phase == Phase.IDLE and not self._resent and self._retry_at is None and \
                (self.saved_goal is None or self._abandoned):
            # The goal ended (reached, cancelled, aborted for good) before the NAVIGATING we
            # asked for was granted, or while the robot was in the air (where lost_service
            # refuses every request; a short lift then restores NAVIGATING): nothing drives it.
            self._request(State.IDLE, 'lost_and_found: the goal ended before NAVIGATING was '
                          'granted' if nav_asked else 'lost_and_found: the goal ended while '
                          'the robot was in the air')

    def on_viewpoint(self, viewpoint, why, t):
        """fiducial_localizer's answer to :attr:`Command.find_viewpoint`.

        Args:
            viewpoint: ``(x, y, yaw)`` of the base pose in ``map_frame`` to look from, or None
                when there is none (then the goal is resumed now).
            why: what the answer says, for the log.
            t: time (s).
        """
        t = self._time(t)
        if t is None or self.phase != Phase.LOOK or self._look != 'ask':
            return      # a late answer: the look is over
        if viewpoint is None or not _finite(*viewpoint):
            self._end_look('no viewpoint (%s)' % why)
            return
        goal = tuple(float(v) for v in viewpoint)
        self._look = 'go'
        self._out['send_goal'] = goal
        self._out['goal_frame'] = self.config.map_frame
        self._out['goal_tag'] = self._next_tag('look')
        _log.info('recovery: going to look from (%.2f, %.2f, %.2f): %s', goal[0], goal[1],
                  goal[2], why)

    def on_search_hint(self, bearing, stamp, t):
        """fiducial_localizer's search hint (``follow_search_hints``).

        Args:
            bearing: the way a tag is (rad, in the robot's frame at ``stamp``), or None when
                the latest particle cloud gives none (a hint before it is then forgotten).
            stamp: the time of the particle cloud it was read from (s).
            t: time received (s).
        """
        t = self._time(t)
        if t is None:
            return
        if bearing is None:
            self._hint = None
        elif not _finite(bearing, stamp):
            self._warn('hint', 'ignoring a search hint with a non-finite bearing or stamp '
                       '(%r, %r)' % (bearing, stamp))
        else:
            self._hint = (float(bearing), float(stamp))

    def on_dock(self, docked):
        """Whether the base is on its dock (kidnap_monitor's ``on_dock``): a docked robot
        does not drive off to look at a tag, a look under way when it docks ends (docking
        also ends LOST, and the two may arrive in either order), and so does the turn at a
        reached goal (``check_arrival``), the goal forgotten: docking confirmed the estimate
        it was reached on. (A goal reached in the air is settled at the put-down.)"""
        self._docked = bool(docked)
        if self._docked:
            self._unconfirmed = False       # docking is a fix (LOST may end before this)
        if self._docked and self.phase == Phase.CHECK:
            self._stop('the robot is on its dock')
            _log.info('recovery: on its dock during the turn at the reached goal: forgetting '
                      'the goal')
            self._forget()
        if self._docked and self.phase == Phase.STEP:
            self._stop('the robot is on its dock')
        if self._docked and self.phase == Phase.LOOK:
            self._drop_pending_look()
            if self._goal_in_flight():
                self._out['cancel'] = True
            self._end_look('the robot is on its dock')

    def on_user_goal(self, goal, t, stamp=None):
        """A goal from a user (not from this node) was seen on move_base's inputs.

        ``stamp`` (s) is its actionlib goal id's stamp or, for move_base's echo of a
        ``move_base_simple/goal`` (no id, no stamp), the echo's header stamp (move_base's time
        when it wrapped the goal); None or 0 when it has none (then the time it came stands for
        it). A cancel stamped at or after it takes it in.
        """
        t = self._time(t)
        if t is None:
            return
        problem = goal.problem() if isinstance(goal, UserGoal) else 'not a UserGoal'
        if problem:
            self._warn('goal', 'ignoring a user goal: %s' % problem)
            return
        replaced = self.saved_goal
        self.saved_goal = goal
        self._saved_stamped = _finite(stamp) and stamp > 0.0
        self._saved_at = stamp if self._saved_stamped else t
        self._user_at_move_base = self.move_base_available  # it went to move_base itself
        self._doubts = 0
        self._abandoned = False
        if self.phase == Phase.LOOK:
            # The user drives now (move_base took the goal and preempted the look's).
            self._stop('a user goal arrived during the look')
            self._resume = False
        elif self.phase == Phase.CHECK:
            self._stop('a user goal arrived during the turn at the reached goal')
        elif self.phase == Phase.STEP:
            self._stop('a user goal arrived during the step before sending the goal again')
        self._checking = False
        # Our re-send of the previous goal is being replaced: its PREEMPTED is not the user's.
        # One still waiting for this step must not go out: it would send the new goal as
        # ours, and move_base would preempt the user's own with it.
        self._drop_pending_resend()
        self._resent = False
        self._retry_at = None
        self._resume_when_up = False    # the user's goal went to move_base itself
        if replaced is None or (replaced.x, replaced.y) != (goal.x, goal.y):
            _log.info('recovery: saved the user goal (%.2f, %.2f) in %s',
                      goal.x, goal.y, goal.frame_id)
        if self.state == State.IDLE:
            self._request(State.NAVIGATING, 'lost_and_found: user goal')
        elif self.state == State.NAVIGATING:
            # IDLE asked for the previous goal: withdraw it if it has not left yet; if one
            # has, ask NAVIGATING back for once it is granted (requests are served in order).
            if self._out.get('request_state') == State.IDLE:
                self._withdraw_request()
            if self._idle_sent:
                self._request(State.NAVIGATING, 'lost_and_found: user goal',
                              expected=frozenset({State.IDLE}))
        elif self.state is not None and self.state not in LOCALIZED:
            # Keep it for later, but move_base must not drive it while the robot does not know
            # where it is (or is in the air, or waits for help): it is sent again once
            # localized (after a short lift too, which starts no episode).
            self._cancel_user(goal.goal_id)
            self._resume = True

    def on_user_cancel(self, goal_id, stamp, t, ours=False):
        """Someone else published on ``move_base/cancel`` (actionlib_msgs/GoalID).

        A cancel that takes in the saved goal forgets it unless the robot is localized with
        the user's own goal at move_base: then move_base preempts it and its PREEMPTED says so,
        in the order move_base served the cancel and any newer goal. So a cancel forgets the
        goal while the robot is not localized (in the air too), during the wait or the step
        before a re-send (the step stops), the turn at a reached goal (it stops), after
        move_base aborted it for good, and while our re-send drives it (under our goal id,
        which the user's cancel may not name: cancelled too). A search goes on, and so does a
        look before resuming unless the cancel took in its goal at move_base too (they test
        the localization); only the goal is forgotten, so nothing is resumed.

        Args:
            goal_id: the cancel's id ('' for every goal, or every goal stamped up to
                ``stamp``).
            stamp: the cancel's stamp (s; 0: no stamp). Following actionlib, a stamp cancels
                every goal stamped at or before it (the saved goal's stamp, or when it came).
            t: time (s).
            ours: ``goal_id`` names a goal this node sent: with our re-send out (or another
                due after it ended), a cancel of it is a cancel of the saved goal.
        """
        t = self._time(t)
        if t is None or self.saved_goal is None:
            return
        if not _finite(stamp) or not isinstance(goal_id, str):
            self._warn('cancel', 'ignoring a cancel with id %r and stamp %r' % (goal_id, stamp))
            return
        by_id = bool(goal_id) and (goal_id == self.saved_goal.goal_id or (
            bool(ours) and (self._resent or self._retry_at is not None)))
        by_stamp = stamp > 0.0 and self._saved_at is not None and self._saved_at <= stamp
        # While not localized move_base's PREEMPTED of the user's goal counts as ours (so
        # lifted with the goal at move_base, the cancel is taken here).
        if not (by_id or by_stamp or (not goal_id and stamp <= 0.0)) or \
                (self._user_at_move_base and self.state in LOCALIZED):
            return
        # A re-send still waiting for this step has not reached move_base: the cancel is
        # ahead of it there, so it must not go out; one that went out is cancelled.
        pending = self._drop_pending_resume()
        if not pending and self._resent:
            self._out['cancel'] = True
        _log.info('recovery: the user cancelled the saved goal (%.2f, %.2f) while %s: '
                  'forgetting it%s', self.saved_goal.x, self.saved_goal.y,
                  self._holder(pending), '; the search goes on'
                  if self.phase in _SEARCHING + (Phase.WAIT,) else '')
        if self.phase in (Phase.STEP, Phase.CHECK):
            self._stop('the user cancelled the saved goal')
        resume = self._resume
        self._forget()
        # An episode without a goal still looks for a tag before it ends (look_before_resume);
        # a goal sent in the air leaves nothing to resume after a short lift.
        self._resume = resume and self.state in (State.LOST, State.LOCALIZING, State.NEED_HELP)

    def _holder(self, pending):
        """Where the saved goal is while move_base does not hold the user's own, for the log."""
        if pending or self._resent:
            return 'sent again by this node'
        if self.state not in LOCALIZED:
            return 'the robot is %s' % (self.state.value if self.state else 'starting')
        if self._abandoned:
            return 'kept after move_base aborted it'
        return {Phase.STEP: 'stepping out before sending it again',
                Phase.LOOK: 'looking for a tag before resuming it',
                Phase.CHECK: 'turning at it once reached'}.get(
                    self.phase, 'waiting to send it again')

    def on_goal_done(self, status, ours, t, goal_id='', stamp=None):
        """A move_base goal ended with ``status`` (actionlib_msgs/GoalStatus value).

        Args:
            status: the terminal status (SUCCEEDED, ABORTED, PREEMPTED, ...).
            ours: True for the goal this node has in flight (a leg, the way to the viewpoint
                or the re-sent goal).
            t: time (s).
            goal_id: the goal's id; for our goals the :attr:`Command.goal_tag` it was sent with
                ('' stands for the latest one).
            stamp: the goal id's stamp (s; move_base stamps a goal when it accepts it), None
                when unknown. A saved goal without an id (``move_base_simple/goal``) is told
                from the goal it replaced by it: a result of a goal stamped before move_base
                wrapped the saved goal (its echo's stamp), or, before the echo came, more than
                :data:`OLDER_GOAL_SLACK` before the saved goal came, is not the saved goal's.
        """
        t = self._time(t)
        if t is None:
            return
        if ours:
            if goal_id and goal_id != self._tag:
                return      # a late result of a goal we already replaced or gave up on
            if self.phase == Phase.LEG:
                self._leg_done(status, t)
            elif self.phase == Phase.LOOK and self._look == 'go':
                if status == SUCCEEDED:
                    self._look = 'stand'
                    self._stand_end = t + self.config.look_dwell
                    _log.info('recovery: at the viewpoint, looking for %.1f s',
                              self.config.look_dwell)
                elif status in (PREEMPTED, RECALLED):
                    # Not by us (every cancel of ours leaves the look first): someone else's
                    # goal or cancel took move_base over. Theirs drives; ours stays saved.
                    self._look = None       # over at move_base: nothing to cancel
                    self._stop('move_base %s the way to the viewpoint'
                               % _STATUS_NAMES[status])
                    self._resume = False
                else:
                    self._end_look('move_base ended the way to the viewpoint (%s)'
                                   % _STATUS_NAMES.get(status, status))
            elif self._resent and self.phase == Phase.IDLE:
                self._resent = False
                if status == ABORTED:
                    if not self._doubt(t):
                        self._resend_later(t, step=True)
                elif status not in _STATUS_NAMES or status == GOAL_LOST:
                    # move_base lost it (restarted?) or ended it strangely: no sign of a wrong
                    # estimate, so no doubt; sent again as after an abort.
                    self._resend_later(t, why='ended', detail=' with status %s'
                                       % _STATUS_NAMES.get(status, status))
                elif status == RECALLED:
                    # Refused before it started, and no cancel of the user's came (it forgets
                    # the goal) nor a goal (it replaces it): move_base's own rule against goals
                    # stamped before its last goal or cancel, as after the clock went back.
                    self._resend_later(t, why='recalled', detail=' before it started (stamped '
                                       'before move_base\'s last goal or cancel: did the clock '
                                       'go back?)')
                else:
                    self._user_goal_done(status, goal_id, resumed=True)
            # Otherwise a late result of a goal we already gave up on: nothing to do.
            return
        if self.saved_goal is None:
            return
        if self.saved_goal.goal_id and goal_id != self.saved_goal.goal_id:
            return      # another goal, e.g. the one the saved goal preempted
        slack = 0.0 if self._saved_stamped else OLDER_GOAL_SLACK
        if not self.saved_goal.goal_id and _finite(stamp) and stamp > 0.0 and \
                self._saved_at is not None and stamp < self._saved_at - slack:
            return      # the goal an rviz goal replaced (preempted by it)
        self._user_at_move_base = False
        self._user_goal_done(status, goal_id)

    def on_pose_fix(self, pose=None):
        """A pose arrived on ``initialpose`` (a tag's correction while localized, a person's
        pose, a re-seed): the estimate no longer rests on the localizer's word alone.

        ``pose`` is the fix's ``(x, y, yaw)`` in ``map_frame`` (None: not known there). One
        ``clear_costmaps_jump`` or farther from the estimate it replaces asks move_base to
        clear its costmaps. Which estimate it replaces: the latest, unless the localizer's
        answer to the fix came first (then the one before it, the farther of the two).
        """
        if self.state in LOCALIZED:
            self._unconfirmed = False
        if self.phase == Phase.CHECK and self.saved_goal is not None:
            _log.warning('recovery: a pose fix during the turn at the goal (a tag, a person\'s '
                         'initial pose): sending the goal again, in case it was reached on a '
                         'wrong estimate')
            self._stop('a pose fix corrected the estimate')
            self._checking = False
            self._resume_goal()
        elif self._checking and self.phase == Phase.IDLE and self.saved_goal is not None:
            # The robot is in the air, its turn at the goal still to come: the goal is sent
            # again once it is put down (a kidnap's episode resumes it anyway).
            _log.warning('recovery: a pose fix while the robot is in the air, the goal reached: '
                         'sending it again once put down, in case it was reached on a wrong '
                         'estimate')
            self._checking = False
            self._unconfirmed = False
            self._resume = True
        cfg = self.config
        if pose is None or not cfg.clear_costmaps or cfg.clear_costmaps_jump <= 0.0:
            return
        if not _finite(*pose):
            self._warn('pose_fix', 'ignoring a non-finite pose fix %r' % (tuple(pose),))
            return
        jump = max((math.hypot(pose[0] - p[0], pose[1] - p[1])
                    for p in (self._pose, self._pose_before) if p is not None), default=0.0)
        if jump >= cfg.clear_costmaps_jump:
            _log.info('recovery: a pose fix %.1f m from the estimate: clearing move_base\'s '
                      'costmaps (their obstacles were placed by the old estimate)', jump)
            self._out['clear_costmaps'] = True

    def on_estimate_age(self, age, t):
        """How old (s) the pose estimate in use is at ``t``: the age of the newest
        ``map_frame`` -> ``base_frame`` transform, what move_base places the robot with; None
        when there is none to measure (no localizer yet: not counted as stale), ``math.inf``
        when it is older than tf keeps."""
        t = self._time(t)
        limit = self.config.stale_estimate_age
        if t is None or age is None or limit <= 0.0:
            return
        if math.isnan(age) or age == -math.inf:
            self._warn('estimate_age', 'ignoring an estimate age that is not a number: %r'
                       % (age,))
            return
        if age > limit:
            self._stale_at = t
            self._warn('estimate_stale', 'the pose estimate is %s (stale past %.1f s): the '
                       'localizer lags, or its clock is not this one; an abort of the resumed '
                       'goal now is not taken as a wrong estimate'
                       % ('%.1f s old' % age if age < math.inf else 'older than tf keeps',
                          limit))

    def _stale_within(self, t, window):
        """Whether the pose estimate was seen stale in the last ``window`` s."""
        return self._stale_at is not None and 0.0 <= t - self._stale_at <= window

    def on_pose(self, x, y, yaw):
        """A pose estimate (amcl_pose) in the map frame."""
        if not _finite(x, y, yaw):
            self._warn('pose', 'ignoring a non-finite pose (%r, %r, %r)' % (x, y, yaw))
            return
        self._pose_before, self._pose = self._pose, (float(x), float(y), float(yaw))
        if self.state in LOCALIZED:
            self._good_pose = self._pose

    def on_scan(self, scan, t, mount=None, stamp=None):
        """A laser scan (reactive Scan) received at ``t``, taken at ``stamp``.

        During a search (spin, legs, wander), while move_base drives the resumed goal and during
        the step after its abort, its returns are also remembered for the wander, at
        the odometry pose of ``stamp`` (interpolated between the odometry stamps around it; a
        scan newer than the newest odometry waits for the next one), or at the latest odometry
        pose when ``stamp`` is None. ``mount`` is where the laser sits on the robot (a
        scan_agreement LaserMount); None: at the robot's centre, facing forward.
        """
        t = self._time(t)
        if t is None:
            return
        self._scan, self._scan_t = scan, t
        if not self._remembering():
            return
        if stamp is None:
            self._remember(scan, mount, self._odom_pose(t))
        elif not _finite(stamp):
            self._warn('scan_stamp', 'scan with a non-finite stamp %r not remembered' % (stamp,))
        elif self._odom_history.latest is not None and stamp > self._odom_history.latest:
            if len(self._pending_scans) == PENDING_SCANS:
                # Odometry lags the scans by more than the queue holds: its clock, or its
                # rate. Place the oldest as before there was a history, at the latest pose.
                self._warn('scan_wait', 'scans stamped %.2f s after the newest odometry: '
                           'placing them at the latest odometry pose (are /odom and /scan '
                           'stamped by one clock, and is odometry coming?)'
                           % (stamp - self._odom_history.latest))
                _, waited, waited_mount = self._pending_scans.popleft()
                self._remember(waited, waited_mount, self._odom_pose(t))
            self._pending_scans.append((float(stamp), scan, mount))
        else:
            self._remember_at(scan, mount, stamp)

    def _remember_at(self, scan, mount, stamp):
        """Remember ``scan`` at the odometry pose of ``stamp``; a stamp before the odometry
        kept is not remembered, with a warning."""
        pose = self._odom_history.at(stamp)
        if pose is None and len(self._odom_history):
            self._warn('scan_old', 'scan stamped %.3f s, before the odometry kept (%.1f s): not '
                       'remembered' % (stamp, ODOM_HISTORY))
        self._remember(scan, mount, pose)

    def _remembering(self):
        """Whether the laser's returns are remembered now: while searching, stepping, or
        while move_base drives the resumed goal (a step may follow its abort)."""
        return self.phase in _REMEMBERING or (self._resent and self.phase == Phase.IDLE)

    def _remember(self, scan, mount, pose):
        """Add ``scan``'s returns to the obstacle memory at odometry ``pose`` (None: skip)."""
        if pose is None:
            return
        try:
            self._memory.add_scan(pose, scan, mount or LaserMount())
        except (TypeError, ValueError) as error:
            self._warn('memory', 'scan not remembered: %s' % error)

    def on_odom(self, x, y, t, frame_id='', yaw=None, stamp=None):
        """The robot's position (m) and heading (rad, None: unknown) in its odometry frame
        ``frame_id``, received at ``t`` and measured at ``stamp`` (None: at ``t``).

        It anchors the spiral (``spiral_anchor: odom``), feeds the wander's stall check and,
        with the heading, places the returns the wander remembers. An empty ``frame_id`` keeps
        the previous one ('odom' at first).
        """
        t = self._time(t)
        if t is None:
            return
        if not _finite(x, y) or (yaw is not None and not _finite(yaw)):
            self._warn('odom', 'ignoring non-finite odometry (%r, %r, %r)' % (x, y, yaw))
            return
        before, self._odom, self._odom_t = self._odom, (float(x), float(y)), t
        self._odom_yaw = None if yaw is None else float(yaw)
        if before is not None and math.hypot(
                x - before[0], y - before[1]) > self._memory.config.jump_distance:
            self._walled_at = None      # the odometry was reset: that place is elsewhere now
            self._driven_from = None
        self._count_driven()
        if self.config.explore and self.phase in _SEARCHING:
            step = math.hypot(x - self._path[-1][0], y - self._path[-1][1]) \
                if self._path else math.inf
            if step > self._memory.config.jump_distance:
                self._path = [self._odom]       # first, or the odometry was reset: start anew
            elif step >= PATH_STEP:
                self._path.append(self._odom)
        if isinstance(frame_id, str) and frame_id.strip('/ '):
            self._odom_frame = frame_id.lstrip('/')
        if yaw is None:
            return
        stamp = t if stamp is None or not _finite(stamp) else float(stamp)
        if self._odom_history.add(stamp, (x, y, yaw)):
            self._pending_scans.clear()     # the clock jumped back: they will never be placed
        while self._pending_scans and self._pending_scans[0][0] <= self._odom_history.latest:
            scan_stamp, scan, mount = self._pending_scans.popleft()
            if self._remembering():
                self._remember_at(scan, mount, scan_stamp)

    def _count_driven(self):
        """Add the odometry's progress to the episode's distance (``max_search_distance``),
        in steps of at least PATH_STEP, so that odometry jitter in place adds nothing."""
        if self._episode_start is None or self.state not in (State.LOST, State.LOCALIZING):
            self._driven_from = None
        elif self._driven_from is None:
            self._driven_from = self._odom
        else:
            step = math.hypot(self._odom[0] - self._driven_from[0],
                              self._odom[1] - self._driven_from[1])
            if step >= PATH_STEP:
                self._episode_driven += step
                self._driven_from = self._odom

    def on_distant_tags(self, tags, t):
        """The camera sees mapped tags, each ``(fiducial_id, x, y, facing_yaw)`` in the
        odometry frame (``facing_yaw``: the direction the tag's face points to, rad, or None
        when unknown), but too far (or too obliquely, or too noisily) for fiducial_localizer
        to localize from.

        While searching (``approach_tags``), the next control step leaves the spiral leg, the
        wander or (``approach_at_once``; otherwise it is finished first) the spin to go closer
        to the nearest of them that has not been approached ``approach_tries`` times in this
        episode.
        """
        t = self._time(t)
        if t is None or not self.config.approach_tags:
            return
        if self.state != State.LOST or self.phase not in (Phase.SPIN, Phase.LEG, Phase.WANDER) \
                or self._odom is None:
            return
        best = None
        for fiducial_id, tag_x, tag_y, facing_yaw in tags:
            if not _finite(tag_x, tag_y) or (facing_yaw is not None and not _finite(facing_yaw)):
                self._warn('distant_tag', 'ignoring distant tag %s at a non-finite place (%r, '
                           '%r, %r)' % (fiducial_id, tag_x, tag_y, facing_yaw))
                continue
            if self._approached.get(fiducial_id, 0) >= self.config.approach_tries:
                continue
            distance = math.hypot(tag_x - self._odom[0], tag_y - self._odom[1])
            if best is None or distance < best[0]:
                best = (distance, fiducial_id, (float(tag_x), float(tag_y)), facing_yaw)
        if best is not None:
            _distance, fiducial_id, tag, facing_yaw = best
            cfg = self.config
            goal = approach_point(tag, facing_yaw, self._odom, cfg.approach_standoff,
                                  cfg.approach_max_distance, cfg.approach_max_view_angle)
            self._approach_next = (fiducial_id, tag, facing_yaw, goal)

    def resend_out(self, tag):
        """Whether our re-send of the saved goal tagged ``tag`` is still wanted at move_base
        (a user goal, a cancel, a LOST episode or move_base going away since the step that
        asked for it say no): the adapter sends it only then."""
        return self._resent and bool(tag) and tag == self._tag and self.saved_goal is not None

    def on_move_base_available(self, available):
        """Whether the move_base action server is connected now. When it goes while it
        drives the saved goal (the user's own, or our re-send of it; localized), the goal is
        re-sent once it is back: a restarted move_base holds no goal and sends no result, and
        a goal sent while it was going may never have reached it. Until then nothing drives
        the goal, so a re-send's standing still is no sign of a wrong estimate."""
        available = bool(available)
        if not available and (self._user_at_move_base or self._resent) and \
                self.saved_goal is not None and self.state in LOCALIZED and \
                self.phase == Phase.IDLE:
            _log.warning('recovery: move_base went away while it drove the saved goal '
                         '(%.2f, %.2f)%s: it is sent again once move_base is back',
                         self.saved_goal.x, self.saved_goal.y,
                         ', sent again by this node' if self._resent else '')
            self._drop_pending_resume()
            self._resent = False        # a late result of it is then ignored
            self._resume_when_up = True
        self.move_base_available = available
        if not available:
            self._user_at_move_base = False

    def shutdown(self):
        """The node is shutting down: cancel the leg (or the way to the viewpoint) in
        flight, stop the robot.

        A re-sent user goal is left running: it is the user's navigation, not the search.
        """
        command = Command(twist=(0.0, 0.0), cancel=self._goal_in_flight())
        self.phase = Phase.IDLE
        self._out = {}
        return command

    # ----------------------------------------------------------------------- control step

    def step(self, t):
        """Advance to time ``t`` and return the :class:`Command` for this control period."""
        t = self._time(t)
        if t is None:
            return Command()
        if self.state == State.LOST and self.phase in _SEARCHING + (Phase.WAIT,):
            spent = self._budget_spent(t)
            if spent:
                self._give_up(t, spent)
            elif self.phase == Phase.APPROACH:
                self._out['twist'] = self._approach_step(t)
            elif self._approach_next is not None and self._may_leave_for_approach():
                if self.phase == Phase.LEG:
                    self._out['cancel'] = True
                self._start_approach(t)
            elif self.phase == Phase.SPIN:
                if t >= self._phase_end:
                    self._spun_at = self._fresh_odom(t)
                    self._end_spin(t)
                else:
                    self._out['twist'] = (0.0, self.config.spin_speed)
            elif self.phase == Phase.LEG:
                if t >= self._phase_end:
                    _log.info('recovery: leg %d timed out after %.1f s, cancelling it',
                              self.legs_sent, self._leg_timeout)
                    self._out['cancel'] = True
                    self._leg_over('timed out', t)
                elif self._leg_stalled(t):
                    _log.info('recovery: leg %d has not moved the robot %.2f m in %.1f s '
                              '(move_base may have no path from the estimate), cancelling it',
                              self.legs_sent, self.config.leg_stall_distance,
                              self.config.leg_stall_time)
                    self._out['cancel'] = True
                    self._leg_over('stalled', t)
            if self.phase == Phase.WANDER:
                self._out['twist'] = self._wander(t)
        elif self.state == State.LOST and self.phase == Phase.GAVE_UP:
            if t - self._last_help >= NEED_HELP_RETRY:
                self._ask_for_help(t)
        elif self.phase == Phase.LOOK:
            if t >= self._look_end:
                self._drop_pending_look()
                if self._look == 'go':
                    self._out['cancel'] = True
                self._end_look('no end to the look after %.0f s' % self.config.look_timeout)
            elif self._look == 'stand' and t >= self._stand_end:
                self._end_look('looked for %.1f s' % self.config.look_dwell)
        elif self.phase == Phase.CHECK:
            if t >= self._phase_end:
                _log.info('recovery: the turn at the goal showed nothing against the estimate: '
                          'the saved goal was reached, forgetting it')
                self.phase = Phase.IDLE
                self._out['twist'] = (0.0, 0.0)
                self._forget()
            else:
                self._out['twist'] = (0.0, self.config.spin_speed)
        elif self.phase == Phase.STEP:
            self._out['twist'] = self._step_out(t)
        elif self._resume_stalled(t):
            self._doubt(t, stalled=True)
        elif self._retry_at is not None and t >= self._retry_at:
            self._retry_at = None
            if self.phase == Phase.IDLE and self.saved_goal is not None and \
                    not self._resent:
                if self.state == State.NAVIGATING and not self.move_base_available:
                    # A goal sent to no server is lost: wait, without spending an attempt.
                    self._retry_at = t + self.config.resume_retry_delay
                    self._warn('retry_down', 'move_base is not up: the saved goal is sent '
                               'again once it is')
                elif self.state == State.FLYING:
                    # A short lift gives NAVIGATING back and the retry with it (a kidnap's
                    # episode resumes the goal anyway): wait, without spending an attempt.
                    self._retry_at = t + self.config.resume_retry_delay
                    self._warn('retry_flying', 'the robot is in the air: the saved goal is '
                               'sent again once it is put down')
                elif self.state == State.NAVIGATING:
                    self._retries_left -= 1
                    _log.info('recovery: sending the saved goal (%.2f, %.2f) again',
                              self.saved_goal.x, self.saved_goal.y)
                    self._resend()
                else:   # e.g. IDLE: not sent, and nothing drives it (kept saved)
                    _log.warning('recovery: not sending the saved goal again (state %s); it '
                                 'stays saved (~saved_goal)', self.state.value)
                    self._stand_down('the saved goal was not sent again')
        elif self._resume_when_up and self.move_base_available and self.phase == Phase.IDLE \
                and self.state in LOCALIZED:
            _log.info('recovery: move_base is up')
            self._resume_goal()
        out, self._out = self._out, {}
        if out.get('request_state') == State.IDLE:
            self._idle_sent = True
        return Command(**out)

    # ----------------------------------------------------------------------- internals

    def _time(self, t):
        """Validate ``t``; shift every deadline when the clock jumped backwards, or forwards
        by more than FORWARD_JUMP s between two events (the control step alone comes every
        ``1 / rate`` s: such a gap is no time the robot lived through, e.g. a bag's gap or a
        clock stepped by NTP, and must not spend a budget or doubt a goal at once)."""
        if not _finite(t):
            self._warn('time', 'ignoring an event with a non-finite time %r' % (t,))
            return None
        if self._last_t is not None and t < self._last_t:
            delta = t - self._last_t
            self._warn('clock', 'clock jumped back by %.3f s: shifting the deadlines' % -delta)
            self._shift(delta)
        elif self._last_t is not None and t - self._last_t > FORWARD_JUMP:
            delta = t - self._last_t
            self._warn('clock_forward', 'clock jumped forward by %.1f s with no event between: '
                       'shifting the deadlines' % delta)
            self._shift(delta)
        self._last_t = t
        return t

    def _shift(self, delta):
        """Move every deadline and timer by ``delta`` s (the clock jumped by it)."""
        # Keep what remains of each deadline rather than waiting for the old clock to return.
        for name in ('_episode_start', '_phase_end', '_scan_t', '_odom_t', '_last_help',
                     '_retry_at', '_look_end', '_stand_end', '_dwell_end', '_hop_end',
                     '_stale_at', '_saved_at'):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, value + delta)
        if self._approach is not None:
            self._approach.shift(delta)
        if self._heading_goal is not None:
            self._heading_goal = (self._heading_goal[0], self._heading_goal[1] + delta)
        for name in ('_leg_progress', '_resume_progress'):
            progress = getattr(self, name)
            if progress is not None:
                setattr(self, name, (progress[0], progress[1] + delta))
        self._warned = {key: when + delta for key, when in self._warned.items()}

    def _warn(self, key, text):
        """Log ``text`` at most once per WARN_PERIOD for each ``key``."""
        now = self._last_t if self._last_t is not None else 0.0
        last = self._warned.get(key)
        if last is None or now - last >= WARN_PERIOD:
            self._warned[key] = now
            _log.warning('recovery: %s', text)

    def _request(self, state, reason, expected=None):
        """Ask lost_service for ``state``; it refuses unless the state is still one of
        ``expected`` (default: the state this decision is taken in)."""
        if expected is None and self.state is not None:
            expected = frozenset({self.state})
        self._out['request_state'] = state
        self._out['reason'] = reason
        self._out['expected_states'] = expected
        if state == State.NAVIGATING:
            self._nav_asked = True

    def _withdraw_request(self):
        """Drop the state request waiting for this step's Command."""
        for key in ('request_state', 'reason', 'expected_states'):
            self._out.pop(key, None)

    def _next_tag(self, kind):
        """A new tag for the goal this node sends now."""
        self._tags += 1
        self._tag = '%s-%d' % (kind, self._tags)
        return self._tag

    def _cancel_user(self, goal_id):
        """Cancel the user's goal at move_base (all goals up to now when its id is unknown)."""
        self._out['cancel_user'] = goal_id or ''
        self._user_at_move_base = False
        if goal_id:
            self._cancelled_ids.add(goal_id)

    def _start_episode(self, t):
        """The state became LOST: cancel, remember where we were, spin."""
        # A re-send of the saved goal still waiting for this step must not go out now.
        if self._drop_pending_resend():
            self._resent = False
            self._withdraw_request()
        self._retry_at = None
        self._drop_pending_look()
        if self._goal_in_flight() or self._resent:
            self._out['cancel'] = True
        self._look = None
        if self.saved_goal is not None and not self._resent:
            self._cancel_user(self.saved_goal.goal_id)
        elif self.saved_goal is None:
            # A goal we never saw (sent before this node started) must not drive the search.
            self._cancel_user('')
        self._resent = False
        self._resume = True
        self._resume_when_up = False
        self._checking = False          # the saved goal, reached or not, is resumed after it
        self._episode_start = t
        self._episode_driven = 0.0
        self._driven_from = self._odom
        if self.config.clear_costmaps:
            self._out['clear_costmaps'] = True
        self.strategy = self.config.strategy
        self.fallback_reason = None
        self.legs_sent = 0
        self._aborts = 0
        self._hops_left = self.config.hops_before_spiral if self.strategy == 'spiral' else 0
        self._spiral = None
        self._spiral_frame = None
        self._spun_at = None
        self._center = self._good_pose or self._pose
        self._approach = self._approach_next = self._dwell_end = None
        self._approached = {}
        self.wander.reset()
        # The robot was carried here: what it saw before is somewhere else.
        self._memory.clear()
        self._path = [self._odom] if self._odom is not None else []
        self._walled_at = None
        self._pending_scans.clear()
        if self.strategy == 'none':
            _log.info('recovery: LOST, saved goal %s; standing still, waiting for the localizer '
                      '(strategy none)', 'kept' if self.saved_goal is not None else 'none')
            self.phase = Phase.WAIT
            self._out['twist'] = (0.0, 0.0)
            return
        _log.info('recovery: LOST, saved goal %s; spinning then searching (%s)',
                  'kept' if self.saved_goal is not None else 'none', self.strategy)
        self._spin(t)

    def _spin(self, t):
        self.phase = Phase.SPIN
        self._phase_end = t + self.config.spin_duration
        self._out['twist'] = (0.0, self.config.spin_speed)
        self._heading_goal = None
        self._hop_end = None
        # The wander counts its distance from the end of the latest spin.
        self._wandered, self._wander_from = 0.0, None

    def _end_spin(self, t):
        """The spin is over: send the next leg or start wandering."""
        self._out['twist'] = (0.0, 0.0)     # once: from here on move_base drives, or the wander
        if self._approach_next is not None:
            self._start_approach(t)
            return
        first_after_lift, self._first_after_lift = self._first_after_lift, False
        if self.config.follow_search_hints and self._follow_hint(t, first_after_lift):
            self.phase = Phase.WANDER
            return
        if self.strategy == 'spiral' and self._hops_left > 0:
            self._hops_left -= 1
            cfg = self.config
            self._hop_end = t + cfg.drive_time(cfg.hop_distance)
            _log.info('recovery: no fix yet: a %.1f m hop steered by the laser, then a spin '
                      '(%d more before the spiral)', cfg.hop_distance, self._hops_left)
            self.wander.reset()
        elif self.strategy == 'spiral':
            if not self.move_base_available:
                self._fall_back('move_base is unavailable')
            elif self._here() is None:
                self._fall_back('there is no odometry (odom) to lay the spiral out in'
                                if self.config.spiral_anchor == 'odom' else
                                'there is no pose estimate to spiral around')
            else:
                self._send_leg(t)
                return
        self.phase = Phase.WANDER
        if not self._seek_walls(t) and self.config.explore:
            self._choose_heading(t)

    def _follow_hint(self, t, first_after_lift):
        """Turn toward the open heading nearest the way the latest search hint gives, before
        the wander. True if so. The hint is used once: the next spin's end needs a new one.
        None is followed at the end of the first spin after a put-down: amcl's particles are
        then still lost_service's re-seed where the robot was lifted (global localization
        waits for its ``reseed_holdoff``), and a robot still lost after a full spin there
        was most likely put down elsewhere."""
        hint, self._hint = self._hint, None
        if hint is None:
            return False
        if first_after_lift:
            _log.info('recovery: not following the search hint after the first spin since the '
                      'put-down: amcl\'s particles are still the re-seed where the robot was '
                      'lifted')
            return False
        bearing, stamp = hint
        age = t - stamp
        then = self._odom_history.at(stamp)
        pose = self._odom_pose(t)
        if age > self.config.search_hint_max_age or then is None or pose is None:
            return False
        heading = then[2] + bearing
        target = (pose[0] + HINT_REACH * math.cos(heading),
                  pose[1] + HINT_REACH * math.sin(heading))
        turn = self._turn_toward(pose, self._memory.points_around(pose), target, t,
                                 HINT_MAX_OFF)
        if turn is None:
            return False
        self.wander.reset()
        _log.info('recovery: the localizer\'s particles agree that a tag is that way '
                  '(%+.0f deg when the hint was read, %.1f s ago): turning %+.0f deg before '
                  'wandering', math.degrees(bearing), age, turn)
        return True

    def _seek_walls(self, t):
        """After a spin the wander follows, with no remembered return within ``seek_walls``
        of the robot (open space: no wall near enough for the camera to keep a tag on it):
        turn first to the open heading nearest where the last spin with one was. True if so;
        a spin with one near remembers where it was."""
        reach = self.config.seek_walls
        pose = self._odom_pose(t)
        if reach <= 0.0 or pose is None:
            return False
        points = self._memory.points_around(pose)
        if len(points) and float(np.hypot(points[:, 0], points[:, 1]).min()) <= reach:
            self._walled_at = pose[:2]
            return False
        target = self._walled_at
        if target is None or math.hypot(target[0] - pose[0],
                                        target[1] - pose[1]) < SEEK_WALLS_MIN_WAY:
            return False    # the wall seen here has left the memory: no way back to take
        turn = self._turn_toward(pose, points, target, t)
        if turn is None:
            return False
        _log.info('recovery: nothing within %.1f m after the spin (open space, where no tag is '
                  'in reach): turning %+.0f deg back toward where the last spin saw a wall, '
                  '%.1f m away', reach, turn,
                  math.hypot(target[0] - pose[0], target[1] - pose[1]))
        return True

    def _turn_toward(self, pose, points, target, t, max_off=math.pi):
        """Set the turn to the open heading nearest the way to ``target`` (odometry x, y)
        before the wander; its angle from the robot's heading (deg), or None (none open
        within ``max_off`` rad of that way)."""
        reactive = self.config.reactive_config()
        heading = heading_toward(pose, points, target, reactive.half_width,
                                 self._memory.config.mark_range, EXPLORE_MIN_OPEN)
        way = math.atan2(target[1] - pose[1], target[0] - pose[0])
        if heading is None or abs(float(wrap_angle(heading - way))) > max_off:
            return None
        self._set_heading_goal(heading, pose, t)
        return math.degrees(wrap_angle(heading - pose[2]))

    def _choose_heading(self, t):
        """After a spin the wander follows: turn first toward new ground (``explore``)."""
        pose = self._odom_pose(t)
        if pose is None:
            return
        reactive = self.config.reactive_config()
        heading = pick_heading(pose, self._memory.points_around(pose), self._path,
                               reactive.half_width, self._memory.config.mark_range,
                               EXPLORE_MIN_OPEN)
        if heading is None:
            return
        self._set_heading_goal(heading, pose, t)
        _log.info('recovery: turning %+.0f deg toward new ground before wandering',
                  math.degrees(wrap_angle(heading - pose[2])))

    def _set_heading_goal(self, heading, pose, t):
        """Turn to ``heading`` (odometry yaw) from ``pose`` before the wander, with a deadline
        the turn should meet (:meth:`_turn_to_heading`'s rate profile, at most a spin's
        time; the defaults give a half turn 5.8 s)."""
        cfg = self.config
        needed = min(cfg.spin_duration,
                     turn_time(wrap_angle(heading - pose[2]), cfg.reactive_turn_gain,
                               cfg.reactive_min_turn_speed, cfg.spin_speed,
                               cfg.reactive_heading_tolerance))
        self._heading_goal = (heading, t + EXPLORE_TURN_SLACK * needed + EXPLORE_TURN_MARGIN)

    def _here(self):
        """The robot's latest (x, y) in the spiral's frame, or None when there is none."""
        if self.config.spiral_anchor == 'odom':
            return self._odom
        pose = self._pose or self._center
        return pose[:2] if pose is not None else None

    def _send_leg(self, t):
        if self._spiral is None:
            if self.config.spiral_anchor == 'odom':
                self._spiral_frame, origin = self._odom_frame, self._odom
                if t - self._odom_t > ODOM_STALE:
                    self._warn('odom_stale', 'the spiral is laid out around odometry %.1f s '
                               'old: is the base driver publishing odom?' % (t - self._odom_t))
            else:
                self._spiral_frame = self.config.map_frame
                origin = self._center[:2] if self._center is not None else self._here()
            self._spiral = self._spiral_factory(origin[0], origin[1], self.config.spiral_step)
            self._leg_start = origin
        # Odometry is where the robot really went; in the map the estimate may have jumped
        # anywhere, so there a leg is measured from the previous leg's goal.
        start = self._odom if self.config.spiral_anchor == 'odom' else self._leg_start
        goal = tuple(float(v) for v in self._spiral.next_goal())
        self._leg_start = goal[:2]
        self.legs_sent += 1
        self.phase = Phase.LEG
        self._leg_timeout = self.config.goal_timeout + self.config.goal_timeout_per_metre * \
            math.hypot(goal[0] - start[0], goal[1] - start[1])
        self._phase_end = t + self._leg_timeout
        self._leg_progress = None
        self._out['send_goal'] = goal
        self._out['goal_frame'] = self._spiral_frame
        self._out['goal_tag'] = self._next_tag('leg')
        _log.info('recovery: spiral leg %d to (%.2f, %.2f) in %s, %.1f s', self.legs_sent,
                  goal[0], goal[1], self._spiral_frame, self._leg_timeout)

    def _leg_done(self, status, t):
        # A leg recalled never drove: refused before it started (move_base's rule against
        # goals stamped before its last goal or cancel, as after the clock went back, or a
        # cancel of every goal, ours among them): it found nothing, as one that failed.
        self._leg_over(_FAILED.get(status) or ('recalled' if status == RECALLED else None), t)

    def _leg_over(self, failure, t):
        """A leg ended, ``failure`` says how it failed ('aborted', 'timed out', ...) or is None:
        spin, or fall back after ``max_aborts`` failures in a row."""
        self._aborts = self._aborts + 1 if failure else 0
        if self._aborts >= self.config.max_aborts:
            self._fall_back('%s failed (aborted, rejected, stalled or timed out; the last %s)'
                            % ('a spiral leg' if self._aborts == 1 else
                               '%d spiral legs in a row' % self._aborts, failure))
            self.phase = Phase.WANDER
            return
        here = self._fresh_odom(t)
        if failure and self._spun_at is not None and here is not None and math.hypot(
                here[0] - self._spun_at[0], here[1] - self._spun_at[1]) < RESPIN_DISTANCE:
            _log.info('recovery: leg %d %s within %.1f m of the last spin: the next leg without '
                      'another spin', self.legs_sent, failure, RESPIN_DISTANCE)
            self._end_spin(t)
            return
        self._spin(t)

    def _leg_stalled(self, t):
        """Whether the leg in flight has not moved the robot ``leg_stall_distance`` in the last
        ``leg_stall_time`` s (False while the odometry is missing or stale, or the check off)."""
        self._leg_progress, stalled = self._stalled(
            self._leg_progress, t, self.config.leg_stall_time, self.config.leg_stall_distance)
        return stalled

    def _resume_stalled(self, t):
        """Whether our re-send of the saved goal, driven after a localization on the
        localizer's word alone, has not moved the robot ``resume_stall_distance`` in the last
        ``resume_stall_time`` s while NAVIGATING (and a doubt is left to ask)."""
        cfg = self.config
        if not (self._resent and self._unconfirmed and self.phase == Phase.IDLE and
                self.state == State.NAVIGATING and self._doubts < cfg.max_doubts):
            self._resume_progress = None
            return False
        self._resume_progress, stalled = self._stalled(
            self._resume_progress, t, cfg.resume_stall_time, cfg.resume_stall_distance)
        return stalled

    def _stalled(self, progress, t, stall_time, distance):
        """``(progress, stalled)``: ``progress`` (``((x, y), t)`` of the last odometry that
        moved ``distance`` from the one before, or None) brought up to date, and whether
        ``stall_time`` s have passed since. Never stalled while the odometry is missing or
        stale, or with ``stall_time`` 0."""
        here = self._fresh_odom(t)
        if stall_time <= 0 or here is None:
            return progress, False
        if progress is None:
            return (here, t), False
        (x, y), since = progress
        if math.hypot(here[0] - x, here[1] - y) >= distance:
            return (here, t), False
        return progress, t - since >= stall_time

    def _fresh_odom(self, t):
        """The odometry position ``(x, y)`` if it is at most ``scan_timeout`` old, else None."""
        if self._odom_t is None or t - self._odom_t > self.config.scan_timeout:
            return None
        return self._odom

    def _fall_back(self, why):
        self.strategy = 'reactive'
        self.fallback_reason = why
        self.wander.reset()
        _log.warning('recovery: %s; searching reactively for the rest of this episode', why)

    def _wander(self, t):
        """One reactive twist, or a stop when the scan is missing, stale or unusable; a
        look-around spin once the wander has driven ``look_around_every``."""
        due = self._look_around_due(t)
        if self._hop_end is not None and not due and t >= self._hop_end:
            _log.info('recovery: the hop drove %.1f m of %.1f m in its time: looking around '
                      'here', self._wandered, self.config.hop_distance)
            due = True
        elif due:
            _log.info('recovery: wandered %.1f m since the last spin: looking around',
                      self._wandered)
        if due:
            self.wander.reset()
            self._spin(t)
            return (0.0, self.config.spin_speed)
        return self._steer(t)

    def _steer(self, t):
        """The wander's twist for this step (after the turn to the chosen heading, when there
        is one), or a stop when the scan is missing, stale or unusable."""
        if self._scan is None or t - self._scan_t > self.config.scan_timeout:
            self._warn('scan', 'no fresh scan (timeout %.2f s): standing still'
                       % self.config.scan_timeout)
            return (0.0, 0.0)
        if self._heading_goal is not None:
            turn = self._turn_to_heading(t)
            if turn is not None:
                return turn
        odom = self._fresh_odom(t)
        pose = self._odom_pose(t)
        remembered = self._memory.points_around(pose) if pose is not None else None
        try:
            v, w = self.wander.step(self._scan, t, odom, remembered)
        except ValueError as error:
            self._warn('wander', 'unusable scan (%s): standing still' % error)
            return (0.0, 0.0)
        if not _finite(v, w):
            self._warn('wander', 'the wander returned a non-finite twist: standing still')
            return (0.0, 0.0)
        return (float(v), float(w))

    def _turn_to_heading(self, t):
        """The twist turning in place toward the chosen heading, or None when it is faced (or
        cannot be: no fresh odometry heading, or the turn's deadline passed) and the wander
        takes over."""
        heading, deadline = self._heading_goal
        pose = self._odom_pose(t)
        error = None if pose is None else float(wrap_angle(heading - pose[2]))
        faced = error is not None and abs(error) <= self.config.reactive_heading_tolerance
        if error is None or faced or t >= deadline:
            if error is not None and not faced:
                self._warn('explore_turn', 'the turn before the wander is still %.0f deg off '
                           'at its deadline (is the odometry heading changing?): wandering on'
                           % math.degrees(abs(error)))
            self._heading_goal = None
            self.wander.reset()
            return None
        cfg = self.config
        return (0.0, turn_rate(error, cfg.reactive_turn_gain, cfg.reactive_min_turn_speed,
                               cfg.spin_speed))

    def _look_around_due(self, t):
        """Add the fresh odometry's progress to the distance wandered since the last spin;
        True when it reached ``look_around_every`` (never without fresh odometry)."""
        if not self._count_wandered(t):
            return False
        every = self.config.hop_distance if self._hop_end is not None else \
            self.config.look_around_every
        return every > 0 and self._wandered >= every

    def _count_wandered(self, t):
        """Add the fresh odometry's progress to ``_wandered``; False without fresh odometry."""
        here = self._fresh_odom(t)
        if here is None:
            return False
        if self._wander_from is not None:
            step = math.hypot(here[0] - self._wander_from[0], here[1] - self._wander_from[1])
            if step <= self._memory.config.jump_distance:   # farther: the odometry was reset
                self._wandered += step
        self._wander_from = here
        return True

    def _odom_pose(self, t):
        """The fresh odometry pose ``(x, y, yaw)`` at ``t``, or None (none, stale, no yaw)."""
        here = self._fresh_odom(t)
        if here is None or self._odom_yaw is None:
            return None
        return here + (self._odom_yaw,)

    def _may_leave_for_approach(self):
        """Whether the current phase is left at once for a distant tag (a spin only with
        ``approach_at_once``; otherwise its end starts the approach)."""
        return self.phase in (Phase.LEG, Phase.WANDER) or \
            (self.phase == Phase.SPIN and self.config.approach_at_once)

    def _start_approach(self, t):
        """Leave the leg (cancelled by the caller), the wander or the spin for the tag to
        approach."""
        left_spin = self.phase == Phase.SPIN and t < self._phase_end
        self._drop_pending_leg()
        fiducial_id, tag, facing_yaw, goal = self._approach_next
        self._approach_next = None
        self._approached[fiducial_id] = self._approached.get(fiducial_id, 0) + 1
        cfg = self.config
        if cfg.approach_clear_way:
            goal = self._clear_way_goal(fiducial_id, tag, facing_yaw, goal, t)
        limits = ApproachLimits(cfg.reactive_max_speed, cfg.reactive_max_turn_speed,
                                cfg.reactive_stop_distance, cfg.approach_timeout)
        self._approach = Approach(fiducial_id, tag, goal, t, limits)
        self._dwell_end = None
        self.phase = Phase.APPROACH
        self._out['twist'] = (0.0, 0.0)     # the wander's last command must not linger
        here = self._odom
        _log.info('recovery: tag %s seen %.1f m away, too far, oblique or noisy to localize '
                  'from: going to %.1f m from it, (%.2f, %.2f) in %s (at most %.0f s)%s',
                  fiducial_id, math.hypot(tag[0] - here[0], tag[1] - here[1]),
                  math.hypot(tag[0] - goal[0], tag[1] - goal[1]), goal[0], goal[1],
                  self._odom_frame, cfg.approach_timeout,
                  '; the spin cut short with %.1f s of it left' % (self._phase_end - t)
                  if left_spin else '')

    def _clear_way_goal(self, fiducial_id, tag, facing_yaw, goal, t):
        """``goal``, or unless the laser shows its straight way clear, the nearest place of
        the approach's region whose way it does (``approach_clear_way``)."""
        pose = self._odom_pose(t)
        if pose is None or self._scan is None or t - self._scan_t > self.config.scan_timeout:
            return goal
        cfg = self.config
        try:
            places = sorted(region_points(tag, facing_yaw, cfg.approach_standoff,
                                          cfg.approach_max_distance, cfg.approach_max_view_angle),
                            key=lambda p: math.hypot(p[0] - pose[0], p[1] - pose[1]))
            seen = ways_seen(to_frame(np.array([goal] + places, dtype=float), pose), self._scan,
                             self._memory.points_around(pose), cfg.reactive_config().half_width)
            status = next(seen)
            if status == 'clear':
                return goal
            chosen = next((p for p, way in zip(places, seen) if way == 'clear'), None)
        except (TypeError, ValueError, AttributeError) as error:
            self._warn('clear_way', 'cannot read the scan for the approach\'s way (%s): going '
                       'to the nearest place' % error)
            return goal
        seen_as = ('the laser shows the way to (%.2f, %.2f), the nearest place to see tag %s '
                   'from, blocked' if status == 'blocked' else 'the laser does not see the way '
                   'to (%.2f, %.2f), the nearest place to see tag %s from') % (
                       goal[0], goal[1], fiducial_id)
        if chosen is None:
            _log.info('recovery: %s, nor any other place of it clear: going there all the same',
                      seen_as)
            return goal
        _log.info('recovery: %s: going to (%.2f, %.2f) instead, %.2f m away, whose way it shows '
                  'clear', seen_as, chosen[0], chosen[1],
                  math.hypot(chosen[0] - pose[0], chosen[1] - pose[1]))
        return chosen

    def _approach_step(self, t):
        """One twist of the approach; when it ends (after standing ``approach_dwell`` facing
        the tag, or blocked, or timed out), spin and search on."""
        if self._dwell_end is not None:
            if t < self._dwell_end:
                return (0.0, 0.0)
            return self._after_approach('faced the tag for %.1f s' % self.config.approach_dwell,
                                        t)
        if self._approach.expired(t):
            return self._after_approach('timed out', t)
        pose = self._odom_pose(t)
        if pose is None or self._scan is None or t - self._scan_t > self.config.scan_timeout:
            self._warn('approach', 'no fresh odometry or scan: the approach stands still')
            return (0.0, 0.0)
        remembered = self._memory.points_around(pose)
        clearance = self.wander.clearance_ahead(self._scan, remembered)
        v, w, outcome = self._approach.step(pose, clearance, t)
        if outcome == 'arrived':
            self._dwell_end = t + self.config.approach_dwell
        elif outcome is not None:
            return self._after_approach(outcome, t)
        return (v, w)

    def _after_approach(self, why, t):
        """The approach is over: spin (the spin's end sends the next leg or wanders on)."""
        _log.info('recovery: approach of tag %s over: %s; searching on', self._approach.fiducial_id,
                  why)
        self._approach = self._dwell_end = None
        self.wander.reset()
        self._spin(t)
        return (0.0, self.config.spin_speed)

    def _budget_spent(self, t):
        """Which search budget of the episode is spent at ``t`` (in words), or ''."""
        cfg = self.config
        if t - self._episode_start >= cfg.max_search_time:
            return 'search budget of %.0f s spent' % cfg.max_search_time
        if 0.0 < cfg.max_search_distance <= self._episode_driven:
            return 'search budget of %.1f m spent (%.0f s)' % (
                cfg.max_search_distance, t - self._episode_start)
        return ''

    def _give_up(self, t, why):
        _log.warning('recovery: still lost after %.0f s and %.1f m: %s: asking for help, '
                     'stopping', t - self._episode_start, self._episode_driven, why)
        self._help_why = why
        if self.phase == Phase.LEG:
            self._out['cancel'] = True
        self._drop_pending_leg()
        self._out['twist'] = (0.0, 0.0)
        self.phase = Phase.GAVE_UP
        self._approach = self._approach_next = self._dwell_end = self._hop_end = None
        self._ask_for_help(t)

    def _ask_for_help(self, t):
        self._last_help = t
        self._request(State.NEED_HELP, 'lost_and_found: %s' % self._help_why)

    def _stop(self, why):
        """Leave the search or the turn at the goal (zero twist once, cancel the leg in
        flight) or the look (cancel the way to the viewpoint; move_base drove, so no
        twist)."""
        looking = self.phase == Phase.LOOK
        what = {Phase.LOOK: 'look', Phase.CHECK: 'turn at the goal',
                Phase.STEP: 'step before sending the goal again'}.get(self.phase, 'search')
        _log.info('recovery: stopping the %s (%s)', what, why)
        self._drop_pending_look()
        self._drop_pending_leg()
        if self._goal_in_flight():
            self._out['cancel'] = True
        if not looking:     # during a look move_base drives, not this node
            self._out['twist'] = (0.0, 0.0)
        self.phase = Phase.IDLE
        self._look = None
        self._approach = self._approach_next = self._dwell_end = self._hop_end = None

    def _goal_in_flight(self):
        """True while a goal of this node's search or look is at move_base."""
        return self.phase == Phase.LEG or (self.phase == Phase.LOOK and self._look == 'go')

    def _drop_pending_look(self):
        """Leaving a look: what it asked for in this step must not go out (a goal that never
        reached move_base needs no cancel)."""
        if self.phase != Phase.LOOK:
            return
        self._out.pop('find_viewpoint', None)
        if self._out.pop('send_goal', None) is not None:
            self._out.pop('goal_frame', None)
            self._out.pop('goal_tag', None)
            self._look = 'ask'

    def _drop_pending_resend(self):
        """A re-send of the saved goal asked for in this step must not go out (the caller
        decides what else to undo); True when there was one."""
        if self._out.pop('resend_saved_goal', None):
            self._out.pop('goal_tag', None)
            return True
        return False

    def _drop_pending_resume(self):
        """:meth:`_drop_pending_resend`, and the NAVIGATING asked for with it
        (:meth:`_resume_goal`); True when there was a re-send."""
        if not self._drop_pending_resend():
            return False
        if self._out.get('request_state') == State.NAVIGATING:
            self._withdraw_request()
            self._nav_asked = False
        return True

    def _drop_pending_leg(self):
        """Leaving the search: a leg sent in this step (the one after a leg that ended near
        the last spin) must not go out, or it would run at move_base with nothing to cancel
        it."""
        if self.phase == Phase.LEG and self._out.pop('send_goal', None) is not None:
            self._out.pop('goal_frame', None)
            self._out.pop('goal_tag', None)

    def _start_look(self, t):
        """Localized on the localizer's word alone: ask where a tag would be in view."""
        _log.info('recovery: localized without a tag: looking for one before resuming (at '
                  'most %.0f s)', self.config.look_timeout)
        self.phase = Phase.LOOK
        self._look = 'ask'
        self._look_end = t + self.config.look_timeout
        self._out['find_viewpoint'] = True

    def _end_look(self, why):
        """The look is over: resume the saved goal."""
        _log.info('recovery: look over: %s', why)
        self.phase = Phase.IDLE
        self._look = None
        self._resume_goal()

    def _resume_goal(self):
        """Re-send the saved goal after an episode, and request NAVIGATING."""
        self._resume = False
        self._resume_when_up = False
        if self.saved_goal is None:
            return
        if not self.move_base_available:
            # Sent to no server, the goal would be lost with nothing to tell: kept until then.
            self._resume_when_up = True
            _log.warning('recovery: localized (%s), but move_base is not up: the saved goal '
                         '(%.2f, %.2f) stays saved and is re-sent once it is', self.state.value,
                         self.saved_goal.x, self.saved_goal.y)
            return
        _log.info('recovery: localized (%s), re-sending the saved goal (%.2f, %.2f)',
                  self.state.value, self.saved_goal.x, self.saved_goal.y)
        self._retries_left = self.config.resume_retries
        self._resend()
        if self.state != State.NAVIGATING:
            self._request(State.NAVIGATING, 'lost_and_found: resuming the saved goal')

    def _user_goal_done(self, status, goal_id, resumed=False):
        """The user's goal (or, ``resumed``, our re-send of it) ended at move_base."""
        if status == SUCCEEDED:
            if resumed and self.config.check_arrival and self._unconfirmed and \
                    self.phase == Phase.IDLE:
                if self.state in LOCALIZED and self._last_t is not None:
                    _log.info('recovery: the saved goal was reached on an estimate no tag has '
                              'confirmed: one turn in place before forgetting it (it stays '
                              'saved until then)')
                    self._start_check(self._last_t)
                    return
                if self.state == State.FLYING:
                    _log.info('recovery: the saved goal was reached on an estimate no tag has '
                              'confirmed, the robot in the air: one turn in place once it is '
                              'put down (it stays saved until then)')
                    self._checking = True
                    return
            _log.info('recovery: the saved goal was reached, forgetting it')
            self._forget()
        elif status in (PREEMPTED, RECALLED):
            # With our re-send out, the user's own copy was preempted by it.
            caused = goal_id in self._cancelled_ids or self.state not in LOCALIZED \
                or self.phase != Phase.IDLE or self._resume or self._resent
            if not caused:
                _log.info('recovery: the saved goal was cancelled by its user, forgetting it')
                self._forget()
        elif status == REJECTED:
            _log.warning('recovery: move_base rejected the saved goal, forgetting it')
            self._forget()
        elif status == ABORTED:
            # Kept: an abort can be a symptom of being lost, and an episode resumes it.
            _log.warning('recovery: move_base aborted the saved goal (%.2f, %.2f); it stays '
                         'saved (~saved_goal)', self.saved_goal.x, self.saved_goal.y)
            self._stand_down('move_base aborted the goal (kept saved)')
        else:
            # Lost by move_base (restarted?) or a status no goal should end with: nothing
            # drives it now; kept, as after an abort.
            _log.warning('recovery: move_base ended the saved goal (%.2f, %.2f) with status %s; '
                         'it stays saved (~saved_goal)', self.saved_goal.x, self.saved_goal.y,
                         _STATUS_NAMES.get(status, status))
            self._stand_down('move_base ended the goal with status %s (kept saved)'
                             % _STATUS_NAMES.get(status, status))

    def _start_check(self, t):
        """Turn once in place at the reached goal (``check_arrival``), the goal still saved."""
        self.phase = Phase.CHECK
        self._checking = True
        self._phase_end = t + self.config.spin_duration
        self._out['twist'] = (0.0, self.config.spin_speed)

    def _resend(self):
        """Send the saved goal to move_base (this step) as our re-send."""
        self._out['resend_saved_goal'] = True
        self._out['goal_tag'] = self._next_tag('resend')
        self._resent = True
        self._resume_progress = None
        self._abandoned = False
        # Only a stale estimate seen while this send drives excuses its abort or stall: one
        # from the search before (amcl busiest) says nothing of what move_base drives by now.
        self._stale_at = None

    def _doubt(self, t, stalled=False):
        """move_base aborted our re-send (or, ``stalled``, it has not moved the robot for
        ``resume_stall_time``): when the localizer alone ended the episode, ask for LOST (the
        estimate is probably wrong) rather than send the goal again. True when it did. Not
        when the estimate was stale lately (``stale_estimate_age``): the localizer lagged.
        Should lost_service refuse, an aborted goal is sent again after
        ``resume_retry_delay`` and a stalled one drives on (a LOST episode drops that
        re-send, and cancels this one)."""
        cfg = self.config
        if not self._unconfirmed or self._doubts >= cfg.max_doubts or \
                self.state not in LOCALIZED or self.saved_goal is None:
            return False
        if self._stale_within(t, cfg.resume_stall_time if stalled else STALE_WINDOW):
            # move_base stops without an estimate to place the robot by, then aborts: that
            # says the localizer lags, not that it is wrong.
            _log.warning('recovery: %s %.1f s after the pose estimate was last seen stale '
                         '(the localizer lagging): not taken as a wrong estimate',
                         'the resumed goal stood still' if stalled else
                         'move_base aborted the resumed goal', t - self._stale_at)
            if stalled:
                self._resume_progress = None    # the stall is timed again from now
            return False
        self._doubts += 1
        self._unconfirmed = False
        goal = '(%.2f, %.2f)' % (self.saved_goal.x, self.saved_goal.y)
        if stalled:
            what = 'the resumed goal %s has not moved the robot %.2f m in %.0f s' % (
                goal, cfg.resume_stall_distance, cfg.resume_stall_time)
            reason = 'the resumed goal has not moved the robot'
        else:
            what = reason = 'move_base aborted the resumed goal'
            what += ' ' + goal
        _log.warning('recovery: %s after the localizer alone ended LOST, no tag confirming it: '
                     'taking the estimate as wrong, asking for LOST (doubt %d of %d; the goal '
                     'stays saved)', what, self._doubts, cfg.max_doubts)
        self._request(State.LOST, 'lost_and_found: %s after a localization no tag confirmed'
                      % reason, expected=LOCALIZED)
        if not stalled:
            self._retry_at = t + cfg.resume_retry_delay
        return True

    def _resend_later(self, t, step=False, why='aborted', detail=''):
        """move_base aborted our re-send of the saved goal (or, ``why`` and ``detail`` say,
        ended it otherwise): schedule another (with ``step``, after a step out of where the
        plan failed), or keep it."""
        if self._retries_left > 0 and self.saved_goal is not None:
            self._retry_at = t + self.config.resume_retry_delay
            if step:
                self._start_step(t)
            _log.warning('recovery: move_base %s the resumed goal (%.2f, %.2f)%s; trying '
                         'again %s %.0f s (%d attempt%s left)', why, self.saved_goal.x,
                         self.saved_goal.y, detail, 'after a step, at the earliest in'
                         if self.phase == Phase.STEP else 'in', self.config.resume_retry_delay,
                         self._retries_left, '' if self._retries_left == 1 else 's')
        elif self.saved_goal is not None:
            _log.warning('recovery: move_base %s the resumed goal (%.2f, %.2f)%s, after %d '
                         'attempts; it stays saved (~saved_goal): re-send it or send a new one',
                         why, self.saved_goal.x, self.saved_goal.y, detail,
                         self.config.resume_retries + 1)
            self._stand_down('move_base %s the resumed goal every time (kept saved)' % why)

    def _start_step(self, t):
        """Step out of where move_base had no plan from (``resume_step_distance``), steered by
        the laser, when there is a fresh scan and odometry to steer and measure it by."""
        cfg = self.config
        if cfg.resume_step_distance <= 0.0 or self.phase != Phase.IDLE or \
                self.state != State.NAVIGATING or self._docked:
            return
        if self._scan is None or t - self._scan_t > cfg.scan_timeout or \
                self._fresh_odom(t) is None:
            self._warn('step', 'no fresh scan and odometry to step by: the goal is sent again '
                       'from here')
            return
        self.phase = Phase.STEP
        self._hop_end = t + cfg.drive_time(cfg.resume_step_distance)
        self._heading_goal = None
        self._wandered, self._wander_from = 0.0, None
        self.wander.reset()
        _log.info('recovery: stepping up to %.1f m, steered by the laser, before sending the '
                  'goal again (the plan may have failed for the place the robot stands in)',
                  cfg.resume_step_distance)

    def _step_out(self, t):
        """One twist of the step out; a stop, and IDLE (the re-send then due when
        ``resume_retry_delay`` has passed), once it drove ``resume_step_distance`` or its time
        is up."""
        self._count_wandered(t)
        if self._wandered < self.config.resume_step_distance and t < self._hop_end:
            return self._steer(t)
        _log.info('recovery: stepped %.1f m of %.1f m%s', self._wandered,
                  self.config.resume_step_distance,
                  '' if self._wandered >= self.config.resume_step_distance else
                  ' in its time (no way out found)')
        self.phase = Phase.IDLE
        self._hop_end = None
        return (0.0, 0.0)

    def _stand_down(self, why):
        """Nothing drives the saved goal any more: it stays saved (a LOST episode still
        resumes it) and NAVIGATING -> IDLE is asked for (or, when NAVIGATING is still being
        granted, once it is)."""
        self._abandoned = True
        if self.state == State.NAVIGATING:
            self._request(State.IDLE, 'lost_and_found: ' + why)

    def _forget(self):
        self.saved_goal = None
        self._user_at_move_base = False
        self._checking = False
        self._doubts = 0
        self._abandoned = False
        self._retry_at = None
        self._resent = False
        self._resume = False
        self._resume_when_up = False
        if self.state == State.NAVIGATING:
            self._request(State.IDLE, 'lost_and_found: goal finished')
