"""Carmen logs (the Radish "corrected" Intel and ACES logs) turned into rosbags for a replay.

A Carmen log is text, one record a line (gzipped or not)::

    ODOM x y theta tv rv accel ts host logger_ts
    FLASER n r1 .. rn x y theta odom_x odom_y odom_theta ts host logger_ts
    PARAM name value host ts

``NEFF`` lines and ``#`` lines are comments. In these corrected logs the FLASER pose is the
SLAM-corrected pose (ground truth). The ODOM stream is not raw odometry either: right after
every FLASER comes an ODOM line holding exactly the corrected pose (a *reset*, with a garbage
time stamp such as ``1.08e-42``), and the following ODOM lines continue from it by the
wheel-odometry increments; the last ODOM before a FLASER carries the scan's time stamp and is
the dead-reckoned pose at that scan. :func:`raw_odometry` undoes the resets (it chains the
increments of every segment), which gives back continuous wheel odometry with its real drift:
what a localizer on the robot would have received. Feeding the reset stream instead would hand
the localizer the SLAM corrections for free.

Time stamps are jittered by up to a second (even the scans are out of order four times in the
Intel log): records are stable-sorted by time (:func:`stable_sorted`). Every scan is paired with
the odometry of its own record (the ODOM line stamped like it), so sorting cannot pair a scan
with the wrong odometry.

Poses are ``(x, y, yaw)`` in metres and radians. The map YAMLs of ../shared/data carry the log
frame -> map frame transform in their comments (:func:`read_alignment`).
"""
import collections
import gzip
import math
import re

import numpy as np

from lost_and_found.core.geometry import interpolate_pose, wrap_angle

#: Stamp of the first record in a bag (s): sim time 0 means "no clock yet" to ROS nodes.
START_OFFSET = 1.0
#: Bag topics and frames.
ODOM_TOPIC = '/odom'
SCAN_TOPIC = '/scan'
TRUTH_TOPIC = '/ground_truth'
ODOM_FRAME = 'odom'
BASE_FRAME = 'base_footprint'
LASER_FRAME = 'base_laser_link'
MAP_FRAME = 'map'
#: Carmen's front laser: 180 beams from -90 deg in 1 deg steps.
ANGLE_MIN = -math.pi / 2.0
ANGLE_INCREMENT = math.pi / 180.0
#: Scans are written this long (s) after their stamp in the bag's play order, so that the
#: odometry at the stamp has reached the localizer's tf buffer when the scan arrives: its tf
#: wait is 0.1 s of sim time, a few wall milliseconds in a fast replay. A laser driver's
#: latency, in effect.
SCAN_DELAY = 0.5
#: A reset ODOM must equal its FLASER pose within this (log values have 6 digits).
_RESET_TOLERANCE = 1e-9

#: One ODOM line: time (s), pose, velocities and its line number (1-based).
OdomRecord = collections.namedtuple('OdomRecord', 't x y theta tv rv line')
#: One FLASER line: time (s), ranges (m, tuple), corrected pose, odometry pose, line number.
ScanRecord = collections.namedtuple('ScanRecord', 't ranges x y theta odom_x odom_y odom_theta '
                                    'line')
#: A parsed log in file order: ``odometry`` and ``scans`` (lists), ``params`` (name -> string),
#: ``resets`` (indices into ``odometry`` of the reset lines), ``path``.
CarmenLog = collections.namedtuple('CarmenLog', 'path odometry scans params resets')
#: log frame -> map frame as a 2D rigid transform: the translation (m) and the rotation (rad)
#: of the map YAML comments (a pose, so that :func:`compose` takes it as it is).
Alignment = collections.namedtuple('Alignment', 'x y yaw')
#: A kidnap spliced into the odometry: from time ``t`` (log time, s) on, every odometry pose
#: ``p`` becomes ``offset (+) p``, ``offset`` = (dx, dy, dyaw) a rigid transform of the odom
#: frame.
Splice = collections.namedtuple('Splice', 't offset')


class CarmenError(ValueError):
    """A log or a map YAML that cannot be used; the message names the file and the line."""


# ---------------------------------------------------------------------------- poses

def compose(a, b):
    """``a (+) b``: the pose ``b`` (relative to ``a``) expressed in ``a``'s parent frame."""
    c, s = math.cos(a[2]), math.sin(a[2])
    return (a[0] + c * b[0] - s * b[1], a[1] + s * b[0] + c * b[1],
            float(wrap_angle(a[2] + b[2])))


