"""The fiducial_localizer node: a mapped ArUco tag seen by the camera -> ``initialpose``.

The pose math and every accept/reject decision are in :mod:`lost_and_found.core.fiducial`;
this module converts messages and tf to numpy transforms and publishes the result.
"""
import math
import sys
import threading
import time

import rospy
import tf2_ros
from fiducial_msgs.msg import FiducialTransformArray
from geometry_msgs.msg import PoseArray, PoseWithCovarianceStamped
from nav_msgs.msg import OccupancyGrid

from lost_and_found.core import geometry
from lost_and_found.core.clock import ClockWatch
from lost_and_found.core.config import ConfigError
from lost_and_found.core.fiducial import (
    APPROACHABLE, CHECK, CoarseTries, FiducialLocalizer, FiducialLocalizerConfig, PublishGate,
    Rejection, contradicts, initialpose_covariance, load_fiducial_map)
from lost_and_found.core.search_hint import MIN_TAG_DISTANCE, TagViewField
from lost_and_found.core.tag_check import TagCheck, UnansweredRefutation, camera_pose_2d, \
    opens
from lost_and_found.core.viewpoint import ViewpointFinder
from lost_and_found.msg import SearchHint
from lost_and_found.nodes.conversions import distance_map_from_msg, lookup_matrix, \
    lookup_waiting, pose_stamped, pose_with_covariance, transform_to_matrix, \
    yaw_from_quaternion
from lost_and_found.nodes.params import load_config
from lost_and_found.srv import GetViewpoint, GetViewpointResponse
from lost_and_found.state import LOCALIZED, State, StateClient, parse_state

#: How often (s) a repeating problem (missing tf, rejected tags) is logged at most.
_THROTTLE = 10.0
#: Wall seconds from a request for LOST that lost_service did not answer (it was restarting,
#: say) to the next, doubling after each unanswered one up to REFUTE_RETRY_MAX: the refutation
#: is asked again with the camera frames while the robot stays localized.
REFUTE_RETRY_PERIOD = 1.0
REFUTE_RETRY_MAX = 16.0
#: How long a request asked again waits for lost_service's service to appear (s): short, so
#: that an outage does not hold up the camera frames.
REFUTE_RETRY_WAIT = 0.2


def observations_from_msg(msg):
    """``[(fiducial_id, T_camera_fiducial, object_error), ...]`` of a FiducialTransformArray."""
    return [(ft.fiducial_id, transform_to_matrix(ft.transform), ft.object_error)
            for ft in msg.transforms]


def frame_stamp(msg):
    """The camera frame's stamp, or now when the detector left it zero."""
    return msg.header.stamp if not msg.header.stamp.is_zero() else rospy.Time.now()


def pose_msg(estimate, frame_id, stamp, covariance):
    """A PoseWithCovarianceStamped of a core PoseEstimate (z = 0, rotation about z only)."""
    return pose_with_covariance(estimate.x, estimate.y, estimate.yaw, covariance, frame_id,
                                stamp)


def publishing_text(state, config):
    """What the node publishes in ``state`` (a State), in words for the log; the settings
    name states in any case ("lost" is LOST)."""
    if state in {parse_state(name) for name in config.publish_in_states}:
        return 'publishing every pose from fiducials'
    if state in {parse_state(name) for name in config.correct_in_states}:
        return 'publishing only poses from fiducials that contradict the localizer'
    return 'not publishing'


