"""Check a localization no tag has confirmed against the mapped tags it says are in view.

After a kidnap, amcl can converge tight at a place whose walls look like the true one (a
room like the right room, a corridor like the right corridor), and lost_service then takes
the robot to be found. A tag's id tells such places apart, but only when the camera sees one.
The converse also holds: if the estimate is right, a mapped tag that it puts squarely in front
of the camera, near, facing it and with no mapped wall between, must be detected. When such a
tag stays undetected for ``missing_time`` the estimate is wrong.

:class:`TagCheck` keeps that test open for ``window`` seconds after the robot was declared
localized on the localizer's word alone (lost_service leaving ``LOST`` for ``IDLE``, see
:func:`opens`); a tag that agrees with the estimate, or one that contradicts it (the
fiducial node then corrects the localizer), closes it. Only upright tags (face normal near
horizontal) are checked: the camera's heading and its fields of view, the distance, the
tag's view angle, and the map's walls between camera and tag (in the map plane).

Unmapped obstacles (a person, a cart) can hide a tag from a right estimate; hence the
narrow cone, the short distance, the time and the frames a tag must stay missing, and that
the test runs only in the window after a localization nothing else confirmed. A wrong
refutation costs a search that a tag in view soon ends.
"""
import dataclasses
import math

import numpy as np

from lost_and_found.core import geometry
from lost_and_found.state import LOCALIZED, State

#: A tag is "upright" when its face normal's horizontal part is at least this long.
_UPRIGHT = 0.7
#: The line of sight is checked up to this far (m) before the tag: it hangs on a wall.
CLEARANCE = 0.2


def upright_tag_arrays(tag_poses):
    """``(ids, centres, heights, normals)`` of the upright tags of ``tag_poses`` (fiducial id
    -> 4x4 ``T_map_fid``, the tag's z axis out of its face), sorted by id: int ``(n,)``, map
    ``(n, 2)``, ``(n,)`` and unit face normals ``(n, 2)``. Tags on a ceiling or a floor are
    left out: they cannot be reasoned about in the map plane."""
    ids, centres, heights, normals = [], [], [], []
    for fiducial_id, pose in sorted(tag_poses.items()):
        pose = np.asarray(pose, dtype=float)
        normal = pose[:2, 2]
        length = float(np.hypot(*normal))
        if length < _UPRIGHT:
            continue
        ids.append(int(fiducial_id))
        centres.append(pose[:2, 3])
        heights.append(pose[2, 3])
        normals.append(normal / length)
    return (np.array(ids, dtype=int), np.array(centres, dtype=float).reshape(-1, 2),
            np.array(heights, dtype=float), np.array(normals, dtype=float).reshape(-1, 2))


def opens(before, after):
    """True when the state change ``before`` -> ``after`` (``State`` or None) declares the
    robot localized without a tag: lost_service left ``LOST`` for a localized state (a pose
    fix passes through ``LOCALIZING`` instead)."""
    return before == State.LOST and after in LOCALIZED


@dataclasses.dataclass(frozen=True)
class ExpectedTag:
    """A mapped tag the estimate puts in the camera's clear view."""

    fiducial_id: int
    distance: float
    bearing: float


@dataclasses.dataclass(frozen=True)
class Refutation:
    """An expected tag that stayed undetected: the estimate is wrong."""

    fiducial_id: int
    distance: float
    bearing: float
    missing_for: float