def invert(a):
    """The inverse of a 2D rigid transform ``(x, y, yaw)``."""
    c, s = math.cos(a[2]), math.sin(a[2])
    return (-c * a[0] - s * a[1], s * a[0] - c * a[1], float(wrap_angle(-a[2])))


def relative(a, b):
    """``a^-1 (+) b``: the pose ``b`` seen from ``a``."""
    return compose(invert(a), b)


def to_map(alignment, pose):
    """A log-frame pose in the map frame (``alignment``: an :class:`Alignment`)."""
    return compose((alignment.x, alignment.y, alignment.yaw), pose)


def interpolate(track, t):
    """The pose of a time-sorted track ``[(t, x, y, yaw), ...]`` at time ``t``.

    Linear in x and y, along the shorter arc in yaw; clamped to the first and last pose.

    Raises:
        ValueError: an empty track.
    """
    if not len(track):
        raise ValueError('cannot interpolate an empty track')
    times = [p[0] for p in track]
    i = int(np.searchsorted(times, t, side='right'))
    if i == 0:
        return tuple(track[0][1:4])
    if i == len(track):
        return tuple(track[-1][1:4])
    t0, t1 = track[i - 1][0], track[i][0]
    f = 0.0 if t1 <= t0 else (t - t0) / (t1 - t0)
    return interpolate_pose(track[i - 1][1:4], track[i][1:4], f)


def jump_offset(pose, jump):
    """The odom-frame offset that moves the base at ``pose`` by ``jump`` = (dx, dy, dyaw).

    ``dx, dy`` are in the odom frame's axes and ``dyaw`` turns the base in place, so the
    apparent jump of the base (and of any estimate composed with the odometry) is
    ``hypot(dx, dy)`` metres whatever the heading.

    Returns:
        (dx, dy, dyaw) of a :class:`Splice` offset: ``offset (+) pose`` is the jumped pose.
    """
    jumped = (pose[0] + jump[0], pose[1] + jump[1], float(wrap_angle(pose[2] + jump[2])))
    return compose(jumped, invert(pose))


# ---------------------------------------------------------------------------- parsing

def _open(path):
    with open(path, 'rb') as stream:
        magic = stream.read(2)
    if magic == b'\x1f\x8b':
        return gzip.open(path, 'rt', errors='replace')
    return open(path, errors='replace')


def _floats(fields, path, number, what):
    try:
        values = [float(v) for v in fields]
    except ValueError:
        raise CarmenError('%s:%d: %s: not a number in %r' % (path, number, what, fields)) \
            from None
    if not all(math.isfinite(v) for v in values):
        raise CarmenError('%s:%d: %s: non-finite value in %r' % (path, number, what, fields))
    return values


def _odom(fields, path, number):
    if len(fields) < 8:
        raise CarmenError('%s:%d: ODOM needs x y theta tv rv accel ts, got %d fields'
                          % (path, number, len(fields) - 1))
    x, y, theta, tv, rv, _accel = _floats(fields[1:7], path, number, 'ODOM pose')
    # The time stamp may be garbage on a reset line (checked later); only parse it here.
    try:
        t = float(fields[7])
    except ValueError:
        raise CarmenError('%s:%d: ODOM time stamp %r is not a number'
                          % (path, number, fields[7])) from None
    return OdomRecord(t, x, y, theta, tv, rv, number)


def _flaser(fields, path, number):
    try:
        n = int(fields[1])
    except (IndexError, ValueError):
        raise CarmenError('%s:%d: FLASER needs the beam count first' % (path, number)) \
            from None
    if n < 1 or len(fields) < 2 + n + 7:
        raise CarmenError('%s:%d: FLASER with %d beams needs %d fields, got %d'
                          % (path, number, n, n + 8, len(fields) - 1))
    ranges = _floats(fields[2:2 + n], path, number, 'FLASER ranges')
    pose = _floats(fields[2 + n:2 + n + 7], path, number, 'FLASER pose and time')
    return ScanRecord(pose[6], tuple(ranges), pose[0], pose[1], pose[2], pose[3], pose[4],
                      pose[5], number)


