"""Robot pose in the map from a camera observation of a mapped fiducial (ArUco tag).

Tag frames follow OpenCV / aruco_detect: x right, y up, z out of the tag face (towards a camera
that sees it). Given where a tag is in the map (``T_map_fid``), where the camera sees it
(``T_cam_fid``) and where the camera is on the robot (``T_base_cam``), the robot base is at::

    T_map_base = T_map_fid @ inv(T_cam_fid) @ inv(T_base_cam)

projected to 2D as (x, y, yaw of the base x axis). Poor observations are rejected: unknown
ids, a high or a missing (not finite) reprojection (object) error, far tags, and tags seen at a
grazing angle, whose pose (above all its orientation) ArUco estimates badly.

A tag rejected only for its distance, view angle or object error still says roughly where the
robot is. With ``coarse_fixes``, while the robot is lost, such a tag within wider limits gives
a *coarse fix* (:meth:`FiducialLocalizer.coarse_estimate`): its pose with a wider covariance,
once per tag per lost episode (:class:`CoarseTries`), for amcl to settle against the laser.
The recovery node otherwise drives closer to such a tag, which fails when no straight way leads
there.

The fiducial map is a YAML file (see ``config/fiducials_example.yaml``)::

    frame_id: map
    fiducials:
      - {id: 7, position: [x, y, z], rpy: [roll, pitch, yaw]}  # tag frame in the map (rad)
      - {id: 8, position: [x, y, z], facing_yaw: 1.57}         # upright tag on a wall
"""
import collections
import dataclasses
import enum
import logging
import math
import numbers

import numpy as np
import yaml

from lost_and_found.core import geometry
from lost_and_found.core.config import Checker, ConfigError, frame_problem, safe_load_unique
from lost_and_found.core.tag_check import CLEARANCE
from lost_and_found.state import LOCALIZED, State, parse_state

_log = logging.getLogger('rosout')

#: Keys an entry of the fiducial map may have.
_ENTRY_KEYS = frozenset({'id', 'position', 'rpy', 'facing_yaw'})
#: How far from rigid (orthonormality error) an observed transform may be.
_RIGID_TOLERANCE = 1e-4


