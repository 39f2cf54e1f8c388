"""A camera that reports the mapped fiducials (ArUco tags) it can see, as aruco_detect would.

Frames: the camera optical frame looks along +z with x to the right and y down (REP 103's
``*_optical_frame``); tag frames follow OpenCV / aruco_detect: x right, y up, z out of the
tag face. A mapped tag is reported when its centre is

* in front of the camera and inside the horizontal and vertical field of view,
* within ``max_range``,
* in line of sight: a ray cast on the grid from the camera toward the tag meets no wall more
  than ``occlusion_tolerance`` before it (tags hang *on* walls, so the wall behind a tag
  is expected right at its distance),
* facing the camera: the angle between the tag's z axis and the direction to the camera is
  below ``max_view_angle`` (seen edge-on a tag is a line, not a square).

Noise models corner noise of ``pixel_noise`` px at focal length ``focal_length`` on a tag of
side ``tag_size``: a tag at distance d spans ``s = f L / d`` px, so its bearing is off by about
``sigma_px d / f`` m, its depth (from its apparent size) by ``sigma_px d^2 / (f L)`` m, and its
orientation by ``sigma_px d / (f L)`` rad. The reported ``object_error`` is that relative pose
error, ``sigma_px d / (f L cos(view angle))``, which grows with distance and obliqueness, so a
consumer can reject far and grazing detections. aruco_detect's grows faster: its fit's
reprojection error over the tag's diagonal in pixels, times d / L, so with d squared (in its
real message in ../shared/data, 0.0002-0.008 for six tags at 1.0-3.0 m and 0.076 for one at
3.4 m with a poor fit; here 0.5 px corners give 0.020 at 3 m and 0.027 at 4 m, head on).
"""
import dataclasses
import math

import numpy as np

from lost_and_found.core import geometry
from lost_and_found.core.config import Checker
from lost_and_found.sim.laser import cast_rays

#: Optical frame axes in the base frame (columns): x right = -y_base, y down = -z_base,
#: z forward = +x_base.
_OPTICAL_IN_BODY = np.array([[0.0, 0.0, 1.0],
                             [-1.0, 0.0, 0.0],
                             [0.0, -1.0, 0.0]])


@dataclasses.dataclass(frozen=True)
class CameraConfig:
    """The TurtleBot2's Kinect RGB camera, as a fiducial detector.

    Attributes:
        x: camera ahead of base_footprint (m).
        y: camera left of base_footprint (m).
        z: camera height above base_footprint (m).
        yaw: camera heading in base_footprint (rad; 0 looks forward).
        hfov: horizontal field of view (rad).
        vfov: vertical field of view (rad).
        max_range: farthest detectable tag centre (m).
        max_view_angle: largest angle (rad) between a tag's z axis and the direction to the
            camera at which the tag is still detected.
        occlusion_tolerance: a wall this much (m) nearer than the tag still lets it be seen.
        pixel_noise: standard deviation of the tag corners in the image (px; 0 = exact).
        focal_length: focal length (px).
        tag_size: side of the printed tags (m).
        unknown_is_occupied: unknown map cells block the view (default: they do not).
    """

    x: float = 0.1
    y: float = 0.0
    z: float = 0.3
    yaw: float = 0.0
    hfov: float = 1.0
    vfov: float = 0.75
    max_range: float = 4.0
    max_view_angle: float = math.radians(75.0)
    occlusion_tolerance: float = 0.1
    pixel_noise: float = 0.5
    focal_length: float = 525.0
    tag_size: float = 0.14
    unknown_is_occupied: bool = False

    def validate(self):
        """Raise ConfigError naming every bad value."""
        check = Checker(self)
        for name in ('x', 'y', 'z', 'yaw'):
            check.finite(name)
        check.in_range('hfov', 0.0, math.pi, low_open=True, high_open=True)
        check.in_range('vfov', 0.0, math.pi, low_open=True, high_open=True)
        check.positive('max_range')
        check.in_range('max_view_angle', 0.0, math.pi / 2, low_open=True)
        check.non_negative('occlusion_tolerance')
        check.non_negative('pixel_noise')
        check.positive('focal_length')
        check.positive('tag_size')
        check.require(isinstance(self.unknown_is_occupied, bool), 'unknown_is_occupied',
                      'be true or false')
        check.done()

    def base_to_camera(self):
        """4x4 pose ``T_base_camera`` of the camera optical frame in base_footprint."""
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        yaw = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        return geometry.make_transform(yaw @ _OPTICAL_IN_BODY, (self.x, self.y, self.z))


@dataclasses.dataclass(frozen=True, eq=False)   # eq would compare numpy arrays
class Detection:
    """One fiducial the camera sees (the fields of a fiducial_msgs/FiducialTransform).

    Attributes:
        fiducial_id: the tag id.
        T_camera_fiducial: 4x4 pose of the tag in the camera optical frame (with noise).
        object_error: expected relative pose error (grows with distance and obliqueness).
        image_error: expected corner error in the image (px).
        fiducial_area: the tag's apparent area in the image (px^2).
        distance: true camera-to-tag distance (m).
        view_angle: true angle (rad) between the tag's z axis and the direction to the camera.
    """

    fiducial_id: int
    T_camera_fiducial: np.ndarray
    object_error: float
    image_error: float
    fiducial_area: float
    distance: float
    view_angle: float