def read_log(path):
    """Parse a Carmen log (plain or gzipped) into a :class:`CarmenLog`, in file order.

    ODOM lines right after a FLASER whose pose equals the scan's corrected pose are *resets*
    (see the module docstring); their indices are listed in ``resets``.

    Raises:
        CarmenError: the file cannot be read, a record is malformed (naming the line), or
            the log holds no FLASER or no ODOM record.
    """
    odometry, scans, params, resets = [], [], {}, []
    previous = None
    try:
        with _open(path) as stream:
            for number, line in enumerate(stream, 1):
                fields = line.split()
                if not fields or fields[0].startswith('#') or fields[0] == 'NEFF':
                    continue
                kind = fields[0]
                if kind == 'ODOM':
                    record = _odom(fields, path, number)
                    if previous is not None and previous[0] == 'FLASER':
                        scan = previous[1]
                        if max(abs(record.x - scan.x), abs(record.y - scan.y),
                               abs(record.theta - scan.theta)) <= _RESET_TOLERANCE:
                            resets.append(len(odometry))
                    odometry.append(record)
                    previous = ('ODOM', record)
                elif kind == 'FLASER':
                    record = _flaser(fields, path, number)
                    scans.append(record)
                    previous = ('FLASER', record)
                elif kind == 'PARAM' and len(fields) >= 3:
                    params[fields[1]] = fields[2]
                else:
                    previous = (kind, None)
    except OSError as error:
        raise CarmenError('%s: cannot read: %s' % (path, error)) from None
    except (EOFError, gzip.BadGzipFile) as error:
        raise CarmenError('%s: broken gzip file: %s' % (path, error)) from None
    if not scans or not odometry:
        raise CarmenError('%s: needs FLASER and ODOM records, found %d and %d'
                          % (path, len(scans), len(odometry)))
    for record in odometry:
        if not math.isfinite(record.t):
            raise CarmenError('%s:%d: ODOM time stamp %r is not finite'
                              % (path, record.line, record.t))
    return CarmenLog(path, odometry, scans, params, resets)


def laser_offset(log):
    """The front laser's forward offset on the base (m), from PARAM robot_frontlaser_offset.

    Raises:
        CarmenError: the parameter is not a finite number.
    """
    text = log.params.get('robot_frontlaser_offset', '0')
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise CarmenError('%s: PARAM robot_frontlaser_offset %r is not a finite number'
                          % (log.path, text))
    return value


def stable_sorted(records):
    """The records sorted by their time ``t``; equal times keep their file order."""
    return sorted(records, key=lambda record: record.t)


def raw_odometry(log):
    """Continuous wheel odometry rebuilt from the reset ODOM stream, in file order.

    Between two resets the ODOM poses are ``reset (+) increment``; the increments are chained
    onto the odometry pose reached at the reset, so the track continues smoothly where the log
    jumps to the corrected pose. Before the first reset the log's poses are taken as they are.

    Returns:
        ``[(t, x, y, yaw, line), ...]`` for every ODOM record except the resets (whose time
        stamps are garbage).
    """
    resets = set(log.resets)
    track = []
    anchor_log = anchor_raw = None      # the segment's reset pose (log) and raw pose there
    last_raw = None
    for index, record in enumerate(log.odometry):
        pose = (record.x, record.y, record.theta)
        if index in resets:
            if last_raw is not None:
                anchor_log, anchor_raw = pose, last_raw
            continue
        raw = pose if anchor_log is None else compose(anchor_raw, relative(anchor_log, pose))
        track.append((record.t, raw[0], raw[1], raw[2], record.line))
        last_raw = raw
    return track


def scan_odometry(log, track):
    """The odometry pose of every scan of ``log`` (file order), from ``track``.

    A scan takes the pose of the last non-reset ODOM line before it when that line carries the
    scan's own time stamp (the Carmen logger writes one); otherwise the track (sorted by time)
    is interpolated at the scan's time.

    Args:
        log: the :class:`CarmenLog`.
        track: :func:`raw_odometry` of that log (file order).

    Returns:
        list of (x, y, yaw), one per scan.
    """
    by_line = [(p[4], p) for p in track]
    lines = [line for line, _ in by_line]
    ordered = sorted(track, key=lambda p: p[0])
    poses = []
    for scan in log.scans:
        i = int(np.searchsorted(lines, scan.line)) - 1
        if i >= 0 and by_line[i][1][0] == scan.t:
            poses.append(tuple(by_line[i][1][1:4]))
        else:
            poses.append(interpolate(ordered, scan.t))
    return poses