@dataclasses.dataclass(frozen=True)
class FiducialLocalizerConfig:
    """Parameters of the fiducial_localizer node.

    Attributes:
        fiducial_map: path of the fiducial map YAML (required).
        map_frame: frame of the published pose; '' uses the map file's ``frame_id``, anything
            else must equal it (the tag poses are only valid in that frame).
        base_frame: the robot frame whose pose is estimated.
        max_object_error: largest accepted aruco_detect ``object_error``.
        max_distance: farthest accepted camera-to-tag distance (m).
        max_view_angle: largest accepted angle (rad) between the tag's z axis and the
            direction from the tag to the camera.
        sigma_xy: standard deviation (m) of x and y in the published covariance.
        sigma_yaw: standard deviation (rad) of yaw in the published covariance.
        min_interval: least time (s) between two published poses.
        publish_in_states: robot states (``state.State`` names) in which poses are published.
        correct_in_states: robot states in which a pose is published only when it contradicts
            the localizer's estimate (tf ``map_frame`` -> ``base_frame``) by more than
            ``correct_xy`` or ``correct_yaw``: amcl can converge tightly at a place that looks
            like the right one, and a tag tells the places apart. Empty: never.
        correct_xy: least position disagreement (m) that counts as a contradiction.
        correct_yaw: least heading disagreement (rad) that counts as a contradiction.
        state_namespace: where lost_service publishes ``state``.
        tf_timeout: how long (s) to wait for the camera transform.
        verify_window: seconds after lost_service declared the robot localized on the
            localizer's word alone (``LOST`` -> ``IDLE``) during which a
            mapped tag that the estimate puts in clear view but the camera does not detect
            for ``verify_missing_time`` refutes the localization (state ``LOST`` is
            requested); see :mod:`lost_and_found.core.tag_check`. 0 disables the check.
        verify_min_distance: nearest camera-to-tag distance (m) at which a tag is expected
            (more than the sight line's clearance, ``tag_check.CLEARANCE``).
        verify_max_distance: farthest camera-to-tag distance (m) at which a tag is expected.
        verify_half_fov: largest bearing (rad) off the camera's heading at which a tag is
            expected (half the horizontal field of view, less a margin).
        verify_half_vfov: largest elevation (rad) of a tag seen from the camera at which it
            is expected (half the vertical field of view, less a margin).
        verify_view_angle: largest angle (rad) between the tag's face normal and the
            direction to the camera at which a tag is expected.
        verify_missing_time: seconds an expected tag must stay undetected.
        viewpoint_max_path: the ``~viewpoint`` service's reach: the longest path (m) over the
            map's known-free cells to a pose from which the estimate puts a tag in the tag
            check's geometry (core/viewpoint.py).
        viewpoint_clearance: the service plans only through cells at least this far (m) from
            an obstacle (the robot's radius plus a margin).
        viewpoint_turn_cost: metres of path one radian of turning costs when viewpoints are
            compared (the robot's linear over its angular speed).
        coarse_fixes: while the robot is ``LOST``, a camera frame with no acceptable tag but a
            mapped one rejected only for its distance, view angle or object error, within the
            ``coarse_*`` limits, gives a *coarse fix*: the pose from that tag, published with
            the wider ``coarse_sigma_*`` covariance, for amcl to finish against the laser
            (a tag seen past a corner may have no straight way to a closer view).
        coarse_max_distance: farthest camera-to-tag distance (m) of a coarse fix.
        coarse_max_view_angle: largest view angle (rad) of a coarse fix.
        coarse_max_object_error: largest ``object_error`` of a coarse fix.
        coarse_sigma_xy: standard deviation (m) of x and y of a coarse fix.
        coarse_sigma_yaw: standard deviation (rad) of yaw of a coarse fix.
        coarse_tries: coarse fixes from one tag per lost episode (from the robot leaving a
            localized state, or being lifted, until it is localized again).
        search_hint_interval: while the robot is ``LOST``, the particle cloud is read for
            the way most of its particles say a tag is (core/search_hint.py) at most this
            often (s); 0 (default): never.
        search_hint_min_share: the least fraction of the voting particles that must agree
            for a hint, in (0, 1].
        search_hint_clearance: the paths of the hint go through known-free cells at least
            this far (m) from a mapped obstacle.
        search_hint_lookahead: how far along each particle's path (m) its way is read.
    """

    fiducial_map: str = ''
    map_frame: str = ''
    base_frame: str = 'base_footprint'
    max_object_error: float = 0.05
    max_distance: float = 3.0
    max_view_angle: float = 1.05
    sigma_xy: float = 0.1
    sigma_yaw: float = 0.1
    min_interval: float = 1.0
    publish_in_states: tuple = ('LOST', 'LOCALIZING')
    correct_in_states: tuple = ('IDLE', 'NAVIGATING')
    correct_xy: float = 1.0
    correct_yaw: float = 0.5
    state_namespace: str = 'lost_service'
    tf_timeout: float = 0.1
    verify_window: float = 0.0
    verify_min_distance: float = 0.6
    verify_max_distance: float = 2.5
    verify_half_fov: float = 0.4
    verify_half_vfov: float = 0.3
    verify_view_angle: float = 0.7
    verify_missing_time: float = 1.5
    viewpoint_max_path: float = 8.0
    viewpoint_clearance: float = 0.3
    viewpoint_turn_cost: float = 0.3
    coarse_fixes: bool = True
    coarse_max_distance: float = 4.5
    coarse_max_view_angle: float = 1.35
    coarse_max_object_error: float = 0.15
    coarse_sigma_xy: float = 0.3
    coarse_sigma_yaw: float = 0.2
    coarse_tries: int = 1
    search_hint_interval: float = 0.0
    search_hint_min_share: float = 0.5
    search_hint_clearance: float = 0.25
    search_hint_lookahead: float = 1.5

    def validate(self):
        """Raise ConfigError naming every bad value."""
        check = Checker(self)
        check.non_empty('fiducial_map')
        check.frame('map_frame', optional=True)
        check.frame('base_frame')
        check.positive('max_object_error')
        check.positive('max_distance')
        check.in_range('max_view_angle', 0.0, math.pi / 2, low_open=True)
        check.sigma_xy('sigma_xy')
        check.sigma_yaw('sigma_yaw')
        check.non_negative('min_interval')
        states = self.publish_in_states
        check.require(isinstance(states, tuple) and len(states) > 0
                      and all(isinstance(s, str) and parse_state(s) is not None
                              for s in states),
                      'publish_in_states', 'be a non-empty list of state names '
                      '(IDLE, NAVIGATING, FLYING, LOST, LOCALIZING, NEED_HELP)')
        checked = self.correct_in_states
        check.require(isinstance(checked, tuple)
                      and all(isinstance(s, str) and parse_state(s) is not None
                              for s in checked),
                      'correct_in_states', 'be a list of state names (IDLE, NAVIGATING, '
                      'FLYING, LOST, LOCALIZING, NEED_HELP), possibly empty')
        check.positive('correct_xy')
        check.in_range('correct_yaw', 0.0, math.pi, low_open=True)
        check.non_empty('state_namespace')
        check.positive('tf_timeout')
        check.non_negative('verify_window')
        window, missing = self.verify_window, self.verify_missing_time
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               for v in (window, missing)) and window > 0:
            # The check closes after its window: a tag could never stay missing long enough.
            check.require(self.verify_window > self.verify_missing_time, 'verify_window',
                          'be 0 (off) or longer than verify_missing_time (%r)'
                          % self.verify_missing_time)
        near, far = self.verify_min_distance, self.verify_max_distance
        near_ok = check.finite('verify_min_distance')
        if near_ok:
            check.require(near > CLEARANCE, 'verify_min_distance', 'be > %g (the line of '
                          'sight stops that far before the tag)' % CLEARANCE)
        if check.finite('verify_max_distance') and near_ok:
            check.require(far > near, 'verify_max_distance', 'be greater than '
                          'verify_min_distance (%r)' % (near,))
        check.in_range('verify_half_fov', 0.0, math.pi / 2, low_open=True)
        check.in_range('verify_half_vfov', 0.0, math.pi / 2, low_open=True)
        check.in_range('verify_view_angle', 0.0, math.pi / 2, low_open=True)
        check.positive('verify_missing_time')
        check.non_negative('viewpoint_max_path')
        check.non_negative('viewpoint_clearance')
        check.non_negative('viewpoint_turn_cost')
        check.require(isinstance(self.coarse_fixes, bool), 'coarse_fixes', 'be true or false')
        check.positive('coarse_max_distance')
        check.in_range('coarse_max_view_angle', 0.0, math.pi / 2, low_open=True)
        check.positive('coarse_max_object_error')
        check.sigma_xy('coarse_sigma_xy')
        check.sigma_yaw('coarse_sigma_yaw')
        check.positive_int('coarse_tries')
        check.non_negative('search_hint_interval')
        check.in_range('search_hint_min_share', 0.0, 1.0, low_open=True)
        check.non_negative('search_hint_clearance')
        check.positive('search_hint_lookahead')
        check.done()

    def caveats(self):
        """Valid settings that switch a feature off without saying so: one sentence each,
        naming the values, for the node to warn about at start-up."""
        if not self.coarse_fixes:
            return []
        if State.LOST not in {parse_state(name) for name in self.publish_in_states}:
            return ['coarse_fixes is true but LOST is not in publish_in_states %s: coarse '
                    'fixes are made only in LOST, so none will be published'
                    % list(self.publish_in_states)]
        caveats = []
        for coarse, fix in (('coarse_max_distance', 'max_distance'),
                            ('coarse_max_view_angle', 'max_view_angle'),
                            ('coarse_max_object_error', 'max_object_error')):
            if getattr(self, coarse) <= getattr(self, fix):
                caveats.append('%s (%g) is not above %s (%g): no tag is refused a fix on that '
                               'count and still taken for a coarse one'
                               % (coarse, getattr(self, coarse), fix, getattr(self, fix)))
        if len(caveats) == 3:
            caveats.append('every coarse_max_* is at or below its fix limit: coarse fixes '
                           'never fire')
        return caveats