def base_transform(pose):
    """4x4 ``T_map_base`` of a planar pose ``(x, y, yaw)``."""
    x, y, yaw = pose
    return geometry.make_transform(geometry.rpy_to_matrix(0.0, 0.0, yaw), (x, y, 0.0))


def rotation_from_vector(vector):
    """3x3 rotation of a rotation vector (axis times angle, rad), by Rodrigues' formula."""
    v = np.asarray(vector, dtype=float)
    angle = float(np.linalg.norm(v))
    if angle < 1e-12:
        return np.eye(3)
    k = v / angle
    skew = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + math.sin(angle) * skew + (1.0 - math.cos(angle)) * skew @ skew


class Camera:
    """Mapped fiducials seen from a robot pose.

    Args:
        config: a validated :class:`CameraConfig`.
        fiducial_map: a :class:`lost_and_found.core.fiducial.FiducialMap` (tag poses in the
            map frame).
        grid: the :class:`~lost_and_found.sim.gridmap.GridMap` whose walls hide tags.
        rng: a ``numpy.random.Generator`` for the pose noise (seed it for repeatable runs).
    """

    def __init__(self, config, fiducial_map, grid, rng=None):
        """Keep the tags as stacked arrays so that every check is vectorised."""
        self.config = config
        self.grid = grid
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.T_base_camera = config.base_to_camera()
        self._ids = np.array(sorted(fiducial_map.poses), dtype=np.int64)
        self._tags = np.array([fiducial_map.poses[i] for i in self._ids]).reshape(-1, 4, 4)

    def detect(self, pose):
        """Every visible mapped tag from base pose ``(x, y, yaw)``, nearest first.

        Returns:
            A list of :class:`Detection`.
        """
        cfg = self.config
        if not len(self._ids):
            return []
        t_map_cam = base_transform(pose) @ self.T_base_camera
        t_cam_map = geometry.invert_transform(t_map_cam)
        t_cam_tags = np.einsum('ij,njk->nik', t_cam_map, self._tags)
        p = t_cam_tags[:, :3, 3]
        distance = np.linalg.norm(p, axis=1)
        with np.errstate(divide='ignore', invalid='ignore'):
            # Camera position in each tag frame: -R^T t; its z over its norm is cos(view angle).
            cam_in_tag = -np.einsum('nji,nj->ni', t_cam_tags[:, :3, :3], p)
            view = np.arccos(np.clip(cam_in_tag[:, 2] / distance, -1.0, 1.0))
            visible = ((p[:, 2] > 0) & (distance > 0) & (distance <= cfg.max_range)
                       & (np.abs(np.arctan2(p[:, 0], p[:, 2])) <= cfg.hfov / 2)
                       & (np.abs(np.arctan2(p[:, 1], p[:, 2])) <= cfg.vfov / 2)
                       & (view < cfg.max_view_angle))
        candidates = np.nonzero(visible)[0]
        if candidates.size:
            visible[candidates] = self._in_line_of_sight(t_map_cam[:3, 3], candidates)
        detections = []
        for n in np.nonzero(visible)[0][np.argsort(distance[visible])]:
            detections.append(self._detection(int(self._ids[n]), t_cam_tags[n],
                                              float(distance[n]), float(view[n])))
        return detections

    def _in_line_of_sight(self, camera, candidates):
        """bool per candidate tag: no wall between the camera and the tag (2D ray cast)."""
        cfg = self.config
        delta = self._tags[candidates, :2, 3] - camera[:2]
        planar = np.hypot(delta[:, 0], delta[:, 1])
        angles = np.arctan2(delta[:, 1], delta[:, 0])
        ranges = cast_rays(self.grid, float(camera[0]), float(camera[1]), angles,
                           float(planar.max()) + cfg.occlusion_tolerance,
                           cfg.unknown_is_occupied)
        return ranges >= planar - cfg.occlusion_tolerance

    def _detection(self, fiducial_id, t_cam_tag, distance, view):
        """A :class:`Detection` of one visible tag, with the pixel-noise model applied."""
        cfg = self.config
        sigma = cfg.pixel_noise
        f, size = cfg.focal_length, cfg.tag_size
        observed = np.array(t_cam_tag)
        if sigma > 0:
            lateral = sigma * distance / f
            depth = sigma * distance ** 2 / (f * size)
            angular = sigma * distance / (f * size)
            bearing = observed[:3, 3] / distance
            along = self.rng.normal(0.0, depth)
            across = self.rng.normal(0.0, lateral, 3)
            across -= bearing * (across @ bearing)   # keep it perpendicular to the view ray
            observed[:3, 3] += bearing * along + across
            observed[:3, :3] = rotation_from_vector(self.rng.normal(0.0, angular, 3)) \
                @ observed[:3, :3]
        cos_view = max(math.cos(view), 1e-3)
        side_px = f * size / distance
        return Detection(fiducial_id=fiducial_id, T_camera_fiducial=observed,
                         object_error=sigma * distance / (f * size * cos_view),
                         image_error=sigma, fiducial_area=side_px ** 2 * cos_view,
                         distance=distance, view_angle=view)