# ---------------------------------------------------------------------------- alignment

_NUMBER = r'([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)'
_X_RULE = re.compile(r'x_map\s*=\s*cos\(\s*%s\s*deg\s*\)\s*\*\s*x_log\s*-\s*sin\(\s*%s\s*deg'
                     r'\s*\)\s*\*\s*y_log\s*([-+])\s*%s' % (_NUMBER, _NUMBER, _NUMBER))
_Y_RULE = re.compile(r'y_map\s*=\s*sin\(\s*%s\s*deg\s*\)\s*\*\s*x_log\s*\+\s*cos\(\s*%s\s*deg'
                     r'\s*\)\s*\*\s*y_log\s*([-+])\s*%s' % (_NUMBER, _NUMBER, _NUMBER))
_YAW_RULE = re.compile(r'yaw_map\s*=\s*yaw_log\s*([-+])\s*%s\s*deg' % _NUMBER)


def parse_alignment(text, source='<text>'):
    """The log -> map :class:`Alignment` written in a map YAML's comments.

    Expects the three lines ``x_map = cos(Adeg)*x_log - sin(Adeg)*y_log + TX``,
    ``y_map = sin(Adeg)*x_log + cos(Adeg)*y_log + TY`` and ``yaw_map = yaw_log + Adeg``
    (anywhere in comments), all with the same angle A.

    Raises:
        CarmenError: a rule is missing or the angles disagree (naming ``source``).
    """
    comments = '\n'.join(line.split('#', 1)[1] for line in text.splitlines() if '#' in line)
    x_rule, y_rule = _X_RULE.search(comments), _Y_RULE.search(comments)
    yaw_rule = _YAW_RULE.search(comments)
    missing = [name for name, match in (('x_map', x_rule), ('y_map', y_rule),
                                        ('yaw_map', yaw_rule)) if match is None]
    if missing:
        raise CarmenError('%s: no log frame -> map frame transform in its comments (missing '
                          'the %s rule; expected e.g. "x_map = cos(12.6deg)*x_log - '
                          'sin(12.6deg)*y_log + 15.95")' % (source, ', '.join(missing)))
    angles = [float(x_rule.group(1)), float(x_rule.group(2)), float(y_rule.group(1)),
              float(y_rule.group(2)),
              float(yaw_rule.group(2)) * (-1.0 if yaw_rule.group(1) == '-' else 1.0)]
    if max(angles) - min(angles) > 1e-9:
        raise CarmenError('%s: the alignment rules disagree on the rotation: %r deg'
                          % (source, angles))
    tx = float(x_rule.group(4)) * (-1.0 if x_rule.group(3) == '-' else 1.0)
    ty = float(y_rule.group(4)) * (-1.0 if y_rule.group(3) == '-' else 1.0)
    return Alignment(tx, ty, math.radians(angles[0]))


def read_alignment(yaml_path):
    """:func:`parse_alignment` of a map YAML file.

    Raises:
        CarmenError: the file cannot be read or holds no alignment.
    """
    try:
        with open(yaml_path) as stream:
            text = stream.read()
    except OSError as error:
        raise CarmenError('%s: cannot read: %s' % (yaml_path, error)) from None
    return parse_alignment(text, yaml_path)


# ---------------------------------------------------------------------------- the replay

#: What :func:`replay_data` prepares: ``odometry`` [(t, x, y, yaw)] sorted by time with unique
#: stamps (the splice applied), ``scans`` [(t, ranges, odom pose)] sorted, ``truth``
#: [(t, x, y, yaw)] in the map frame at the scans, ``origin`` (log time of stamp
#: START_OFFSET), ``laser_offset`` (m), ``max_range`` (m).
ReplayData = collections.namedtuple('ReplayData', 'odometry scans truth origin laser_offset '
                                    'max_range')