class FiducialMap:
    """Mapped fiducials: ``frame_id`` and ``poses`` (id -> 4x4 ``T_map_fid``)."""

    def __init__(self, frame_id, poses):
        """Keep the frame and a copy of the id -> transform dict."""
        self.frame_id = frame_id
        self.poses = {int(k): np.array(v, dtype=float) for k, v in poses.items()}

    def __contains__(self, fiducial_id):
        """True when ``fiducial_id`` is mapped."""
        return fiducial_id in self.poses

    def __len__(self):
        """The number of mapped fiducials."""
        return len(self.poses)


def facing_yaw_rotation(facing_yaw):
    """Rotation (3x3) of an upright wall tag whose face (z axis) points at map yaw ``facing_yaw``.

    z is horizontal at ``facing_yaw``, y is map +z (up), and x = y cross z, which is the right
    hand of a person looking at the tag.
    """
    c, s = math.cos(facing_yaw), math.sin(facing_yaw)
    z_axis = np.array([c, s, 0.0])
    y_axis = np.array([0.0, 0.0, 1.0])
    x_axis = np.cross(y_axis, z_axis)
    return np.column_stack([x_axis, y_axis, z_axis])


#: A tag whose face normal has a horizontal part shorter than this lies flat (on a floor, a
#: ceiling, a table): it faces no direction on the floor.
FLAT = 0.3