class FiducialLocalizerNode:
    """ROS adapter of :class:`FiducialLocalizer`.

    Subscribed topics:
        ``fiducial_transforms`` (fiducial_msgs/FiducialTransformArray): detected tags; the
        header's frame_id is the camera optical frame. tf: ``~base_frame`` <- camera frame.
        ``<state_namespace>/state`` (std_msgs/String, via StateClient).
        ``map`` (nav_msgs/OccupancyGrid, latched; only with ``~verify_window`` > 0): the
        walls between the camera and a tag that the estimate puts in view.

    Published topics:
        ``initialpose`` (geometry_msgs/PoseWithCovarianceStamped): the robot pose from the
        closest accepted tag, in the map's frame, in ``~publish_in_states``, and in
        ``~correct_in_states`` only when it contradicts the localizer's estimate (tf map ->
        ``~base_frame``) by more than ``~correct_xy`` / ``~correct_yaw``; at most once per
        ``~min_interval``. With ``~coarse_fixes``, in LOST, a frame with no usable tag gives
        the pose from the nearest distant one within the ``~coarse_*`` limits, with the
        ``~coarse_sigma_*`` covariance, ``~coarse_tries`` times per tag per lost episode.
        ``~distant_tags`` (fiducial_msgs/FiducialTransformArray): in ``~publish_in_states``,
        for a camera frame with no usable tag, the mapped tags it shows that were rejected as
        too far, too oblique or too noisy (a closer view could use them; not those whose
        object error is not a finite number >= 0), with the camera frame's header; the recovery
        node drives closer to them.

    Services:
        ``~viewpoint`` (lost_and_found/GetViewpoint): the nearest pose, by the estimate, from
        which a mapped tag would be inside the tag check's geometry (core/viewpoint.py); not
        found when the check is off, there is no map or no tf yet, or none is within
        ``~viewpoint_max_path``.

    Service calls:
        ``<state_namespace>/change_state``: ``LOST`` (expected IDLE or NAVIGATING) when,
        within ``~verify_window`` of a localization that no tag confirmed, a tag the estimate
        puts in clear view stays undetected (see :mod:`lost_and_found.core.tag_check`).

    Parameters:
        ``~fiducial_map`` (str, required), ``~map_frame`` (str, '' = the map file's frame_id),
        ``~base_frame`` (str, base_footprint), ``~max_object_error`` (float, 0.05),
        ``~max_distance`` (float, 3.0 m), ``~max_view_angle`` (float, 1.05 rad),
        ``~sigma_xy`` (float, 0.1 m), ``~sigma_yaw`` (float, 0.1 rad), ``~min_interval``
        (float, 1.0 s), ``~publish_in_states`` (list, [LOST, LOCALIZING]),
        ``~correct_in_states`` (list, [IDLE, NAVIGATING]), ``~correct_xy`` (float, 1.0 m),
        ``~correct_yaw`` (float, 0.5 rad), ``~state_namespace`` (str, lost_service),
        ``~tf_timeout`` (float, 0.1 s), ``~verify_window`` (float, 0 s = off),
        ``~verify_min_distance`` (float, 0.6 m), ``~verify_max_distance`` (float, 2.5 m),
        ``~verify_half_fov`` (float, 0.4 rad), ``~verify_half_vfov`` (float, 0.3 rad),
        ``~verify_view_angle`` (float, 0.7 rad),
        ``~verify_missing_time`` (float, 1.5 s), ``~viewpoint_max_path`` (float, 8.0 m),
        ``~viewpoint_clearance`` (float, 0.3 m), ``~viewpoint_turn_cost`` (float, 0.3 m/rad),
        ``~coarse_fixes`` (bool, true), ``~coarse_max_distance`` (float, 4.5 m),
        ``~coarse_max_view_angle`` (float, 1.35 rad), ``~coarse_max_object_error`` (float,
        0.15), ``~coarse_sigma_xy`` (float, 0.3 m), ``~coarse_sigma_yaw`` (float, 0.2 rad),
        ``~coarse_tries`` (int, 1), ``~search_hint_interval`` (float, 0 s = off),
        ``~search_hint_min_share`` (float, 0.5), ``~search_hint_clearance`` (float, 0.25 m),
        ``~search_hint_lookahead`` (float, 1.5 m).
    """

    def __init__(self, localizer, config, frame_id):
        """Keep the core objects; ROS connections are made by :meth:`start`.

        Args:
            localizer: the core :class:`FiducialLocalizer`.
            config: the validated :class:`FiducialLocalizerConfig`.
            frame_id: frame of the published poses.
        """
        self._localizer = localizer
        self._config = config
        self._frame_id = frame_id
        self._gate = PublishGate(config.publish_in_states, config.min_interval,
                                 config.correct_in_states)
        self._covariance = initialpose_covariance(config.sigma_xy, config.sigma_yaw)
        self._coarse_covariance = initialpose_covariance(config.coarse_sigma_xy,
                                                         config.coarse_sigma_yaw)
        self._coarse_tries = CoarseTries(config.coarse_tries)
        self._tag_check = self._viewpoints = None
        if config.verify_window > 0:
            self._tag_check = TagCheck(
                localizer.tag_poses, config.verify_window, config.verify_min_distance,
                config.verify_max_distance, config.verify_half_fov, config.verify_half_vfov,
                config.verify_view_angle, config.verify_missing_time)
            self._viewpoints = ViewpointFinder(self._tag_check, config.viewpoint_max_path,
                                               config.viewpoint_clearance,
                                               config.viewpoint_turn_cost)
        self._camera_frame = None       # the optical frame of the latest camera frame
        self._clock = ClockWatch()      # a frame of an older clock, after a reset, is skipped
        self._lock = threading.Lock()
        self._active = None
        self._state = None
        # a refutation lost_service did not answer (wall time: time.monotonic)
        self._unanswered = UnansweredRefutation(REFUTE_RETRY_PERIOD, REFUTE_RETRY_MAX)
        self._map_sub = None
        self._tf_buffer = None
        self._tf_listener = None
        self._state_client = None
        self._pub = None
        self._distant_pub = None
        self._sub = None
        self._distance_map = None       # the latest usable map (tag check, search hint)
        self._hint_field = None         # TagViewField of _distance_map, made when first needed
        self._hint_lock = threading.Lock()
        self._hint_refused = None       # the map too large for a TagViewField, if one was
        self._hint_pub = None
        self._hint_due = None           # rospy time before which no cloud is read

    def start(self):
        """Start tf, the state client, the publisher and then the subscriber."""
        self._tf_buffer = tf2_ros.Buffer()
        self._tf_listener = tf2_ros.TransformListener(self._tf_buffer)
        self._state_client = StateClient(self._config.state_namespace,
                                         on_change=self._on_state)
        self._pub = rospy.Publisher('initialpose', PoseWithCovarianceStamped, queue_size=1)
        self._distant_pub = rospy.Publisher('~distant_tags', FiducialTransformArray,
                                            queue_size=1)
        hints = self._config.search_hint_interval > 0
        if self._tag_check is not None or hints:
            self._map_sub = rospy.Subscriber('map', OccupancyGrid, self._on_map, queue_size=1)
        if hints:
            self._hint_pub = rospy.Publisher('~search_hint', SearchHint, queue_size=1)
            rospy.Subscriber('particlecloud', PoseArray, self._on_cloud, queue_size=1,
                             buff_size=2 ** 22)
        self._sub = rospy.Subscriber('fiducial_transforms', FiducialTransformArray,
                                     self._on_fiducials, queue_size=1)
        rospy.Service('~viewpoint', GetViewpoint, self._on_viewpoint)

    def _on_map(self, msg):
        """Take a new map for the line of sight of the tag check; keep the old one when it
        is unusable."""
        try:
            distance_map = distance_map_from_msg(msg)
        except ValueError as error:
            rospy.logwarn('%s: ignoring a map: %s' % (rospy.get_name(), error))
            return
        with self._lock:
            self._distance_map = distance_map
            if self._tag_check is not None:
                self._tag_check.distance_map = distance_map
        rospy.loginfo('%s: map %d x %d for the %s', rospy.get_name(), distance_map.shape[1],
                      distance_map.shape[0], ' and the '.join(
                          (['tag check'] if self._tag_check is not None else []) +
                          (['search hint'] if self._hint_pub is not None else [])))
        if self._hint_pub is not None:
            self._hint_field_now()      # now, not in the first lost episode

    def _on_cloud(self, msg):
        """A particle cloud: while LOST, at most every ``~search_hint_interval``, publish the
        way most of its particles say a tag is (``~search_hint``)."""
        now = rospy.get_rostime()
        interval = rospy.Duration(self._config.search_hint_interval)
        # A due time more than one interval ahead: the clock jumped back (a bag replayed).
        if self._state != State.LOST or (self._hint_due is not None and
                                         now < self._hint_due <= now + interval):
            return
        self._hint_due = now + interval
        try:
            self._publish_hint(msg)
        except Exception as error:  # noqa: B902 - a bad cloud must not end the hints
            rospy.logerr_throttle(_THROTTLE, '%s: search hint failed: %r' % (
                rospy.get_name(), error))

    def _hint_field_now(self):
        """The TagViewField of the latest map (made on first use after a new map), or None."""
        with self._lock:
            distance_map = self._distance_map
        if distance_map is None:
            return None
        with self._hint_lock:       # the map's thread and the cloud's: made once
            field = self._hint_field
            if field is None or field.distance_map is not distance_map:
                if self._hint_refused is distance_map:
                    return None         # said once, when the map came
                cfg = self._config
                started = time.monotonic()
                try:
                    field = TagViewField(distance_map, self._localizer.tag_poses,
                                         MIN_TAG_DISTANCE, cfg.max_distance,
                                         cfg.max_view_angle, cfg.search_hint_clearance,
                                         cfg.search_hint_lookahead)
                except ValueError as error:
                    self._hint_refused = distance_map
                    rospy.logerr('%s: no search hints on this map: %s', rospy.get_name(),
                                 error)
                    return None
                self._hint_field = field
                rospy.loginfo('%s: search hint: %d map cells see a mapped tag, of the %d '
                              'known-free cells the robot fits in (%.1f s of wall time)',
                              rospy.get_name(), len(field), int(field.traversable.sum()),
                              time.monotonic() - started)
            return field

    def _publish_hint(self, msg):
        """Read the cloud ``msg`` and publish its SearchHint (found or not)."""
        field = self._hint_field_now()
        if field is None:
            if self._distance_map is None:
                rospy.logwarn_throttle(_THROTTLE, '%s: no map on %s yet: no search hint' % (
                    rospy.get_name(), rospy.resolve_name('map')))
            return
        if msg.header.frame_id.lstrip('/') not in ('', self._frame_id.lstrip('/')):
            rospy.logwarn_throttle(_THROTTLE, '%s: particlecloud in frame %r, not the map\'s '
                                   '%r: no search hint' % (
                                       rospy.get_name(), msg.header.frame_id, self._frame_id))
            return
        poses = [(p.position.x, p.position.y, yaw_from_quaternion(p.orientation))
                 for p in msg.poses]
        hint = field.hint(poses, self._config.search_hint_min_share)
        out = SearchHint()
        out.header.stamp = msg.header.stamp
        out.header.frame_id = self._config.base_frame
        if hint is not None:
            out.found = True
            out.bearing, out.share, out.voters, out.distance = \
                hint.bearing, hint.share, hint.voters, hint.distance
            rospy.logdebug('%s: search hint: %+.0f deg (%.0f %% of %d particles; a tag in '
                           'view %.1f m on)', rospy.get_name(), math.degrees(hint.bearing),
                           100.0 * hint.share, hint.voters, hint.distance)
        self._hint_pub.publish(out)

    def _on_state(self, state):
        """A new robot state: open or close the tag check; log what is published now."""
        with self._lock:
            before, self._state = self._state, state
            self._coarse_tries.on_state(state)
            if self._tag_check is not None:
                if opens(before, state):
                    self._tag_check.open(rospy.get_time())
                    rospy.loginfo('%s: localized without a tag: for %.0f s, a mapped tag the '
                                  'estimate puts in clear view must be detected',
                                  rospy.get_name(), self._config.verify_window)
                elif state not in LOCALIZED:
                    self._tag_check.close()
            if state not in LOCALIZED and self._unanswered.left_localized():
                rospy.loginfo('%s: state %s: the unanswered request for LOST is dropped',
                              rospy.get_name(), state.value)
        active = publishing_text(state, self._config)
        if active != self._active:
            self._active = active
            rospy.loginfo('%s: state %s: %s', rospy.get_name(), state.value, active)

    def _lookup_camera(self, camera_frame):
        """4x4 pose of ``camera_frame`` in the base frame, or None (logged) when unavailable."""
        return lookup_matrix(self._tf_buffer, self._config.base_frame, camera_frame,
                             rospy.Time(0), self._config.tf_timeout, _THROTTLE)

    def _on_fiducials(self, msg):
        if msg.header.frame_id:
            self._camera_frame = msg.header.frame_id
        try:
            self._handle(msg)
        except Exception as error:  # noqa: B902 - a callback must never die on bad input
            rospy.logerr_throttle(_THROTTLE, '%s: error handling fiducial_transforms: %r' % (
                rospy.get_name(), error))

    def _handle(self, msg):
        """Check the localization against the tags in view (after a localization no tag
        confirmed), then estimate and publish, when the state and the rate limit allow it."""
        refutation = again = None
        try:
            with self._lock:
                stale = self._of_an_older_clock(msg)
                if self._tag_check is not None and self._tag_check.is_open(rospy.get_time()):
                    if not stale:
                        refutation = self._verify(msg)
                        generation = self._unanswered.generation
                else:
                    again = self._unanswered.due(time.monotonic())
                if msg.transforms and not stale:
                    self._estimate_and_publish(msg)
        finally:
            # The check closed with this refutation: it must reach lost_service even when
            # the estimate from the same frame failed (a tf lookup interrupted, say).
            if refutation is not None:
                self._refute(refutation, generation)
            elif again is not None:
                self._refute(*again, again=True)

    def _of_an_older_clock(self, msg):
        """True (warned, throttled) for a frame of a clock that went back since it was
        stamped (core.clock.ClockWatch.of_old_clock: no fix, no tag check from it, which would
        put the robot back where it was before a simulator reset or a looped bag). Call with
        the lock held."""
        stamp, now = msg.header.stamp.to_sec(), rospy.get_time()
        self._clock.read(now)
        if not now or not self._clock.of_old_clock(stamp):
            return False
        rospy.logwarn_throttle(_THROTTLE, '%s: a camera frame stamped %.1f s ahead of the clock '
                               '(%.1f s), which went back from %.1f s: a frame of the old clock '
                               '(a simulator reset, a looped bag?): skipped' % (
                                   rospy.get_name(), stamp - now, now, self._clock.high))
        return True

    def _estimate_and_publish(self, msg):
        """The pose from the closest accepted tag, published when the gate allows it."""
        # Check the gate first: outside the publishing states tf is not even needed.
        kind = self._gate.kind(self._state_client.state, rospy.get_time())
        if kind is None:
            return
        camera_frame = msg.header.frame_id
        if not camera_frame:
            rospy.logwarn_throttle(_THROTTLE, '%s: fiducial_transforms without a '
                                   'header.frame_id: skipped' % rospy.get_name())
            return
        t_base_cam = self._lookup_camera(camera_frame)
        if t_base_cam is None:
            return
        observations = observations_from_msg(msg)
        best, reasons = self._localizer.estimate(observations, t_base_cam)
        rejected = ['%s: %s' % (fid, reason.value) for fid, reason in reasons
                    if reason not in (None, Rejection.UNKNOWN_ID)]
        if rejected:
            rospy.logwarn_throttle(_THROTTLE, '%s: rejected fiducials (%s)' % (
                rospy.get_name(), '; '.join(rejected)))
        if best is None:
            if kind != CHECK:
                self._publish_distant(msg, reasons)
                self._coarse_fix(msg, observations, reasons, t_base_cam)
            return
        stamp = frame_stamp(msg)
        why = ''
        if kind == CHECK:
            estimate = self._lookup_estimate(stamp)
            fix = (best.x, best.y, best.yaw)
            if estimate is None:
                return
            if not contradicts(fix, estimate, self._config.correct_xy,
                               self._config.correct_yaw):
                self._close_tag_check('tag %d agrees with the estimate' % best.fiducial_id)
                return
            self._close_tag_check('tag %d contradicts the estimate' % best.fiducial_id)
            why = ', %.2f m and %.2f rad from the localizer\'s (%.2f, %.2f, %.2f)' % (
                math.hypot(fix[0] - estimate[0], fix[1] - estimate[1]),
                abs(float(geometry.wrap_angle(fix[2] - estimate[2]))), *estimate)
        self._pub.publish(pose_msg(best, self._frame_id, stamp, self._covariance))
        self._gate.published(rospy.get_time())
        rospy.loginfo('%s: fiducial %d at %.2f m: initialpose x=%.3f y=%.3f yaw=%.3f '
                      '(state %s%s)', rospy.get_name(), best.fiducial_id, best.distance,
                      best.x, best.y, best.yaw, self._state_client.state.value, why)

    def _coarse_fix(self, msg, observations, reasons, t_base_cam):
        """In LOST with ``~coarse_fixes``: publish a coarse fix from the nearest distant tag
        whose coarse fixes of this episode are not spent."""
        config = self._config
        if not config.coarse_fixes or self._state_client.state != State.LOST:
            return
        coarse = self._localizer.coarse_estimate(observations, reasons, t_base_cam,
                                                 skip=self._coarse_tries.spent())
        if coarse is None:
            return
        self._pub.publish(pose_msg(coarse, self._frame_id, frame_stamp(msg),
                                   self._coarse_covariance))
        self._gate.published(rospy.get_time())
        self._coarse_tries.use(coarse.fiducial_id)
        rospy.loginfo('%s: fiducial %d at %.2f m, too far, oblique or noisy for a fix: coarse '
                      'initialpose x=%.3f y=%.3f yaw=%.3f, sigma xy %.2f m yaw %.2f rad (state '
                      'LOST)', rospy.get_name(), coarse.fiducial_id, coarse.distance, coarse.x,
                      coarse.y, coarse.yaw, config.coarse_sigma_xy, config.coarse_sigma_yaw)

    def _publish_distant(self, msg, reasons):
        """Publish the mapped tags of this camera frame that could not be used but could be
        from closer (too far, too oblique, too noisy): where a searching robot finds a fix."""
        distant = [ft for ft, (_fid, reason) in zip(msg.transforms, reasons)
                   if reason in APPROACHABLE]
        if distant:
            self._distant_pub.publish(FiducialTransformArray(
                header=msg.header, image_seq=msg.image_seq, transforms=distant))

    def _close_tag_check(self, why):
        """A tag spoke for or against the estimate: the tag check has nothing left to do."""
        if self._tag_check is not None and self._tag_check.is_open(rospy.get_time()):
            self._tag_check.close()
            rospy.loginfo('%s: tag check closed: %s', rospy.get_name(), why)

    def _verify(self, msg):
        """One camera frame for the tag check: the Refutation it gives (closed then), or
        None."""
        if self._tag_check.distance_map is None:
            rospy.logwarn_throttle(_THROTTLE, '%s: no map received on %s yet: cannot check the '
                                   'localization against the tags' % (
                                       rospy.get_name(), rospy.resolve_name('map')))
            return None
        camera_pose = None
        if not msg.header.frame_id:
            rospy.logwarn_throttle(_THROTTLE, '%s: fiducial_transforms without a '
                                   'header.frame_id: no tag check' % rospy.get_name())
        else:
            t_base_cam = self._lookup_camera(msg.header.frame_id)
            estimate = self._lookup_estimate(frame_stamp(msg)) if t_base_cam is not None \
                else None
            if estimate is not None:
                camera_pose = camera_pose_2d(estimate, t_base_cam)
        refutation = self._tag_check.frame(
            rospy.get_time(), camera_pose, [ft.fiducial_id for ft in msg.transforms])
        if refutation is not None:
            self._tag_check.close()
        return refutation

    def _refute(self, refutation, generation, again=False):
        """Ask lost_service for LOST (outside the lock: the call may take a while) for
        ``refutation``, made while the robot was localized for the ``generation``-th time;
        ``again``: a request it did not answer, asked again. One it does not answer is asked
        again with later camera frames while the robot stays localized
        (:class:`UnansweredRefutation`)."""
        reason = ('tag %d should be in view %.1f m away, %.0f deg off the camera axis, but '
                  'was not detected for %.1f s: the localization is wrong' % (
                      refutation.fiducial_id, refutation.distance,
                      math.degrees(refutation.bearing), refutation.missing_for))
        if again:
            with self._lock:    # the robot may have left the localized states meanwhile
                if self._unanswered.due(time.monotonic()) != (refutation, generation):
                    return
        else:
            rospy.logwarn('%s: %s', rospy.get_name(), reason)
        # Only while localized: not once the robot is LOST already, or a fix is under way.
        answered, accepted, why = self._state_client.ask(
            State.LOST, '%s: %s' % (rospy.get_name(), reason), expected=LOCALIZED,
            timeout=REFUTE_RETRY_WAIT if again else 2.0)
        with self._lock:
            kept = self._unanswered.asked(refutation, generation, answered, time.monotonic())
        if accepted:
            if again:
                rospy.loginfo('%s: asked again, lost_service made the robot LOST',
                              rospy.get_name())
        elif not kept:
            rospy.logwarn('%s: could not make the robot LOST: %s', rospy.get_name(), why)
        elif not again:
            rospy.logwarn('%s: could not make the robot LOST: %s; asking again while the robot '
                          'is localized, in %g s and then twice as long apart each time, up to '
                          '%g s', rospy.get_name(), why, REFUTE_RETRY_PERIOD, REFUTE_RETRY_MAX)
        else:
            rospy.logwarn_throttle(_THROTTLE, '%s: still no answer to the request for LOST: '
                                   '%s' % (rospy.get_name(), why))

    def _on_viewpoint(self, _request):
        """``~viewpoint``: where to go for the tag check to test the estimate."""
        try:
            return self._viewpoint()
        except Exception as error:  # noqa: B902 - a service must answer, never die
            rospy.logerr('%s: viewpoint failed: %r', rospy.get_name(), error)
            return GetViewpointResponse(found=False, message='error: %r' % (error,))

    def _viewpoint(self):
        """The GetViewpointResponse for the current estimate."""
        def none(why):
            rospy.loginfo('%s: no viewpoint: %s', rospy.get_name(), why)
            return GetViewpointResponse(found=False, message=why)
        if self._viewpoints is None:
            return none('the tag check is off (~verify_window is 0)')
        if self._tag_check.distance_map is None:
            return none('no map received on %s yet' % rospy.resolve_name('map'))
        if self._camera_frame is None:
            return none('no camera frame on %s yet (its frame_id places the camera)'
                        % rospy.resolve_name('fiducial_transforms'))
        t_base_cam = self._lookup_camera(self._camera_frame)
        estimate = self._lookup_estimate(rospy.Time(0)) if t_base_cam is not None else None
        if estimate is None:
            return none('no camera mount or pose estimate in tf')
        with self._lock:
            view = self._viewpoints.find(estimate, t_base_cam)
        if view is None:
            return none('no pose within %.1f m of path from (%.2f, %.2f) puts a mapped tag in '
                        'clear view' % (self._config.viewpoint_max_path, *estimate[:2]))
        response = GetViewpointResponse(
            found=True, fiducial_id=view.fiducial_id, path_length=view.path_length,
            pose=pose_stamped(view.x, view.y, view.yaw, self._frame_id, rospy.Time.now()))
        response.message = 'tag %d in view from (%.2f, %.2f, %.2f), %.1f m of path and ' \
            '%.0f deg of turn from the estimate (%.2f, %.2f, %.2f)' % (
                view.fiducial_id, view.x, view.y, view.yaw, view.path_length,
                math.degrees(view.turn), *estimate)
        rospy.loginfo('%s: viewpoint: %s', rospy.get_name(), response.message)
        return response

    def _lookup_estimate(self, stamp):
        """The localizer's (x, y, yaw) of ``~base_frame`` in the map frame at ``stamp`` (else
        the latest), or None (logged) when tf has none."""
        for when in (stamp, rospy.Time(0)):
            try:
                stamped = lookup_waiting(self._tf_buffer, self._frame_id,
                                         self._config.base_frame, when,
                                         self._config.tf_timeout)
                return geometry.pose2d_from_matrix(transform_to_matrix(stamped.transform))
            except tf2_ros.ExtrapolationException:
                continue
            except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                    tf2_ros.InvalidArgumentException) as error:
                rospy.logwarn_throttle(_THROTTLE, '%s: no transform %s <- %s: cannot check '
                                       'fiducials against the localizer: %s' % (
                                           rospy.get_name(), self._frame_id,
                                           self._config.base_frame, error))
                return None
        return None