def replay_data(log, alignment, max_range, splice=None, origin=None):
    """Everything a bag needs, from a parsed log: times still in log seconds.

    Args:
        log: a :class:`CarmenLog`.
        alignment: its log -> map :class:`Alignment`.
        max_range: the laser's maximum range (m); readings at or beyond it are no return.
        splice: an optional :class:`Splice` (times in log seconds).
        origin: the log time that becomes stamp START_OFFSET (default: the earliest record).

    Raises:
        CarmenError: a bad max_range or splice.
    """
    if not (isinstance(max_range, (int, float)) and math.isfinite(max_range) and max_range > 0):
        raise CarmenError('max_range=%r: must be a positive finite number of metres'
                          % (max_range,))
    if splice is not None and not all(math.isfinite(v) for v in (splice.t,) +
                                      tuple(splice.offset)):
        raise CarmenError('splice %r: time and offset must be finite' % (splice,))
    track = raw_odometry(log)
    scan_poses = scan_odometry(log, track)
    # tf drops a transform whose stamp it already holds, and the logs repeat stamps (1,325
    # times in Intel): keep one pose per stamp, the last line (the newest measurement), except
    # at a scan's stamp, which must be that scan's own odometry.
    odometry = {t: (x, y, yaw) for t, x, y, yaw, _line in sorted(track, key=lambda p: p[0])}
    odometry.update({scan.t: pose for scan, pose in zip(log.scans, scan_poses)})
    order = sorted(range(len(log.scans)), key=lambda i: log.scans[i].t)
    scans = [(log.scans[i].t, log.scans[i].ranges, scan_poses[i]) for i in order]
    if splice is not None:
        odometry = {t: (compose(splice.offset, p) if t >= splice.t else p)
                    for t, p in odometry.items()}
        scans = [(t, r, compose(splice.offset, p) if t >= splice.t else p)
                 for t, r, p in scans]
    odometry = [(t,) + tuple(p) for t, p in sorted(odometry.items())]
    truth = [(log.scans[i].t,) + to_map(alignment, (log.scans[i].x, log.scans[i].y,
                                                    log.scans[i].theta)) for i in order]
    if origin is None:
        origin = min(odometry[0][0], scans[0][0])
    return ReplayData(odometry, scans, truth, float(origin), laser_offset(log),
                      float(max_range))


def stamp_of(data, t):
    """The bag stamp (s) of log time ``t``."""
    return t - data.origin + START_OFFSET


def log_time_of(data, stamp):
    """The log time of bag stamp ``stamp`` (s)."""
    return stamp - START_OFFSET + data.origin


def scan_ranges(ranges, max_range):
    """Ranges for a LaserScan: readings at or beyond ``max_range`` become +inf (REP 117)."""
    return [math.inf if r >= max_range else float(r) for r in ranges]