def facing_yaw(pose, flat=FLAT):
    """The direction (rad) a tag's face points to on the floor: the yaw of the horizontal part
    of its z axis (the inverse of :func:`facing_yaw_rotation`), or None when that part is
    shorter than ``flat`` (a tag lying flat).

    Args:
        pose: the tag's pose (a 4x4 or 3x3 array; only the rotation is read).
    """
    normal = np.asarray(pose, dtype=float)[:2, 2]
    if not np.hypot(*normal) >= flat:
        return None
    return float(np.arctan2(normal[1], normal[0]))


def _finite_numbers(value, count):
    """``value`` as a tuple of ``count`` finite floats, or None when it is not that."""
    if not isinstance(value, (list, tuple)) or len(value) != count:
        return None
    if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value):
        return None
    try:
        values = tuple(float(v) for v in value)
    except OverflowError:
        # A YAML integer too big for a float (e.g. 10**400) is no finite number either.
        return None
    return values if all(math.isfinite(v) for v in values) else None


def _parse_entry(index, entry, problems):
    """Return (id, T_map_fid) for one map entry, or None after recording its problems."""
    if not isinstance(entry, dict):
        problems.append('fiducials[%d]=%r: must be a mapping with id and position' % (
            index, entry))
        return None
    raw_id = entry.get('id')
    name = 'fiducials[%d] (id %r)' % (index, raw_id)
    before = len(problems)
    unknown = sorted(str(k) for k in set(entry) - _ENTRY_KEYS)
    if unknown:
        problems.append('%s: unknown keys %s (known: %s)' % (
            name, ', '.join(unknown), ', '.join(sorted(_ENTRY_KEYS))))
    if 'id' not in entry:
        problems.append('%s: missing id' % name)
    elif isinstance(raw_id, bool) or not isinstance(raw_id, int):
        problems.append('%s: id must be an integer' % name)
    if 'position' not in entry:
        problems.append('%s: missing position' % name)
        position = None
    else:
        position = _finite_numbers(entry['position'], 3)
        if position is None:
            problems.append('%s: position=%r must be 3 finite numbers [x, y, z]' % (
                name, entry['position']))
    has_rpy, has_facing = 'rpy' in entry, 'facing_yaw' in entry
    rotation = None
    if has_rpy == has_facing:
        problems.append('%s: needs exactly one of rpy or facing_yaw (has %s)' % (
            name, 'both' if has_rpy else 'neither'))
    elif has_rpy:
        rpy = _finite_numbers(entry['rpy'], 3)
        if rpy is None:
            problems.append('%s: rpy=%r must be 3 finite numbers [roll, pitch, yaw] (rad)' % (
                name, entry['rpy']))
        else:
            rotation = geometry.rpy_to_matrix(*rpy)
    else:
        facing = _finite_numbers([entry['facing_yaw']], 1)
        if facing is None:
            problems.append('%s: facing_yaw=%r must be a finite number (rad)' % (
                name, entry['facing_yaw']))
        else:
            rotation = facing_yaw_rotation(facing[0])
    if len(problems) > before:
        return None
    return raw_id, geometry.make_transform(rotation, position)