class TagCheck:
    """Which mapped tags a camera pose must see, and whether they stay unseen for too long.

    Args:
        tag_poses: fiducial id -> 4x4 ``T_map_fid`` (tag z axis out of its face).
        window: seconds the check stays open after :meth:`open`.
        min_distance, max_distance: range (m) of camera-to-tag distances that count.
        half_fov: largest bearing (rad) off the camera's heading that counts (half the
            horizontal field of view, less a margin).
        half_vfov: largest elevation (rad) of the tag seen from the camera that counts
            (checked when the camera's height is known).
        view_angle: largest angle (rad) between the tag's face normal and the direction to
            the camera that counts.
        missing_time: seconds an expected tag must stay undetected to refute the estimate...
        min_frames: ...over at least this many camera frames in a row.
    """

    def __init__(self, tag_poses, window, min_distance, max_distance, half_fov, half_vfov,
                 view_angle, missing_time, min_frames=3):
        """Keep the upright tags' centres, heights and face normals."""
        self.window = float(window)
        self.min_distance = float(min_distance)
        self.max_distance = float(max_distance)
        self.half_fov = float(half_fov)
        self.half_vfov = float(half_vfov)
        self.cos_view = math.cos(float(view_angle))
        self.missing_time = float(missing_time)
        self.min_frames = int(min_frames)
        self._ids, self._centres, self._heights, self._normals = upright_tag_arrays(tag_poses)
        self.distance_map = None        # a scan_agreement.DistanceMap, for the line of sight
        self._until = None
        self._missing = {}              # id -> [time since it is expected unseen, frames]
        self._last_t = None

    def __len__(self):
        """How many upright tags can be checked."""
        return int(self._ids.size)

    def upright_tags(self):
        """``(fiducial_id, centre (x, y), unit face normal (x, y))`` of every checkable tag."""
        return [(int(i), tuple(float(v) for v in c), tuple(float(v) for v in n))
                for i, c, n in zip(self._ids, self._centres, self._normals)]

    def open(self, t):
        """Start (or restart) the check at time ``t`` for ``window`` seconds."""
        self._until = t + self.window
        self._missing.clear()
        self._last_t = t

    def close(self):
        """Stop checking (the estimate was confirmed or refuted, or the state changed)."""
        self._until = None
        self._missing.clear()
        self._last_t = None

    def is_open(self, t):
        """True while the window is open at ``t``; past its end the check closes."""
        if self._until is not None and t > self._until and \
                (self._last_t is None or t >= self._last_t):
            self.close()
        return self._until is not None

    def expected(self, camera_x, camera_y, camera_yaw, camera_z=None):
        """The tags a camera at ``(camera_x, camera_y)`` looking along ``camera_yaw`` (map
        frame) must see: near, inside the cone, facing it, no mapped wall in between, and,
        when the camera's height ``camera_z`` is given, inside its vertical field of view.

        Without a distance map nothing is expected (the line of sight cannot be checked).
        """
        if self.distance_map is None or not self._ids.size:
            return []
        offsets = self._centres - (camera_x, camera_y)
        distances = np.hypot(offsets[:, 0], offsets[:, 1])
        bearings = geometry.wrap_angle(np.arctan2(offsets[:, 1], offsets[:, 0]) - camera_yaw)
        with np.errstate(invalid='ignore', divide='ignore'):
            facing = -np.sum(self._normals * offsets, axis=1) / distances
        near = (distances >= self.min_distance) & (distances <= self.max_distance)
        if camera_z is not None:
            with np.errstate(invalid='ignore', divide='ignore'):
                elevations = np.arctan2(np.abs(self._heights - camera_z), distances)
            near &= elevations <= self.half_vfov
        candidates = np.flatnonzero(near & (np.abs(bearings) <= self.half_fov) &
                                    (facing >= self.cos_view))
        if not candidates.size:
            return []
        if not np.isfinite(self.distance_map.distance([camera_x], [camera_y]))[0]:
            return []               # a camera off the map: nothing we can predict
        # The sight line stops short of the tag: the wall it hangs on is right behind it.
        stop = 1.0 - CLEARANCE / distances[candidates]
        ends = (camera_x, camera_y) + offsets[candidates] * stop[:, None]
        blocked = self.distance_map.crosses_obstacle(camera_x, camera_y, ends[:, 0], ends[:, 1])
        return [ExpectedTag(int(self._ids[i]), float(distances[i]), float(bearings[i]))
                for i, wall in zip(candidates, blocked) if not wall]

    def frame(self, t, camera_pose, seen_ids):
        """One camera frame while the check is open.

        Args:
            t: the frame's time (s). A time before the previous frame's means the clock
                jumped back: the window and the missing spells start again from ``t``.
            camera_pose: ``(x, y, yaw)`` or ``(x, y, yaw, z)`` of the camera in the map by
                the estimate, or None when it is not known (the frame only ends the tags'
                missing spells).
            seen_ids: ids of every tag detected in the frame (accepted or not).

        Returns:
            A :class:`Refutation` when an expected tag has stayed undetected for
            ``missing_time`` and ``min_frames`` frames, else None.
        """
        if self._until is not None and self._last_t is not None and t < self._last_t:
            self.open(t)
        if not self.is_open(t):
            return None
        self._last_t = t
        if camera_pose is None:
            self._missing.clear()
            return None
        seen = set(seen_ids)
        expected = {tag.fiducial_id: tag for tag in self.expected(*camera_pose)
                    if tag.fiducial_id not in seen}
        for fiducial_id in list(self._missing):
            if fiducial_id not in expected:
                del self._missing[fiducial_id]
        worst = None
        for fiducial_id, tag in expected.items():
            spell = self._missing.setdefault(fiducial_id, [t, 0])
            spell[1] += 1
            missing_for = t - spell[0]
            if missing_for >= self.missing_time and spell[1] >= self.min_frames and \
                    (worst is None or missing_for > worst.missing_for):
                worst = Refutation(fiducial_id, tag.distance, tag.bearing, missing_for)
        return worst