def write_bag(path, data, start=None, end=None):
    """Write a replay bag of ``data`` (see :func:`replay_data`), optionally a time window.

    Topics: ``/odom`` (nav_msgs/Odometry) and ``/tf`` odom -> base_footprint at every odometry
    sample; ``/tf_static`` base_footprint -> base_laser_link (latched, at the first stamp);
    ``/scan`` (sensor_msgs/LaserScan in base_laser_link, 180 beams from -90 deg, no return =
    inf; played SCAN_DELAY after its stamp); ``/ground_truth`` (geometry_msgs/PoseStamped in
    map, the corrected pose at each scan).

    Args:
        path: the bag to write.
        data: a :class:`ReplayData`.
        start, end: log times (s) of the window to write (default: everything).

    Returns:
        dict with the counts written and the first and last stamps.
    """
    import rosbag
    import rospy
    from geometry_msgs.msg import PoseStamped, TransformStamped
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import LaserScan
    from tf2_msgs.msg import TFMessage

    from lost_and_found.nodes.conversions import quaternion_from_yaw

    lo = -math.inf if start is None else start
    hi = math.inf if end is None else end
    odometry = [p for p in data.odometry if lo <= p[0] <= hi]
    scans = [s for s in data.scans if lo <= s[0] <= hi]
    truth = [p for p in data.truth if lo <= p[0] <= hi]
    if not odometry or not scans:
        raise CarmenError('no odometry or no scan between log times %r and %r' % (start, end))
    first = min(odometry[0][0], scans[0][0])
    counts = collections.Counter()
    with rosbag.Bag(path, 'w') as bag:
        static = TransformStamped()
        static.header.stamp = rospy.Time.from_sec(stamp_of(data, first))
        static.header.frame_id = BASE_FRAME
        static.child_frame_id = LASER_FRAME
        static.transform.translation.x = data.laser_offset
        static.transform.rotation.w = 1.0
        # A latched connection, so that rosbag play latches /tf_static as tf2 expects.
        header = {'topic': '/tf_static', 'type': TFMessage._type, 'md5sum': TFMessage._md5sum,
                  'message_definition': TFMessage._full_text, 'latching': '1'}
        bag.write('/tf_static', TFMessage(transforms=[static]), static.header.stamp,
                  connection_header=header)
        counts['tf_static'] += 1
        for t, x, y, yaw in odometry:
            stamp = rospy.Time.from_sec(stamp_of(data, t))
            q = quaternion_from_yaw(yaw)
            odom = Odometry()
            odom.header.stamp = stamp
            odom.header.frame_id = ODOM_FRAME
            odom.child_frame_id = BASE_FRAME
            odom.pose.pose.position.x, odom.pose.pose.position.y = x, y
            odom.pose.pose.orientation = q
            bag.write(ODOM_TOPIC, odom, stamp)
            tf = TransformStamped()
            tf.header = odom.header
            tf.child_frame_id = BASE_FRAME
            tf.transform.translation.x, tf.transform.translation.y = x, y
            tf.transform.rotation = q
            bag.write('/tf', TFMessage(transforms=[tf]), stamp)
            counts['odom'] += 1
        for t, ranges, _pose in scans:
            stamp = rospy.Time.from_sec(stamp_of(data, t))
            scan = LaserScan()
            scan.header.stamp = stamp
            scan.header.frame_id = LASER_FRAME
            scan.angle_min = ANGLE_MIN
            scan.angle_increment = ANGLE_INCREMENT
            scan.angle_max = ANGLE_MIN + (len(ranges) - 1) * ANGLE_INCREMENT
            scan.range_min = 0.0
            scan.range_max = data.max_range
            scan.ranges = scan_ranges(ranges, data.max_range)
            bag.write(SCAN_TOPIC, scan, stamp + rospy.Duration.from_sec(SCAN_DELAY))
            counts['scan'] += 1
        for t, x, y, yaw in truth:
            stamp = rospy.Time.from_sec(stamp_of(data, t))
            pose = PoseStamped()
            pose.header.stamp = stamp
            pose.header.frame_id = MAP_FRAME
            pose.pose.position.x, pose.pose.position.y = x, y
            pose.pose.orientation = quaternion_from_yaw(yaw)
            bag.write(TRUTH_TOPIC, pose, stamp)
            counts['ground_truth'] += 1
    out = dict(counts)
    out['first_stamp'] = stamp_of(data, first)
    out['last_stamp'] = stamp_of(data, max(odometry[-1][0], scans[-1][0]))
    return out


def expected_updates(scans, update_min_d, update_min_a):
    """How many scans amcl (and sim_localizer) would update on: its motion trigger, replayed.

    The first scan always updates; after that a scan updates when the odometry moved more
    than ``update_min_d`` along odom x or y, or turned more than ``update_min_a``, since the
    last update.

    Args:
        scans: ``[(t, ranges, odometry pose), ...]`` sorted by time.

    Returns:
        list of the times of the scans that update.
    """
    times, reference = [], None
    for t, _ranges, pose in scans:
        if reference is not None:
            moved = abs(pose[0] - reference[0]) > update_min_d or \
                abs(pose[1] - reference[1]) > update_min_d or \
                abs(float(wrap_angle(pose[2] - reference[2]))) > update_min_a
            if not moved:
                continue
        reference = pose
        times.append(t)
    return times


def path_length(truth):
    """Cumulative distance (m) along a track ``[(t, x, y, ...), ...]``, one value per pose."""
    if not truth:
        return []
    xy = np.array([(p[1], p[2]) for p in truth], dtype=float)
    steps = np.hypot(np.diff(xy[:, 0]), np.diff(xy[:, 1]))
    return [0.0] + np.cumsum(steps).tolist()


# ---------------------------------------------------------------------------- registration

#: Registration search: the coarse window (m, rad) and step, then the fine window and step
#: around the coarse best. The corrected logs and the maps come from different SLAM runs, so
#: after the one rigid alignment of the map YAML the corrected pose is still off the map's
#: walls by up to about half a metre and a few degrees in places.
COARSE = ((0.6, 0.1), (math.radians(6.0), math.radians(1.5)))
FINE = ((0.1, 0.025), (math.radians(1.5), math.radians(0.375)))
#: A beam's cost is its end point's distance to the nearest mapped obstacle, capped here (m):
#: a beam on clutter or through a window costs the same at every candidate.
COST_CAP = 0.5
#: A registered pose is kept only when it lowers the mean beam cost by at least this share and
#: by one map cell (end points measured to cell centres gain up to a cell by sinking into the
#: walls); otherwise the corrected pose stays (a corridor that slides, a scan of clutter:
#: nothing to gain but noise).
GAIN_SHARE = 0.2
#: Beams used per scan (evenly spread over the usable ones).
BEAMS = 60