def parse_fiducial_map(data, source='fiducial map'):
    """Build a :class:`FiducialMap` from the parsed YAML ``data``.

    Args:
        data: the loaded YAML document.
        source: names the document in error messages (e.g. its path).

    Raises:
        ConfigError: listing every bad entry (duplicate or non-integer id, missing or
            non-finite position, both or neither of rpy / facing_yaw, ...), each prefixed
            by ``source``.
    """
    problems = []
    if not isinstance(data, dict):
        raise ConfigError(['%s: must be a mapping with frame_id and fiducials, got %r' % (
            source, data)])
    unknown = sorted(str(k) for k in set(data) - {'frame_id', 'fiducials'})
    if unknown:
        problems.append('unknown keys %s (known: fiducials, frame_id)' % ', '.join(unknown))
    frame_id = data.get('frame_id', 'map')
    if frame_problem(frame_id) is not None:
        problems.append('frame_id=%r: must %s' % (frame_id, frame_problem(frame_id)))
    entries = data.get('fiducials')
    poses = {}
    if not isinstance(entries, list) or not entries:
        problems.append('fiducials=%r: must be a non-empty list' % (entries,))
        entries = []
    for index, entry in enumerate(entries):
        parsed = _parse_entry(index, entry, problems)
        if parsed is None:
            continue
        fiducial_id, transform = parsed
        if fiducial_id in poses:
            problems.append('fiducials[%d] (id %d): duplicate id' % (index, fiducial_id))
            continue
        poses[fiducial_id] = transform
    if problems:
        raise ConfigError(['%s: %s' % (source, p) for p in problems])
    return FiducialMap(frame_id, poses)


def load_fiducial_map(path):
    """Read and parse the fiducial map YAML at ``path``.

    Raises:
        ConfigError: naming the path when it cannot be read, is not UTF-8 text or cannot be
            parsed, or the bad entries.
    """
    try:
        # YAML files are UTF-8; without the encoding, open() would use the locale's.
        with open(path, encoding='utf-8') as stream:
            data = safe_load_unique(stream)
    except OSError as error:
        raise ConfigError(['fiducial_map %r: cannot read: %s' % (path, error)]) from None
    except UnicodeError as error:
        # E.g. a comment written in Latin-1 by an editor in another locale.
        raise ConfigError(['fiducial_map %r: not UTF-8 text: %s' % (path, error)]) from None
    except yaml.YAMLError as error:
        raise ConfigError(['fiducial_map %r: not valid YAML: %s' % (path, error)]) from None
    except ValueError as error:
        # PyYAML builds integers with int(), which refuses more than 4300 digits.
        raise ConfigError(['fiducial_map %r: cannot parse: %s' % (path, error)]) from None
    return parse_fiducial_map(data, source='fiducial_map %r' % path)


class Rejection(enum.Enum):
    """Why an observation was not used."""

    UNKNOWN_ID = 'unknown fiducial id'
    BAD_TRANSFORM = 'non-finite or non-rigid transform'
    BAD_OBJECT_ERROR = 'object error not a finite number >= 0'
    OBJECT_ERROR = 'object error too high'
    TOO_FAR = 'too far'
    GRAZING = 'seen at a grazing angle'


#: Rejections that a closer, more frontal view could cure: the tags the recovery node drives
#: closer to, and those a coarse fix may come from. Not BAD_OBJECT_ERROR: a detection without
#: a finite error >= 0 says nothing of its quality, and may be no tag at all.
APPROACHABLE = (Rejection.TOO_FAR, Rejection.GRAZING, Rejection.OBJECT_ERROR)


@dataclasses.dataclass(frozen=True, eq=False)   # eq would compare numpy arrays
class Observation:
    """One detected fiducial.

    Attributes:
        fiducial_id: the tag id.
        T_camera_fiducial: 4x4 pose of the tag in the camera (optical) frame.
        object_error: aruco_detect's object error of this detection.
    """

    fiducial_id: int
    T_camera_fiducial: np.ndarray
    object_error: float


@dataclasses.dataclass(frozen=True)
class PoseEstimate:
    """A 2D robot pose in the fiducial map's frame, from one observation.

    Attributes:
        x: metres.
        y: metres.
        yaw: rad, in [-pi, pi).
        fiducial_id: the tag it came from.
        distance: camera-to-tag distance (m).
    """

    x: float
    y: float
    yaw: float
    fiducial_id: int
    distance: float


def _view_geometry(t_cam_fid):
    """(distance, view angle) of the camera as seen from the tag."""
    camera_in_tag = geometry.invert_transform(t_cam_fid)[:3, 3]
    distance = float(np.linalg.norm(camera_in_tag))
    if distance <= 0.0:
        return distance, math.pi
    # The tag's z axis is (0, 0, 1) in its own frame: the cosine is the z component.
    angle = math.acos(max(-1.0, min(1.0, camera_in_tag[2] / distance)))
    return distance, angle


