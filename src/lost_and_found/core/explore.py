"""Where the wander goes after a look-around spin: the open heading that leads farthest from
where the search has already been (:func:`pick_heading`), or back toward where the search began
(:func:`heading_toward`).

The reactive wander follows the widest gap in view, and a TurtleBot2's Kinect sees 57 degrees
ahead: left alone, it drives on in the direction it faced before each look-around spin, and at
the end of a corridor turns back over the ground it has just searched. A full spin, though,
has filled the obstacle memory (core/obstacle_memory.py) all around the robot. From that
memory :func:`pick_heading` reads, for every heading, how far the robot's footprint could
drive (up to ``reach``), and picks the one whose end point lies farthest from the path the
robot has driven in this episode: new ground, where the camera has not looked yet.

Pure Python + numpy: no ROS; everything is in the odometry frame, where the path and the
memory stay put while the localization is wrong.
"""
import math

import numpy as np

from lost_and_found.core.geometry import wrap_angle

#: Headings tried, evenly around the circle.
HEADINGS = 72


def free_distances(points, half_width, reach, headings=HEADINGS):
    """How far (m) the footprint can drive straight along each heading.

    Args:
        points: remembered obstacle points (N, 2), robot frame (x ahead, y left).
        half_width: half the width the robot needs (m).
        reach: the longest distance considered (m); a heading with nothing in the way gets it.
        headings: number of headings, the first straight ahead, counter-clockwise.

    Returns:
        ``(angles, distances)``: two arrays of ``headings`` values (rad in the robot frame, m).
    """
    angles = 2.0 * math.pi * np.arange(headings) / headings
    points = np.asarray(points, dtype=float).reshape(-1, 2)
    distances = np.full(headings, float(reach))
    if not len(points):
        return angles, distances
    cos, sin = np.cos(angles)[:, None], np.sin(angles)[:, None]
    along = cos * points[:, 0] + sin * points[:, 1]           # (headings, N)
    across = -sin * points[:, 0] + cos * points[:, 1]
    # A point in the swept strip stops the footprint a radius before it.
    blocking = (along > 0.0) & (np.abs(across) <= half_width)
    stop = np.where(blocking, along - half_width, np.inf).min(axis=1)
    distances = np.clip(np.minimum(distances, stop), 0.0, None)
    return angles, distances


def heading_toward(pose, points, target, half_width, reach, min_open, headings=HEADINGS):
    """The open heading (odometry frame, rad) nearest the bearing from ``pose`` to
    ``target`` (x, y), or None when no heading is open (see :func:`pick_heading`)."""
    x, y, yaw = (float(v) for v in pose)
    angles, free = free_distances(points, half_width, reach, headings)
    open_ = free >= min_open
    if not open_.any():
        return None
    bearing = math.atan2(float(target[1]) - y, float(target[0]) - x) - yaw
    off = np.where(open_, np.abs(wrap_angle(angles - bearing)), np.inf)
    return float(wrap_angle(yaw + angles[int(np.argmin(off))]))


def pick_heading(pose, points, path, half_width, reach, min_open, headings=HEADINGS):
    """The heading (odometry frame, rad) toward the most new ground, or None.

    A heading is *open* when the footprint can drive at least ``min_open`` along it; its end
    point is the robot's position plus the free distance along it. The chosen heading's end
    point is the farthest from every position in ``path`` (ties within a quarter metre go to
    the smaller turn from the current heading). None when no heading is open.

    Args:
        pose: the robot's odometry pose ``(x, y, yaw)``.
        points: remembered obstacle points (N, 2) in the robot frame.
        path: positions (M, 2) the robot drove through in this episode, odometry frame (may
            be empty).
        half_width: half the width the robot needs (m).
        reach: the farthest end point considered (m).
        min_open: the least free distance (m) of an open heading.
        headings: number of headings tried.
    """
    x, y, yaw = (float(v) for v in pose)
    angles, free = free_distances(points, half_width, reach, headings)
    open_ = free >= min_open
    if not open_.any():
        return None
    world = yaw + angles
    ends = np.column_stack([x + free * np.cos(world), y + free * np.sin(world)])
    path = np.asarray(path, dtype=float).reshape(-1, 2)
    if len(path):
        gaps = np.hypot(ends[:, None, 0] - path[None, :, 0],
                        ends[:, None, 1] - path[None, :, 1]).min(axis=1)
    else:
        gaps = free.copy()
    gaps = np.where(open_, gaps, -np.inf)
    best = gaps.max()
    turns = np.abs(wrap_angle(angles))
    candidates = np.nonzero(gaps >= best - 0.25)[0]
    pick = candidates[np.argmin(turns[candidates])]
    return float(wrap_angle(world[pick]))