def resolve_frame(config, fiducial_map):
    """The frame to publish in: the map's, checked against ``~map_frame`` when that is set.

    Raises:
        ConfigError: when ``~map_frame`` names a different frame than the fiducial map.
    """
    if config.map_frame and config.map_frame != fiducial_map.frame_id:
        raise ConfigError(['map_frame=%r: must match the frame_id %r of fiducial_map %r '
                           '(or be empty)' % (config.map_frame, fiducial_map.frame_id,
                                              config.fiducial_map)])
    return fiducial_map.frame_id


def main():
    """Run the fiducial_localizer node."""
    rospy.init_node('fiducial_localizer')
    config = load_config(FiducialLocalizerConfig)
    try:
        fiducial_map = load_fiducial_map(config.fiducial_map)
        frame_id = resolve_frame(config, fiducial_map)
    except ConfigError as error:
        for problem in error.problems:
            rospy.logfatal('%s: %s', rospy.get_name(), problem)
        rospy.logfatal('%s: refusing to start without a valid fiducial map', rospy.get_name())
        sys.exit(1)
    rospy.loginfo('%s: %d fiducials in frame %s from %s', rospy.get_name(), len(fiducial_map),
                  frame_id, config.fiducial_map)
    for caveat in config.caveats():
        rospy.logwarn('%s: %s', rospy.get_name(), caveat)
    node = FiducialLocalizerNode(FiducialLocalizer(config, fiducial_map), config, frame_id)
    node.start()
    rospy.spin()