class FiducialLocalizer:
    """Turns fiducial observations into the robot's 2D pose in the map.

    Attributes:
        rejected: a Counter of :class:`Rejection` -> how many observations it rejected.
    """

    def __init__(self, config, fiducial_map):
        """Use validated ``config`` thresholds and the tags of ``fiducial_map``."""
        self._config = config
        self._map = fiducial_map
        self.rejected = collections.Counter()

    @property
    def frame_id(self):
        """The frame of the estimated poses (the fiducial map's)."""
        return self._map.frame_id

    @property
    def tag_poses(self):
        """The mapped tags: id -> 4x4 ``T_map_fid``."""
        return self._map.poses

    def _check(self, observation, t_base_cam):
        """Return (Rejection or None, distance) for one observation."""
        fiducial_id = observation[0]
        if fiducial_id not in self._map:
            return Rejection.UNKNOWN_ID, None
        try:
            t_cam_fid = np.asarray(observation[1], dtype=float)
        except (TypeError, ValueError):
            return Rejection.BAD_TRANSFORM, None
        if not (geometry.is_rigid(t_cam_fid, _RIGID_TOLERANCE)
                and geometry.is_rigid(t_base_cam, _RIGID_TOLERANCE)):
            return Rejection.BAD_TRANSFORM, None
        # Without a finite error >= 0 the detection has no quality estimate at all (aruco_detect
        # reports a non-negative one; a negative error is a broken message, and would pass the
        # "<= max_object_error" test): a reason of its own, as a closer view (which cures a
        # high error) need not give one.
        try:
            object_error = float(observation[2])
        except (TypeError, ValueError, OverflowError):
            return Rejection.BAD_OBJECT_ERROR, None
        if not math.isfinite(object_error) or object_error < 0.0:
            return Rejection.BAD_OBJECT_ERROR, None
        if object_error > self._config.max_object_error:
            return Rejection.OBJECT_ERROR, None
        distance, angle = _view_geometry(t_cam_fid)
        if distance > self._config.max_distance:
            return Rejection.TOO_FAR, distance
        if angle > self._config.max_view_angle:
            return Rejection.GRAZING, distance
        return None, distance

    def pose_from(self, fiducial_id, t_cam_fid, t_base_cam):
        """The 2D base pose ``(x, y, yaw)`` implied by one (unchecked) observation."""
        t_map_base = geometry.compose(self._map.poses[fiducial_id],
                                      geometry.invert_transform(t_cam_fid),
                                      geometry.invert_transform(t_base_cam))
        return (float(t_map_base[0, 3]), float(t_map_base[1, 3]),
                geometry.normalize_angle(geometry.yaw_of(t_map_base)))

    def estimate(self, observations, T_base_camera):  # noqa: N803 - matches the math
        """Estimate the robot pose from the closest acceptable observation.

        Args:
            observations: iterable of :class:`Observation` or
                ``(fiducial_id, T_camera_fiducial, object_error)`` tuples.
            T_base_camera: 4x4 pose of the camera (optical) frame in the base frame.

        Returns:
            ``(best, reasons)``: ``best`` is a :class:`PoseEstimate` or None when nothing was
            accepted; ``reasons`` has one ``(fiducial_id, Rejection or None)`` per observation,
            in order (None: accepted).
        """
        t_base_cam = np.asarray(T_base_camera, dtype=float)
        best, reasons = None, []
        for observation in observations:
            if isinstance(observation, Observation):
                observation = (observation.fiducial_id, observation.T_camera_fiducial,
                               observation.object_error)
            reason, distance = self._check(observation, t_base_cam)
            fiducial_id = observation[0]
            reasons.append((fiducial_id, reason))
            if reason is not None:
                self.rejected[reason] += 1
                if reason is Rejection.UNKNOWN_ID:
                    _log.debug('fiducial %r is not in the map: ignored', fiducial_id)
                continue
            if best is None or distance < best.distance:
                x, y, yaw = self.pose_from(fiducial_id, np.asarray(observation[1], dtype=float),
                                           t_base_cam)
                best = PoseEstimate(x, y, yaw, fiducial_id, distance)
        return best, reasons

    def coarse_estimate(self, observations, reasons, t_base_cam, skip=()):
        """The pose from the nearest observation rejected only as :data:`APPROACHABLE` that is
        within the config's ``coarse_max_distance``, ``coarse_max_view_angle`` and
        ``coarse_max_object_error`` (a :class:`PoseEstimate`), or None.

        Args:
            observations: ``(fiducial_id, T_camera_fiducial, object_error)`` tuples.
            reasons: :meth:`estimate`'s ``(fiducial_id, Rejection or None)`` of them, in order.
            t_base_cam: 4x4 pose of the camera (optical) frame in the base frame.
            skip: fiducial ids not to use (their coarse fixes are spent).
        """
        config = self._config
        t_base_cam = np.asarray(t_base_cam, dtype=float)
        best = None
        for (fiducial_id, t_cam_fid, object_error), (_id, reason) in zip(observations, reasons):
            if reason not in APPROACHABLE or fiducial_id in skip:
                continue
            t_cam_fid = np.asarray(t_cam_fid, dtype=float)
            distance, angle = _view_geometry(t_cam_fid)
            if float(object_error) > config.coarse_max_object_error or \
                    distance > config.coarse_max_distance or \
                    angle > config.coarse_max_view_angle:
                continue
            if best is None or distance < best.distance:
                x, y, yaw = self.pose_from(fiducial_id, t_cam_fid, t_base_cam)
                best = PoseEstimate(x, y, yaw, fiducial_id, distance)
        return best