Registration = collections.namedtuple('Registration', 'truth shifts moved')
Registration.__doc__ = """The ground truth registered to the map.

``truth``: ``[(t, x, y, yaw), ...]`` like :attr:`ReplayData.truth`; ``shifts``:
``[(dxy m, |dyaw| rad), ...]`` per pose (0 where the corrected pose was kept); ``moved``:
how many poses moved.
"""


def _candidates(pose, window):
    """Poses around ``pose`` on a grid: ``((xy half-width, step), (yaw half-width, step))``."""
    (dxy, sxy), (dyaw, syaw) = window
    offsets = np.arange(-dxy, dxy + 0.5 * sxy, sxy)
    turns = np.arange(-dyaw, dyaw + 0.5 * syaw, syaw)
    gx, gy, ga = np.meshgrid(offsets, offsets, turns, indexing='ij')
    return pose[0] + gx.ravel(), pose[1] + gy.ravel(), pose[2] + ga.ravel()


def _costs(distance_map, xs, ys, yaws, bx, by):
    """Mean capped end-point distance of base-frame points (bx, by) seen from each pose."""
    c, s = np.cos(yaws)[:, None], np.sin(yaws)[:, None]
    ex = xs[:, None] + c * bx[None, :] - s * by[None, :]
    ey = ys[:, None] + s * bx[None, :] + c * by[None, :]
    return np.minimum(distance_map.distance(ex, ey), COST_CAP).mean(axis=1)


def register_truth(data, distance_map):
    """Move every ground-truth pose of ``data`` onto the map where its scan fits clearly better.

    For each scan, the pose within :data:`COARSE` and then :data:`FINE` of the corrected pose
    with the least mean capped end-point distance (:data:`COST_CAP`) replaces it, when that
    lowers the cost by :data:`GAIN_SHARE` and by one map cell. The map's walls are what the
    localizer and the lost detector see, so a truth that agrees with them is what their errors
    should be measured against.

    Args:
        data: a :class:`ReplayData` (its ``truth`` and ``scans`` pair up in time order).
        distance_map: a :class:`lost_and_found.core.scan_agreement.DistanceMap` of the map.

    Returns:
        A :class:`Registration`.
    """
    truth, shifts, moved = [], [], 0
    angles = ANGLE_MIN + np.arange(len(data.scans[0][1]) if data.scans else 0) * ANGLE_INCREMENT
    for (t, x, y, yaw), (_t, ranges, _odom) in zip(data.truth, data.scans):
        r = np.asarray(ranges, dtype=float)
        usable = np.flatnonzero(np.isfinite(r) & (r > 0) & (r < data.max_range))
        if usable.size > BEAMS:
            usable = usable[np.linspace(0, usable.size - 1, BEAMS).round().astype(int)]
        if usable.size == 0:
            truth.append((t, x, y, yaw))
            shifts.append((0.0, 0.0))
            continue
        a = angles[usable]
        bx = data.laser_offset + r[usable] * np.cos(a)
        by = r[usable] * np.sin(a)
        here = float(_costs(distance_map, np.array([x]), np.array([y]), np.array([yaw]),
                            bx, by)[0])
        best = (x, y, yaw)
        for window in (COARSE, FINE):
            xs, ys, yaws = _candidates(best, window)
            costs = _costs(distance_map, xs, ys, yaws, bx, by)
            k = int(np.argmin(costs))
            best, cost = (float(xs[k]), float(ys[k]), float(yaws[k])), float(costs[k])
        if here - cost >= max(distance_map.resolution, GAIN_SHARE * here):
            truth.append((t, best[0], best[1], float(wrap_angle(best[2]))))
            shifts.append((math.hypot(best[0] - x, best[1] - y),
                           abs(float(wrap_angle(best[2] - yaw)))))
            moved += 1
        else:
            truth.append((t, x, y, yaw))
            shifts.append((0.0, 0.0))
    return Registration(truth, shifts, moved)