class UnansweredRefutation:
    """A refutation whose request for LOST lost_service did not answer (restarting, say),
    asked again while the robot stays localized: the first time ``period`` s after the
    request, then twice as long after each unanswered one, at most ``max_period`` s apart.
    Pure bookkeeping, times in any one clock's seconds.

    The robot leaving the localized states (:meth:`left_localized`) drops it: the robot is
    LOST already, or another localization will be checked on its own. Each refutation is asked
    with the :attr:`generation` it was made in, and an answer that comes after the robot left
    (a request in flight meanwhile) keeps nothing.
    """

    def __init__(self, period=1.0, max_period=16.0):
        """Nothing unanswered."""
        if not 0.0 < period <= max_period:
            raise ValueError('retry periods %r, %r: want 0 < period <= max_period'
                             % (period, max_period))
        self.period = float(period)
        self.max_period = float(max_period)
        self.generation = 0     # how many times the robot left the localized states
        self.pending = None     # the Refutation to ask again, or None
        self._due = None
        self._tries = 0

    def left_localized(self):
        """The robot left IDLE and NAVIGATING: True when a refutation is dropped."""
        self.generation += 1
        dropped = self.pending is not None
        self.pending = None
        return dropped

    def due(self, now):
        """``(refutation, generation)`` to ask again at ``now``, or None."""
        if self.pending is None or now < self._due:
            return None
        return self.pending, self.generation

    def asked(self, refutation, generation, answered, now):
        """The request for ``refutation`` (made in ``generation``) ended at ``now``: True when
        it is kept to ask again (not ``answered``, and the robot has not left the localized
        states since)."""
        if answered or generation != self.generation:
            if self.pending is refutation:
                self.pending = None
            return False
        self._tries = self._tries + 1 if self.pending is refutation else 0
        self.pending = refutation
        self._due = now + min(self.period * 2.0 ** self._tries, self.max_period)
        return True


def camera_pose_2d(estimate, t_base_cam):
    """``(x, y, yaw, z)`` in the map of an optical camera frame (z forward) on a base at
    ``estimate`` = ``(x, y, yaw)`` on the floor; yaw is the heading of the camera's z axis,
    z its height."""
    x, y, yaw = estimate
    t_map_base = geometry.make_transform(geometry.rpy_to_matrix(0.0, 0.0, yaw), (x, y, 0.0))
    t_map_cam = geometry.compose(t_map_base, np.asarray(t_base_cam, dtype=float))
    return (float(t_map_cam[0, 3]), float(t_map_cam[1, 3]),
            math.atan2(t_map_cam[1, 2], t_map_cam[0, 2]), float(t_map_cam[2, 3]))