class CoarseTries:
    """Counts the coarse fixes from each tag in the current lost episode.

    An episode ends when the robot is localized again or lifted: from then on every tag may
    give ``tries`` coarse fixes again.
    """

    def __init__(self, tries):
        """Allow ``tries`` (>= 1) coarse fixes per tag per episode."""
        self._tries = int(tries)
        self._used = collections.Counter()

    def spent(self):
        """The ids whose coarse fixes of this episode are used up."""
        return frozenset(i for i, n in self._used.items() if n >= self._tries)

    def use(self, fiducial_id):
        """A coarse fix from ``fiducial_id`` was published."""
        self._used[fiducial_id] += 1

    def on_state(self, state):
        """The robot's state changed to ``state`` (a ``State``): a localized or lifted robot
        ends the episode."""
        if state in LOCALIZED or state == State.FLYING:
            self._used.clear()


def contradicts(fix, estimate, max_xy, max_yaw):
    """True when a pose ``fix`` and the localizer's ``estimate`` (both ``(x, y, yaw)``)
    disagree by more than ``max_xy`` (m) in position or ``max_yaw`` (rad) in heading."""
    return math.hypot(fix[0] - estimate[0], fix[1] - estimate[1]) > max_xy or \
        abs(float(geometry.wrap_angle(fix[2] - estimate[2]))) > max_yaw


def initialpose_covariance(sigma_xy, sigma_yaw):
    """Row-major 6x6 covariance (36 floats) of a 2D pose fix, as amcl's ``initialpose`` reads.

    Only x, y (indices 0 and 7) and yaw (index 35, rotation about z) are set; amcl ignores
    z, roll and pitch, so they stay 0.
    """
    covariance = [0.0] * 36
    covariance[0] = covariance[7] = float(sigma_xy) ** 2
    covariance[35] = float(sigma_yaw) ** 2
    return tuple(covariance)


#: What :meth:`PublishGate.kind` says: publish every fix, or only one that contradicts the
#: localizer (a robot that believes it is localized).
FIX, CHECK = 'fix', 'check'


class PublishGate:
    """Decides when a pose fix may be published: only in some states, at most so often.

    Args:
        states: state names (strings) in which every fix is published.
        min_interval: least time (s) between two publications.
        check_states: state names in which a fix is published only when it contradicts the
            localizer (see :func:`contradicts`).
    """

    def __init__(self, states, min_interval, check_states=()):
        """Allow ``states`` (and ``check_states``) at most once per ``min_interval``."""
        self._states = frozenset(parse_state(s) for s in states)
        self._check_states = frozenset(parse_state(s) for s in check_states) - self._states
        self._min_interval = float(min_interval)
        self._last = None

    def kind(self, state, t):
        """:data:`FIX`, :data:`CHECK` or None (closed: wrong state, or too soon).

        Args:
            state: the current ``State`` or None (unknown yet: closed).
            t: now (s). A time before the last publication means the clock jumped back:
                the last publication is forgotten.
        """
        if state is None or state not in self._states | self._check_states:
            return None
        if self._last is not None and t < self._last:
            self._last = None
        if self._last is not None and t - self._last < self._min_interval:
            return None
        return FIX if state in self._states else CHECK

    def is_open(self, state, t):
        """True when every fix may be published now (a state of ``states``, not too soon)."""
        return self.kind(state, t) == FIX

    def published(self, t):
        """Record a publication at time ``t``."""
        self._last = t
